// SPDX-License-Identifier: BSD-3-Clause
// A limited-area ICON grid cut from a global uniform mesh (finecast-grid --write-icon-grid
// --region): the cells in a latitude-longitude box, renumbered by boundary row as ICON's index
// lists need, with their rows (refin_c/e/v_ctrl) and parents; and the hierarchy tables the writer
// gives a global mesh. Internal to coupling/grid.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "coupling/grid/icon_grid_file_writer.hpp"
#include "coupling/grid/icon_mesh_tables.hpp"
#include "coupling/grid/icosahedral_grid.hpp"

namespace finecast::coupling {

/// Hierarchy and refinement control of the entities of a mesh to write: parents 1-based (0 =
/// none), children 0-based (kNoEntity = none), the refin_*_ctrl flags.
struct IconMeshHierarchy {
  std::vector<int32_t> parent_cell, parent_edge;
  std::vector<std::array<int32_t, 4>> child_cell, child_edge;
  std::vector<int32_t> refin_c, refin_e, refin_v;
};

/// The global mesh's: parents in the hierarchical numbering, children in the next level's, no flags.
IconMeshHierarchy global_mesh_hierarchy(const IcosahedralMesh& mesh, const IconMeshTables& t);

/// The cells of `global` inside `box`, cleaned so that the domain is one piece whose boundary
/// never touches itself: repeatedly, cells with at most one neighbour in the domain and the
/// smaller fans of a vertex the domain meets twice are dropped; then the largest edge-connected
/// part is kept.
std::vector<char> region_cells(const IcosahedralMesh& global, const IconMeshTables& t, const LatLonBox& box);

/// A limited area cut from the global mesh: its mesh in the file's numbering and its hierarchy.
struct LimitedAreaCut {
  IcosahedralMesh mesh;
  IconMeshHierarchy hierarchy;
};

/// The cells `in` of `global` (region_cells) as a mesh of their own: cells, edges and vertices
/// numbered anew, each sorted by refinement row (icon_index_key), then in the global order; rows
/// counted from the lateral boundary (refin_c_ctrl = 1 + the vertex hops of a cell's nearest
/// corner, for the first `depth` rows; vertices d + 1, edges d1 + d2 + 1); parents the global
/// R<n>B<level-1> entities, no children; a lateral-boundary edge runs from its second vertex to
/// its first in its one cell (which makes that cell its cell 1).
LimitedAreaCut cut_limited_area(const IcosahedralMesh& global, const IconMeshTables& t, const std::vector<char>& in,
                                int depth);

}  // namespace finecast::coupling
