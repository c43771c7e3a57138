// SPDX-License-Identifier: BSD-3-Clause
// What the model is conditioned on and what it learns, on the trainer rank: the conditioning
// spec from the config (coupling/conditioning/conditioning_spec.hpp: grid, context rings, target,
// static covariates, residual base), the static covariates' normalisation, the held-out patches,
// and the spec as checkpoints record it, which finecast-downscale reads back.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "coupling/conditioning/conditioning_pipeline.hpp"
#include "coupling/conditioning/conditioning_spec.hpp"
#include "coupling/grid/patch_map.hpp"
#include "coupling/grid/patches.hpp"
#include "coupling/grid/static_covariates.hpp"
#include "plugin/config.hpp"

namespace finecast::plugin {

/// The trainer rank's conditioning state (one member of TrainerState).
struct ConditioningState {
  /// From the config; its static covariates' normalisation is fixed at the first step, or taken
  /// from the resumed checkpoint (the regression coefficients live in the PatchOptions).
  coupling::ConditioningSpec spec;
  std::vector<std::vector<float>> statics;  ///< the normalised fine covariates on the trainer's slots
  std::vector<uint8_t> held_out;            ///< per patch: 1 = never trained on (train.hold_out)
  int64_t n_held_out = 0;
};

/// The conditioning the config asks for (grid.*, fields, target, patch.*), the target's units as
/// the host gives them ("" = unknown).
coupling::ConditioningSpec conditioning_spec(const Config& config, const std::string& target_units);

/// Flags the patches of train.hold_out: a box, those whose fine cells all lie in it (in the grid's
/// own coordinates: rotated on rotated-pole grids); FILE:VAR, a mask on the fine grid, those with
/// any finite non-zero cell (finecast-eval's rule). Logs how many are held out; a hold-out that
/// holds none, or every patch, or a mask that cannot be read onto the grid is a ConfigError.
void setup_conditioning(const Config& config, const coupling::ConditioningGrid& grid, ConditioningState& state);

/// The static covariates of a trainer's patches, at the first step (with patch.static_refresh, at
/// every step, with the first step's norms): `raw[s]` is the host's field s on `local`'s cells
/// (the trainer's slots). Normalises them into state.statics with the norms of a resumed
/// checkpoint or of an earlier step, or else with the area-weighted moments of the whole field
/// (`sum_over_trainers` adds each trainer's moments up, in place: every trainer gets the same
/// norms); returns their block means on local's patches, [n_static][local.n_coarse], which
/// the trainers then share.
std::vector<float> prepare_statics(const Config& config, const coupling::PatchMap& local,
                                   const std::vector<const float*>& raw, ConditioningState& state,
                                   const std::function<void(double* values, int n)>& sum_over_trainers);

/// The step's valid patches less the held-out ones (patches first.. of the grid): what the
/// buffer keeps.
void training_valid(const ConditioningState& state, int64_t first, const coupling::Patches& patches,
                    std::vector<uint8_t>& train_valid);

/// patch.residual: regression, when `options` has no coefficients yet (the first step of a run
/// that did not resume them, or a refit, patch.regression_refit; nothing otherwise): fits them on
/// the training patches (`train_valid`; every trainer's data, added up by `sum_over_trainers`),
/// logs them (a refit at debug level, naming `refit_at`, the step), keeps them in `options`
/// (fill_contexts applies them from the next step on) and adds the fit to these patches' base.
/// `global` and `options` are those the contexts were built with. Throws ConfigError when the
/// fit is singular.
void fit_regression_base(const Config& config, const coupling::PatchMap& global, coupling::PatchOptions& options,
                         const std::vector<uint8_t>& train_valid, coupling::Patches& patches,
                         const ConditioningState& state,
                         const std::function<void(double* values, int n)>& sum_over_trainers,
                         const std::string& refit_at = "");

/// state.statics as pointers (empty when there are none).
std::vector<const float*> static_pointers(const ConditioningState& state);

/// What the buffer stores as the fine values of a sample: the fine field, or with
/// patch.residual: interp or regression its difference from the residual base.
const float* training_targets(const Config& config, const coupling::Patches& patches);

/// The spec a checkpoint records (docs/offline.md): the run's, with the regression coefficients
/// fitted so far (`options`: the live ones).
coupling::ConditioningSpec checkpoint_spec(const ConditioningState& state, const coupling::PatchOptions& options);

}  // namespace finecast::plugin
