// SPDX-License-Identifier: BSD-3-Clause
// Matching one triangle mesh's cells and vertices onto another's through the topology alone:
// fixed for one cell and its corners, propagated across shared edges (the uniform geometry of a
// global grid, and the uniform grid a limited-area grid was cut from). Internal to coupling/grid.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "coupling/grid/icon_grid.hpp"
#include "coupling/grid/spherical.hpp"

namespace finecast::coupling {

/// A triangle mesh's topology: corners, the cell across the edge opposite each corner (-1 on the
/// boundary), the cells around each vertex, and whether a vertex lies on the boundary.
struct MeshTopology {
  const std::vector<std::array<int32_t, 3>>* corners = nullptr;
  std::vector<std::array<int32_t, 3>> across;
  std::vector<int32_t> degree;
  std::vector<int32_t> first_cell;   ///< one cell holding each vertex (-1: none)
  std::vector<uint8_t> on_boundary;  ///< 1 for a vertex of an edge with one cell
};

MeshTopology mesh_topology(const IconGrid& grid);

/// The slot of vertex v in a cell's corners, -1 when it is none of them.
int corner_slot(const std::array<int32_t, 3>& cell, int32_t v);

/// +1 when (a, b, c) run counter-clockwise seen from outside the sphere, -1 otherwise.
int corner_orientation(const sphere::Vec3& a, const sphere::Vec3& b, const sphere::Vec3& c);

/// Unit vectors of a grid's cell centres and of its vertices.
std::vector<sphere::Vec3> cell_centres(const IconGrid& grid);
std::vector<sphere::Vec3> vertex_positions(const IconGrid& grid);

/// A match of one mesh's (the file's) cells and vertices onto another's (the generated one's).
struct MeshMatch {
  std::vector<int32_t> cell, vertex;  ///< file id -> generated id (-1: unmatched)
  double score = 0;                   ///< sum of squared chords between matched cell centres
};

/// Scratch space of match_from, reused across trials.
struct MatchScratch {
  std::vector<int32_t> gen_taken, gen_vertex_taken, queue;
};

/// Propagates the match fixed by file cell `fc` -> generated cell `gc` with corners fv[k] ->
/// gv[k] breadth-first across shared edges. A vertex inside the file's mesh must have as many
/// cells as its image, one on the file's boundary at most as many (the file may be a part of the
/// generated mesh). False when the topologies disagree, when a file cell is not reached (the
/// file's cells are not edge-connected), or when the score passes `give_up`.
bool match_from(const MeshTopology& file, const MeshTopology& gen, const std::vector<sphere::Vec3>& file_centres,
                const std::vector<sphere::Vec3>& gen_centres, int32_t fc, int32_t gc, const std::array<int32_t, 3>& fv,
                const std::array<int32_t, 3>& gv, double give_up, MeshMatch& m, MatchScratch& scratch);

}  // namespace finecast::coupling
