// SPDX-License-Identifier: BSD-3-Clause
// A synthetic global ICON-like grid: the icosahedron refined by recursive edge bisection.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "coupling/grid/icon_grid.hpp"

namespace finecast::coupling {

/// The R2B<level> triangulation with its edges, all indices 0-based and hierarchical: cell
/// 4p + k is child k of cell p of R2B<level-1> (children 0, 1, 2 at the parent's corners 0, 1,
/// 2, child 3 the central, inverted one); the vertices of R2B<level-1> keep their numbers and
/// the midpoint of its edge e is vertex n_vertices(level-1) + e; its edge e = (a, b) with
/// midpoint m has the halves 2e = (a, m) and 2e + 1 = (m, b), and the central child of cell p
/// adds the edges 2 E(level-1) + 3p + j, parallel to the parent's edge j. Level -1 is the
/// icosahedron itself (edges numbered in order of first appearance), so every level's numbering
/// follows from the one below.
struct IcosahedralMesh {
  int level = -1;
  std::vector<std::array<double, 3>> vertices;     ///< unit vectors
  std::vector<std::array<int32_t, 3>> cells;       ///< corners, counter-clockwise seen from outside
  std::vector<std::array<int32_t, 3>> cell_edges;  ///< slot k: the edge from corner k to corner k+1
  std::vector<std::array<int32_t, 2>> edges;       ///< end vertices
  std::vector<int32_t> parent_edge;  ///< the R2B<level-1> edge each edge halves or parallels (empty at -1)
};

/// The icosahedron (level -1) bisected level + 1 times with great-circle midpoints; throws
/// GridError for a level outside -1..9.
IcosahedralMesh make_icosahedral_mesh(int level);

/// Builds an R2B<level> grid (80 * 4^level cells: level 4 = 20,480, level 6 = 327,680) by root
/// bisection of the icosahedron and `level` further bisections, with great-circle midpoints as
/// ICON's generator does: the geometry of ICON's standard uniform grids (the icosahedron with
/// pentagons at the poles, at longitudes 0, +-72, +-144 at 26.57N and +-36, +-108, 180 at
/// 26.57S; cells counter-clockwise seen from outside). Cells and vertices are renumbered by a permutation drawn from
/// `shuffle_seed` (0 keeps make_icosahedral_mesh's hierarchical numbering: parent k holds cells
/// 4k..4k+3), so tests can prove that the hierarchy is rebuilt from topology, not from
/// numbering. parent_cell holds each cell's R2B<level-1> parent in the hierarchical numbering
/// (empty at level 0); centres are circumcentres (as in ICON grid files), areas spherical on the
/// Earth's radius.
IconGrid make_icosahedral_grid(int level, uint64_t shuffle_seed = 0);

}  // namespace finecast::coupling
