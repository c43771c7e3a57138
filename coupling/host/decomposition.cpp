// SPDX-License-Identifier: BSD-3-Clause
// Latitude-band and round-robin partitions of an ICON grid, halos and the local ComIn domain.
#include "coupling/host/decomposition.hpp"

#include <algorithm>
#include <numeric>
#include <unordered_map>

#include "common/error.hpp"

namespace finecast::coupling::host {

Decomposition parse_decomposition(const std::string& name) {
  if (name == "lat_bands") return Decomposition::kLatBands;
  if (name == "round_robin") return Decomposition::kRoundRobin;
  throw ConfigError("decomposition must be one of lat_bands, round_robin; got '" + name + "'");
}

std::vector<int> LocalCells::all() const {
  std::vector<int> cells = owned;
  cells.insert(cells.end(), halo.begin(), halo.end());
  return cells;
}

LocalCells decompose(const IconGrid& grid, Decomposition method, int n_ranks, int rank) {
  if (n_ranks < 1 || rank < 0 || rank >= n_ranks)
    throw InternalError("decompose: rank " + std::to_string(rank) + " of " +
                        std::to_string(n_ranks));
  const int n = static_cast<int>(grid.n_cells);
  if (n < n_ranks)
    throw ConfigError(grid.path + ": " + std::to_string(n) + " cells cannot be shared by " +
                      std::to_string(n_ranks) + " ranks");
  std::vector<char> mine(n, 0);
  LocalCells out;
  if (method == Decomposition::kRoundRobin) {
    for (int c = rank; c < n; c += n_ranks) mine[c] = 1;
  } else {
    std::vector<int> order(n);
    std::iota(order.begin(), order.end(), 0);
    std::sort(order.begin(), order.end(), [&](int a, int b) {
      if (grid.clat[a] != grid.clat[b]) return grid.clat[a] < grid.clat[b];
      if (grid.clon[a] != grid.clon[b]) return grid.clon[a] < grid.clon[b];
      return a < b;
    });
    const int64_t begin = static_cast<int64_t>(n) * rank / n_ranks;
    const int64_t end = static_cast<int64_t>(n) * (rank + 1) / n_ranks;
    for (int64_t i = begin; i < end; ++i) mine[order[i]] = 1;
  }
  std::vector<char> in_halo(n, 0);
  for (int c = 0; c < n; ++c) {
    if (!mine[c]) continue;
    out.owned.push_back(c);
    if (grid.cell_neighbours.size() == static_cast<size_t>(n))
      for (int32_t nb : grid.cell_neighbours[c])
        if (nb >= 0 && !mine[nb]) in_halo[nb] = 1;
  }
  for (int c = 0; c < n; ++c)
    if (in_halo[c]) out.halo.push_back(c);
  return out;
}

comin_host::Domain make_domain(const IconGrid& grid, const LocalCells& cells, int nproma,
                               double dt) {
  const std::vector<int> local = cells.all();
  std::unordered_map<int, int> to_local;
  to_local.reserve(local.size() * 2);
  for (size_t j = 0; j < local.size(); ++j) to_local.emplace(local[j], static_cast<int>(j));

  comin_host::Domain d;
  d.nproma = nproma;
  d.n_cells_global = static_cast<int>(grid.n_cells);
  d.dt = dt;
  const bool have_neighbours = grid.cell_neighbours.size() == static_cast<size_t>(grid.n_cells);
  const bool have_vertices = grid.cell_vertices.size() == static_cast<size_t>(grid.n_cells);
  std::vector<int> vertex_ids;
  if (have_vertices) {
    for (int c : local)
      for (int32_t v : grid.cell_vertices[c]) vertex_ids.push_back(v);
    std::sort(vertex_ids.begin(), vertex_ids.end());
    vertex_ids.erase(std::unique(vertex_ids.begin(), vertex_ids.end()), vertex_ids.end());
  }
  for (size_t j = 0; j < local.size(); ++j) {
    const int c = local[j];
    d.glb_index.push_back(c + 1);
    d.decomp_domain.push_back(j < cells.owned.size() ? 0 : 1);
    d.clon.push_back(grid.clon[c]);
    d.clat.push_back(grid.clat[c]);
    d.area.push_back(grid.cell_area.empty() ? 0.0 : grid.cell_area[c]);
    std::array<int, 3> nb{-1, -1, -1};
    if (have_neighbours)
      for (int k = 0; k < 3; ++k) {
        const int32_t g = grid.cell_neighbours[c][k];
        auto it = g >= 0 ? to_local.find(g) : to_local.end();
        if (it != to_local.end()) nb[k] = it->second;
      }
    d.neighbours.push_back(nb);
    if (have_vertices) {
      std::array<int, 3> vx{};
      for (int k = 0; k < 3; ++k)
        vx[k] = static_cast<int>(
            std::lower_bound(vertex_ids.begin(), vertex_ids.end(), grid.cell_vertices[c][k]) -
            vertex_ids.begin());
      d.vertices.push_back(vx);
    }
    if (!grid.parent_cell.empty()) d.parent_glb_index.push_back(grid.parent_cell[c] + 1);
  }
  return d;
}

}  // namespace finecast::coupling::host
