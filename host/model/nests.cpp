// SPDX-License-Identifier: BSD-3-Clause
#include "host/model/nests.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <filesystem>

#include "common/error.hpp"
#include "coupling/grid/icon_hierarchy.hpp"
#include "coupling/grid/spherical.hpp"

namespace finecast::host {

namespace {

namespace sphere = coupling::sphere;
using Vec = sphere::Vec3;

/// (a x b) . c: which side of the great circle through a and b the point c lies on.
double side(const Vec& a, const Vec& b, const Vec& c) { return sphere::dot(sphere::cross(a, b), c); }

constexpr double kPi = sphere::kPi;
constexpr int kBands = 180;  ///< latitude bands of one degree that index the parent's cells

int band_of(double lat) { return std::clamp(static_cast<int>((lat + kPi / 2) / kPi * kBands), 0, kBands - 1); }

}  // namespace

std::vector<int32_t> locate_in_parent(const IconGrid& parent, const IconGrid& nest) {
  // Each parent cell goes into the latitude bands its corners span, so a point is tested against
  // the cells of its own band only (a few hundred on a global R2B4 grid).
  std::vector<std::vector<int32_t>> bands(kBands);
  std::vector<std::array<Vec, 3>> corners(static_cast<size_t>(parent.n_cells));
  for (int64_t c = 0; c < parent.n_cells; ++c) {
    double lo = 10, hi = -10;
    for (int k = 0; k < 3; ++k) {
      const int32_t v = parent.cell_vertices[c][k];
      corners[c][k] = sphere::to_xyz(parent.vlon[v], parent.vlat[v]);
      lo = std::min(lo, parent.vlat[v]);
      hi = std::max(hi, parent.vlat[v]);
    }
    // A triangle's edges bulge poleward of its corners: one band of margin on each side.
    for (int b = std::max(0, band_of(lo) - 1); b <= std::min(kBands - 1, band_of(hi) + 1); ++b)
      bands[b].push_back(static_cast<int32_t>(c));
  }
  std::vector<int32_t> found(static_cast<size_t>(nest.n_cells), -1);
  for (int64_t i = 0; i < nest.n_cells; ++i) {
    const Vec p = sphere::to_xyz(nest.clon[i], nest.clat[i]);
    for (const int32_t c : bands[band_of(nest.clat[i])]) {
      const auto& t = corners[c];
      if (sphere::dot(p, t[0]) <= 0) continue;  // the far hemisphere
      const double s0 = side(t[0], t[1], p), s1 = side(t[1], t[2], p), s2 = side(t[2], t[0], p);
      if ((s0 >= 0 && s1 >= 0 && s2 >= 0) || (s0 <= 0 && s1 <= 0 && s2 <= 0)) {
        found[i] = c;
        break;
      }
    }
  }
  return found;
}

IconGrid read_nest_grid(const std::string& path, const IconGrid& parent, const std::string& where) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec))
    throw ConfigError(where + ": the nest's grid file " + path + " does not exist");
  IconGrid grid = coupling::read_icon_grid(path);
  if (!coupling::icon_grid_size(grid).limited_area)
    throw ConfigError(where + ": " + path + " is a global grid (" + std::to_string(grid.n_cells) +
                      " cells, no lateral boundary); a nest is a limited-area grid inside domain 1 " +
                      "(finecast-grid --write-icon-grid FILE --level N --region lat0,lat1,lon0,lon1 writes one)");
  const std::vector<int32_t> parents = locate_in_parent(parent, grid);
  const auto outside = std::count(parents.begin(), parents.end(), -1);
  if (outside > 0) {
    const auto first = std::find(parents.begin(), parents.end(), -1) - parents.begin();
    throw ConfigError(where + ": " + std::to_string(outside) + " of the " + std::to_string(grid.n_cells) +
                      " cells of " + path + " lie outside domain 1 (" + parent.path + "), e.g. cell " +
                      std::to_string(first + 1) + " at " +
                      fmt::format("{:.2f}N {:.2f}E", grid.clat[first] / sphere::kDeg, grid.clon[first] / sphere::kDeg) +
                      "; a nest must lie inside its parent domain");
  }
  grid.parent_cell = parents;
  return grid;
}

}  // namespace finecast::host
