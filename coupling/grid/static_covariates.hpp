// SPDX-License-Identifier: BSD-3-Clause
// Fine static covariates (patch.static: surface height, land fraction, ...): their
// normalisation, fixed when a model first sees them and recorded in its checkpoints.
#pragma once

#include <string>
#include <vector>

#include "coupling/grid/patch_map.hpp"

namespace finecast::coupling {

/// x -> (x - mean) / scale, the same for every cell.
struct StaticNorm {
  double mean = 0.0;
  double scale = 1.0;
};

/// The area-weighted mean and standard deviation of a fine field over the cells of the patches
/// (finite values only; a constant field gets scale 1). Throws GridError naming `what` when no
/// value is finite.
StaticNorm static_normalisation(const PatchMap& map, const float* field, const std::string& what);

/// The sums static_normalisation is made of (sum of weights, of w x, of w x^2 over the finite
/// values), so that the parts of a field on several ranks add up to the whole field's.
struct StaticMoments {
  double w = 0.0, wx = 0.0, wxx = 0.0;
};
StaticMoments static_moments(const PatchMap& map, const float* field);
StaticNorm static_normalisation(const StaticMoments& moments, const std::string& what);

/// out[i] = (in[i] - mean) / scale for n values (NaN stays NaN).
void normalise_static(const StaticNorm& norm, const float* in, float* out, int64_t n);

/// "mean scale" pairs joined by ';', with round-trip precision, for checkpoint metadata; and back
/// (throws ConfigError naming `source` on anything else).
std::string format_static_norms(const std::vector<StaticNorm>& norms);
std::vector<StaticNorm> parse_static_norms(const std::string& text, const std::string& source);

}  // namespace finecast::coupling
