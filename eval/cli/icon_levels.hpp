// SPDX-License-Identifier: BSD-3-Clause
// The R2B<l> patch maps of one ICON grid, built on first use, and the evaluation layout they
// give (shared by finecast-eval and its tests).
#pragma once

#include <cstdint>
#include <map>
#include <vector>

#include "common/error.hpp"
#include "eval/cells.hpp"
#include "coupling/grid/icon_grid.hpp"
#include "coupling/grid/icon_hierarchy.hpp"

namespace finecast::tools {

/// Patch maps of a global ICON grid by coarse level (each rebuilds the hierarchy from the
/// topology, as the plugin does). `grid` must outlive this.
class IconLevels {
 public:
  /// Throws GridError when the grid is not an R<n>B<F> grid.
  /// Throws ConfigError for a limited-area grid, which finecast-eval does not score yet (its
  /// layouts need every fine cell in a patch).
  explicit IconLevels(const coupling::IconGrid& grid) : grid_(grid) {
    const coupling::IconGridSize size = coupling::icon_grid_size(grid);
    if (size.limited_area)
      throw ConfigError("grid '" + grid.path + "' is a limited area (" +
                        coupling::icon_grid_name(size.root, size.level) +
                        "), which finecast-eval does not score yet: its layouts need every fine cell in a patch. "
                        "The plugin's output there is scored by comparing ts with ts_host on the patches' cells "
                        "(docs/grids.md, limited-area grids)");
    fine_level_ = size.level;
  }

  int fine_level() const { return fine_level_; }

  const coupling::PatchMap& map(int level) {
    auto it = maps_.find(level);
    if (it == maps_.end()) it = maps_.emplace(level, coupling::icon_patch_map(grid_, level)).first;
    return it->second;
  }

  /// The R2B<level> cell of every fine cell.
  std::vector<int64_t> cell_index(int level) {
    const coupling::PatchMap& m = map(level);
    std::vector<int64_t> out(static_cast<std::size_t>(m.n_fine), -1);
    for (int64_t c = 0; c < m.n_coarse; ++c)
      for (int k = 0; k < m.patch_size; ++k) out[m.fine_of_patch[c * m.patch_size + k]] = c;
    return out;
  }

  /// The layout of the R2B<coarse_level> patches: the plugin's patch map, the grid's cell areas
  /// and centres, and every level between coarse and fine for the scale bands.
  coupling::eval::CellLayoutSpec layout_spec(int coarse_level) {
    const coupling::PatchMap& pm = map(coarse_level);
    coupling::eval::CellLayoutSpec spec;
    spec.n_cells = grid_.n_cells;
    spec.patch_size = pm.patch_size;
    spec.cell_of_patch = pm.fine_of_patch;
    spec.area = grid_.cell_area;
    spec.lon = grid_.clon;
    spec.lat = grid_.clat;
    spec.patch_lon = pm.coarse_lon;
    spec.patch_lat = pm.coarse_lat;
    spec.n_neighbours = pm.n_neighbours;
    spec.patch_neighbours = pm.neighbours;
    for (int l = coarse_level + 1; l < fine_level_; ++l) spec.levels.push_back(cell_index(l));
    spec.coarse_level = coarse_level;
    spec.fine_level = fine_level_;
    return spec;
  }

 private:
  const coupling::IconGrid& grid_;
  int fine_level_;
  std::map<int, coupling::PatchMap> maps_;
};

}  // namespace finecast::tools
