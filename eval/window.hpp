// SPDX-License-Identifier: BSD-3-Clause
// Where the scored rectangle lies: prediction grid inside the truth grid, and a lat-lon region.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "common/region.hpp"

namespace finecast::eval {

/// The box type and its parser live in common/region.hpp (the plugin uses them too).
using finecast::is_region_text;
using finecast::is_regions_text;
using finecast::parse_region;
using finecast::parse_regions;
using finecast::Region;
using finecast::union_of_boxes;

/// Index i such that full[i + j] matches sub[j] for every j within tol times the grid spacing
/// of `sub` (a cropped grid); -1 when sub is not a contiguous piece of full. Single-value
/// coordinates match within tol (absolute).
int find_offset(const std::vector<double>& full, const std::vector<double>& sub, double tol = 1e-3);

/// Whether regularly spaced longitudes (degrees) go once around the globe: n * spacing = 360.
bool is_global_lon(const std::vector<double>& lon);

/// The blocks [b0, b1) of size k along an axis (coord.size() / k whole blocks) whose cells all
/// satisfy `inside`. Throws ConfigError naming `axis` when no block qualifies or the
/// qualifying blocks are not contiguous.
template <class Pred>
std::pair<int, int> blocks_inside(const std::vector<double>& coord, int k, Pred inside, const std::string& axis);

/// Non-template core of blocks_inside: flags[b] = block b qualifies.
std::pair<int, int> contiguous_run(const std::vector<char>& flags, const std::string& axis);

template <class Pred>
std::pair<int, int> blocks_inside(const std::vector<double>& coord, int k, Pred inside, const std::string& axis) {
  const int nb = static_cast<int>(coord.size()) / k;
  std::vector<char> flags(nb, 1);
  for (int b = 0; b < nb; ++b)
    for (int i = b * k; i < (b + 1) * k; ++i)
      if (!inside(coord[i])) flags[b] = 0;
  return contiguous_run(flags, axis);
}

}  // namespace finecast::eval
