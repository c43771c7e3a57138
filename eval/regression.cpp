// SPDX-License-Identifier: BSD-3-Clause
// regression_cons and regression_local: predictors from fine covariates (and the coarse field's
// local slopes) and the fits' JSON round trip; the fit is coupling/grid/regression_fit's.
#include "eval/regression.hpp"

#include <cmath>
#include <nlohmann/json.hpp>

#include "common/error.hpp"
#include "eval/baselines.hpp"

namespace finecast::eval {

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
                            const std::vector<const double*>& covariates, coupling::Interpolant kind) {
  check_sizes(layout.size(), covariates, names);
  Predictors p;
  const std::size_t n = layout.size();
  p.names = coupling::regression_names(names);
  for (std::size_t s = 0; s < covariates.size(); ++s) {
    const double* x = covariates[s];
    const std::vector<double> mean = block_means(layout, x);
    std::vector<double> anomaly(n);
    for (int i = 0; i < layout.ny; ++i)
      for (int j = 0; j < layout.nx; ++j) {
        const std::size_t c = static_cast<std::size_t>(i) * layout.nx + j;
        anomaly[c] = x[c] - mean[static_cast<std::size_t>(i / layout.k) * layout.nbx() + j / layout.k];
      }
    std::vector<double> deviation = run_baseline(layout, mean, block_regression_base(kind));
    for (std::size_t c = 0; c < n; ++c) deviation[c] = x[c] - deviation[c];
    p.values.push_back(std::move(anomaly));
    p.values.push_back(std::move(deviation));
  }
  return p;
}

Predictors cell_predictors(const CellInterpolator& interp, const std::vector<std::string>& names,
                           const std::vector<const double*>& covariates, coupling::Interpolant kind) {
  const CellLayout& L = interp.layout();
  check_sizes(static_cast<std::size_t>(L.size()), covariates, names);
  Predictors p;
  p.names = coupling::regression_names(names);
  for (std::size_t s = 0; s < covariates.size(); ++s) {
    const double* x = covariates[s];
    const std::vector<double> mean = patch_means(L, x);
    std::vector<double> anomaly(static_cast<std::size_t>(L.size()));
    for (int64_t c = 0; c < L.size(); ++c) anomaly[c] = x[c] - mean[L.patch_of(c)];
    std::vector<double> deviation = interp.run(mean, cell_regression_base(kind));
    for (int64_t c = 0; c < L.size(); ++c) deviation[c] = x[c] - deviation[c];
    p.values.push_back(std::move(anomaly));
    p.values.push_back(std::move(deviation));
  }
  return p;
}

LocalTerms::LocalTerms(std::vector<int64_t> neighbours, int n_neighbours, std::vector<double> covariate_means,
                       std::vector<int64_t> patch_of, std::vector<std::string> names,
                       coupling::LocalSlopeOptions options)
    : neighbours_(std::move(neighbours)),
      n_neighbours_(n_neighbours),
      means_(std::move(covariate_means)),
      patch_of_(std::move(patch_of)),
      names_(std::move(names)),
      options_(std::move(options)) {
  if (!options_.enabled()) throw InternalError("LocalTerms: local slopes without rings or terms");
  const std::size_t S = names_.size();
  if (S == 0 || n_neighbours_ < 1 || means_.size() % S != 0)
    throw InternalError("LocalTerms: " + std::to_string(means_.size()) + " covariate means for " + std::to_string(S) +
                        " covariates");
  n_patches_ = static_cast<int64_t>(means_.size() / S);
  if (neighbours_.size() != static_cast<std::size_t>(n_patches_) * n_neighbours_)
    throw InternalError("LocalTerms: a neighbour table of " + std::to_string(neighbours_.size()) + " entries for " +
                        std::to_string(n_patches_) + " patches");
  for (int t : options_.terms)
    if (t < 0 || static_cast<std::size_t>(t) >= S) throw InternalError("LocalTerms: term " + std::to_string(t));
  for (int64_t p : patch_of_)
    if (p < 0 || p >= n_patches_) throw InternalError("LocalTerms: a fine cell in patch " + std::to_string(p));
}

std::vector<std::string> LocalTerms::names() const {
  const std::vector<std::string> all = coupling::regression_names(names_, options_.terms);
  return std::vector<std::string>(all.begin() + 2 * static_cast<std::ptrdiff_t>(names_.size()), all.end());
}

std::vector<double> LocalTerms::slopes(const std::vector<double>& coarse) const {
  if (static_cast<int64_t>(coarse.size()) != n_patches_)
    throw InternalError("LocalTerms::slopes: " + std::to_string(coarse.size()) + " coarse values for " +
                        std::to_string(n_patches_) + " patches");
  std::vector<double> out;
  coupling::local_slopes<double>(neighbours_.data(), n_neighbours_, n_patches_, coarse.data(), means_.data(),
                                 static_cast<int>(names_.size()), options_, 0, n_patches_, out);
  return out;
}

