// SPDX-License-Identifier: BSD-3-Clause
// How finecast-replay splits a lat-lon field over MPI ranks, and the ComIn domain of one rank.
#pragma once

#include <string>

#include "host/comin/host.hpp"
#include "coupling/grid/latlon_grid.hpp"
#include "host/model/decomposition.hpp"

namespace finecast::host::replay {

/// The cells (0-based global index row * nlon + col) that `rank` of `n_ranks` owns, and its halo
/// (the north, south, west and east neighbours owned by other ranks; west/east wrap on global
/// grids). `method`: lat_bands (equal runs of cells in storage order, so band edges cut through
/// blocks), round_robin (cell i on rank i % n_ranks) or random (a permutation seeded by `seed`,
/// then equal runs). None is aligned with the plugin's blocks on purpose. Pure: every rank
/// computes the same partition. Throws ConfigError for an unknown method or too few cells.
host::LocalCells decompose_latlon(const coupling::LatLonGrid& grid, const std::string& method, unsigned long long seed,
                                  int n_ranks, int rank);

/// The ComIn descriptive data of one rank: local cells owned then halo, decomp_domain 0/1,
/// cell centres in radians (geographic, also for rotated grids), areas in m^2. ComIn's
/// neighbour arrays describe triangles, so lat-lon cells report none (-1).
comin::Domain make_latlon_domain(const coupling::LatLonGrid& grid, const host::LocalCells& cells, int nproma,
                                 double dt);

}  // namespace finecast::host::replay
