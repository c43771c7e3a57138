// SPDX-License-Identifier: BSD-3-Clause
// Helpers of the finecast-downscale tests: one step of a NetCDF field, and run_downscale's error.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <exception>
#include <string>
#include <vector>

#include "coupling/io/field_reader.hpp"
#include "plugin/downscale/downscale.hpp"

namespace finecast::testing_downscale {

/// Step `t` of `var` in `path` (at `level`: a member of an ensemble output, or a level).
inline std::vector<float> read_step(const std::string& path, const std::string& var, int64_t t, int level = 0) {
  coupling::FieldReader r(path, var, level);
  std::vector<float> v(static_cast<size_t>(r.n_values()));
  r.read(t, v.data());
  return v;
}

/// The largest |a[i] - b[i]| (infinity when the sizes differ): a plugin's sample against
/// finecast-downscale's.
inline double max_abs_difference(const std::vector<float>& a, const std::vector<float>& b) {
  if (a.size() != b.size()) return std::numeric_limits<double>::infinity();
  double worst = 0;
  for (size_t i = 0; i < a.size(); ++i) worst = std::max(worst, std::fabs(double(a[i]) - b[i]));
  return worst;
}

/// The message of the exception run_downscale throws ("" when it succeeds).
inline std::string downscale_error(const plugin::DownscaleOptions& o) {
  try {
    plugin::run_downscale(o);
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

}  // namespace finecast::testing_downscale
