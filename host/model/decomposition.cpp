// SPDX-License-Identifier: BSD-3-Clause
// Latitude-band and round-robin partitions of an ICON grid, halos and the local ComIn domain.
#include "host/model/decomposition.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <unordered_map>

#include "common/error.hpp"

namespace finecast::coupling::host {

const schema::Names<Decomposition>& names(Decomposition) {
  static const schema::Names<Decomposition> n{{Decomposition::kLatBands, "lat_bands"},
                                              {Decomposition::kRoundRobin, "round_robin"}};
  return n;
}

Decomposition parse_decomposition(const std::string& name) {
  Decomposition d{};
  if (schema::parse_name(name, d)) return d;
  throw ConfigError("decomposition must be one of lat_bands, round_robin; got '" + name + "'");
}

std::vector<int> LocalCells::all() const {
  std::vector<int> cells = owned;
  cells.insert(cells.end(), halo.begin(), halo.end());
  return cells;
}

LocalCells decompose(const IconGrid& grid, Decomposition method, int n_ranks, int rank) {
  if (n_ranks < 1 || rank < 0 || rank >= n_ranks)
    throw InternalError("decompose: rank " + std::to_string(rank) + " of " + std::to_string(n_ranks));
  const int n = static_cast<int>(grid.n_cells);
  if (n < n_ranks)
    throw ConfigError(grid.path + ": " + std::to_string(n) + " cells cannot be shared by " + std::to_string(n_ranks) +
                      " ranks");
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

namespace {

// Local ids of the rank's vertices or edges: those of owned cells first, then the rest (ICON's
// order), each part sorted by global id. `of_cell` lists the global ids of each local cell.
std::vector<int> local_entities(const std::vector<std::array<int, 3>>& of_cell, size_t n_owned) {
  std::vector<int> owned, other;
  for (size_t j = 0; j < of_cell.size(); ++j)
    for (int g : of_cell[j]) (j < n_owned ? owned : other).push_back(g);
  for (auto* v : {&owned, &other}) {
    std::sort(v->begin(), v->end());
    v->erase(std::unique(v->begin(), v->end()), v->end());
  }
  other.erase(std::remove_if(other.begin(), other.end(),
                             [&](int g) { return std::binary_search(owned.begin(), owned.end(), g); }),
              other.end());
  owned.insert(owned.end(), other.begin(), other.end());
  return owned;
}

void lonlat_of_midpoint(const IconGrid& grid, int a, int b, double& lon, double& lat) {
  double x = 0, y = 0, z = 0;
  for (int v : {a, b}) {
    x += std::cos(grid.vlat[v]) * std::cos(grid.vlon[v]);
    y += std::cos(grid.vlat[v]) * std::sin(grid.vlon[v]);
    z += std::sin(grid.vlat[v]);
  }
  lon = std::atan2(y, x);
  lat = std::atan2(z, std::sqrt(x * x + y * y));
}

}  // namespace

GridEdges grid_edges(const IconGrid& grid) {
  GridEdges e;
  std::vector<std::pair<int, int>> pairs;
  pairs.reserve(grid.cell_vertices.size() * 3);
  for (const auto& cv : grid.cell_vertices)
    for (int k = 0; k < 3; ++k) pairs.emplace_back(std::minmax(cv[k], cv[(k + 1) % 3]));
  std::sort(pairs.begin(), pairs.end());
  pairs.erase(std::unique(pairs.begin(), pairs.end()), pairs.end());
  e.vertices = std::move(pairs);
  e.of_cell.resize(grid.cell_vertices.size());
  for (size_t c = 0; c < grid.cell_vertices.size(); ++c)
    for (int k = 0; k < 3; ++k) {
      const auto key = std::minmax(grid.cell_vertices[c][k], grid.cell_vertices[c][(k + 1) % 3]);
      e.of_cell[c][k] = static_cast<int>(
          std::lower_bound(e.vertices.begin(), e.vertices.end(), std::pair<int, int>(key)) - e.vertices.begin());
    }
  return e;
}

comin_host::Domain make_domain(const IconGrid& grid, const LocalCells& cells, int nproma, double dt) {
  const std::vector<int> local = cells.all();
  std::unordered_map<int, int> to_local;
  to_local.reserve(local.size() * 2);
  for (size_t j = 0; j < local.size(); ++j) to_local.emplace(local[j], static_cast<int>(j));

  comin_host::Domain d;
  d.nproma = nproma;
  d.n_cells_global = static_cast<int>(grid.n_cells);
  d.dt = dt;
  d.grid_filename = grid.path;
  const bool have_neighbours = grid.cell_neighbours.size() == static_cast<size_t>(grid.n_cells);
  const bool have_vertices = grid.cell_vertices.size() == static_cast<size_t>(grid.n_cells) &&
                             grid.vlon.size() == static_cast<size_t>(grid.n_vertices);
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
    if (!grid.parent_cell.empty()) d.parent_glb_index.push_back(grid.parent_cell[c] + 1);
    if (!grid.refin_c_ctrl.empty()) d.refin_ctrl.push_back(grid.refin_c_ctrl[c]);
  }
  if (!have_vertices) return d;

  // Vertices and edges of the local cells, as ICON numbers them locally.
  std::vector<std::array<int, 3>> cell_vertex_ids(local.size()), cell_edge_ids(local.size());
  const GridEdges edges = grid_edges(grid);
  for (size_t j = 0; j < local.size(); ++j)
    for (int k = 0; k < 3; ++k) {
      cell_vertex_ids[j][k] = grid.cell_vertices[local[j]][k];
      cell_edge_ids[j][k] = edges.of_cell[local[j]][k];
    }
  const std::vector<int> verts = local_entities(cell_vertex_ids, cells.owned.size());
  const std::vector<int> local_edges = local_entities(cell_edge_ids, cells.owned.size());
  std::unordered_map<int, int> vert_local, edge_local;
  for (size_t i = 0; i < verts.size(); ++i) vert_local.emplace(verts[i], static_cast<int>(i));
  for (size_t i = 0; i < local_edges.size(); ++i) edge_local.emplace(local_edges[i], static_cast<int>(i));
  d.n_verts_global = static_cast<int>(grid.n_vertices);
  for (int v : verts) {
    d.vert_glb_index.push_back(v + 1);
    d.vlon.push_back(grid.vlon[v]);
    d.vlat.push_back(grid.vlat[v]);
  }
  d.n_edges_global = static_cast<int>(edges.vertices.size());
  d.edge_cells.assign(local_edges.size(), {-1, -1});
  for (int e : local_edges) {
    const auto [a, b] = edges.vertices[e];
    double lon = 0, lat = 0;
    lonlat_of_midpoint(grid, a, b, lon, lat);
    d.edge_glb_index.push_back(e + 1);
    d.elon.push_back(lon);
    d.elat.push_back(lat);
    d.edge_vertices.push_back({vert_local.at(a), vert_local.at(b)});
  }
  for (size_t j = 0; j < local.size(); ++j) {
    std::array<int, 3> vx{}, ex{};
    for (int k = 0; k < 3; ++k) {
      vx[k] = vert_local.at(cell_vertex_ids[j][k]);
      ex[k] = edge_local.at(cell_edge_ids[j][k]);
      auto& ec = d.edge_cells[ex[k]];
      (ec[0] < 0 ? ec[0] : ec[1]) = static_cast<int>(j);
    }
    d.vertices.push_back(vx);
    d.cell_edges.push_back(ex);
  }
  return d;
}

}  // namespace finecast::coupling::host
