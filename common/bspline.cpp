// SPDX-License-Identifier: BSD-3-Clause
// The cubic B-spline prefilter (natural and periodic), the coefficients beyond the ends and the
// one-axis interpolation matrix.
#include "common/bspline.hpp"

#include <algorithm>
#include <cmath>

namespace finecast {

void bspline_prefilter(double* c, int n, std::ptrdiff_t stride, bool periodic) {
  auto at = [&](int i) -> double& { return c[i * stride]; };
  if (n <= 1) return;
  if (!periodic) {
    if (n <= 2) return;
    // Thomas algorithm on the interior unknowns 1..n-2 (diagonal 4, off-diagonals 1).
    const int m = n - 2;
    std::vector<double> cp(static_cast<std::size_t>(m)), d(static_cast<std::size_t>(m));
    for (int i = 0; i < m; ++i) d[i] = 6.0 * at(i + 1);
    d[0] -= at(0);
    d[m - 1] -= at(n - 1);
    double beta = 4.0;
    cp[0] = 1.0 / beta;
    d[0] /= beta;
    for (int i = 1; i < m; ++i) {
      beta = 4.0 - cp[i - 1];
      cp[i] = 1.0 / beta;
      d[i] = (d[i] - d[i - 1]) / beta;
    }
    for (int i = m - 2; i >= 0; --i) d[i] -= cp[i] * d[i + 1];
    for (int i = 0; i < m; ++i) at(i + 1) = d[i];
    return;
  }
  if (n == 2) {  // both neighbours of each sample are the other one: 4 a0 + 2 a1 = 6 c0
    const double c0 = at(0), c1 = at(1);
    at(0) = (6.0 * (4.0 * c0 - 2.0 * c1)) / 12.0;
    at(1) = (6.0 * (4.0 * c1 - 2.0 * c0)) / 12.0;
    return;
  }
  // The causal and anti-causal recursive filters of the pole z = sqrt(3) - 2 (Unser 1999), with
  // their periodic sums as initial values.
  const double z = std::sqrt(3.0) - 2.0;
  const double zn = std::pow(z, n);
  std::vector<double> x(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) x[i] = 6.0 * at(i);
  double s = 0.0, zk = 1.0;
  for (int k = 0; k < n; ++k, zk *= z) s += zk * x[(n - k) % n];
  std::vector<double> cplus(static_cast<std::size_t>(n));
  cplus[0] = s / (1.0 - zn);
  for (int i = 1; i < n; ++i) cplus[i] = x[i] + z * cplus[i - 1];
  s = 0.0;
  zk = 1.0;
  for (int k = 0; k < n; ++k, zk *= z) s += zk * cplus[(n - 1 + k) % n];
  std::vector<double> cminus(static_cast<std::size_t>(n));
  cminus[n - 1] = -z * s / (1.0 - zn);
  for (int i = n - 2; i >= 0; --i) cminus[i] = z * (cminus[i + 1] - cplus[i]);
  for (int i = 0; i < n; ++i) at(i) = cminus[i];
}

double bspline_coefficient(const double* a, std::ptrdiff_t stride, int j, int n, bool periodic) {
  if (n == 1) return a[0];
  if (periodic) return a[static_cast<std::ptrdiff_t>(((j % n) + n) % n) * stride];
  if (j < 0) return 2.0 * a[0] - bspline_coefficient(a, stride, -j, n, periodic);
  if (j > n - 1)
    return 2.0 * a[static_cast<std::ptrdiff_t>(n - 1) * stride] -
           bspline_coefficient(a, stride, 2 * (n - 1) - j, n, periodic);
  return a[static_cast<std::ptrdiff_t>(j) * stride];
}

std::vector<double> bspline_axis_matrix(int nb, int k, bool periodic) {
  const int n = nb * k;
  std::vector<double> m(static_cast<std::size_t>(n) * nb, 0.0);
  // Column b is the interpolant of the unit block value e_b (the interpolant is linear).
  std::vector<double> a(static_cast<std::size_t>(nb));
  for (int b = 0; b < nb; ++b) {
    std::fill(a.begin(), a.end(), 0.0);
    a[b] = 1.0;
    bspline_prefilter(a.data(), nb, 1, periodic);
    for (int i = 0; i < n; ++i) {
      const double u = (i - 0.5 * (k - 1)) / k;
      const int b0 = static_cast<int>(std::floor(u));
      const std::array<double, 4> w = bspline_weights(u - b0);
      double v = 0.0;
      for (int t = 0; t < 4; ++t) v += w[t] * bspline_coefficient(a.data(), 1, b0 - 1 + t, nb, periodic);
      m[static_cast<std::size_t>(i) * nb + b] = v;
    }
  }
  return m;
}

}  // namespace finecast
