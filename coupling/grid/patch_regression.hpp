// SPDX-License-Identifier: BSD-3-Clause
// patch.residual: regression, the first stage of a two-stage downscaler. The patches' residual
// base is the statistical-downscaling regression that finecast-eval scores as regression_cons:
// the conservative interpolant of the target plus a least-squares fit of the fine residual on
// each static covariate's within-block anomaly and its deviation from the conservative
// interpolant of its own block means. The diffusion model (the second stage) learns what the
// regression leaves. The predictors are the ones already in every patch's context (the
// normalised covariates, docs/grids.md), so the coefficients are per unit of the normalised
// covariate (per_covariate_unit gives finecast-eval's). The fit is finecast-eval's
// (regression_fit.hpp): the same fitter, each fine cell weighted by its area.
#pragma once

#include <string>
#include <vector>

#include "coupling/grid/patch_map.hpp"
#include "coupling/grid/patches.hpp"
#include "coupling/grid/regression_fit.hpp"

namespace finecast::coupling {

/// Predictors of the regression: 2 per static covariate (its anomaly, then its deviation), then
/// one per patch.local_slopes term (its covariate's deviation times the local slope).
int regression_predictors(const PatchOptions& options);

/// The predictors' names (regression_names of the covariates and the local-slope terms).
std::vector<std::string> regression_names(const std::vector<std::string>& statics, const PatchOptions& options);

/// Adds the fine cells of the patches with use[c] != 0 to the fit of their residual (fine minus
/// the interpolant: patches built without coefficients) on the predictors, each weighted by its
/// area (its normalised weight times its patch's area), as finecast-eval weighs its cells.
/// `global` is the map the contexts were built on (fill_contexts), n_vars the number of coarse
/// fields in the context; the fitter has regression_predictors(options) names. `target` (n*P,
/// patch-major) replaces the residual as what is fitted (the global regression's on its own
/// interpolant: fine minus patches.global_interp); null = the residual.
void add_regression_data(const PatchMap& global, int n_vars, const PatchOptions& options, const Patches& patches,
                         const uint8_t* use, RegressionFitter& fitter, const float* target = nullptr);

/// Adds sum_j options.regression[j] * predictor j to every patch's base and takes it off its
/// residual: the base becomes the regression's prediction. fill_contexts does this for options
/// with coefficients; called alone, it applies coefficients fitted on the patches already built.
/// Needs patches built with options.interp_base.
void add_regression_base(const PatchMap& global, int n_vars, const PatchOptions& options, Patches& patches);

/// patch.global_blend: moves the ensemble mean of every fine cell of `out` ([n][members][P] fine
/// values of the patches) to g + W (mean - g), each member keeping its deviation from the mean.
/// g is the global regression's prediction: its interpolant plus the global coefficients
/// (options.global_regression, one per covariate predictor) on the covariates' predictors. Its
/// interpolant is patches.global_interp (patch.global_interpolant) when the patches have one, else
/// the base's: the base minus the base's own fit (options.regression, local-slope terms included).
/// Nothing when W (options.global_blend) is 1 or a fit is missing; cells where a member is not
/// finite stay as they are. The global regression and the base have the patch means of the coarse
/// field (the interpolant is conservative, and every predictor has zero patch mean), so a
/// conservative ensemble stays so. Needs patches whose base holds options.regression.
void blend_toward_global(const PatchMap& global, int n_vars, const PatchOptions& options, const Patches& patches,
                         int64_t members, float* out);

/// patch.spread_regression k: multiplies every member's deviation from the ensemble mean of its
/// fine cell by r2^k per patch, r2 = the area-weighted mean over the patch of the global
/// regression's term (options.global_regression on the covariates' predictors) squared, plus
/// 1e-12 (as scripts/eval_spread_model.py fits it): a wider ensemble where the covariates add more
/// to the interpolant. The mean (hence every patch mean) stays. Nothing when k is 0; throws
/// InternalError when k > 0 and the global regression is missing. Cells where a member is not
/// finite stay as they are; a patch whose r2 is not finite too.
void spread_by_regression(const PatchMap& global, int n_vars, const PatchOptions& options, const Patches& patches,
                          int64_t members, float* out);

/// The coefficients as the checkpoint records them ("c0,c1,...", full precision), and back;
/// parse_regression throws CheckpointError naming `source` unless the text holds `count`
/// finite numbers.
std::string format_regression(const std::vector<double>& coef);
std::vector<double> parse_regression(const std::string& text, int count, const std::string& source);

}  // namespace finecast::coupling
