// SPDX-License-Identifier: BSD-3-Clause
// Patch options from the config, static covariates' normalisation, held-out patches, the
// residual base, and their record in checkpoints.
#include "plugin/comin_plugin/conditioning.hpp"

#include <algorithm>
#include <optional>

#include "common/error.hpp"
#include "common/log.hpp"
#include "common/region.hpp"
#include "common/schema.hpp"
#include "coupling/grid/context_stencil.hpp"
#include "coupling/grid/patch_regression.hpp"
#include "coupling/io/static_field.hpp"

namespace finecast::plugin {

coupling::ConditioningSpec conditioning_spec(const Config& cfg, const std::string& target_units) {
  coupling::ConditioningSpec spec;
  // Every settable key as configured: the config and the spec share their settings part.
  static_cast<coupling::ConditioningSettings&>(spec) = cfg;
  spec.target = target_field(cfg);
  spec.patch.interpolant = coupling::resolve_interpolant(cfg.patch.interpolant, cfg.grid.type == GridType::kLatLon);
  spec.target_units = target_units;
  return spec;
}

void setup_conditioning(const Config& cfg, const coupling::ConditioningGrid& grid, ConditioningState& state) {
  const coupling::PatchMap& map = grid.map;
  state.held_out.assign(static_cast<size_t>(map.n_coarse), 0);
  state.n_held_out = 0;
  if (cfg.train.hold_out.empty()) return;
  // Boxes: the patches wholly inside one (in the grid's own coordinates); FILE:VAR: those with a
  // flagged (finite, non-zero) fine cell, the rule of finecast-eval's --hold-out.
  const std::vector<char> held = coupling::held_out_patches(grid, cfg.train.hold_out, cfg.source + ": train.hold_out");
  std::copy(held.begin(), held.end(), state.held_out.begin());
  for (uint8_t h : state.held_out) state.n_held_out += h;
  if (state.n_held_out == map.n_coarse)
    throw ConfigError(cfg.source + ": train.hold_out " + cfg.train.hold_out + ": every patch " +
                      (is_regions_text(cfg.train.hold_out) ? "lies inside a box" : "has a flagged cell") +
                      "; nothing would be trained on");
  log::info("train.hold_out " + cfg.train.hold_out + ": " + std::to_string(state.n_held_out) + " of " +
            std::to_string(map.n_coarse) + " patches are never trained on (their coarse values stay in the context)");
}

std::vector<float> prepare_statics(const Config& cfg, const coupling::PatchMap& local,
                                   const std::vector<const float*>& raw, ConditioningState& state,
                                   const std::function<void(double*, int)>& sum_over_trainers) {
  const int n_static = static_cast<int>(cfg.patch.statics.size());
  if (static_cast<int>(raw.size()) != n_static)
    throw InternalError("prepare_statics: " + std::to_string(raw.size()) + " static covariates for " +
                        std::to_string(n_static) + " in patch.static");
  // With the norms of the resumed checkpoint when there are some (the model was trained on those).
  const bool fixed = static_cast<int>(state.spec.static_norms.size()) == n_static;
  if (!fixed) {
    std::vector<double> moments;
    for (int s = 0; s < n_static; ++s) {
      const coupling::StaticMoments m = coupling::static_moments(local, raw[s]);
      moments.insert(moments.end(), {m.w, m.wx, m.wxx});
    }
    sum_over_trainers(moments.data(), static_cast<int>(moments.size()));
    state.spec.static_norms.clear();
    for (int s = 0; s < n_static; ++s)
      state.spec.static_norms.push_back(coupling::static_normalisation(
          coupling::StaticMoments{moments[3 * s], moments[3 * s + 1], moments[3 * s + 2]},
          "patch.static \"" + cfg.patch.statics[s] + "\""));
  }
  const int64_t n_cells = local.n_coarse * local.patch_size, n = local.n_coarse;
  const bool first = state.statics.empty();  // a refresh (patch.static_refresh) is not logged
  if (first) state.statics.assign(static_cast<size_t>(n_static), std::vector<float>(static_cast<size_t>(n_cells)));
  std::vector<float> means(static_cast<size_t>(n_static * n));
  for (int s = 0; s < n_static; ++s) {
    coupling::normalise_static(state.spec.static_norms[s], raw[s], state.statics[s].data(), n_cells);
    coupling::coarsen(local, state.statics[s].data(), means.data() + s * n);
    if (first)
      log::info("Static covariate " + cfg.patch.statics[s] + ": normalised with mean " +
                std::to_string(state.spec.static_norms[s].mean) + ", scale " +
                std::to_string(state.spec.static_norms[s].scale) + (fixed ? " (from the checkpoint)" : "") +
                (cfg.patch.static_refresh ? "; gathered at every coupling step (patch.static_refresh)" : ""));
  }
  return means;
}

void training_valid(const ConditioningState& state, int64_t first, const coupling::Patches& patches,
                    std::vector<uint8_t>& train_valid) {
  train_valid = patches.valid;
  if (state.n_held_out > 0)
    for (int64_t c = 0; c < patches.n; ++c)
      if (state.held_out[static_cast<size_t>(first + c)]) train_valid[static_cast<size_t>(c)] = 0;
}

namespace {

/// patch.global_blend's target: the base's regression without its local-slope terms, fitted on
/// the same training patches (their residual from the interpolant alone; `fitted_on` names them);
/// the base's own coefficients when it has no local slopes and no interpolant of its own
/// (patch.global_interpolant: then the fit is of the fine values minus that one). Fitted whatever patch.global_blend
/// is, so that the checkpoint can be sampled with a blend later (finecast-downscale --global-blend), and refitted with
/// the base (patch.regression_refit). Returns the fit when it is one of its own.
std::optional<coupling::RegressionFit> fit_global_regression(const Config& cfg, const coupling::PatchMap& global,
                                                             coupling::PatchOptions& options,
                                                             const std::vector<uint8_t>& train_valid,
                                                             const coupling::Patches& patches,
                                                             const std::function<void(double*, int)>& sum_over_trainers,
                                                             const std::string& fitted_on) {
  const bool own_interp = !patches.global_interp.empty();
  if (!options.local_slopes.enabled() && !own_interp) {
    options.global_regression = options.regression;
    return std::nullopt;
  }
  coupling::PatchOptions flat = options;
  flat.local_slopes = {};
  flat.regression.clear();
  std::vector<float> target;
  if (own_interp) {
    target.resize(patches.fine.size());
    for (size_t i = 0; i < target.size(); ++i) target[i] = patches.fine[i] - patches.global_interp[i];
  }
  coupling::RegressionFitter fitter(coupling::regression_names(cfg.patch.statics, flat), "regression_cons");
  coupling::add_regression_data(global, static_cast<int>(cfg.fields.size()), flat, patches, train_valid.data(), fitter,
                                own_interp ? target.data() : nullptr);
  sum_over_trainers(fitter.sums().data(), static_cast<int>(fitter.sums().size()));
  try {
    coupling::RegressionFit fit = fitter.solve(fitted_on);
    options.global_regression = fit.coef;
    return fit;
  } catch (const ConfigError& e) {
    throw ConfigError(cfg.source + ": patch.global_blend's global regression: " + e.what());
  }
}

}  // namespace

void fit_regression_base(const Config& cfg, const coupling::PatchMap& global, coupling::PatchOptions& options,
                         const std::vector<uint8_t>& train_valid, coupling::Patches& patches,
                         const ConditioningState& state, const std::function<void(double*, int)>& sum_over_trainers,
                         const std::string& refit_at) {
  if (cfg.patch.residual != Residual::kRegression) return;
  const int n_vars = static_cast<int>(cfg.fields.size());
  if (!options.regression.empty()) return;  // fitted at an earlier step, or resumed
  // finecast-eval's fitter and names: regression_cons, or regression_local with local-slope terms.
  coupling::RegressionFitter fitter(coupling::regression_names(cfg.patch.statics, options),
                                    options.local_slopes.enabled() ? "regression_local" : "regression_cons");
  coupling::add_regression_data(global, n_vars, options, patches, train_valid.data(), fitter);
  sum_over_trainers(fitter.sums().data(), static_cast<int>(fitter.sums().size()));
  const std::string fitted_on =
      refit_at.empty() ? "the first step's training patches" : "the training patches of " + refit_at;
  coupling::RegressionFit fit;
  try {
    fit = fitter.solve(fitted_on);
  } catch (const ConfigError& e) {
    throw ConfigError(cfg.source + ": patch.residual regression: " + e.what());
  }
  options.regression = fit.coef;
  std::optional<coupling::RegressionFit> flat_fit;
  if (options.global_regression.empty())
    flat_fit = fit_global_regression(cfg, global, options, train_valid, patches, sum_over_trainers, fitted_on);
  // Logged per unit of each covariate as the host gives it (the context holds them normalised),
  // as finecast-eval reports its fit.
  std::vector<double> scales;
  for (const auto& norm : state.spec.static_norms) scales.push_back(norm.scale);
  coupling::RegressionFit shown = coupling::per_covariate_unit(fit, scales);
  shown.local_rings = options.local_slopes.rings;
  shown.local_ridge = options.local_slopes.ridge;
  if (!refit_at.empty()) {
    log::debug("patch.residual regression refitted at " + refit_at +
               " (patch.regression_refit): " + coupling::describe(shown) +
               (flat_fit
                    ? "; the global regression: " + coupling::describe(coupling::per_covariate_unit(*flat_fit, scales))
                    : std::string()));
    coupling::add_regression_base(global, n_vars, options, patches);
    return;
  }
  log::info("patch.residual regression: " + coupling::describe(shown) +
            (cfg.patch.regression_refit ? "; refitted at every coupling step (patch.regression_refit)" : ""));
  if (options.global_blend < 1.0)
    log::info("patch.global_blend " + schema::format_real(options.global_blend) +
              ": each sampling's ensemble mean moves to the global regression + " +
              schema::format_real(options.global_blend) + " x (mean - it), the members' deviations kept; " +
              (flat_fit
                   ? "the global regression" +
                         (cfg.patch.global_interpolant != coupling::Interpolant::kAuto
                              ? " (on patch.global_interpolant " + schema::name_of(cfg.patch.global_interpolant) + ")"
                              : std::string()) +
                         ": " + coupling::describe(coupling::per_covariate_unit(*flat_fit, scales))
                   : std::string("the global regression is the base's own (no local slopes)")));
  // finecast-eval's warning, at training time: covariates that explain under 2% of the residual's
  // variance are uninformative or not where the data is (issue 26: ICON surface fields averaged
  // onto a stretched grid file's geometry while the data lay on the uniform one explained 0.9%).
  const double explained = fit.explained();
  if (explained < coupling::kWeakCovariates)
    log::warning(
        "patch.residual regression: the covariates of patch.static explain " + std::to_string(100.0 * explained) +
        "% of the residual's variance: they may not lie where the data lies" +
        (cfg.grid.type != GridType::kIcon
             ? std::string()
             : std::string(" (grid.geometry is ") + (cfg.grid.geometry == IconGeometry::kUniform ? "uniform" : "file") +
                   "; the covariates must come from the same geometry)"));
  coupling::add_regression_base(global, n_vars, options, patches);
}

std::vector<const float*> static_pointers(const ConditioningState& state) {
  std::vector<const float*> out;
  for (const auto& v : state.statics) out.push_back(v.data());
  return out;
}

const float* training_targets(const Config& cfg, const coupling::Patches& p) {
  return cfg.patch.residual != Residual::kMean ? p.residual.data() : p.fine.data();
}

coupling::ConditioningSpec checkpoint_spec(const ConditioningState& state, const coupling::PatchOptions& options) {
  coupling::ConditioningSpec spec = state.spec;
  spec.regression = options.regression;
  spec.global_regression = options.global_regression;
  return spec;
}

}  // namespace finecast::plugin
