// SPDX-License-Identifier: BSD-3-Clause
// The statistical-downscaling baseline regression_cons: a conservative interpolant of the coarse
// field plus a least-squares fit of the fine residual on fine static covariates.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/least_squares.hpp"
#include "eval/blocks.hpp"
#include "eval/cell_baselines.hpp"
#include "eval/cells.hpp"

namespace finecast::coupling::eval {

/// The predictors of one covariate, both with zero block (patch) mean so that the fitted
/// correction never changes a block mean (the baseline stays conservative):
///  - `anomaly`: the covariate minus its own block mean (within-block anomaly);
///  - `deviation`: the covariate minus the conservative interpolant of its own block means
///    (bicubic_cons on lat-lon blocks, idw_cons on ICON patches).
/// Predictor j = 2 s + 0 is covariate s's anomaly, 2 s + 1 its deviation.
struct Predictors {
  std::vector<std::string> names;           ///< "NAME anomaly", "NAME deviation"
  std::vector<std::vector<double>> values;  ///< [2 S][n cells]
};

/// Predictors of fine covariates on a lat-lon window (each covariates[s] has layout.size()
/// values in layout order). A NaN in a covariate makes its block's predictors NaN.
Predictors block_predictors(const BlockLayout& layout, const std::vector<std::string>& names,
                            const std::vector<const double*>& covariates);

/// The same on the patches of an unstructured grid; `interp` gives idw_cons.
Predictors cell_predictors(const CellInterpolator& interp, const std::vector<std::string>& names,
                           const std::vector<const double*>& covariates);

/// Fitted coefficients: residual ~ sum_j coef[j] * predictor j (no intercept: residual and
/// predictors have zero block mean).
struct RegressionFit {
  std::vector<std::string> names;
  std::vector<double> coef;
  int64_t n_points = 0;       ///< fine cells the fit used
  double residual_rms = 0.0;  ///< area-weighted RMS of the residual before the fit
  double fitted_rms = 0.0;    ///< and after it (on the fit data)
  std::string fit_on;         ///< where the fit came from (for reports)
};

/// Accumulates the area-weighted normal equations over fit data (any number of steps or
/// files), then solves them.
class RegressionFitter {
 public:
  explicit RegressionFitter(std::vector<std::string> names);
  /// Adds the cells i with use[i] != 0 (empty = all) whose residual and predictors are finite;
  /// residual[i] is the truth minus the conservative interpolant, w the area weights (empty =
  /// uniform).
  void add(const Predictors& p, const std::vector<double>& residual, const std::vector<double>& w,
           const std::vector<char>& use);
  /// Least squares (Cholesky of the normal equations in double). Throws ConfigError naming the
  /// predictors when there is no data or the predictors are collinear (e.g. a covariate that is
  /// constant in every block).
  RegressionFit solve(const std::string& fit_on) const;
  int64_t n_points() const { return eq_.points(); }

 private:
  std::vector<std::string> names_;
  NormalEquations eq_;
};

/// base + sum_j fit.coef[j] * p.values[j]: the regression_cons prediction.
std::vector<double> apply_regression(const RegressionFit& fit, const Predictors& p, std::vector<double> base);

/// The coefficients as text: "regression_cons: residual = 0.0061 * HSURF anomaly + ...".
std::string describe(const RegressionFit& fit);

/// The fit as JSON (names, coefficients, points, RMS before and after, fit_on), and back.
std::string regression_to_json(const RegressionFit& fit);
/// Throws ConfigError naming `source` when the text is not a fit written by regression_to_json.
RegressionFit regression_from_json(const std::string& text, const std::string& source);

}  // namespace finecast::coupling::eval
