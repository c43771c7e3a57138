// SPDX-License-Identifier: BSD-3-Clause
// A synthetic ICON-like grid: the icosahedron's edges divided into `root` sections (R<root>B0),
// then refined by recursive edge bisection; globally or over a region.
#pragma once

#include <array>
#include <cstdint>
#include <string>
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
/// With root n != 2, level 0 (R<n>B0) divides each icosahedron face into n^2 triangles instead:
/// vertices 0..11 the icosahedron's, then the n-1 interior points of each icosahedron edge e (from
/// its first vertex to its second), then the (n-1)(n-2)/2 interior points of each face; face f's
/// cells are n^2 f + lattice index (docs/grids.md), its edges numbered in order of first
/// appearance, parent_edge the icosahedron edge an edge lies on (-1 inside a face).
struct IcosahedralMesh {
  int root = 2;
  int level = -1;
  std::vector<std::array<double, 3>> vertices;     ///< unit vectors
  std::vector<std::array<int32_t, 3>> cells;       ///< corners, counter-clockwise seen from outside
  std::vector<std::array<int32_t, 3>> cell_edges;  ///< slot k: the edge from corner k to corner k+1
  std::vector<std::array<int32_t, 2>> edges;       ///< end vertices
  std::vector<int32_t> parent_edge;  ///< the R2B<level-1> edge each edge halves or parallels (empty at -1)
};

/// The icosahedron (level -1) divided into `root` sections (root 2: bisected with great-circle
/// midpoints; root n: edge points at equal great-circle angles, face points the normalised mean
/// of the three great-circle n-sections through them, the face centre for n = 3), then bisected
/// `level` times; throws GridError for a level outside -1..9 or a root outside 1..kMaxIconRoot.
IcosahedralMesh make_icosahedral_mesh(int level, int root = 2);

/// The largest root division the generator makes (ICON's registered grids use 2, 3, 5, 13, 19, ...).
inline constexpr int kMaxIconRoot = 64;

/// One bisection of `mesh` in the hierarchical numbering above (cell 4p + k is child k of cell p);
/// works on any part of a mesh (keep_cells).
IcosahedralMesh bisect_mesh(const IcosahedralMesh& mesh);

/// The cells of `mesh` with keep[c] != 0, in their order, their edges renumbered in order of first
/// appearance (oriented as their first cell runs them); the vertices stay as they are (those of
/// dropped cells are unused). parent_edge is dropped: it would name edges of the unpruned mesh.
IcosahedralMesh keep_cells(const IcosahedralMesh& mesh, const std::vector<char>& keep);

/// The part of the uniform R<root>B<level> mesh over a spherical cap (unit vector `centre`, angular
/// `radius`): the cells of R<root>B<coarse_level> whose circumscribed caps meet it, in the order of
/// the global numbering, and all their descendants, so fine cell c lies in coarse cell
/// c >> 2 (level - coarse_level). Cost grows with the region, not with the globe.
IcosahedralMesh make_icosahedral_region(int level, int root, int coarse_level, const std::array<double, 3>& centre,
                                        double radius);

/// The cells and vertices of a mesh as an IconGrid (circumcentres, spherical areas, neighbours),
/// named `path`; parent_cell empty.
IconGrid icon_grid_of_mesh(const IcosahedralMesh& mesh, const std::string& path);

/// Builds an R<root>B<level> grid (20 root^2 4^level cells; R2B4 = 20,480, R2B6 = 327,680) by root
/// division (root 2: bisection) of the icosahedron and `level` further bisections, with great-circle midpoints as
/// ICON's generator does: the geometry of ICON's standard uniform grids (the icosahedron with
/// pentagons at the poles, at longitudes 0, +-72, +-144 at 26.57N and +-36, +-108, 180 at
/// 26.57S; cells counter-clockwise seen from outside). Cells and vertices are renumbered by a permutation drawn from
/// `shuffle_seed` (0 keeps make_icosahedral_mesh's hierarchical numbering: parent k holds cells
/// 4k..4k+3), so tests can prove that the hierarchy is rebuilt from topology, not from
/// numbering. parent_cell holds each cell's R2B<level-1> parent in the hierarchical numbering
/// (empty at level 0); centres are circumcentres (as in ICON grid files), areas spherical on the
/// Earth's radius.
IconGrid make_icosahedral_grid(int level, uint64_t shuffle_seed = 0, int root = 2);

}  // namespace finecast::coupling
