// SPDX-License-Identifier: BSD-3-Clause
// Weighted normal equations and their Cholesky solve.
#include "common/least_squares.hpp"

#include <algorithm>
#include <cmath>

namespace finecast {

bool cholesky_solve(std::vector<double> A, std::vector<double> b, int n, std::vector<double>& x) {
  double scale = 0.0;
  for (int i = 0; i < n; ++i) scale = std::max(scale, A[i * n + i]);
  for (int j = 0; j < n; ++j) {
    double d = A[j * n + j];
    for (int k = 0; k < j; ++k) d -= A[j * n + k] * A[j * n + k];
    // Relative to the largest diagonal: a predictor that is a combination of the others leaves a
    // pivot of rounding size.
    if (!(d > 1e-10 * scale)) return false;
    const double l = std::sqrt(d);
    A[j * n + j] = l;
    for (int i = j + 1; i < n; ++i) {
      double s = A[i * n + j];
      for (int k = 0; k < j; ++k) s -= A[i * n + k] * A[j * n + k];
      A[i * n + j] = s / l;
    }
  }
  for (int i = 0; i < n; ++i) {  // L y = b
    double s = b[i];
    for (int k = 0; k < i; ++k) s -= A[i * n + k] * b[k];
    b[i] = s / A[i * n + i];
  }
  for (int i = n - 1; i >= 0; --i) {  // L^T x = y
    double s = b[i];
    for (int k = i + 1; k < n; ++k) s -= A[k * n + i] * b[k];
    b[i] = s / A[i * n + i];
  }
  x = b;
  return true;
}

NormalEquations::NormalEquations(int m) : m_(m), sums_(static_cast<size_t>(m * m + m + 3), 0.0) {}

void NormalEquations::add(const double* x, double y, double w) {
  double* xtx = sums_.data();
  double* xty = xtx + m_ * m_;
  for (int a = 0; a < m_; ++a) {
    xty[a] += w * x[a] * y;
    for (int b = 0; b <= a; ++b) xtx[a * m_ + b] += w * x[a] * x[b];
  }
  double* tail = xty + m_;  // y'Wy, sum of weights, count
  tail[0] += w * y * y;
  tail[1] += w;
  tail[2] += 1.0;
}

bool NormalEquations::solve(Solution& out) const {
  const double sw = weight();
  if (points() == 0 || !(sw > 0.0)) return false;
  const int m = m_;
  std::vector<double> A(sums_.begin(), sums_.begin() + m * m);
  for (int a = 0; a < m; ++a)
    for (int b = a + 1; b < m; ++b) A[a * m + b] = A[b * m + a];
  const std::vector<double> xty(sums_.begin() + m * m, sums_.begin() + m * m + m);
  if (!cholesky_solve(A, xty, m, out.coef)) return false;
  // Residual sum of squares after the fit: y'y - 2 c'X'y + c'X'X c.
  const double yty = sums_[static_cast<size_t>(m * m + m)];
  double rss = yty;
  for (int a = 0; a < m; ++a) {
    rss -= 2.0 * out.coef[a] * xty[a];
    for (int b = 0; b < m; ++b) rss += out.coef[a] * A[a * m + b] * out.coef[b];
  }
  out.rms_before = std::sqrt(yty / sw);
  out.rms_after = std::sqrt(std::max(0.0, rss) / sw);
  return true;
}

}  // namespace finecast
