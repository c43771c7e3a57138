// SPDX-License-Identifier: BSD-3-Clause
#include "host/comin/descrdata_arrays.hpp"

#include <algorithm>
#include <limits>
#include <string>

namespace finecast::coupling::comin_host {
namespace {

template <typename T>
FortranArray<T> blocked(int n, int nproma, int k, T pad) {
  FortranArray<T> a;
  const int nb = n_blocks(n, nproma);
  a.data.assign(static_cast<size_t>(nproma) * nb * k, pad);
  a.shape = k == 1 ? std::vector<int>{nproma, nb} : std::vector<int>{nproma, nb, k};
  return a;
}

// Offset of (local entity j, component c) in an (nproma, nblks, k) Fortran array.
size_t offset(int j, int c, int nproma, int nblks) {
  return static_cast<size_t>(j % nproma) + static_cast<size_t>(nproma) * (j / nproma + static_cast<size_t>(nblks) * c);
}

// Connectivity as (index, block) pairs: -1 (no entity, or not on this rank) becomes (0, 0).
struct Connectivity {
  FortranArray<int> idx, blk;
  Connectivity(int n, int nproma, int k) : idx(blocked(n, nproma, k, 0)), blk(blocked(n, nproma, k, 0)) {}
  void set(int j, int c, int local, int nproma) {
    if (local < 0) return;
    const int nblks = idx.shape[1];
    idx.data[offset(j, c, nproma, nblks)] = block_index(local, nproma);
    blk.data[offset(j, c, nproma, nblks)] = block_number(local, nproma);
  }
};

template <typename T>
FortranArray<T> blocked_values(const std::vector<T>& values, int nproma, T pad) {
  const int n = static_cast<int>(values.size());
  FortranArray<T> a = blocked(n, nproma, 1, pad);
  for (int j = 0; j < n; ++j) a.data[offset(j, 0, nproma, a.shape[1])] = values[j];
  return a;
}

// ICON's start/end index lists: one entry per refin_ctrl zone min_rl..max_rl, in the order the
// zones are laid out (1, 2, .., max_rl, then 0, -1, .., min_rl). `zone` gives each local
// entity's zone, which must already follow that order.
void zone_lists(const std::vector<int>& zone, int min_rl, int max_rl, int nproma, EntityArrays& a,
                const std::string& what) {
  const int nz = max_rl - min_rl + 1;
  a.start_index.data.assign(nz, 0);
  a.end_index.data.assign(nz, 0);
  a.start_block.data.assign(nz, 0);
  a.end_block.data.assign(nz, 0);
  a.start_index.shape = a.end_index.shape = a.start_block.shape = a.end_block.shape = {nz};
  auto rank_of = [&](int z) { return z > 0 ? z - 1 : max_rl - z; };  // layout position
  for (size_t j = 1; j < zone.size(); ++j)
    if (rank_of(zone[j]) < rank_of(zone[j - 1]))
      throw ConfigError("finecast host: " + what +
                        " are not in ICON's order (owned first, then "
                        "halo by level): entity " +
                        std::to_string(j) + " is in zone " + std::to_string(zone[j]) + " after one in zone " +
                        std::to_string(zone[j - 1]));
  int next = 1;  // 1-based position of the next entity
  std::vector<int> order;
  for (int z = 1; z <= max_rl; ++z) order.push_back(z);
  for (int z = 0; z >= min_rl; --z) order.push_back(z);
  size_t j = 0;
  for (int z : order) {
    const int start = next;
    while (j < zone.size() && zone[j] == z) {
      ++j;
      ++next;
    }
    const int k = z - min_rl;
    a.start_index.data[k] = start;
    a.end_index.data[k] = next - 1;
    a.start_block.data[k] = block_number(start - 1, nproma);
    a.end_block.data[k] = next - 1 >= 1 ? block_number(next - 2, nproma) : 1;
  }
}

void check_size(size_t size, size_t n, bool optional, const std::string& where, const char* name, const char* per) {
  if (optional && size == 0) return;
  if (size != n)
    throw ConfigError(where + name + " has " + std::to_string(size) + " entries, expected " + std::to_string(n) +
                      " (one per " + per + ")");
}

void build_cells(const Domain& d, const std::string& where, DomainArrays& out) {
  const int n = static_cast<int>(d.glb_index.size());
  const int np = d.nproma;
  EntityArrays& c = out.cells;
  c.present = true;
  c.n = n;
  c.n_global = d.n_cells_global;
  c.nblks = n_blocks(n, np);
  const double nan = std::numeric_limits<double>::quiet_NaN();
  c.glb_index.data = d.glb_index;
  c.glb_index.shape = {n};
  // Padding of the last block: decomp_domain -1 and NaN coordinates.
  c.decomp_domain = blocked_values(d.decomp_domain, np, -1);
  c.lon = blocked_values(d.clon, np, nan);
  c.lat = blocked_values(d.clat, np, nan);
  c.area = blocked_values(d.area, np, nan);
  c.refin_ctrl = d.refin_ctrl.empty() ? blocked(n, np, 1, 0) : blocked_values(d.refin_ctrl, np, 0);
  c.num_edges = blocked(n, np, 1, 0);
  c.child_id = blocked(n, np, 1, 0);
  c.parent_glb_idx = blocked(n, np, 1, 0);
  c.parent_glb_blk = blocked(n, np, 1, 0);
  Connectivity neighbours(n, np, 3), children(n, np, 4), vertices(n, np, 3), edges(n, np, 3);
  std::vector<int> zone(n);
  for (int j = 0; j < n; ++j) {
    const int g = d.glb_index[j];
    if (g < 1 || g > d.n_cells_global)
      throw ConfigError(where + "glb_index[" + std::to_string(j) + "] = " + std::to_string(g) + " is outside 1.." +
                        std::to_string(d.n_cells_global));
    if (!out.glb2loc.emplace(g, j + 1).second)
      throw ConfigError(where + "global cell " + std::to_string(g) + " appears twice in glb_index");
    const size_t o = offset(j, 0, np, c.nblks);
    c.num_edges.data[o] = 3;
    if (!d.parent_glb_index.empty() && d.parent_glb_index[j] > 0) {
      c.parent_glb_idx.data[o] = block_index(d.parent_glb_index[j] - 1, np);
      c.parent_glb_blk.data[o] = block_number(d.parent_glb_index[j] - 1, np);
    }
    auto local = [&](int v, int limit, const char* name) {
      if (v >= limit)
        throw ConfigError(where + name + " of local cell " + std::to_string(j) + " is " + std::to_string(v) +
                          ", beyond the " + std::to_string(limit) + " local " +
                          (std::string(name) == "vertex" ? "vertices" : std::string(name) + "s"));
      return v;
    };
    for (int k = 0; k < 3; ++k) neighbours.set(j, k, local(d.neighbours[j][k], n, "neighbour"), np);
    if (!d.children.empty())
      for (int k = 0; k < 4; ++k) children.set(j, k, local(d.children[j][k], n, "child"), np);
    if (!d.vertices.empty())
      for (int k = 0; k < 3; ++k)
        vertices.set(j, k, local(d.vertices[j][k], static_cast<int>(d.vlon.size()), "vertex"), np);
    if (!d.cell_edges.empty())
      for (int k = 0; k < 3; ++k)
        edges.set(j, k, local(d.cell_edges[j][k], static_cast<int>(d.elon.size()), "edge"), np);
    const int level = d.decomp_domain[j];
    const int refin = d.refin_ctrl.empty() ? 0 : d.refin_ctrl[j];
    // Halo row h of cells is zone min_rlcell_int - 2h + 1 (ICON numbers two zones per row).
    // Rows of a lateral boundary beyond max_rlcell lie in zone 0 with the interior.
    zone[j] = level > 0            ? std::max(kMinRlCell, kMinRlCellInt - 2 * level + 1)
              : refin > kMaxRlCell ? 0
                                   : std::max(refin, 0);
  }
  c.neighbor_idx = std::move(neighbours.idx);
  c.neighbor_blk = std::move(neighbours.blk);
  c.child_idx = std::move(children.idx);
  c.child_blk = std::move(children.blk);
  if (!d.vertices.empty()) {
    c.vertex_idx = std::move(vertices.idx);
    c.vertex_blk = std::move(vertices.blk);
  }
  if (!d.cell_edges.empty()) {
    c.edge_idx = std::move(edges.idx);
    c.edge_blk = std::move(edges.blk);
  }
  if (!d.hhl.empty()) {
    const int nh = d.nlev + 1;
    c.hhl = blocked(n, np, nh, nan);
    c.hhl.shape = {np, nh, c.nblks};  // (nproma, nlev+1, nblks): levels before blocks
    for (int j = 0; j < n; ++j)
      for (int k = 0; k < nh; ++k)
        c.hhl.data[static_cast<size_t>(j % np) + static_cast<size_t>(np) * (k + static_cast<size_t>(nh) * (j / np))] =
            d.hhl[static_cast<size_t>(j) * nh + k];
  }
  zone_lists(zone, kMinRlCell, kMaxRlCell, np, c, "cells");
}

// Vertices or edges: owned when one of the rank's owned cells has them.
std::vector<char> owned_by_cells(const Domain& d, const std::vector<std::array<int, 3>>& of_cell, size_t n) {
  std::vector<char> owned(n, 0);
  for (size_t j = 0; j < of_cell.size(); ++j)
    if (d.decomp_domain[j] == 0)
      for (int v : of_cell[j])
        if (v >= 0) owned[v] = 1;
  return owned;
}

void build_verts(const Domain& d, const std::string& where, DomainArrays& out) {
  const int n = static_cast<int>(d.vert_glb_index.size());
  if (n == 0) return;
  if (d.vertices.empty()) throw ConfigError(where + "vertices are given but no cell has any");
  check_size(d.vlon.size(), n, false, where, "vlon", "local vertex");
  check_size(d.vlat.size(), n, false, where, "vlat", "local vertex");
  const int np = d.nproma;
  EntityArrays& v = out.verts;
  v.present = true;
  v.n = n;
  v.n_global = d.n_verts_global;
  v.nblks = n_blocks(n, np);
  const double nan = std::numeric_limits<double>::quiet_NaN();
  v.glb_index.data = d.vert_glb_index;
  v.glb_index.shape = {n};
  v.lon = blocked_values(d.vlon, np, nan);
  v.lat = blocked_values(d.vlat, np, nan);
  v.refin_ctrl = blocked(n, np, 1, 0);
  v.num_edges = blocked(n, np, 1, 0);
  Connectivity cells(n, np, 6), edges(n, np, 6), neighbours(n, np, 6);
  std::vector<int> n_cells(n, 0), n_edges(n, 0);
  for (int j = 0; j < static_cast<int>(d.vertices.size()); ++j)
    for (int k = 0; k < 3; ++k) {
      const int vx = d.vertices[j][k];
      if (vx >= 0 && n_cells[vx] < 6) cells.set(vx, n_cells[vx]++, j, np);
    }
  for (int e = 0; e < static_cast<int>(d.edge_vertices.size()); ++e)
    for (int k = 0; k < 2; ++k) {
      const int vx = d.edge_vertices[e][k];
      if (vx < 0 || n_edges[vx] >= 6) continue;
      neighbours.set(vx, n_edges[vx], d.edge_vertices[e][1 - k], np);
      edges.set(vx, n_edges[vx]++, e, np);
    }
  for (int j = 0; j < n; ++j) v.num_edges.data[offset(j, 0, np, v.nblks)] = n_edges[j];
  v.cell_idx = std::move(cells.idx);
  v.cell_blk = std::move(cells.blk);
  v.edge_idx = std::move(edges.idx);
  v.edge_blk = std::move(edges.blk);
  v.neighbor_idx = std::move(neighbours.idx);
  v.neighbor_blk = std::move(neighbours.blk);
  const std::vector<char> owned = owned_by_cells(d, d.vertices, n);
  std::vector<int> zone(n);
  for (int j = 0; j < n; ++j) zone[j] = owned[j] ? 0 : kMinRlVertInt - 1;
  zone_lists(zone, kMinRlVert, kMaxRlVert, np, v, "vertices");
}

void build_edges(const Domain& d, const std::string& where, DomainArrays& out) {
  const int n = static_cast<int>(d.edge_glb_index.size());
  if (n == 0) return;
  if (d.cell_edges.empty()) throw ConfigError(where + "edges are given but no cell has any");
  check_size(d.elon.size(), n, false, where, "elon", "local edge");
  check_size(d.elat.size(), n, false, where, "elat", "local edge");
  check_size(d.edge_cells.size(), n, false, where, "edge_cells", "local edge");
  check_size(d.edge_vertices.size(), n, false, where, "edge_vertices", "local edge");
  const int np = d.nproma;
  EntityArrays& e = out.edges;
  e.present = true;
  e.n = n;
  e.n_global = d.n_edges_global;
  e.nblks = n_blocks(n, np);
  const double nan = std::numeric_limits<double>::quiet_NaN();
  e.glb_index.data = d.edge_glb_index;
  e.glb_index.shape = {n};
  e.lon = blocked_values(d.elon, np, nan);
  e.lat = blocked_values(d.elat, np, nan);
  e.refin_ctrl = blocked(n, np, 1, 0);
  e.child_id = blocked(n, np, 1, 0);
  e.parent_glb_idx = blocked(n, np, 1, 0);
  e.parent_glb_blk = blocked(n, np, 1, 0);
  Connectivity cells(n, np, 2), vertices(n, np, 4), children(n, np, 4);
  for (int j = 0; j < n; ++j) {
    for (int k = 0; k < 2; ++k) {
      cells.set(j, k, d.edge_cells[j][k], np);
      vertices.set(j, k, d.edge_vertices[j][k], np);
    }
    // Vertices 3 and 4 (ICON): the vertex of each adjacent cell opposite the edge.
    for (int k = 0; k < 2; ++k) {
      const int cell = d.edge_cells[j][k];
      if (cell < 0 || d.vertices.empty()) continue;
      for (int vx : d.vertices[cell])
        if (vx != d.edge_vertices[j][0] && vx != d.edge_vertices[j][1]) vertices.set(j, 2 + k, vx, np);
    }
  }
  e.cell_idx = std::move(cells.idx);
  e.cell_blk = std::move(cells.blk);
  e.vertex_idx = std::move(vertices.idx);
  e.vertex_blk = std::move(vertices.blk);
  e.child_idx = std::move(children.idx);
  e.child_blk = std::move(children.blk);
  const std::vector<char> owned = owned_by_cells(d, d.cell_edges, n);
  std::vector<int> zone(n);
  for (int j = 0; j < n; ++j) zone[j] = owned[j] ? 0 : kMinRlEdgeInt - 1;
  zone_lists(zone, kMinRlEdge, kMaxRlEdge, np, e, "edges");
}

}  // namespace

DomainArrays build_domain_arrays(Domain d, int id) {
  const std::string where = "finecast host: domain " + std::to_string(id) + ": ";
  const size_t n = d.glb_index.size();
  if (d.nproma <= 0) throw ConfigError(where + "nproma must be > 0, got " + std::to_string(d.nproma));
  if (d.n_cells_global <= 0) throw ConfigError(where + "n_cells_global must be > 0");
  if (d.nlev < 1) throw ConfigError(where + "nlev must be >= 1, got " + std::to_string(d.nlev));
  check_size(d.decomp_domain.size(), n, false, where, "decomp_domain", "local cell");
  check_size(d.clon.size(), n, false, where, "clon", "local cell");
  check_size(d.clat.size(), n, false, where, "clat", "local cell");
  check_size(d.area.size(), n, false, where, "area", "local cell");
  check_size(d.neighbours.size(), n, false, where, "neighbours", "local cell");
  check_size(d.parent_glb_index.size(), n, true, where, "parent_glb_index", "local cell");
  check_size(d.children.size(), n, true, where, "children", "local cell");
  check_size(d.vertices.size(), n, true, where, "vertices", "local cell");
  check_size(d.cell_edges.size(), n, true, where, "cell_edges", "local cell");
  check_size(d.refin_ctrl.size(), n, true, where, "refin_ctrl", "local cell");
  check_size(d.hhl.size(), n * static_cast<size_t>(d.nlev + 1), true, where, "hhl", "local cell and half level");
  if (!d.grid_uuid.empty() && d.grid_uuid.size() != 16)
    throw ConfigError(where + "grid_uuid must have 16 bytes, has " + std::to_string(d.grid_uuid.size()));

  DomainArrays a;
  build_cells(d, where, a);
  build_verts(d, where, a);
  build_edges(d, where, a);
  a.grid_filename.set(d.grid_filename);
  a.grid_uuid = d.grid_uuid;
  a.number_of_grid_used = d.number_of_grid_used;
  a.input = std::move(d);
  return a;
}

}  // namespace finecast::coupling::comin_host
