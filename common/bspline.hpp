// SPDX-License-Identifier: BSD-3-Clause
// The cubic B-spline interpolant of block means along one axis, shared by finecast-eval's
// bspline baselines (eval/baselines) and the patch base interpolant patch.interpolant: bspline
// (coupling/grid/context_stencil), so both interpolate in exactly the same way.
#pragma once

#include <array>
#include <cstddef>
#include <vector>

namespace finecast {

/// Solves (a[i-1] + 4 a[i] + a[i+1]) / 6 = c[i] for the cubic B-spline coefficients of n
/// samples with stride `stride`, in place: periodic (cyclic), or natural (a = c at both ends,
/// i.e. zero second derivative there, which keeps linear sequences unchanged).
void bspline_prefilter(double* c, int n, std::ptrdiff_t stride, bool periodic);

/// Cubic B-spline weights of the coefficients at b0-1 .. b0+2 for t in [0, 1).
inline std::array<double, 4> bspline_weights(double t) {
  const double t2 = t * t, t3 = t2 * t, u = 1.0 - t;
  return {u * u * u / 6.0, (3.0 * t3 - 6.0 * t2 + 4.0) / 6.0, (-3.0 * t3 + 3.0 * t2 + 3.0 * t + 1.0) / 6.0, t3 / 6.0};
}

/// The coefficient at index j of the n at a[0], a[stride], ... beyond the ends: periodic, or
/// extended point-symmetrically about the end coefficient (a[-j] = 2 a[0] - a[j]), which
/// continues the natural spline linearly.
double bspline_coefficient(const double* a, std::ptrdiff_t stride, int j, int n, bool periodic);

/// The interpolant along one axis of nb blocks of k cells as a matrix [nb * k][nb]: row i holds
/// the weights of the block values at fine position i (block b's centre at b k + (k - 1) / 2).
/// Each row sums to 1; the weights of a row decay as 0.268^distance away from its position.
std::vector<double> bspline_axis_matrix(int nb, int k, bool periodic);

}  // namespace finecast
