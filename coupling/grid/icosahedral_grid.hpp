// SPDX-License-Identifier: BSD-3-Clause
// A synthetic global ICON-like grid: the icosahedron refined by recursive edge bisection.
#pragma once

#include <cstdint>

#include "coupling/grid/icon_grid.hpp"

namespace finecast::coupling {

/// Builds an R2B<level> grid (80 * 4^level cells: level 4 = 20,480, level 6 = 327,680) by root
/// bisection of the icosahedron and `level` further bisections, with great-circle midpoints as
/// ICON's generator does: the geometry of ICON's standard uniform grids (the icosahedron with
/// pentagons at the poles, at longitudes 0, +-72, +-144 at 26.57N and +-36, +-108, 180 at
/// 26.57S; cells counter-clockwise seen from outside). Cells and vertices are renumbered by a permutation drawn from
/// `shuffle_seed` (0 keeps the hierarchical numbering: parent k holds cells 4k..4k+3), so tests
/// can prove that the hierarchy is rebuilt from topology, not from numbering. parent_cell holds
/// each cell's R2B<level-1> parent in the hierarchical numbering (empty at level 0); centres are
/// circumcentres (as in ICON grid files), areas spherical on the Earth's radius.
IconGrid make_icosahedral_grid(int level, uint64_t shuffle_seed = 0);

}  // namespace finecast::coupling
