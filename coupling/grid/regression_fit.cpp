// SPDX-License-Identifier: BSD-3-Clause
// The regression's fit: names, area-weighted normal equations, solution, units and text.
#include "coupling/grid/regression_fit.hpp"

#include <fmt/format.h>

#include <cmath>

#include "common/error.hpp"

namespace finecast::coupling {

std::vector<std::string> regression_names(const std::vector<std::string>& covariates,
                                          const std::vector<int>& local_terms) {
  std::vector<std::string> out;
  for (const auto& name : covariates) {
    out.push_back(name + " anomaly");
    out.push_back(name + " deviation");
  }
  for (int t : local_terms) {
    if (t < 0 || static_cast<size_t>(t) >= covariates.size())
      throw InternalError("regression_names: local-slope term " + std::to_string(t) + " of " +
                          std::to_string(covariates.size()) + " covariates");
    out.push_back(covariates[t] + " local");
  }
  return out;
}

double RegressionFit::explained() const {
  return residual_rms > 0 ? 1.0 - (fitted_rms / residual_rms) * (fitted_rms / residual_rms) : 1.0;
}

RegressionFitter::RegressionFitter(std::vector<std::string> names, std::string baseline)
    : names_(std::move(names)), baseline_(std::move(baseline)), eq_(static_cast<int>(names_.size())) {}

void RegressionFitter::add(const double* x, double y, double w) {
  if (!std::isfinite(y)) return;
  for (size_t j = 0; j < names_.size(); ++j)
    if (!std::isfinite(x[j])) return;
  eq_.add(x, y, w);
}

void RegressionFitter::add(const Predictors& p, const std::vector<double>& residual, const std::vector<double>& w,
                           const std::vector<char>& use) {
  const size_t m = names_.size();
  if (p.values.size() != m)
    throw InternalError("RegressionFitter::add: " + std::to_string(p.values.size()) + " predictors, expected " +
                        std::to_string(m));
  std::vector<double> x(m);
  for (size_t i = 0; i < residual.size(); ++i) {
    if (!use.empty() && !use[i]) continue;
    for (size_t j = 0; j < m; ++j) x[j] = p.values[j][i];
    add(x.data(), residual[i], w.empty() ? 1.0 : w[i]);
  }
}

RegressionFit RegressionFitter::solve(const std::string& fit_on) const {
  std::string list;
  for (const auto& n : names_) list += (list.empty() ? "" : ", ") + n;
  if (eq_.points() == 0 || eq_.weight() <= 0.0)
    throw ConfigError(baseline_ + ": no fine cell with finite truth and covariates to fit on (" + fit_on + ")");
  NormalEquations::Solution solution;
  if (!eq_.solve(solution))
    throw ConfigError(baseline_ + ": the predictors (" + list + ") are collinear on the fit data (" + fit_on +
                      "): a covariate constant in every block, or two covariates that are the "
                      "same field?");
  RegressionFit fit;
  fit.baseline = baseline_;
  fit.names = names_;
  fit.fit_on = fit_on;
  fit.n_points = eq_.points();
  fit.coef = std::move(solution.coef);
  fit.residual_rms = solution.rms_before;
  fit.fitted_rms = solution.rms_after;
  return fit;
}

RegressionFit per_covariate_unit(RegressionFit fit, const std::vector<double>& scales) {
  if (fit.coef.size() < 2 * scales.size())
    throw InternalError("per_covariate_unit: " + std::to_string(fit.coef.size()) + " coefficients for " +
                        std::to_string(scales.size()) + " covariates");
  for (size_t s = 0; s < scales.size(); ++s) {
    fit.coef[2 * s] /= scales[s];
    fit.coef[2 * s + 1] /= scales[s];
  }
  return fit;
}

std::vector<double> apply_regression(const RegressionFit& fit, const Predictors& p, std::vector<double> base) {
  if (p.values.size() != fit.coef.size())
    throw InternalError("apply_regression: " + std::to_string(p.values.size()) + " predictors for " +
                        std::to_string(fit.coef.size()) + " coefficients");
  for (size_t j = 0; j < fit.coef.size(); ++j) {
    const std::vector<double>& x = p.values[j];
    // A missing covariate value adds nothing: the cell keeps the interpolant.
    for (size_t i = 0; i < base.size(); ++i)
      if (std::isfinite(x[i])) base[i] += fit.coef[j] * x[i];
  }
  return base;
}

std::string describe(const RegressionFit& fit) {
  std::string s = fit.baseline;
  if (fit.local_rings > 0)
    s += fmt::format(" (local slopes within {} edge steps, ridge {:g})", fit.local_rings, fit.local_ridge);
  s += ": residual =";
  for (size_t j = 0; j < fit.coef.size(); ++j)
    s += fmt::format("{} {:.6g} * {}", j == 0 ? "" : " +", fit.coef[j], fit.names[j]);
  const std::string base =
      fit.interpolant == Interpolant::kAuto ? "" : "interpolant " + schema::name_of(fit.interpolant) + ", ";
  s += fmt::format(" ({}fitted on {}: {} fine cells, residual RMS {:.5g} -> {:.5g})", base, fit.fit_on, fit.n_points,
                   fit.residual_rms, fit.fitted_rms);
  return s;
}

}  // namespace finecast::coupling
