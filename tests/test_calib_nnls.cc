// The calibration fit's linear algebra: least squares, Lawson-Hanson NNLS
// and the standard-error diagonal, against problems with known answers.
#include <catch2/catch.hpp>
#include <cmath>

#include "sim/calibrate/calibrate_linalg.h"

using namespace simcache::sim;

namespace {
Matrix make(size_t r, size_t c, std::initializer_list<double> v) {
  Matrix m(r, c);
  m.a.assign(v.begin(), v.end());
  REQUIRE(m.a.size() == r * c);
  return m;
}

std::vector<double> mul(const Matrix& a, const std::vector<double>& x) {
  std::vector<double> b(a.rows, 0.0);
  for (size_t i = 0; i < a.rows; ++i)
    for (size_t j = 0; j < a.cols; ++j) b[i] += a(i, j) * x[j];
  return b;
}

double residual(const Matrix& a, const std::vector<double>& x, const std::vector<double>& b) {
  std::vector<double> r = mul(a, x);
  for (size_t i = 0; i < r.size(); ++i) r[i] -= b[i];
  return norm(r);
}
}  // namespace

TEST_CASE("least squares solves a consistent overdetermined system exactly", "[calib][nnls]") {
  const Matrix a = make(4, 3, {1, 0, 2, 0, 1, 1, 1, 1, 0, 3, 0, 1});
  const std::vector<double> truth = {2, 5, 0.5};
  std::vector<double> x;
  CHECK(least_squares(a, mul(a, truth), &x) == 3);
  for (size_t j = 0; j < 3; ++j) CHECK(x[j] == Approx(truth[j]).epsilon(1e-12));
}

TEST_CASE("least squares gives dependent columns zero", "[calib][nnls]") {
  // Column 2 = column 0 + column 1.
  const Matrix a = make(3, 3, {1, 0, 1, 0, 1, 1, 1, 1, 2});
  std::vector<double> x;
  CHECK(least_squares(a, {1, 2, 3}, &x) == 2);
  CHECK(x[2] == 0.0);
  CHECK(residual(a, x, {1, 2, 3}) < 1e-12);
}

TEST_CASE("NNLS equals least squares when the solution is positive", "[calib][nnls]") {
  const Matrix a = make(5, 2, {1, 1, 1, 2, 1, 3, 1, 4, 1, 5});
  const std::vector<double> b = {3.1, 4.9, 7.2, 8.8, 11.1};
  std::vector<double> x, y;
  REQUIRE(nnls(a, b, &x));
  least_squares(a, b, &y);
  CHECK(x[0] == Approx(y[0]).epsilon(1e-10));
  CHECK(x[1] == Approx(y[1]).epsilon(1e-10));
  CHECK(x[0] > 0);
  CHECK(x[1] > 0);
}

TEST_CASE("NNLS clamps a component the unconstrained fit makes negative", "[calib][nnls]") {
  // Unconstrained: x = (3, -1). With x >= 0 the optimum is x1 = 0 and x0
  // the one-column least squares of b = (2, 1, 0) on column 0: 1.
  const Matrix a = make(3, 2, {1, 1, 1, 2, 1, 3});
  const std::vector<double> b = mul(a, {3, -1});
  std::vector<double> unc, x;
  least_squares(a, b, &unc);
  REQUIRE(unc[1] == Approx(-1));
  REQUIRE(nnls(a, b, &x));
  CHECK(x[1] == 0.0);
  CHECK(x[0] == Approx(1.0).epsilon(1e-12));
}

