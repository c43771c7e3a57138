// SPDX-License-Identifier: BSD-3-Clause
// The refinement hierarchy of an ICON grid (global R<n>B<k>, or a limited area cut from one),
// rebuilt from its topology, as a PatchMap.
#pragma once

#include <string>

#include "coupling/grid/icon_grid.hpp"
#include "coupling/grid/patch_map.hpp"

namespace finecast::coupling {

/// An ICON grid's place in the family R<root>B<level>: the icosahedron's edges divided into
/// `root` sections, then bisected `level` times (20 root^2 4^level cells on the whole sphere).
struct IconGridSize {
  int root = 2;
  int level = 0;
  bool limited_area = false;  ///< a part of the sphere: some cell has an edge with no neighbour
};

/// The size of a grid: from its global attributes grid_root and grid_level when it has them
/// (a global grid must then have 20 root^2 4^level cells, a limited-area one fewer), else from a
/// global grid's cell count (20 root^2 4^level with root 2 or an odd root: 20,480 -> R2B4, 2,880
/// -> R3B2). Throws GridError naming the grid when the count fits no such grid, or when a
/// limited-area grid lacks the attributes (its cell count does not give them).
IconGridSize icon_grid_size(const IconGrid& grid);

/// The refinement level F of an R<n>B<F> grid (icon_grid_size(grid).level).
int icon_grid_level(const IconGrid& grid);

/// "R2B4", "R3B7": ICON's name of a size.
std::string icon_grid_name(int root, int level);

/// What to do with the cells near a limited-area grid's lateral boundary.
struct LimitedAreaRules {
  /// Coarse cells holding a fine cell with refin_c_ctrl in 1..boundary_rows (the lateral
  /// boundary zone, where ICON prescribes the driving model's values; ICON's grf_bdywidth_c is 4)
  /// are left out; 0 leaves the zone in.
  int boundary_rows = 4;
};

/// Patches of the R<n>B<coarse_level> cells of an R<n>B<F> grid: 4^(F - coarse_level) fine cells
/// each, in the canonical order of docs/grids.md (integer barycentric coordinates in the coarse
/// cell, corners starting at the northernmost, counter-clockwise seen from outside). Coarse cells
/// are numbered in the order of their smallest fine cell index, which reproduces ICON's parent
/// numbering on hierarchically numbered grids. Throws GridError naming the grid when its
/// hierarchy cannot be rebuilt.
///
/// Global grids: the hierarchy comes from the topology (icosahedron corners, hop distances),
/// never from cell coordinates or numbering; when the file has parent_cell_index and coarse_level
/// = F - 1 the result is checked against it.
///
/// Limited-area grids (icon_limited_area.hpp): at coarse_level = F - 1 from the file's
/// parent_cell_index when every cell has one; otherwise by matching the cells to the uniform
/// R<n>B<F> grid over the domain (the match propagated through the topology from the cell nearest
/// the domain's centre), and then checked against parent_cell_index where the file has it. Coarse
/// cells with fewer than 4^(F - coarse_level) fine cells in the domain, and those reaching into the
/// lateral boundary zone (`rules`), are left out: their fine cells belong to no patch, and a kept
/// patch's neighbour there is -1 (PatchMap::limited_area counts both).
PatchMap icon_patch_map(const IconGrid& grid, int coarse_level, const LimitedAreaRules& rules = {});

/// One line on what a limited-area patch map left out and how ("" for other maps): the coarse
/// cells kept and left out (cut by the domain's edge, in the lateral boundary zone), the fine
/// cells without a patch, where the hierarchy came from.
std::string limited_area_text(const PatchMap& map);

}  // namespace finecast::coupling
