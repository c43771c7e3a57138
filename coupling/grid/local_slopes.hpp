// SPDX-License-Identifier: BSD-3-Clause
// Local slopes of a coarse field on coarse covariates: around every coarse cell, the least-squares
// slope of the target's coarse values on the static covariates' coarse means over the cells
// within a few edge steps, shrunk toward the whole field's slope. The slope of temperature on
// surface height is the coarse field's own lapse rate, which changes across a domain (steep in a
// mixed maritime winter, flat or inverted over a cold continent); a regression that applies it
// at the fine scale carries to a region it was not fitted on, where one global coefficient does
// not (docs/evaluation.md, "Local slopes"). Shared by the plugin's regression base
// (patch_regression.hpp) and finecast-eval's regression_local baseline. No torch, no MPI.
#pragma once

#include <cstdint>
#include <vector>

namespace finecast::coupling {

/// patch.local_slopes (docs/training.md).
struct LocalSlopeOptions {
  int rings = 0;           ///< the window: the cells within `rings` edge steps (0 = no local slopes)
  double ridge = 0.1;      ///< shrinkage toward 0, per cell of the window and in units of the covariate's variance
  std::vector<int> terms;  ///< the covariates (indices) whose local slope is a predictor
  bool enabled() const { return rings > 0 && !terms.empty(); }
};

/// The local slopes of the coarse `target` (n values) on the S coarse covariates
/// (covariates[s * n + p]), for the cells first..first+count-1: slopes[t * count + i] is the slope
/// on covariate terms[t] around cell first + i. Each cell's fit is the centred least squares of the
/// target on all S covariates over the cells within options.rings steps of it through the
/// neighbour table (n x n_neighbours, -1 = none; the cell itself included), a ridge regression:
/// ridge * m * var_s * b_s^2 is added for each covariate (m: the window's valid cells, var_s:
/// covariate s's variance over the field), so that a window whose covariates hardly vary (open
/// sea) gets a slope near 0 instead of noise, and the ridge has no units. Shrinking toward 0, not
/// toward the field's own slope: a field's slope on height mixes in what height correlates with
/// over a domain (latitude, the land-sea contrast: +0.007 K/m for EUR-11's January tas, whose
/// lapse rate is negative), and pulls the local slopes toward it (docs/evaluation.md). A cell whose
/// target or a covariate is not finite is left out of every fit; a window without valid cells, or
/// a singular fit with ridge 0, gets 0. Deterministic: no dependence on how cells are split over
/// ranks.
template <typename T>
void local_slopes(const int64_t* neighbours, int n_neighbours, int64_t n, const T* target, const T* covariates, int S,
                  const LocalSlopeOptions& options, int64_t first, int64_t count, std::vector<double>& slopes);

}  // namespace finecast::coupling
