// SPDX-License-Identifier: BSD-3-Clause
// Keys' cubic convolution kernel (a = -1/2, Catmull-Rom), shared by the patch base interpolant
// (coupling/grid) and the evaluation's bicubic baselines (eval), so both interpolate
// block means in exactly the same way.
#pragma once

#include <array>

namespace finecast {

/// Weights of the samples at -1, 0, 1, 2 for a point at fraction t in [0, 1) between samples 0
/// and 1. They sum to 1 and reproduce quadratics.
inline std::array<double, 4> keys_cubic_weights(double t) {
  const double t2 = t * t, t3 = t2 * t;
  return {0.5 * (-t3 + 2 * t2 - t), 0.5 * (3 * t3 - 5 * t2 + 2), 0.5 * (-3 * t3 + 4 * t2 + t), 0.5 * (t3 - t2)};
}

}  // namespace finecast
