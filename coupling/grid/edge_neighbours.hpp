// SPDX-License-Identifier: BSD-3-Clause
// Edge neighbours of a triangle mesh from its corners alone (the half-edge matching shared by
// the ICON grid reader and the refinement hierarchy).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace finecast::coupling {

/// For triangles given by their corner vertex ids (each < n_vertices), returns for every
/// triangle t and slot k the triangle across the edge opposite corner k, or -1 when no other
/// triangle has that edge (the boundary of a regional grid). Sorting the 3n half-edges by their
/// vertex pair puts the two triangles of an edge next to each other: O(n log n), no hashing.
/// Throws GridError "<what>: an edge is shared by m triangles ..." when m > 2.
std::vector<std::array<int32_t, 3>> edge_neighbours(const std::vector<std::array<int32_t, 3>>& corners,
                                                    int64_t n_vertices, const std::string& what);

}  // namespace finecast::coupling
