// SPDX-License-Identifier: BSD-3-Clause
// Conservative coarsening and patch extraction: fine fields -> (context, fine) training samples.
#pragma once

#include <cstdint>
#include <vector>

#include "coupling/grid/local_slopes.hpp"
#include "coupling/grid/patch_map.hpp"

namespace finecast::coupling {

/// What goes into the context vector besides the coarse values of the variables, which field is
/// downscaled, and what the model's residual is taken from.
struct PatchOptions {
  bool static_features = true;  ///< sin lat, cos lat cos lon, cos lat sin lon of the coarse centre
  bool orography = false;       ///< area-weighted coarse orography (a fine field passed in)
  int rings = 0;                ///< patch.context_rings: 0 edge neighbours, K >= 1 (context_stencil.hpp)
  /// patch.relative_context: each field's coarse values enter the context as differences from
  /// the patch's own coarse value (whose slot then holds 0), so that the model sees the shape of
  /// the coarse neighbourhood, not its level: a model trained on one climate then does not meet
  /// unseen absolute values where the level differs (docs/evaluation.md).
  bool relative = false;
  int target = 0;  ///< the downscaled field is fields[target]
  /// Fine static covariates: each adds its block mean, its P within-block anomalies and its P
  /// deviations from the conservative interpolant of its own block means (the map must then be
  /// prepared with the interpolant: prepare_patch_map).
  int n_static = 0;
  /// patch.residual: interp (or regression). The patches carry the conservative interpolant of
  /// the target's coarse neighbourhood (`base`) and the fine values minus it (`residual`), which
  /// the model learns; the map must be prepared for it (prepare_patch_map).
  bool interp_base = false;
  /// patch.residual: regression's coefficients (patch_regression.hpp; 2 per static covariate, then
  /// one per local-slope term), once fitted: fill_contexts then adds the regression on the
  /// covariates to the base. Empty = none (or not yet fitted).
  std::vector<double> regression{};
  /// patch.local_slopes: with patch.residual regression, a third predictor for the covariates of
  /// local_slopes.terms, their deviation times the target's local coarse slope on them
  /// (local_slopes.hpp); off by default.
  LocalSlopeOptions local_slopes{};
  /// patch.global_blend: the global regression's coefficients (2 per static covariate: the fit
  /// without local-slope terms) and W, the share of the ensemble mean kept when sampling
  /// (blend_toward_global).
  std::vector<double> global_regression{};
  double global_blend = 1.0;
  /// patch.spread_regression: k, each patch's members spread around their mean times r2^k, r2 the
  /// global regression's mean square term over the patch (spread_by_regression); 0 = off.
  double spread_regression = 0.0;
};

/// Context length: n_vars * (1 + ring_count(map, rings)) + (static_features ? 3 : 0) +
/// (orography ? 1 : 0) + n_static * (1 + 2 P). 7 for one variable on an ICON grid with the
/// defaults.
int context_size(const PatchMap& map, int n_vars, const PatchOptions& options);

/// Where the static covariates start in the context: their n_static block means, then for each
/// covariate its P anomalies and its P deviations (2 n_static fields of P values, which the U-Net
/// and the graph denoiser read as input channels).
int static_offset(const PatchMap& map, int n_vars, const PatchOptions& options);

/// The position features of patch c (options.static_features): sin lat, cos lat cos lon and
/// cos lat sin lon of its coarse centre, into out[0..2].
void position_features(const PatchMap& map, int64_t c, float* out);

/// The fine fields at the end of the context: 2 per static covariate.
int static_channels(const PatchOptions& options);

/// One coupling step's samples, n patches of C context and P fine values, all patch-major.
struct Patches {
  int64_t n = 0;
  int C = 0, P = 0;
  std::vector<float> context;           ///< n*C, layout in docs/grids.md
  std::vector<float> fine;              ///< n*P fine values of the target field, canonical order
  std::vector<float> coarse;            ///< n area-weighted means of the target
  std::vector<float> base;              ///< n*P conservative interpolant of the target (interp_base only)
  std::vector<float> residual;          ///< n*P fine - base (interp_base only): what the model learns
  std::vector<float> global_interp;     ///< n*P patch.global_interpolant's (map.global_base), else empty
  std::vector<float> weights;           ///< n*P normalised area weights (each patch sums to 1)
  std::vector<double> area;             ///< n patch areas (PatchMap::patch_area; 1 on a map without)
  std::vector<uint8_t> valid;           ///< n: 0 when a fine value of the patch is missing
  int64_t n_invalid = 0;                ///< patches with a missing value (excluded from training)
  std::vector<float> coarse_vars;       ///< n_vars*n coarse means, variable-major (scratch, readable)
  std::vector<float> coarse_orography;  ///< n coarse orography means (when options.orography)
  std::vector<float> static_means;      ///< n_static*n block means of the covariates (scratch)
  std::vector<float> static_interp;     ///< n_static*n*P their conservative interpolant (scratch)
  /// The map, first patch and covariates' block means (n_static*N, all patches) static_interp
  /// was interpolated from: the covariates are static, so a step with the same ones reuses it.
  const PatchMap* static_interp_map = nullptr;
  int64_t static_interp_first = -1;
  std::vector<float> static_interp_of;
  std::vector<double> local_slopes;  ///< terms*n local slopes of the target (options.local_slopes)
  std::vector<float> zeros;          ///< n zeros: sampler_coarse with a residual base
};

/// Builds the patches of one step. fields[v] points at a global fine field (n_fine values by
/// global cell index); fields[options.target] is the downscaled target. `orography` is a fine
/// field, used when options.orography (else may be null). `statics` are options.n_static fine
/// covariates, already normalised by the caller (static_covariates.hpp). A NaN or infinite fine
/// value of a field, the orography or a covariate makes its patch invalid (counted in
/// n_invalid); a ring cell that is missing (-1) or whose coarse value is missing contributes the
/// patch's own coarse value. The context layout is docs/grids.md's. Reuses out's storage: no
/// allocation once the sizes are stable.
void extract_patches(const PatchMap& map, const std::vector<const float*>& fields, const float* orography,
                     const std::vector<const float*>& statics, const PatchOptions& options, Patches& out);

/// The same without static covariates.
void extract_patches(const PatchMap& map, const std::vector<const float*>& fields, const float* orography,
                     const PatchOptions& options, Patches& out);

/// The two stages of extract_patches, for patches spread over several trainer ranks.
///
/// coarsen_patches fills what a patch's own fine cells give (fine values of the target,
/// weights, coarse means, the coarse orography, valid flags) for the patches of `local`: the
/// whole map, or a trainer's shard (shard_map), whose fine cells are its slots.
///
/// fill_contexts then builds the contexts (and the residual base) of those patches, which are
/// patches first..first+local.n_coarse-1 of `global` (the whole map, prepared for the options'
/// rings and interpolant), from the coarse means of every patch: all_coarse_vars
/// [n_vars][global.n_coarse], all_static_means [n_static][global.n_coarse] (the block means of
/// the normalised covariates), and the covariates' fine values on `local`'s cells. A patch
/// whose covariate mean is missing becomes invalid. extract_patches is both stages on one map;
/// shards give bitwise the same patches.
void coarsen_patches(const PatchMap& local, const std::vector<const float*>& fields, const float* orography,
                     const PatchOptions& options, Patches& out);
void fill_contexts(const PatchMap& global, int64_t first, const PatchMap& local, const float* all_coarse_vars,
                   int n_vars, const float* all_static_means, const std::vector<const float*>& statics,
                   const PatchOptions& options, Patches& out);

/// Patches first..first+count-1 of `global` as a map of their own: fine cells renumbered to
/// slots (patch c, canonical position k -> c * P + k), weights, centres and neighbours (still
/// global patch ids) kept. The slots of a trainer rank's shard; its contexts come from the
/// global map (fill_contexts).
PatchMap shard_map(const PatchMap& global, int64_t first, int64_t count);

/// The coarse values the sampler conditions on: the patches' coarse means, or with a residual
/// base (options.interp_base) zeros, since the model then draws the residual, whose patch mean
/// is 0. add_patch_base adds the base to every drawn member [n][members][P] (nothing without a
/// base).
const float* sampler_coarse(Patches& patches);
void add_patch_base(const Patches& patches, int64_t members, float* samples);

/// Area-weighted coarse means of one fine field: out[n_coarse].
void coarsen(const PatchMap& map, const float* field, float* out);

/// Writes patch values [n_coarse*P] (canonical order) into a fine field [n_fine]; cells outside
/// every patch (cropped lat-lon rows/columns) are left untouched.
void scatter_patches(const PatchMap& map, const float* patch_values, float* field);

}  // namespace finecast::coupling
