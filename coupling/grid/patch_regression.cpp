// SPDX-License-Identifier: BSD-3-Clause
// The regression residual base: predictors read from the patches' contexts, the fit's data, its
// application, and its record in checkpoints.
#include "coupling/grid/patch_regression.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "common/error.hpp"

namespace finecast::coupling {

namespace {

/// Where the covariates' fine fields start in a context: covariate s's P anomalies at
/// + 2 s P, its P deviations right after them.
int predictors_offset(const PatchMap& global, int n_vars, const PatchOptions& options) {
  return static_offset(global, n_vars, options) + options.n_static;
}

void check(const PatchMap& global, int n_vars, const PatchOptions& options, const Patches& p, const char* what) {
  if (!options.interp_base || p.residual.empty())
    throw InternalError(std::string(what) + ": the patches have no interpolant base (patch.residual: regression)");
  if (p.C != context_size(global, n_vars, options) || p.P != global.patch_size)
    throw InternalError(std::string(what) + ": the patches were not built with these options");
  if (options.local_slopes.enabled() &&
      p.local_slopes.size() != options.local_slopes.terms.size() * static_cast<size_t>(p.n))
    throw InternalError(std::string(what) + ": the patches have no local slopes (patch.local_slopes)");
}

/// The predictors of patch c's cell k: each covariate's anomaly and deviation, then each
/// local-slope term's slope times its covariate's deviation. False when one is not finite.
bool predictors_at(const PatchOptions& options, const Patches& p, const float* fields, int64_t c, int k, double* x) {
  const int P = p.P, S = options.n_static;
  bool ok = true;
  for (int s = 0; s < S; ++s) {
    const float* a = fields + 2 * s * P;
    x[2 * s] = a[k];
    x[2 * s + 1] = a[P + k];
    ok = ok && std::isfinite(x[2 * s]) && std::isfinite(x[2 * s + 1]);
  }
  if (options.local_slopes.enabled()) {
    const auto& terms = options.local_slopes.terms;
    for (size_t t = 0; t < terms.size(); ++t) {
      x[2 * S + t] = p.local_slopes[t * p.n + c] * x[2 * terms[t] + 1];
      ok = ok && std::isfinite(x[2 * S + t]);
    }
  }
  return ok;
}

/// The factor r2^k of each patch (spread_by_regression's), [n].
std::vector<double> regression_spread_factors(const PatchMap& global, int n_vars, const PatchOptions& options,
                                              const Patches& p) {
  const int S = options.n_static;
  if (static_cast<int>(options.global_regression.size()) != 2 * S || S == 0)
    throw InternalError("regression_spread_factors: patch.spread_regression needs the global regression (" +
                        std::to_string(options.global_regression.size()) + " coefficients for " + std::to_string(S) +
                        " covariates)");
  check(global, n_vars, options, p, "regression_spread_factors");
  const int m = regression_predictors(options), P = p.P, first = predictors_offset(global, n_vars, options);
  std::vector<double> x(static_cast<size_t>(m)), factors(static_cast<size_t>(p.n));
  for (int64_t c = 0; c < p.n; ++c) {
    const float* fields = p.context.data() + c * p.C + first;
    double r2 = 0.0, weight = 0.0;
    for (int k = 0; k < P; ++k) {
      predictors_at(options, p, fields, c, k, x.data());
      double term = 0.0;
      for (int j = 0; j < 2 * S; ++j) term += options.global_regression[static_cast<size_t>(j)] * x[j];
      const double w = p.weights[c * P + k];
      r2 += w * term * term;
      weight += w;
    }
    factors[static_cast<size_t>(c)] = std::pow(r2 / weight + 1e-12, options.spread_regression);
  }
  return factors;
}

}  // namespace

int regression_predictors(const PatchOptions& options) {
  return 2 * options.n_static +
         (options.local_slopes.enabled() ? static_cast<int>(options.local_slopes.terms.size()) : 0);
}

std::vector<std::string> regression_names(const std::vector<std::string>& statics, const PatchOptions& options) {
  if (static_cast<int>(statics.size()) != options.n_static)
    throw InternalError("regression_names: " + std::to_string(statics.size()) + " names for " +
                        std::to_string(options.n_static) + " covariates");
  return regression_names(statics, options.local_slopes.enabled() ? options.local_slopes.terms : std::vector<int>{});
}

void add_regression_data(const PatchMap& global, int n_vars, const PatchOptions& options, const Patches& p,
                         const uint8_t* use, RegressionFitter& fitter, const float* target) {
  check(global, n_vars, options, p, "add_regression_data");
  const int m = regression_predictors(options), P = p.P;
  if (static_cast<int>(fitter.names().size()) != m)
    throw InternalError("add_regression_data: the fitter has the wrong number of predictors");
  if (p.area.size() != static_cast<size_t>(p.n)) throw InternalError("add_regression_data: the patches have no areas");
  if (target == nullptr) target = p.residual.data();
  const int first = predictors_offset(global, n_vars, options);
  std::vector<double> x(static_cast<size_t>(m));
  for (int64_t c = 0; c < p.n; ++c) {
    if (use != nullptr && !use[c]) continue;
    const float* fields = p.context.data() + c * p.C + first;
    for (int k = 0; k < P; ++k) {
      predictors_at(options, p, fields, c, k, x.data());  // the fitter skips a cell with a NaN
      fitter.add(x.data(), target[c * P + k], double(p.weights[c * P + k]) * p.area[c]);
    }
  }
}

void add_regression_base(const PatchMap& global, int n_vars, const PatchOptions& options, Patches& p) {
  check(global, n_vars, options, p, "add_regression_base");
  if (static_cast<int>(options.regression.size()) != regression_predictors(options))
    throw InternalError("add_regression_base: " + std::to_string(options.regression.size()) + " coefficients for " +
                        std::to_string(regression_predictors(options)) + " predictors");
  const std::vector<double>& coef = options.regression;
  const int m = regression_predictors(options), P = p.P, first = predictors_offset(global, n_vars, options);
  std::vector<double> x(static_cast<size_t>(m));
  for (int64_t c = 0; c < p.n; ++c) {
    const float* fields = p.context.data() + c * p.C + first;
    for (int k = 0; k < P; ++k) {
      predictors_at(options, p, fields, c, k, x.data());  // a NaN reaches the base: the patch is invalid
      double fit = 0.0;
      for (int j = 0; j < m; ++j) fit += coef[j] * x[j];
      p.base[c * P + k] += static_cast<float>(fit);
      p.residual[c * P + k] -= static_cast<float>(fit);
    }
  }
}

void blend_toward_global(const PatchMap& global, int n_vars, const PatchOptions& options, const Patches& p,
                         int64_t members, float* out) {
  const int m = regression_predictors(options), S = options.n_static;
  if (options.global_blend >= 1.0 || options.regression.empty() || options.global_regression.empty() || !p.n) return;
  check(global, n_vars, options, p, "blend_toward_global");
  if (static_cast<int>(options.regression.size()) != m || static_cast<int>(options.global_regression.size()) != 2 * S)
    throw InternalError("blend_toward_global: " + std::to_string(options.regression.size()) + " and " +
                        std::to_string(options.global_regression.size()) + " coefficients for " + std::to_string(m) +
                        " and " + std::to_string(2 * S) + " predictors");
  // g = its interpolant + the global fit on the covariates' predictors. The interpolant is the
  // base's (the base minus the base's own fit) unless patch.global_interpolant gave it its own.
  const bool own_interp = !p.global_interp.empty();
  if (own_interp && p.global_interp.size() != p.base.size())
    throw InternalError("blend_toward_global: the patches' global interpolant does not match their base");
  const int P = p.P, first = predictors_offset(global, n_vars, options);
  const double keep = options.global_blend;
  std::vector<double> x(static_cast<size_t>(m));
  for (int64_t c = 0; c < p.n; ++c) {
    const float* fields = p.context.data() + c * p.C + first;
    float* patch = out + c * members * P;
    for (int k = 0; k < P; ++k) {
      predictors_at(options, p, fields, c, k, x.data());  // a NaN reaches the target, as it reaches the base
      double target = own_interp ? p.global_interp[c * P + k] : p.base[c * P + k];
      for (int j = 0; j < m; ++j) {
        const double g = j < 2 * S ? options.global_regression[j] : 0.0;
        target += (own_interp ? g : g - options.regression[j]) * x[j];
      }
      double mean = 0.0;
      for (int64_t j = 0; j < members; ++j) mean += patch[j * P + k];
      mean /= static_cast<double>(members);
      if (!std::isfinite(mean) || !std::isfinite(target)) continue;
      const auto move = static_cast<float>((1.0 - keep) * (target - mean));
      for (int64_t j = 0; j < members; ++j) patch[j * P + k] += move;
    }
  }
}

void spread_by_regression(const PatchMap& global, int n_vars, const PatchOptions& options, const Patches& p,
                          int64_t members, float* out) {
  if (options.spread_regression <= 0.0 || !p.n) return;
  const std::vector<double> factors = regression_spread_factors(global, n_vars, options, p);
  const int P = p.P;
  for (int64_t c = 0; c < p.n; ++c) {
    const double f = factors[static_cast<size_t>(c)];
    if (!std::isfinite(f)) continue;
    float* patch = out + c * members * P;
    for (int k = 0; k < P; ++k) {
      double mean = 0.0;
      for (int64_t j = 0; j < members; ++j) mean += patch[j * P + k];
      mean /= static_cast<double>(members);
      if (!std::isfinite(mean)) continue;
      for (int64_t j = 0; j < members; ++j) patch[j * P + k] = static_cast<float>(mean + f * (patch[j * P + k] - mean));
    }
  }
}

std::string format_regression(const std::vector<double>& coef) {
  std::string out;
  char buffer[40];
  for (double c : coef) {
    std::snprintf(buffer, sizeof buffer, "%.17g", c);
    out += (out.empty() ? "" : ",") + std::string(buffer);
  }
  return out;
}

std::vector<double> parse_regression(const std::string& text, int count, const std::string& source) {
  std::vector<double> coef;
  size_t start = 0;
  while (start <= text.size() && !text.empty()) {
    const size_t end = std::min(text.find(',', start), text.size());
    const std::string item = text.substr(start, end - start);
    char* stop = nullptr;
    const double v = std::strtod(item.c_str(), &stop);
    if (item.empty() || stop != item.c_str() + item.size() || !std::isfinite(v))
      throw CheckpointError(source + ": patch.regression \"" + text + "\": \"" + item + "\" is not a finite number");
    coef.push_back(v);
    start = end + 1;
  }
  if (static_cast<int>(coef.size()) != count)
    throw CheckpointError(source + ": patch.regression holds " + std::to_string(coef.size()) +
                          " coefficient(s), expected " + std::to_string(count) +
                          " (an anomaly and a deviation per static covariate, then one per patch.local_slopes "
                          "covariate)");
  return coef;
}

}  // namespace finecast::coupling
