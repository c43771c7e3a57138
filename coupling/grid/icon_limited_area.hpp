// SPDX-License-Identifier: BSD-3-Clause
// Limited-area ICON grids (a part of an R<n>B<k> grid, with a lateral boundary): their cell rows
// counted from the boundary (ICON's refin_c_ctrl) and their coarse cells.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "coupling/grid/icon_hierarchy.hpp"

namespace finecast::coupling {

/// Each vertex's edge-hop distance from the lateral boundary of a triangle mesh (0 for a vertex
/// of an edge that only one cell has; -1 where no boundary is reachable, as on a closed sphere).
std::vector<int32_t> boundary_distance(const std::vector<std::array<int32_t, 3>>& cells, int64_t n_vertices);

/// ICON's refin_c_ctrl of a cell whose nearest corner is `distance` hops from the boundary: the
/// row 1 + distance (the outermost row touches the boundary with an edge or a corner, and each row
/// is the strip of triangles between two lines of vertices), or 0 beyond `depth` rows.
inline int32_t boundary_row(int32_t distance, int depth) {
  return distance >= 0 && distance < depth ? distance + 1 : 0;
}

/// The patch map of a limited-area grid (icon_patch_map's contract).
PatchMap limited_area_patch_map(const IconGrid& grid, const IconGridSize& size, int coarse_level,
                                const LimitedAreaRules& rules);

}  // namespace finecast::coupling
