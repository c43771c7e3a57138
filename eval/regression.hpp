// SPDX-License-Identifier: BSD-3-Clause
// The statistical-downscaling baselines regression_cons (a conservative interpolant of the coarse
// field plus a least-squares fit of the fine residual on fine static covariates) and
// regression_local (the same with the covariates' deviations also scaled by the coarse field's
// local slopes on them).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "coupling/grid/local_slopes.hpp"
#include "coupling/grid/regression_fit.hpp"
#include "eval/blocks.hpp"
#include "eval/cell_baselines.hpp"
#include "eval/cells.hpp"

namespace finecast::eval {

/// The fit itself is coupling's (coupling/grid/regression_fit.hpp), the plugin's regression base's:
/// one fitter, one record, one text.
using coupling::apply_regression;
using coupling::describe;
using coupling::Predictors;
using coupling::RegressionFit;
using coupling::RegressionFitter;

/// The predictors of one covariate (coupling::regression_names' order), both with zero block
/// (patch) mean so that the fitted correction never changes a block mean (the baseline stays
/// conservative):
///  - `anomaly`: the covariate minus its own block mean (within-block anomaly);
///  - `deviation`: the covariate minus the conservative interpolant of its own block means, the
///    regression's base for the interpolant `kind` (block_regression_base, cell_regression_base:
///    auto is bicubic_cons on lat-lon blocks, idw_cons on ICON patches).
/// Predictor j = 2 s + 0 is covariate s's anomaly, 2 s + 1 its deviation.
///
/// Predictors of fine covariates on a lat-lon window (each covariates[s] has layout.size()
/// values in layout order). A NaN in a covariate makes its block's predictors NaN.
Predictors block_predictors(const BlockLayout& layout, const std::vector<std::string>& names,
                            const std::vector<const double*>& covariates,
                            coupling::Interpolant kind = coupling::Interpolant::kAuto);

/// The same on the patches of an unstructured grid; `interp` gives the base.
Predictors cell_predictors(const CellInterpolator& interp, const std::vector<std::string>& names,
                           const std::vector<const double*>& covariates,
                           coupling::Interpolant kind = coupling::Interpolant::kAuto);

/// regression_local's extra predictors (docs/evaluation.md, "regression_local"): for each
/// covariate s in options.terms, "NAME local" = (NAME deviation) x the local slope of the coarse
/// truth on the covariates' block (patch) means around the cell's block (coupling::local_slopes,
/// all covariates fitted jointly, the block's own window). The slope is constant over a block and
/// the deviation has zero block mean, so the product has zero block mean too: the baseline stays
/// conservative. The slopes follow the coarse field, so the predictors are made per step.
class LocalTerms {
 public:
  /// `neighbours`: n_patches x n_neighbours patch indices (-1 = none); `covariate_means`:
  /// S x n_patches, covariate s's block (patch) means at [s * n_patches + p]; `patch_of`: each
  /// fine cell's block (patch); `names`: the S covariates. Throws InternalError on inconsistent
  /// sizes or options without terms.
  LocalTerms(std::vector<int64_t> neighbours, int n_neighbours, std::vector<double> covariate_means,
             std::vector<int64_t> patch_of, std::vector<std::string> names, coupling::LocalSlopeOptions options);
  /// The extra predictors' names, "NAME local" in term order.
  std::vector<std::string> names() const;
  /// The local slopes for the coarse truth `coarse` (n_patches block means, NaN = missing):
  /// slopes[t * n_patches + p] is the slope on covariate options().terms[t] around patch p.
  std::vector<double> slopes(const std::vector<double>& coarse) const;
  /// `base` (block_predictors / cell_predictors of the same covariates on the same layout)
  /// followed by one predictor per term for this step's coarse truth.
  Predictors extend(const Predictors& base, const std::vector<double>& coarse) const;
  const coupling::LocalSlopeOptions& options() const { return options_; }
  int64_t n_patches() const { return n_patches_; }
  std::size_t n_cells() const { return patch_of_.size(); }

 private:
  std::vector<int64_t> neighbours_;
  int n_neighbours_ = 0;
  std::vector<double> means_;
  std::vector<int64_t> patch_of_;
  std::vector<std::string> names_;
  coupling::LocalSlopeOptions options_;
  int64_t n_patches_ = 0;
};

/// LocalTerms on lat-lon blocks: each block's 4 edge neighbours (-1 beyond the window's edge;
/// columns wrap when layout.periodic_x), the covariates' area-weighted block means.
LocalTerms block_local_terms(const BlockLayout& layout, const std::vector<std::string>& names,
                             const std::vector<const double*>& covariates, const coupling::LocalSlopeOptions& options);

/// LocalTerms on the patches of an unstructured grid: the patches' edge-neighbour table
/// (ConfigError when the layout has none), the covariates' area-weighted patch means.
LocalTerms cell_local_terms(const CellLayout& layout, const std::vector<std::string>& names,
                            const std::vector<const double*>& covariates, const coupling::LocalSlopeOptions& options);

/// The regression baselines' fits: regression_cons, and regression_local when it is on.
struct RegressionFits {
  RegressionFit cons;
  std::optional<RegressionFit> local;
};

/// The fit as JSON (baseline, the interpolant when recorded, names, coefficients, points, RMS
/// before and after, fit_on; regression_local: "local_slopes" with rings and ridge), and back (a
/// fit without "interpolant", as written before it was recorded, reads as kAuto).
std::string regression_to_json(const RegressionFit& fit);
/// Throws ConfigError naming `source` when the text is not a fit written by regression_to_json.
RegressionFit regression_from_json(const std::string& text, const std::string& source);

/// finecast-eval --regression-out's file: without a regression_local fit, regression_cons's fit
/// alone (regression_to_json: the form from before regression_local, which scripts read); with
/// one, {"regression_cons": fit, "regression_local": fit}.
std::string regressions_to_json(const RegressionFits& fits);
/// Reads either form (a single fit must be regression_cons's); `local` stays empty when the file
/// holds no regression_local fit. Throws ConfigError naming `source`.
RegressionFits regressions_from_json(const std::string& text, const std::string& source);

}  // namespace finecast::eval
