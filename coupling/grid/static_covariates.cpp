// SPDX-License-Identifier: BSD-3-Clause
// Normalisation of fine static covariates and its text form in checkpoint metadata.
#include "coupling/grid/static_covariates.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "common/error.hpp"

namespace finecast::coupling {

StaticMoments static_moments(const PatchMap& map, const float* field) {
  StaticMoments m;
  const int64_t total = map.n_coarse * map.patch_size;
  // Each patch's weights sum to 1; patches are weighted equally, as the training samples are.
  for (int64_t i = 0; i < total; ++i) {
    const double x = field[map.fine_of_patch[i]];
    if (!std::isfinite(x)) continue;
    const double w = map.fine_weight[i];
    m.w += w;
    m.wx += w * x;
    m.wxx += w * x * x;
  }
  return m;
}

StaticNorm static_normalisation(const StaticMoments& m, const std::string& what) {
  if (!(m.w > 0.0)) throw GridError(what + ": no finite value in any patch of the grid");
  StaticNorm n;
  n.mean = m.wx / m.w;
  const double var = std::max(0.0, m.wxx / m.w - n.mean * n.mean);
  const double sd = std::sqrt(var);
  n.scale = sd > 1e-12 * std::max(1.0, std::abs(n.mean)) ? sd : 1.0;
  return n;
}

StaticNorm static_normalisation(const PatchMap& map, const float* field, const std::string& what) {
  return static_normalisation(static_moments(map, field), what);
}

void normalise_static(const StaticNorm& norm, const float* in, float* out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] = static_cast<float>((in[i] - norm.mean) / norm.scale);
}

std::string format_static_norms(const std::vector<StaticNorm>& norms) {
  std::string s;
  char buf[80];
  for (const auto& n : norms) {
    std::snprintf(buf, sizeof buf, "%.17g %.17g", n.mean, n.scale);
    s += (s.empty() ? "" : ";") + std::string(buf);
  }
  return s;
}

std::vector<StaticNorm> parse_static_norms(const std::string& text, const std::string& source) {
  std::vector<StaticNorm> out;
  if (text.empty()) return out;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ';')) {
    std::istringstream is(item);
    StaticNorm n;
    std::string rest;
    if (!(is >> n.mean >> n.scale) || (is >> rest) || !std::isfinite(n.mean) || !(n.scale > 0))
      throw ConfigError(source + ": static covariate normalisation \"" + item +
                        "\" is not \"mean scale\" with a positive scale");
    out.push_back(n);
  }
  return out;
}

}  // namespace finecast::coupling
