// SPDX-License-Identifier: BSD-3-Clause
// Grid matching between truth and prediction files, and block-aligned region selection.
#include "eval/window.hpp"

#include <cmath>
#include <cstdlib>
#include <sstream>

#include "common/error.hpp"

namespace finecast::eval {

int find_offset(const std::vector<double>& full, const std::vector<double>& sub, double tol) {
  if (sub.empty() || sub.size() > full.size()) return -1;
  const double spacing = sub.size() > 1 ? std::abs(sub[1] - sub[0]) : 1.0;
  const double eps = tol * (spacing > 0 ? spacing : 1.0);
  for (std::size_t off = 0; off + sub.size() <= full.size(); ++off) {
    bool ok = true;
    for (std::size_t j = 0; j < sub.size() && ok; ++j) ok = std::abs(full[off + j] - sub[j]) <= eps;
    if (ok) return static_cast<int>(off);
  }
  return -1;
}

bool is_global_lon(const std::vector<double>& lon) {
  if (lon.size() < 2) return false;
  const double d = (lon.back() - lon.front()) / static_cast<double>(lon.size() - 1);
  return std::abs(std::abs(d) * lon.size() - 360.0) < 1e-3 * std::abs(d);
}

std::pair<int, int> contiguous_run(const std::vector<char>& flags, const std::string& axis) {
  int b0 = -1, b1 = -1;
  for (int b = 0; b < static_cast<int>(flags.size()); ++b) {
    if (!flags[b]) continue;
    if (b0 < 0)
      b0 = b;
    else if (b1 != b)
      throw ConfigError("--region: the blocks inside the region along " + axis +
                        " are not contiguous in the file's order");
    b1 = b + 1;
  }
  if (b0 < 0) throw ConfigError("--region: no whole block lies inside the region along " + axis);
  return {b0, b1};
}

}  // namespace finecast::eval
