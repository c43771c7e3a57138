// SPDX-License-Identifier: BSD-3-Clause
// The statistical-downscaling regression's fit, one for the plugin's regression base
// (patch.residual: regression, patch_regression.hpp) and finecast-eval's baselines
// regression_cons and regression_local (eval/regression.hpp): the predictors' names, the
// area-weighted least squares over the fine cells, the checks of its data, the fit's record and
// its text. Where the predictors come from differs (the patches' contexts in situ, the raw
// covariates offline); what is fitted, and how, is this one code. No torch, no MPI.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/least_squares.hpp"
#include "coupling/grid/patch_map.hpp"

namespace finecast::coupling {

/// Covariates that explain less than this share of the residual's variance are warned about
/// (they may not lie where the data lies): the plugin at its first step, finecast-eval per run.
constexpr double kWeakCovariates = 0.02;

/// The predictors' names in the regression's order: "NAME anomaly", "NAME deviation" for each
/// covariate, then "NAME local" for each local-slope term (indices into `covariates`).
std::vector<std::string> regression_names(const std::vector<std::string>& covariates,
                                          const std::vector<int>& local_terms = {});

/// Predictor values on some cells: values[j][i] is predictor j at cell i (names as above).
struct Predictors {
  std::vector<std::string> names;
  std::vector<std::vector<double>> values;
};

/// Fitted coefficients: residual ~ sum_j coef[j] * predictor j (no intercept: residual and
/// predictors have zero block (patch) mean).
struct RegressionFit {
  std::string baseline = "regression_cons";  ///< or "regression_local" (with local-slope terms)
  std::vector<std::string> names;
  std::vector<double> coef;
  int64_t n_points = 0;       ///< fine cells the fit used
  double residual_rms = 0.0;  ///< area-weighted RMS of the residual before the fit
  double fitted_rms = 0.0;    ///< and after it (on the fit data)
  std::string fit_on;         ///< where the fit came from (for reports)
  int local_rings = 0;        ///< regression_local: the local slopes' window (edge steps)
  double local_ridge = 0.0;   ///< and their ridge
  /// The conservative interpolant the fit's residual was taken from and its predictors'
  /// deviations are taken from (finecast-eval's <name>_cons; kAuto: not recorded, the grid's default).
  Interpolant interpolant = Interpolant::kAuto;
  /// The share of the residual's variance the fit explains (1 when there was none).
  double explained() const;
};

/// Accumulates the normal equations over fit data (any number of steps, files or ranks), each
/// fine cell weighted by its area, then solves them.
class RegressionFitter {
 public:
  /// `baseline` names the fit in errors and in the result.
  explicit RegressionFitter(std::vector<std::string> names, std::string baseline = "regression_cons");
  /// One fine cell: predictors x (names().size() values), residual y, area w. Skipped unless y
  /// and every x are finite.
  void add(const double* x, double y, double w);
  /// The cells i with use[i] != 0 (empty = all) of `p`: residual[i] is the truth minus the
  /// conservative interpolant, w the cells' areas (empty = uniform).
  void add(const Predictors& p, const std::vector<double>& residual, const std::vector<double>& w,
           const std::vector<char>& use);
  /// The accumulated sums, to be added up in place over processes (NormalEquations::sums).
  std::vector<double>& sums() { return eq_.sums(); }
  /// Least squares (Cholesky of the normal equations in double). Throws ConfigError naming the
  /// baseline, the predictors and `fit_on` when there is no data or the predictors are collinear
  /// (e.g. a covariate that is constant in every block).
  RegressionFit solve(const std::string& fit_on) const;
  int64_t n_points() const { return eq_.points(); }
  const std::vector<std::string>& names() const { return names_; }

 private:
  std::vector<std::string> names_;
  std::string baseline_;
  NormalEquations eq_;
};

/// A fit on covariates normalised as x -> (x - mean) / scales[s] (the plugin's contexts) per unit
/// of the covariates as given: the anomaly and deviation coefficients of covariate s divided by
/// scales[s]; a local-slope term (slope x deviation) is free of the covariate's unit and stays.
RegressionFit per_covariate_unit(RegressionFit fit, const std::vector<double>& scales);

/// base + sum_j fit.coef[j] * p.values[j]; a cell where a predictor is not finite gets nothing
/// of that predictor.
std::vector<double> apply_regression(const RegressionFit& fit, const Predictors& p, std::vector<double> base);

/// The coefficients as text: "regression_cons: residual = 0.0061 * HSURF anomaly + ... (fitted on
/// ...: N fine cells, residual RMS a -> b)" (regression_local's with its local slopes' window and
/// ridge; a recorded interpolant as "interpolant bspline, fitted on ...").
std::string describe(const RegressionFit& fit);

}  // namespace finecast::coupling
