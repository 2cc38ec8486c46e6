// Small dense linear algebra for the calibration fit: Householder least
// squares, Lawson-Hanson non-negative least squares, and the diagonal of
// (A^T A)^-1 for standard errors. Sizes are tens of rows and columns.
#pragma once

#include <cstddef>
#include <vector>

namespace simcache::sim {

struct Matrix {
  size_t rows = 0, cols = 0;
  std::vector<double> a;  // row-major
  Matrix() = default;
  Matrix(size_t r, size_t c) : rows(r), cols(c), a(r * c, 0.0) {}
  double& operator()(size_t i, size_t j) { return a[i * cols + j]; }
  double operator()(size_t i, size_t j) const { return a[i * cols + j]; }
  // The submatrix of the listed columns.
  Matrix columns(const std::vector<size_t>& idx) const;
};

// Minimises |Ax - b|. Columns that are (numerically) dependent on earlier
// ones get x = 0. Returns the rank found.
size_t least_squares(const Matrix& A, const std::vector<double>& b, std::vector<double>* x);

// Lawson & Hanson (1974), "Solving Least Squares Problems", ch. 23:
// minimises |Ax - b| subject to x >= 0. Returns false if it did not
// converge within 3 x cols outer iterations (x then holds the last
// feasible point).
bool nnls(const Matrix& A, const std::vector<double>& b, std::vector<double>* x);

// diag((A^T A)^-1) for a full-column-rank A; false if A is rank deficient.
bool inverse_gram_diagonal(const Matrix& A, std::vector<double>* d);

// The part of column vector v orthogonal to the span of `basis` (each an
// orthonormal vector), with one re-orthogonalisation pass.
std::vector<double> orthogonal_part(const std::vector<std::vector<double>>& basis,
                                    std::vector<double> v);

double norm(const std::vector<double>& v);

// Inverse of a symmetric positive definite matrix by Cholesky; false if
// it is not positive definite (the inverse is then of M + eps I).
bool spd_inverse(const Matrix& m, Matrix* inv);

// Lower-triangular L with L L^T = m for a symmetric positive definite m;
// false if it is not positive definite. Reads m's lower triangle only.
bool cholesky(const Matrix& m, Matrix* l);
// Solves L z = b in place (forward substitution).
void forward_solve(const Matrix& l, std::vector<double>* b);
// Solves L^T z = b in place (back substitution); with forward_solve(),
// m z = b for m = L L^T.
void backward_solve(const Matrix& l, std::vector<double>* b);

}  // namespace simcache::sim