Predictors LocalTerms::extend(const Predictors& base, const std::vector<double>& coarse) const {
  if (base.values.size() != 2 * names_.size())
    throw InternalError("LocalTerms::extend: " + std::to_string(base.values.size()) + " predictors for " +
                        std::to_string(names_.size()) + " covariates");
  const std::vector<double> b = slopes(coarse);
  Predictors p = base;
  p.names = coupling::regression_names(names_, options_.terms);
  for (std::size_t t = 0; t < options_.terms.size(); ++t) {
    const std::size_t dev = 2 * static_cast<std::size_t>(options_.terms[t]) + 1;
    if (base.names[dev] != names_[options_.terms[t]] + " deviation")
      throw InternalError("LocalTerms::extend: predictor " + base.names[dev] + " is not " + names_[options_.terms[t]] +
                          "'s deviation");
    const std::vector<double>& x = base.values[dev];
    if (x.size() != patch_of_.size()) throw InternalError("LocalTerms::extend: predictors of another grid or window");
    std::vector<double> v(x.size());
    const double* bt = b.data() + t * static_cast<std::size_t>(n_patches_);
    for (std::size_t i = 0; i < x.size(); ++i) v[i] = bt[patch_of_[i]] * x[i];
    p.values.push_back(std::move(v));
  }
  return p;
}

LocalTerms block_local_terms(const BlockLayout& L, const std::vector<std::string>& names,
                             const std::vector<const double*>& covariates, const coupling::LocalSlopeOptions& options) {
  check_sizes(L.size(), covariates, names);
  const int nby = L.nby(), nbx = L.nbx();
  const int64_t nb = static_cast<int64_t>(L.n_blocks());
  // Edge neighbours in the order north (previous row), west, east, south; -1 beyond the window.
  std::vector<int64_t> nbr(static_cast<std::size_t>(nb) * 4, -1);
  for (int by = 0; by < nby; ++by)
    for (int bx = 0; bx < nbx; ++bx) {
      int64_t* n = nbr.data() + (static_cast<int64_t>(by) * nbx + bx) * 4;
      const int west = bx > 0 ? bx - 1 : (L.periodic_x ? nbx - 1 : -1);
      const int east = bx + 1 < nbx ? bx + 1 : (L.periodic_x ? 0 : -1);
      if (by > 0) n[0] = static_cast<int64_t>(by - 1) * nbx + bx;
      if (west >= 0) n[1] = static_cast<int64_t>(by) * nbx + west;
      if (east >= 0) n[2] = static_cast<int64_t>(by) * nbx + east;
      if (by + 1 < nby) n[3] = static_cast<int64_t>(by + 1) * nbx + bx;
    }
  std::vector<double> means;
  for (const double* x : covariates) {
    const std::vector<double> m = block_means(L, x);
    means.insert(means.end(), m.begin(), m.end());
  }
  std::vector<int64_t> patch_of(L.size());
  for (int i = 0; i < L.ny; ++i)
    for (int j = 0; j < L.nx; ++j)
      patch_of[static_cast<std::size_t>(i) * L.nx + j] = static_cast<int64_t>(i / L.k) * nbx + j / L.k;
  return LocalTerms(std::move(nbr), 4, std::move(means), std::move(patch_of), names, options);
}

LocalTerms cell_local_terms(const CellLayout& L, const std::vector<std::string>& names,
                            const std::vector<const double*>& covariates, const coupling::LocalSlopeOptions& options) {
  check_sizes(static_cast<std::size_t>(L.size()), covariates, names);
  const CellLayoutSpec& s = L.spec();
  if (s.n_neighbours < 1 || s.patch_neighbours.size() != static_cast<std::size_t>(L.n_patches() * s.n_neighbours))
    throw ConfigError(
        "regression_local: the coarse cells have no edge-neighbour table, which the local slopes' "
        "windows are made of");
  std::vector<double> means;
  for (const double* x : covariates) {
    const std::vector<double> m = patch_means(L, x);
    means.insert(means.end(), m.begin(), m.end());
  }
  std::vector<int64_t> patch_of(static_cast<std::size_t>(L.size()));
  for (int64_t c = 0; c < L.size(); ++c) patch_of[c] = L.patch_of(c);
  return LocalTerms(s.patch_neighbours, s.n_neighbours, std::move(means), std::move(patch_of), names, options);
}

