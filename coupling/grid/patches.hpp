// SPDX-License-Identifier: BSD-3-Clause
// Conservative coarsening and patch extraction: fine fields -> (context, fine) training samples.
#pragma once

#include <cstdint>
#include <vector>

#include "coupling/grid/patch_map.hpp"

namespace finecast::coupling {

/// What goes into the context vector besides the coarse values of the variables.
struct PatchOptions {
  bool static_features = true;  ///< sin lat, cos lat cos lon, cos lat sin lon of the coarse centre
  bool orography = false;       ///< area-weighted coarse orography (a fine field passed in)
};

/// Context length: n_vars * (1 + n_neighbours) + (static_features ? 3 : 0) + (orography ? 1 : 0).
/// 7 for one variable on an ICON grid with the defaults.
int context_size(const PatchMap& map, int n_vars, const PatchOptions& options);

/// One coupling step's samples, n patches of C context and P fine values, all patch-major.
struct Patches {
  int64_t n = 0;
  int C = 0, P = 0;
  std::vector<float> context;      ///< n*C, layout in docs/grids.md
  std::vector<float> fine;         ///< n*P fine values of the first (target) field, canonical order
  std::vector<float> coarse;       ///< n area-weighted means of the target (= context[c*C])
  std::vector<float> weights;      ///< n*P normalised area weights (each patch sums to 1)
  std::vector<uint8_t> valid;      ///< n: 0 when a fine value of the patch is missing
  int64_t n_invalid = 0;           ///< patches with a missing value (excluded from training)
  std::vector<float> coarse_vars;  ///< n_vars*n coarse means, variable-major (scratch, readable)
  std::vector<float> coarse_orography;  ///< n coarse orography means (when options.orography)
};

/// Builds the patches of one step. fields[v] points at a global fine field (n_fine values by
/// global cell index); fields[0] is the downscaled target. `orography` is a fine field, used when
/// options.orography (else may be null). A NaN or infinite fine value makes its patch invalid
/// (counted in n_invalid); a neighbour that is missing (-1) or whose coarse value is missing
/// contributes the patch's own coarse value. Reuses out's storage: no allocation once the sizes are
/// stable.
void extract_patches(const PatchMap& map, const std::vector<const float*>& fields,
                     const float* orography, const PatchOptions& options, Patches& out);

/// The two stages of extract_patches, for patches spread over several trainer ranks:
/// coarsen_patches fills everything but the context (fine values, weights, coarse means, valid
/// flags) from the patches' own fine cells; fill_contexts then builds the contexts from the
/// coarse means of every patch (all_coarse_vars [n_vars][n_all], the neighbours' included) for
/// the map's patches, which are patches first..first+n_coarse-1 of all. extract_patches is both
/// on one map, and a shard (shard_map) gives bitwise the same patches.
void coarsen_patches(const PatchMap& map, const std::vector<const float*>& fields, const float* orography,
                     const PatchOptions& options, Patches& out);
void fill_contexts(const PatchMap& map, int64_t first, const float* all_coarse_vars, int64_t n_all, int n_vars,
                   const PatchOptions& options, Patches& out);

/// Patches first..first+count-1 of `global` as a map of their own: fine cells renumbered to
/// slots (patch c, canonical position k -> c * P + k), weights, centres and neighbours (still
/// global patch ids) kept. The slots of a trainer rank's shard.
PatchMap shard_map(const PatchMap& global, int64_t first, int64_t count);

/// Area-weighted coarse means of one fine field: out[n_coarse].
void coarsen(const PatchMap& map, const float* field, float* out);

/// Writes patch values [n_coarse*P] (canonical order) into a fine field [n_fine]; cells outside
/// every patch (cropped lat-lon rows/columns) are left untouched.
void scatter_patches(const PatchMap& map, const float* patch_values, float* field);

}  // namespace finecast::coupling
