// SPDX-License-Identifier: BSD-3-Clause
// The parts of an ICON patch map that global and limited-area grids share: the canonical corner
// order of a coarse triangle, the canonical slots of its fine cells, and the assembled PatchMap.
// Internal to coupling/grid.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "coupling/grid/icon_grid.hpp"
#include "coupling/grid/patch_map.hpp"

namespace finecast::coupling {

/// Index of a triangle in a triangular lattice of side `side`: strip i (first barycentric
/// coordinate fixed between i and i+1) holds side-i upward and side-i-1 downward triangles,
/// interleaved along j.
inline int64_t lattice_index(int64_t side, int64_t i, int64_t j, bool down) {
  return 2 * side * i - i * i + 2 * j + (down ? 1 : 0);
}

/// Position of a lattice triangle from the coordinate sums of its three vertices (3x centroid):
/// strip i, position j and orientation, for triangles of side `unit`.
inline void lattice_locate(int64_t sum_p, int64_t sum_q, int64_t unit, int64_t& i, int64_t& j, bool& down) {
  i = sum_p / (3 * unit);
  j = sum_q / (3 * unit);
  down = (sum_p - 3 * unit * i) + (sum_q - 3 * unit * j) >= 3 * unit;
}

/// The canonical order (A, B, C) of a coarse triangle's corners `k` (vertex ids of `grid`): A the
/// northernmost (exact ties by x, then y), then counter-clockwise seen from outside. `from[c]`
/// is the index into `k` of canonical corner c.
std::array<int32_t, 3> canonical_corners(const IconGrid& grid, const std::array<int32_t, 3>& k,
                                         std::array<int8_t, 3>& from);

/// The canonical slots of the fine cells `cells` of one coarse triangle with canonical corners
/// `corners` and r fine edges per side (r^2 cells): the hop distances from B and C inside the
/// triangle give every vertex its barycentric coordinates (beta, gamma) = (r - d_B, r - d_C).
/// Returns false (leaving `slots` partly filled) when the cells are no such triangle.
bool canonical_slots(const IconGrid& grid, const std::vector<int64_t>& cells, const std::array<int32_t, 3>& corners,
                     int64_t r, std::vector<int64_t>& slots);

/// The patch map of n_coarse coarse triangles of P fine cells: slot_cell[id * P + s] is the fine
/// cell at canonical slot s of coarse triangle id, corners[id] its canonical corners. Coarse
/// cells are renumbered in the order of their smallest fine cell; area weights, centres
/// (area-weighted means of the fine centres) and edge neighbours (slot k across the edge
/// opposite canonical corner k) follow. `closed`: every coarse edge must have a triangle on each
/// side (a global grid; else GridError), otherwise an edge with one is a neighbour of -1.
PatchMap assemble_icon_patch_map(const IconGrid& grid, int64_t n_coarse, int64_t P,
                                 const std::vector<std::array<int32_t, 3>>& corners,
                                 const std::vector<int64_t>& slot_cell, bool closed);

}  // namespace finecast::coupling
