// SPDX-License-Identifier: BSD-3-Clause
// How finecast-host splits an ICON grid over MPI ranks, and the ComIn domain of one rank.
#pragma once

#include "common/schema.hpp"

#include <array>
#include <string>
#include <utility>
#include <vector>

#include "host/comin/host.hpp"
#include "coupling/grid/icon_grid.hpp"

namespace finecast::coupling::host {

/// lat_bands: equal numbers of cells in bands of cell-centre latitude (ties by longitude, then
/// index), deliberately not aligned with coarse cells; round_robin: cell i on rank i % n (a
/// worst case: every cell's neighbours live elsewhere).
enum class Decomposition { kLatBands, kRoundRobin };
/// "lat_bands", "round_robin" (option tables, schema::name_of).
const schema::Names<Decomposition>& names(Decomposition);

/// Parses "lat_bands" | "round_robin"; throws ConfigError listing the allowed names.
Decomposition parse_decomposition(const std::string& name);

/// The cells of one rank, 0-based global ids, each list sorted.
struct LocalCells {
  std::vector<int> owned;
  std::vector<int> halo;  ///< edge neighbours of owned cells that another rank owns
  /// owned then halo: the rank's local cell order
  std::vector<int> all() const;
};

/// Cells owned by `rank` of `n_ranks` and its one-cell halo. Pure: every rank computes the same
/// partition.
LocalCells decompose(const IconGrid& grid, Decomposition method, int n_ranks, int rank);

/// The edges of a grid, derived from its cells' vertices: edge e joins vertices[e] (0-based,
/// sorted pairs, so every rank numbers them alike); of_cell[c] lists the edges of cell c.
struct GridEdges {
  std::vector<std::pair<int, int>> vertices;
  std::vector<std::array<int, 3>> of_cell;
};
GridEdges grid_edges(const IconGrid& grid);

/// The ComIn descriptive data of one rank: local cells (owned, then halo), decomp_domain 0/1,
/// neighbours as local indices, parents and refin_ctrl from the grid file when it has them (a
/// limited-area file numbers its cells by boundary row, so owned cells come in ICON's zone order), and the
/// vertices and edges of the local cells (those of owned cells first) when the grid has vertices.
comin_host::Domain make_domain(const IconGrid& grid, const LocalCells& cells, int nproma, double dt);

}  // namespace finecast::coupling::host