TEST_CASE("NNLS meets the Kuhn-Tucker conditions on a random problem", "[calib][nnls]") {
  // Deterministic pseudo-random 12 x 6 problem.
  uint64_t s = 12345;
  auto rnd = [&] {
    s = s * 6364136223846793005ULL + 1442695040888963407ULL;
    return static_cast<double>(s >> 11) / static_cast<double>(1ULL << 53) - 0.5;
  };
  Matrix a(12, 6);
  for (double& v : a.a) v = rnd();
  std::vector<double> b(12);
  for (double& v : b) v = rnd();
  std::vector<double> x;
  REQUIRE(nnls(a, b, &x));
  std::vector<double> r = mul(a, x);
  for (size_t i = 0; i < r.size(); ++i) r[i] = b[i] - r[i];
  for (size_t j = 0; j < a.cols; ++j) {
    double w = 0;  // gradient of -|Ax-b|^2/2
    for (size_t i = 0; i < a.rows; ++i) w += a(i, j) * r[i];
    CHECK(x[j] >= 0);
    if (x[j] > 0)
      CHECK(std::fabs(w) < 1e-9);  // free: stationary
    else
      CHECK(w <= 1e-9);  // bound: cannot improve
  }
}

TEST_CASE("NNLS handles a zero column and an all-zero right side", "[calib][nnls]") {
  const Matrix a = make(3, 2, {1, 0, 2, 0, 3, 0});
  std::vector<double> x;
  REQUIRE(nnls(a, {0, 0, 0}, &x));
  CHECK(x == std::vector<double>{0, 0});
  REQUIRE(nnls(a, {1, 2, 3}, &x));
  CHECK(x[0] == Approx(1));
  CHECK(x[1] == 0.0);
}

TEST_CASE("the standard-error diagonal is diag((A^T A)^-1)", "[calib][nnls]") {
  // A^T A = [[2, 1], [1, 2]] -> inverse diag = 2/3, 2/3.
  const Matrix a = make(3, 2, {1, 0, 0, 1, 1, 1});
  std::vector<double> d;
  REQUIRE(inverse_gram_diagonal(a, &d));
  CHECK(d[0] == Approx(2.0 / 3.0));
  CHECK(d[1] == Approx(2.0 / 3.0));
  const Matrix dep = make(3, 2, {1, 2, 2, 4, 3, 6});
  CHECK_FALSE(inverse_gram_diagonal(dep, &d));
}

TEST_CASE("orthogonal_part removes the span of the basis", "[calib][nnls]") {
  const std::vector<std::vector<double>> basis = {{1, 0, 0}, {0, std::sqrt(0.5), std::sqrt(0.5)}};
  const std::vector<double> r = orthogonal_part(basis, {3, 1, 2});
  CHECK(r[0] == Approx(0).margin(1e-12));
  CHECK(r[1] == Approx(-0.5));
  CHECK(r[2] == Approx(0.5));
}

TEST_CASE("Cholesky with forward and backward substitution solves an SPD system",
          "[calib][nnls]") {
  // m = B^T B + I for a fixed B: symmetric positive definite; m x = b
  // solved by L L^T, checked against m times the answer.
  const size_t n = 5;
  Matrix b(n, n), m(n, n), l;
  for (size_t i = 0; i < n; ++i)
    for (size_t j = 0; j < n; ++j) b(i, j) = std::sin(static_cast<double>(3 * i + j + 1));
  for (size_t i = 0; i < n; ++i)
    for (size_t j = 0; j < n; ++j) {
      double v = i == j ? 1.0 : 0.0;
      for (size_t k = 0; k < n; ++k) v += b(k, i) * b(k, j);
      m(i, j) = v;
    }
  REQUIRE(cholesky(m, &l));
  const std::vector<double> rhs = {1, -2, 0.5, 3, -1};
  std::vector<double> x = rhs;
  forward_solve(l, &x);
  backward_solve(l, &x);
  for (size_t i = 0; i < n; ++i) {
    double v = 0;
    for (size_t j = 0; j < n; ++j) v += m(i, j) * x[j];
    CHECK(v == Approx(rhs[i]).epsilon(1e-12));
  }
  // backward_solve alone solves L^T z = c.
  std::vector<double> z = rhs;
  backward_solve(l, &z);
  for (size_t i = 0; i < n; ++i) {
    double v = 0;
    for (size_t k = i; k < n; ++k) v += l(k, i) * z[k];
    CHECK(v == Approx(rhs[i]).epsilon(1e-12));
  }
  // Not positive definite: no factor.
  Matrix bad(2, 2);
  bad(0, 0) = 1, bad(1, 1) = -1;
  CHECK_FALSE(cholesky(bad, &l));
}
