// SPDX-License-Identifier: BSD-3-Clause
// regression_cons: predictors from fine covariates, weighted least squares, JSON round trip.
#include "eval/regression.hpp"

#include <fmt/format.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "common/error.hpp"
#include "common/least_squares.hpp"
#include "eval/baselines.hpp"

namespace finecast::coupling::eval {

namespace {

void check_sizes(std::size_t n, const std::vector<const double*>& covariates, const std::vector<std::string>& names) {
  if (covariates.size() != names.size())
    throw InternalError("regression: " + std::to_string(covariates.size()) + " covariates but " +
                        std::to_string(names.size()) + " names");
  for (const double* c : covariates)
    if (c == nullptr) throw InternalError("regression: a covariate is null");
  (void)n;
}

}  // namespace

Predictors block_predictors(const BlockLayout& layout, const std::vector<std::string>& names,
                            const std::vector<const double*>& covariates) {
  check_sizes(layout.size(), covariates, names);
  static const Baseline bicubic_cons{"bicubic_cons", Interp::kBicubic, true};
  Predictors p;
  const std::size_t n = layout.size();
  for (std::size_t s = 0; s < covariates.size(); ++s) {
    const double* x = covariates[s];
    const std::vector<double> mean = block_means(layout, x);
    std::vector<double> anomaly(n);
    for (int i = 0; i < layout.ny; ++i)
      for (int j = 0; j < layout.nx; ++j) {
        const std::size_t c = static_cast<std::size_t>(i) * layout.nx + j;
        anomaly[c] = x[c] - mean[static_cast<std::size_t>(i / layout.k) * layout.nbx() + j / layout.k];
      }
    std::vector<double> deviation = run_baseline(layout, mean, bicubic_cons);
    for (std::size_t c = 0; c < n; ++c) deviation[c] = x[c] - deviation[c];
    p.names.push_back(names[s] + " anomaly");
    p.values.push_back(std::move(anomaly));
    p.names.push_back(names[s] + " deviation");
    p.values.push_back(std::move(deviation));
  }
  return p;
}

Predictors cell_predictors(const CellInterpolator& interp, const std::vector<std::string>& names,
                           const std::vector<const double*>& covariates) {
  const CellLayout& L = interp.layout();
  check_sizes(static_cast<std::size_t>(L.size()), covariates, names);
  static const CellBaseline idw_cons{"idw_cons", CellInterp::kIdw, true};
  Predictors p;
  for (std::size_t s = 0; s < covariates.size(); ++s) {
    const double* x = covariates[s];
    const std::vector<double> mean = patch_means(L, x);
    std::vector<double> anomaly(static_cast<std::size_t>(L.size()));
    for (int64_t c = 0; c < L.size(); ++c) anomaly[c] = x[c] - mean[L.patch_of(c)];
    std::vector<double> deviation = interp.run(mean, idw_cons);
    for (int64_t c = 0; c < L.size(); ++c) deviation[c] = x[c] - deviation[c];
    p.names.push_back(names[s] + " anomaly");
    p.values.push_back(std::move(anomaly));
    p.names.push_back(names[s] + " deviation");
    p.values.push_back(std::move(deviation));
  }
  return p;
}

RegressionFitter::RegressionFitter(std::vector<std::string> names)
    : names_(std::move(names)), eq_(static_cast<int>(names_.size())) {}

void RegressionFitter::add(const Predictors& p, const std::vector<double>& residual, const std::vector<double>& w,
                           const std::vector<char>& use) {
  const std::size_t m = names_.size();
  if (p.values.size() != m)
    throw InternalError("RegressionFitter::add: " + std::to_string(p.values.size()) + " predictors, expected " +
                        std::to_string(m));
  const std::size_t n = residual.size();
  std::vector<double> x(m);
  for (std::size_t i = 0; i < n; ++i) {
    if (!use.empty() && !use[i]) continue;
    const double y = residual[i];
    if (!std::isfinite(y)) continue;
    bool ok = true;
    for (std::size_t j = 0; j < m && ok; ++j) {
      x[j] = p.values[j][i];
      ok = std::isfinite(x[j]);
    }
    if (ok) eq_.add(x.data(), y, w.empty() ? 1.0 : w[i]);
  }
}

RegressionFit RegressionFitter::solve(const std::string& fit_on) const {
  std::string list;
  for (const auto& n : names_) list += (list.empty() ? "" : ", ") + n;
  if (eq_.points() == 0 || eq_.weight() <= 0.0)
    throw ConfigError("regression_cons: no fine cell with finite truth and covariates to fit on (" + fit_on + ")");
  NormalEquations::Solution solution;
  if (!eq_.solve(solution))
    throw ConfigError("regression_cons: the predictors (" + list + ") are collinear on the fit data (" + fit_on +
                      "): a covariate constant in every block, or two covariates that are the "
                      "same field?");
  RegressionFit fit;
  fit.names = names_;
  fit.fit_on = fit_on;
  fit.n_points = eq_.points();
  fit.coef = std::move(solution.coef);
  fit.residual_rms = solution.rms_before;
  fit.fitted_rms = solution.rms_after;
  return fit;
}

std::vector<double> apply_regression(const RegressionFit& fit, const Predictors& p, std::vector<double> base) {
  if (p.values.size() != fit.coef.size())
    throw InternalError("apply_regression: " + std::to_string(p.values.size()) + " predictors for " +
                        std::to_string(fit.coef.size()) + " coefficients");
  for (std::size_t j = 0; j < fit.coef.size(); ++j) {
    const std::vector<double>& x = p.values[j];
    // A missing covariate value adds nothing: the cell keeps the interpolant.
    for (std::size_t i = 0; i < base.size(); ++i)
      if (std::isfinite(x[i])) base[i] += fit.coef[j] * x[i];
  }
  return base;
}

std::string describe(const RegressionFit& fit) {
  std::string s = "regression_cons: residual =";
  for (std::size_t j = 0; j < fit.coef.size(); ++j)
    s += fmt::format("{} {:.6g} * {}", j == 0 ? "" : " +", fit.coef[j], fit.names[j]);
  s += fmt::format(" (fitted on {}: {} fine cells, residual RMS {:.5g} -> {:.5g})", fit.fit_on, fit.n_points,
                   fit.residual_rms, fit.fitted_rms);
  return s;
}

std::string regression_to_json(const RegressionFit& fit) {
  nlohmann::ordered_json j;
  j["baseline"] = "regression_cons";
  j["fit_on"] = fit.fit_on;
  j["n_points"] = fit.n_points;
  j["residual_rms"] = fit.residual_rms;
  j["fitted_rms"] = fit.fitted_rms;
  nlohmann::ordered_json c = nlohmann::ordered_json::object();
  for (std::size_t k = 0; k < fit.coef.size(); ++k) c[fit.names[k]] = fit.coef[k];
  j["coefficients"] = c;
  return j.dump(2) + "\n";
}

RegressionFit regression_from_json(const std::string& text, const std::string& source) {
  RegressionFit fit;
  try {
    const auto j = nlohmann::ordered_json::parse(text);
    if (!j.is_object() || j.value("baseline", "") != "regression_cons" || !j.contains("coefficients") ||
        !j["coefficients"].is_object())
      throw ConfigError(source +
                        ": not a regression_cons fit (expected the JSON that finecast-eval "
                        "--regression-out writes, with \"baseline\": \"regression_cons\" and "
                        "\"coefficients\")");
    fit.fit_on = j.value("fit_on", source);
    fit.n_points = j.value("n_points", int64_t{0});
    fit.residual_rms = j.value("residual_rms", 0.0);
    fit.fitted_rms = j.value("fitted_rms", 0.0);
    for (const auto& [name, value] : j["coefficients"].items()) {
      if (!value.is_number()) throw ConfigError(source + ": coefficient '" + name + "' is not a number");
      fit.names.push_back(name);
      fit.coef.push_back(value.get<double>());
    }
  } catch (const nlohmann::json::exception& e) {
    throw ConfigError(source + ": not valid JSON (" + e.what() + ")");
  }
  return fit;
}

}  // namespace finecast::coupling::eval
