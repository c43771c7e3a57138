// SPDX-License-Identifier: BSD-3-Clause
// The refinement hierarchy of a global ICON grid, rebuilt from its topology, as a PatchMap.
#pragma once

#include "coupling/grid/icon_grid.hpp"
#include "coupling/grid/patch_map.hpp"

namespace finecast::coupling {

/// The refinement level F of an R2B<F> grid from its cell count (80 * 4^F cells: 20,480 -> 4);
/// throws GridError naming the grid when the count is not of that form.
int icon_grid_level(const IconGrid& grid);

/// Patches of the R2B<coarse_level> parents of a global R2B<F> grid: 4^(F - coarse_level) fine
/// cells each, in the canonical order of docs/grids.md (integer barycentric coordinates in the
/// parent, corners starting at the northernmost, counter-clockwise seen from outside). The
/// hierarchy comes from the topology (icosahedron corners, hop distances), never from cell
/// coordinates or numbering; when the file has parent_cell_index and coarse_level = F - 1 the
/// result is checked against it. Coarse cells are numbered in the order of their smallest fine
/// cell index, which reproduces ICON's parent numbering on hierarchically numbered grids.
/// Throws GridError (with the min/max fine cells per coarse cell when they differ) when the grid
/// is not a consistent global icosahedral refinement.
PatchMap icon_patch_map(const IconGrid& grid, int coarse_level);

}  // namespace finecast::coupling
