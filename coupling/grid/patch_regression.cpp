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
}

}  // namespace

int regression_predictors(const PatchOptions& options) { return 2 * options.n_static; }

void add_regression_data(const PatchMap& global, int n_vars, const PatchOptions& options, const Patches& p,
                         const uint8_t* use, NormalEquations& equations) {
  check(global, n_vars, options, p, "add_regression_data");
  const int m = regression_predictors(options), P = p.P;
  if (equations.size() != m) throw InternalError("add_regression_data: the equations have the wrong size");
  const int first = predictors_offset(global, n_vars, options);
  std::vector<double> x(static_cast<size_t>(m));
  for (int64_t c = 0; c < p.n; ++c) {
    if (use != nullptr && !use[c]) continue;
    const float* fields = p.context.data() + c * p.C + first;
    for (int k = 0; k < P; ++k) {
      const double y = p.residual[c * P + k];
      bool ok = std::isfinite(y);
      for (int s = 0; s < options.n_static && ok; ++s) {
        const float* a = fields + 2 * s * P;
        x[2 * s] = a[k];
        x[2 * s + 1] = a[P + k];
        ok = std::isfinite(x[2 * s]) && std::isfinite(x[2 * s + 1]);
      }
      if (ok) equations.add(x.data(), y, p.weights[c * P + k]);
    }
  }
}

void add_regression_base(const PatchMap& global, int n_vars, const PatchOptions& options, Patches& p) {
  check(global, n_vars, options, p, "add_regression_base");
  if (static_cast<int>(options.regression.size()) != regression_predictors(options))
    throw InternalError("add_regression_base: " + std::to_string(options.regression.size()) + " coefficients for " +
                        std::to_string(options.n_static) + " covariates");
  const std::vector<double>& coef = options.regression;
  const int P = p.P, first = predictors_offset(global, n_vars, options);
  for (int64_t c = 0; c < p.n; ++c) {
    const float* fields = p.context.data() + c * p.C + first;
    for (int k = 0; k < P; ++k) {
      double fit = 0.0;
      for (int s = 0; s < options.n_static; ++s) {
        const float* a = fields + 2 * s * P;
        fit += coef[2 * s] * a[k] + coef[2 * s + 1] * a[P + k];
      }
      p.base[c * P + k] += static_cast<float>(fit);
      p.residual[c * P + k] -= static_cast<float>(fit);
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
                          " (an anomaly and a deviation per static covariate)");
  return coef;
}

}  // namespace finecast::coupling
