// SPDX-License-Identifier: BSD-3-Clause
// What a patch sees of its coarse neighbourhood: the ring cells of patch.context_rings, and the
// conservative interpolant of the coarse field at its fine cells (the base of
// patch.residual: interp). Both are tables built once per patch map.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "coupling/grid/patch_map.hpp"

namespace finecast::coupling {

/// Coarse cells per patch in the context besides the patch itself, for `rings`:
///  - 0: the edge neighbours (map.n_neighbours: 3 on ICON, 4 on lat-lon), the context before
///    patch.context_rings existed;
///  - K >= 1 on lat-lon blocks: the (2K+1)^2 - 1 other blocks of the square around the block;
///  - K >= 1 on ICON: 3K(K+1)/2, the coarse triangles within K edge-neighbour steps of a
///    triangle on a regular triangular lattice (fewer near the 12 pentagon points: the slots
///    left over are -1).
int ring_count(const PatchMap& map, int rings);

/// The cells within `rings` steps of cell p through a neighbour table [cells][n_neighbours]
/// (-1 = none): p first, then breadth-first in slot order. `seen_at` has one entry per cell;
/// the visited ones are marked with p, so the same vector serves every p without clearing
/// (start it at -1).
void cells_within(const int64_t* neighbours, int n_neighbours, int64_t p, int rings, std::vector<int64_t>& out,
                  std::vector<int64_t>& seen_at);

/// Blocks beyond the bicubic stencil's 4 (each side) where the B-spline base is cut: its
/// weights decay as 0.268^distance, so the 7th block on carries under 1e-4 of the value.
inline constexpr int kBsplineReach = 7;

/// `kind` for a grid of lat-lon blocks (`latlon`) or ICON cells: kAuto resolved (bicubic on
/// lat-lon blocks, idw on ICON). Throws ConfigError naming `option` (interpolant_mismatch) for a
/// kind of the other grid type.
Interpolant resolve_interpolant(Interpolant kind, bool latlon, const std::string& option = "patch.interpolant",
                                const std::string& grid = "grid.type");

/// Builds what extract_patches needs for context_rings = `rings` (> 0: the ring table) and, when
/// `interpolant` is set, the conservative interpolant's weights for `kind` (resolve_interpolant):
///  - bicubic (lat-lon): Keys a = -1/2 between block centres, exactly finecast-eval's bicubic;
///  - bspline (lat-lon): finecast-eval's cubic B-spline (natural ends; periodic along longitude
///    circles), its weights cut kBsplineReach blocks beyond the bicubic stencil and renormalised;
///  - idw (ICON): inverse-distance weighting of the 6 nearest coarse centres among those within
///    3 edge steps, weights 1/d^2, as finecast-eval's idw;
///  - linear (ICON): finecast-eval's linear_cons, a least-squares gradient from the edge
///    neighbours in every coarse cell.
/// Ring order:
///  - lat-lon: the square's blocks row by row (rows and columns in storage order), the block
///    itself left out; rows beyond the grid's edge are the edge row (replicated), columns wrap
///    when map.wrap_columns and are replicated otherwise;
///  - ICON: breadth-first from the triangle through the edge-neighbour slots in slot order
///    (slot k lies across the edge opposite canonical corner k, which positions alone define),
///    so the order depends neither on how the cells are numbered nor on the decomposition.
/// Idempotent. Throws GridError naming the grid kind when the map cannot hold the rings (e.g.
/// more cells within K steps than a triangular lattice has).
/// `global_kind` (patch.global_interpolant) other than auto and the base's adds its weights as
/// map.global_base, the interpolant of the global regression; auto or the base's own clears them.
void prepare_patch_map(PatchMap& map, int rings, bool interpolant, Interpolant kind = Interpolant::kAuto,
                       Interpolant global_kind = Interpolant::kAuto);

/// The conservative interpolant of `coarse` (n_coarse values; a missing value counts as the
/// patch's own) at every patch's fine cells, patch-major [n_coarse][P] in canonical order, each
/// patch's area-weighted mean corrected to its coarse value (computed in double). Needs
/// prepare_patch_map(map, ..., true). With `count` >= 0, only patches first..first+count-1
/// (out then holds count patches; `coarse` is still indexed by every patch).
void interpolate_patches(const PatchMap& map, const float* coarse, float* out, int64_t first = 0, int64_t count = -1);
/// The same with the weights of `table` (map.base or map.global_base).
void interpolate_patches(const PatchMap& map, const CoarseInterpolation& table, const float* coarse, float* out,
                         int64_t first = 0, int64_t count = -1);

}  // namespace finecast::coupling