namespace {

nlohmann::ordered_json fit_to_json(const RegressionFit& fit) {
  nlohmann::ordered_json j;
  j["baseline"] = fit.baseline;
  if (fit.interpolant != coupling::Interpolant::kAuto) j["interpolant"] = schema::name_of(fit.interpolant);
  j["fit_on"] = fit.fit_on;
  j["n_points"] = fit.n_points;
  j["residual_rms"] = fit.residual_rms;
  j["fitted_rms"] = fit.fitted_rms;
  if (fit.local_rings > 0) j["local_slopes"] = {{"rings", fit.local_rings}, {"ridge", fit.local_ridge}};
  nlohmann::ordered_json c = nlohmann::ordered_json::object();
  for (std::size_t k = 0; k < fit.coef.size(); ++k) c[fit.names[k]] = fit.coef[k];
  j["coefficients"] = c;
  return j;
}

/// One fit; `what` is the baseline it must be.
RegressionFit fit_from_json(const nlohmann::ordered_json& j, const std::string& source, const std::string& what) {
  if (!j.is_object() || j.value("baseline", "") != what || !j.contains("coefficients") ||
      !j["coefficients"].is_object())
    throw ConfigError(source + ": not a " + what +
                      " fit (expected the JSON that finecast-eval "
                      "--regression-out writes, with \"baseline\": \"" +
                      what + "\" and \"coefficients\")");
  RegressionFit fit;
  fit.baseline = what;
  fit.fit_on = j.value("fit_on", source);
  fit.n_points = j.value("n_points", int64_t{0});
  fit.residual_rms = j.value("residual_rms", 0.0);
  fit.fitted_rms = j.value("fitted_rms", 0.0);
  if (j.contains("interpolant") &&
      !(j["interpolant"].is_string() && schema::parse_name(j["interpolant"].get<std::string>(), fit.interpolant)))
    throw ConfigError(source + ": " + what + "'s \"interpolant\" is " + j["interpolant"].dump() + ", expected one of " +
                      schema::name_list<coupling::Interpolant>());
  if (j.contains("local_slopes")) {
    const auto& l = j["local_slopes"];
    if (!l.is_object() || !l.contains("rings") || !l["rings"].is_number_integer() || !l.contains("ridge") ||
        !l["ridge"].is_number())
      throw ConfigError(source + ": " + what + "'s \"local_slopes\" must hold \"rings\" (an integer) and \"ridge\"");
    fit.local_rings = l["rings"].get<int>();
    fit.local_ridge = l["ridge"].get<double>();
  }
  if (what == "regression_local" && fit.local_rings < 1)
    throw ConfigError(source + ": the regression_local fit has no \"local_slopes\" with rings >= 1");
  for (const auto& [name, value] : j["coefficients"].items()) {
    if (!value.is_number()) throw ConfigError(source + ": coefficient '" + name + "' is not a number");
    fit.names.push_back(name);
    fit.coef.push_back(value.get<double>());
  }
  return fit;
}

nlohmann::ordered_json parse(const std::string& text, const std::string& source) {
  try {
    return nlohmann::ordered_json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw ConfigError(source + ": not valid JSON (" + e.what() + ")");
  }
}

}  // namespace

std::string regression_to_json(const RegressionFit& fit) { return fit_to_json(fit).dump(2) + "\n"; }

RegressionFit regression_from_json(const std::string& text, const std::string& source) {
  const auto j = parse(text, source);
  const std::string what =
      j.is_object() && j.value("baseline", "") == "regression_local" ? "regression_local" : "regression_cons";
  try {
    return fit_from_json(j, source, what);
  } catch (const nlohmann::json::exception& e) {
    throw ConfigError(source + ": not a regression fit (" + e.what() + ")");
  }
}

std::string regressions_to_json(const RegressionFits& fits) {
  if (!fits.local) return regression_to_json(fits.cons);
  nlohmann::ordered_json j;
  j["regression_cons"] = fit_to_json(fits.cons);
  j["regression_local"] = fit_to_json(*fits.local);
  return j.dump(2) + "\n";
}

RegressionFits regressions_from_json(const std::string& text, const std::string& source) {
  const auto j = parse(text, source);
  RegressionFits fits;
  try {
    if (j.is_object() && j.contains("regression_cons")) {
      fits.cons = fit_from_json(j["regression_cons"], source, "regression_cons");
      if (j.contains("regression_local")) fits.local = fit_from_json(j["regression_local"], source, "regression_local");
    } else {
      // The single-fit form of files written before regression_local.
      fits.cons = fit_from_json(j, source, "regression_cons");
    }
  } catch (const nlohmann::json::exception& e) {
    throw ConfigError(source + ": not a regression fit (" + e.what() + ")");
  }
  return fits;
}

}  // namespace finecast::eval
