#include "sim/calibrate/calibrate_linalg.h"

#include <algorithm>
#include <cmath>

// The fit's dense numerics at -O3, in every tree (under the sanitizers
// too, with the same checks): GCC vectorizes their elementwise loops only
// there, and a fit is most of calibrate's time and of the calibration
// tests' (docs/performance.md). The results are the same to the bit: no
// reduction is reordered without -ffast-math, and an elementwise loop
// rounds each element alike. Scoped to this file, which a unity batch
// shares with others. (GCC's pragma; clang, which builds the fuzz
// targets, has no such pragma and compiles the file as its flags say.)
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC push_options
#pragma GCC optimize("O3")
#endif

namespace simcache::sim {
namespace {

// Householder QR of A (m x n, m >= n not required): R in the upper
// triangle of `qr`, the reflectors applied to `b` as they are built.
// Column j is treated as dependent (skipped) when its remaining norm is
// below tol x its original norm.
struct Qr {
  Matrix r;
  std::vector<double> qtb;
  std::vector<bool> dependent;
};

Qr householder(const Matrix& A, const std::vector<double>& b) {
  const size_t m = A.rows, n = A.cols;
  Qr q{Matrix(m, n), b, std::vector<bool>(n, false)};
  // Worked on column by column, so the reflections run over contiguous
  // memory (the arithmetic, and so every rounding, is the row-major one's).
  std::vector<double> r(m * n), orig(n, 0.0), v(m);
  for (size_t i = 0; i < m; ++i)
    for (size_t j = 0; j < n; ++j) r[j * m + i] = A(i, j);
  for (size_t j = 0; j < n; ++j)
    for (size_t i = 0; i < m; ++i) orig[j] += r[j * m + i] * r[j * m + i];
  size_t k = 0;  // next pivot row
  for (size_t j = 0; j < n; ++j) {
    double* rj = &r[j * m];
    double rest = 0;
    for (size_t i = k; i < m; ++i) rest += rj[i] * rj[i];
    if (k >= m || rest <= 1e-24 * std::max(orig[j], 1e-300) || orig[j] == 0) {
      q.dependent[j] = true;
      continue;
    }
    const double alpha = rj[k] > 0 ? -std::sqrt(rest) : std::sqrt(rest);
    for (size_t i = k; i < m; ++i) v[i] = rj[i];
    v[k] -= alpha;
    double vv = 0;
    for (size_t i = k; i < m; ++i) vv += v[i] * v[i];
    vv = std::sqrt(vv);
    if (vv == 0) {
      q.dependent[j] = true;
      continue;
    }
    for (size_t i = k; i < m; ++i) v[i] /= vv;
    // The reflection of each remaining column. Columns are independent:
    // four dot products run side by side, each summed in the same order
    // as alone (the same roundings), so their chains overlap.
    auto reflect = [&](double* rc, double d) {
      for (size_t i = k; i < m; ++i) rc[i] -= 2 * d * v[i];
    };
    size_t c = j;
    for (; c + 4 <= n; c += 4) {
      double *r0 = &r[c * m], *r1 = r0 + m, *r2 = r1 + m, *r3 = r2 + m;
      double d0 = 0, d1 = 0, d2 = 0, d3 = 0;
      for (size_t i = k; i < m; ++i) {
        d0 += v[i] * r0[i];
        d1 += v[i] * r1[i];
        d2 += v[i] * r2[i];
        d3 += v[i] * r3[i];
      }
      reflect(r0, d0);
      reflect(r1, d1);
      reflect(r2, d2);
      reflect(r3, d3);
    }
    for (; c < n; ++c) {
      double* rc = &r[c * m];
      double d = 0;
      for (size_t i = k; i < m; ++i) d += v[i] * rc[i];
      reflect(rc, d);
    }
    double d = 0;
    for (size_t i = k; i < m; ++i) d += v[i] * q.qtb[i];
    for (size_t i = k; i < m; ++i) q.qtb[i] -= 2 * d * v[i];
    ++k;
  }
  for (size_t i = 0; i < m; ++i)
    for (size_t j = 0; j < n; ++j) q.r(i, j) = r[j * m + i];
  return q;
}

// The pivot row of each independent column, in order.
std::vector<size_t> pivots(const Qr& q, std::vector<size_t>* cols) {
  std::vector<size_t> rows;
  for (size_t j = 0, k = 0; j < q.dependent.size(); ++j) {
    if (q.dependent[j]) continue;
    rows.push_back(k++);
    cols->push_back(j);
  }
  return rows;
}

}  // namespace

Matrix Matrix::columns(const std::vector<size_t>& idx) const {
  Matrix m(rows, idx.size());
  for (size_t i = 0; i < rows; ++i)
    for (size_t j = 0; j < idx.size(); ++j) m(i, j) = (*this)(i, idx[j]);
  return m;
}

double norm(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x * x;
  return std::sqrt(s);
}

size_t least_squares(const Matrix& A, const std::vector<double>& b, std::vector<double>* x) {
  const Qr q = householder(A, b);
  std::vector<size_t> cols;
  const std::vector<size_t> rows = pivots(q, &cols);
  x->assign(A.cols, 0.0);
  for (size_t t = rows.size(); t-- > 0;) {
    double s = q.qtb[rows[t]];
    for (size_t u = t + 1; u < rows.size(); ++u) s -= q.r(rows[t], cols[u]) * (*x)[cols[u]];
    (*x)[cols[t]] = s / q.r(rows[t], cols[t]);
  }
  return rows.size();
}

bool inverse_gram_diagonal(const Matrix& A, std::vector<double>* d) {
  const Qr q = householder(A, std::vector<double>(A.rows, 0.0));
  std::vector<size_t> cols;
  const std::vector<size_t> rows = pivots(q, &cols);
  const size_t n = A.cols;
  if (rows.size() != n) return false;
  // (A^T A)^-1 = R^-1 R^-T: diag = squared row norms of R^-1.
  Matrix rinv(n, n);
  for (size_t c = 0; c < n; ++c) {
    for (size_t t = c + 1; t-- > 0;) {
      double s = t == c ? 1.0 : 0.0;
      for (size_t u = t + 1; u <= c; ++u) s -= q.r(rows[t], u) * rinv(u, c);
      rinv(t, c) = s / q.r(rows[t], t);
    }
  }
  d->assign(n, 0.0);
  for (size_t i = 0; i < n; ++i)
    for (size_t c = 0; c < n; ++c) (*d)[i] += rinv(i, c) * rinv(i, c);
  return true;
}

bool nnls(const Matrix& A, const std::vector<double>& b, std::vector<double>* xout) {
  const size_t n = A.cols;
  std::vector<double> x(n, 0.0);
  std::vector<bool> passive(n, false);
  auto gradient = [&] {
    std::vector<double> r(b);
    for (size_t i = 0; i < A.rows; ++i)
      for (size_t j = 0; j < n; ++j) r[i] -= A(i, j) * x[j];
    std::vector<double> w(n, 0.0);
    for (size_t j = 0; j < n; ++j)
      for (size_t i = 0; i < A.rows; ++i) w[j] += A(i, j) * r[i];
    return w;
  };
  double scale = 0;
  for (double v : A.a) scale = std::max(scale, std::fabs(v));
  for (double v : b) scale = std::max(scale, std::fabs(v));
  const double tol = 1e-12 * std::max(scale * scale, 1e-300) * static_cast<double>(A.rows + n);
  bool converged = false;
  for (size_t outer = 0; outer < 3 * n + 3; ++outer) {
    const std::vector<double> w = gradient();
    size_t t = n;
    for (size_t j = 0; j < n; ++j)
      if (!passive[j] && w[j] > tol && (t == n || w[j] > w[t])) t = j;
    if (t == n) {
      converged = true;
      break;
    }
    passive[t] = true;
    for (size_t inner = 0; inner <= n; ++inner) {
      std::vector<size_t> p;
      for (size_t j = 0; j < n; ++j)
        if (passive[j]) p.push_back(j);
      std::vector<double> z;
      least_squares(A.columns(p), b, &z);
      bool feasible = true;
      for (double v : z) feasible &= v > 0;
      if (feasible) {
        std::fill(x.begin(), x.end(), 0.0);
        for (size_t k = 0; k < p.size(); ++k) x[p[k]] = z[k];
        break;
      }
      double alpha = 1;
      for (size_t k = 0; k < p.size(); ++k)
        if (z[k] <= 0) alpha = std::min(alpha, x[p[k]] / (x[p[k]] - z[k]));
      for (size_t k = 0; k < p.size(); ++k) x[p[k]] += alpha * (z[k] - x[p[k]]);
      for (size_t k = 0; k < p.size(); ++k)
        if (x[p[k]] <= 1e-15 * std::max(1.0, std::fabs(z[k]))) x[p[k]] = 0, passive[p[k]] = false;
    }
  }
  *xout = x;
  return converged;
}

std::vector<double> orthogonal_part(const std::vector<std::vector<double>>& basis,
                                    std::vector<double> v) {
  for (int pass = 0; pass < 2; ++pass) {
    for (const std::vector<double>& q : basis) {
      double d = 0;
      for (size_t i = 0; i < v.size(); ++i) d += q[i] * v[i];
      for (size_t i = 0; i < v.size(); ++i) v[i] -= d * q[i];
    }
  }
  return v;
}

bool cholesky(const Matrix& m, Matrix* out) {
  const size_t n = m.rows;
  Matrix l(n, n);
  for (size_t j = 0; j < n; ++j) {
    const double* lj = &l.a[j * n];
    double d = m(j, j);
    for (size_t k = 0; k < j; ++k) d -= lj[k] * lj[k];
    if (!(d > 0)) return false;
    l(j, j) = std::sqrt(d);
    const double ljj = l(j, j);
    // Four rows at a time: each row's sum runs in the same order as
    // alone (the same roundings), and the four chains overlap.
    size_t i = j + 1;
    for (; i + 4 <= n; i += 4) {
      const double *a = &l.a[i * n], *b = a + n, *c = b + n, *e = c + n;
      double va = m(i, j), vb = m(i + 1, j), vc = m(i + 2, j), ve = m(i + 3, j);
      for (size_t k = 0; k < j; ++k) {
        va -= a[k] * lj[k];
        vb -= b[k] * lj[k];
        vc -= c[k] * lj[k];
        ve -= e[k] * lj[k];
      }
      l(i, j) = va / ljj;
      l(i + 1, j) = vb / ljj;
      l(i + 2, j) = vc / ljj;
      l(i + 3, j) = ve / ljj;
    }
    for (; i < n; ++i) {
      const double* a = &l.a[i * n];
      double v = m(i, j);
      for (size_t k = 0; k < j; ++k) v -= a[k] * lj[k];
      l(i, j) = v / ljj;
    }
  }
  *out = std::move(l);
  return true;
}

void forward_solve(const Matrix& l, std::vector<double>* b) {
  std::vector<double>& z = *b;
  for (size_t i = 0; i < l.rows; ++i) {
    double v = z[i];
    for (size_t k = 0; k < i; ++k) v -= l(i, k) * z[k];
    z[i] = v / l(i, i);
  }
}

void backward_solve(const Matrix& l, std::vector<double>* b) {
  std::vector<double>& z = *b;
  for (size_t i = l.rows; i-- > 0;) {
    double v = z[i];
    for (size_t k = i + 1; k < l.rows; ++k) v -= l(k, i) * z[k];
    z[i] = v / l(i, i);
  }
}

bool spd_inverse(const Matrix& m, Matrix* inv) {
  const size_t n = m.rows;
  double eps = 0, maxd = 0;
  for (size_t i = 0; i < n; ++i) maxd = std::max(maxd, m(i, i));
  for (int attempt = 0; attempt < 8; ++attempt) {
    Matrix l(n, n);
    bool ok = true;
    for (size_t j = 0; j < n && ok; ++j) {
      double d = m(j, j) + eps;
      for (size_t k = 0; k < j; ++k) d -= l(j, k) * l(j, k);
      if (!(d > 0)) {
        ok = false;
        break;
      }
      l(j, j) = std::sqrt(d);
      for (size_t i = j + 1; i < n; ++i) {
        double v = m(i, j);
        for (size_t k = 0; k < j; ++k) v -= l(i, k) * l(j, k);
        l(i, j) = v / l(j, j);
      }
    }
    if (ok) {
      // inv = L^-T L^-1, column by column.
      *inv = Matrix(n, n);
      for (size_t c = 0; c < n; ++c) {
        std::vector<double> z(n, 0.0);
        for (size_t i = 0; i < n; ++i) {
          double v = i == c ? 1.0 : 0.0;
          for (size_t k = 0; k < i; ++k) v -= l(i, k) * z[k];
          z[i] = v / l(i, i);
        }
        for (size_t i = n; i-- > 0;) {
          double v = z[i];
          for (size_t k = i + 1; k < n; ++k) v -= l(k, i) * (*inv)(k, c);
          (*inv)(i, c) = v / l(i, i);
        }
      }
      return attempt == 0;
    }
    eps = eps == 0 ? 1e-12 * std::max(maxd, 1.0) : eps * 100;
  }
  *inv = Matrix(n, n);
  return false;
}

}  // namespace simcache::sim

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC pop_options
#endif
