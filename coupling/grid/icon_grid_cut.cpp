// SPDX-License-Identifier: BSD-3-Clause
// Cutting a limited area out of a global uniform mesh: the cells in a box, cleaned to one piece
// with a simple boundary, renumbered by boundary row, with rows and parents.
#include "coupling/grid/icon_grid_cut.hpp"

#include <algorithm>
#include <numeric>

#include "coupling/grid/icon_grid_layout.hpp"
#include "coupling/grid/icon_limited_area.hpp"
#include "coupling/grid/spherical.hpp"

namespace finecast::coupling {
namespace {

constexpr int32_t kNone = kNoEntity;
constexpr int kRing = kIconRing;

/// The entities of the cut, sorted by their index key, then in the global order.
std::vector<int32_t> sorted_by_row(const std::vector<int32_t>& global_ids, const std::vector<int32_t>& flags,
                                   const IconIndexLists& lists) {
  std::vector<int32_t> order(global_ids.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) {
    return icon_index_key(lists, flags[a]) < icon_index_key(lists, flags[b]);
  });
  return order;
}

}  // namespace

/// The global mesh's: parents in the hierarchical numbering, children in the next level's, no flags.
IconMeshHierarchy global_mesh_hierarchy(const IcosahedralMesh& mesh, const IconMeshTables& t) {
  const auto nc = static_cast<size_t>(t.nc), ne = static_cast<size_t>(t.ne), nv = static_cast<size_t>(t.nv);
  const size_t per_parent = mesh.level == 0 ? static_cast<size_t>(mesh.root) * mesh.root : 4;
  IconMeshHierarchy h;
  h.parent_cell.resize(nc);
  h.parent_edge.resize(ne);
  h.child_cell.resize(nc);
  h.child_edge.resize(ne);
  for (size_t c = 0; c < nc; ++c) {
    h.parent_cell[c] = static_cast<int32_t>(c / per_parent + 1);
    for (int k = 0; k < 4; ++k) h.child_cell[c][k] = static_cast<int32_t>(4 * c + k);
  }
  for (size_t e = 0; e < ne; ++e) {
    h.parent_edge[e] = mesh.parent_edge[e] + 1;  // 0 where a root division's edge lies inside a face
    h.child_edge[e] = {static_cast<int32_t>(2 * e), static_cast<int32_t>(2 * e + 1), kNone, kNone};
    for (int s = 0; s < 2; ++s) {  // the central child of each adjacent cell adds an edge parallel to e
      const int32_t c = t.edge_cells[e][s];
      const int j = mesh.cell_edges[c][0] == static_cast<int32_t>(e)   ? 0
                    : mesh.cell_edges[c][1] == static_cast<int32_t>(e) ? 1
                                                                       : 2;
      h.child_edge[e][2 + s] = static_cast<int32_t>(2 * ne + 3 * c + j);
    }
  }
  h.refin_c.assign(nc, 0);
  h.refin_e.assign(ne, 0);
  h.refin_v.assign(nv, 0);
  return h;
}

/// The cells of `global` inside `box`, cleaned so that the domain is one piece whose boundary
/// never touches itself: repeatedly, cells with at most one neighbour in the domain and the
/// smaller fans of a vertex the domain meets twice are dropped; then the largest edge-connected
/// part is kept.
std::vector<char> region_cells(const IcosahedralMesh& global, const IconMeshTables& t, const LatLonBox& box) {
  const size_t nc = static_cast<size_t>(t.nc), nv = static_cast<size_t>(t.nv);
  std::vector<char> in(nc, 0);
  for (size_t c = 0; c < nc; ++c) {
    double lon, lat;
    sphere::to_lonlat(t.cell_centre[c], lon, lat);
    in[c] = box.contains(lat / sphere::kDeg, lon / sphere::kDeg) ? 1 : 0;
  }
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t c = 0; c < nc; ++c) {
      if (!in[c]) continue;
      int inside = 0;
      for (int32_t n : t.cell_neighbours[c]) inside += in[n];
      if (inside <= 1) {
        in[c] = 0;
        changed = true;
      }
    }
    for (size_t v = 0; v < nv; ++v) {
      // The runs of domain cells around the vertex, in ring order.
      int deg = 0;
      while (deg < kRing && t.ring_cells[v][deg] != kNone) ++deg;
      int first_out = -1;
      for (int i = 0; i < deg && first_out < 0; ++i)
        if (!in[t.ring_cells[v][i]]) first_out = i;
      if (first_out < 0) continue;
      std::vector<std::vector<int32_t>> runs;
      for (int i = 1; i <= deg; ++i) {
        const int32_t c = t.ring_cells[v][(first_out + i) % deg];
        if (!in[c]) continue;
        const int32_t prev = t.ring_cells[v][(first_out + i - 1) % deg];
        if (in[prev] && !runs.empty())
          runs.back().push_back(c);
        else
          runs.push_back({c});
      }
      if (runs.size() < 2) continue;
      size_t keep = 0;
      for (size_t r = 1; r < runs.size(); ++r)
        if (runs[r].size() > runs[keep].size()) keep = r;
      for (size_t r = 0; r < runs.size(); ++r)
        if (r != keep)
          for (int32_t c : runs[r]) in[c] = 0;
      changed = true;
    }
  }
  // The largest edge-connected part.
  std::vector<int32_t> part(nc, -1), queue;
  std::vector<size_t> size;
  for (size_t c = 0; c < nc; ++c) {
    if (!in[c] || part[c] >= 0) continue;
    const auto id = static_cast<int32_t>(size.size());
    queue.assign(1, static_cast<int32_t>(c));
    part[c] = id;
    for (size_t head = 0; head < queue.size(); ++head)
      for (int32_t n : t.cell_neighbours[queue[head]])
        if (in[n] && part[n] < 0) {
          part[n] = id;
          queue.push_back(n);
        }
    size.push_back(queue.size());
  }
  const auto largest = static_cast<int32_t>(std::max_element(size.begin(), size.end()) - size.begin());
  for (size_t c = 0; c < nc; ++c) in[c] = in[c] && part[c] == largest ? 1 : 0;
  (void)global;
  return in;
}

LimitedAreaCut cut_limited_area(const IcosahedralMesh& global, const IconMeshTables& t, const std::vector<char>& in,
                                int depth) {
  // Cells, vertices and edges of the domain in the global order.
  std::vector<int32_t> cells, verts, edges;
  std::vector<int32_t> vert_local(global.vertices.size(), -1), edge_local(global.edges.size(), -1);
  for (size_t c = 0; c < in.size(); ++c) {
    if (!in[c]) continue;
    cells.push_back(static_cast<int32_t>(c));
    for (int k = 0; k < 3; ++k) {
      vert_local[global.cells[c][k]] = 0;
      edge_local[global.cell_edges[c][k]] = 0;
    }
  }
  for (size_t v = 0; v < vert_local.size(); ++v)
    if (vert_local[v] == 0) verts.push_back(static_cast<int32_t>(v));
  for (size_t e = 0; e < edge_local.size(); ++e)
    if (edge_local[e] == 0) edges.push_back(static_cast<int32_t>(e));
  for (size_t i = 0; i < verts.size(); ++i) vert_local[verts[i]] = static_cast<int32_t>(i);
  // Rows from the lateral boundary, on the domain's own topology.
  std::vector<std::array<int32_t, 3>> corners(cells.size());
  for (size_t i = 0; i < cells.size(); ++i)
    for (int k = 0; k < 3; ++k) corners[i][k] = vert_local[global.cells[cells[i]][k]];
  const std::vector<int32_t> distance = boundary_distance(corners, static_cast<int64_t>(verts.size()));
  std::vector<int32_t> row_c(cells.size()), row_v(verts.size()), row_e(edges.size());
  for (size_t i = 0; i < cells.size(); ++i)
    row_c[i] =
        boundary_row(std::min({distance[corners[i][0]], distance[corners[i][1]], distance[corners[i][2]]}), depth);
  for (size_t i = 0; i < verts.size(); ++i) row_v[i] = distance[i] >= 0 && distance[i] <= depth ? distance[i] + 1 : 0;
  for (size_t i = 0; i < edges.size(); ++i) {
    const int32_t a = distance[vert_local[global.edges[edges[i]][0]]],
                  b = distance[vert_local[global.edges[edges[i]][1]]];
    row_e[i] = a >= 0 && b >= 0 && a + b + 1 <= 2 * depth + 1 ? a + b + 1 : 0;
  }
  // The file's order: by row (ICON's index lists), then global.
  const std::vector<int32_t> cell_order = sorted_by_row(cells, row_c, kIconCellLists);
  const std::vector<int32_t> vert_order = sorted_by_row(verts, row_v, kIconVertLists);
  const std::vector<int32_t> edge_order = sorted_by_row(edges, row_e, kIconEdgeLists);
  std::vector<int32_t> cell_new(global.cells.size(), kNone);
  for (size_t i = 0; i < cell_order.size(); ++i) cell_new[cells[cell_order[i]]] = static_cast<int32_t>(i);
  std::vector<int32_t> vert_new(global.vertices.size(), kNone), edge_new(global.edges.size(), kNone);
  for (size_t i = 0; i < vert_order.size(); ++i) vert_new[verts[vert_order[i]]] = static_cast<int32_t>(i);
  for (size_t i = 0; i < edge_order.size(); ++i) edge_new[edges[edge_order[i]]] = static_cast<int32_t>(i);

  LimitedAreaCut out;
  IcosahedralMesh& m = out.mesh;
  IconMeshHierarchy& h = out.hierarchy;
  m.root = global.root;
  m.level = global.level;
  const size_t per_parent = global.level == 0 ? static_cast<size_t>(global.root) * global.root : 4;
  for (int32_t i : vert_order) {
    m.vertices.push_back(global.vertices[verts[i]]);
    h.refin_v.push_back(row_v[i]);
  }
  for (int32_t i : edge_order) {
    const int32_t e = edges[i];
    m.edges.push_back({vert_new[global.edges[e][0]], vert_new[global.edges[e][1]]});
    m.parent_edge.push_back(global.parent_edge[e]);
    h.parent_edge.push_back(global.parent_edge[e] + 1);
    h.child_edge.push_back({kNone, kNone, kNone, kNone});
    h.refin_e.push_back(row_e[i]);
  }
  for (int32_t i : cell_order) {
    const int32_t c = cells[i];
    std::array<int32_t, 3> v{}, e{};
    for (int k = 0; k < 3; ++k) {
      v[k] = vert_new[global.cells[c][k]];
      e[k] = edge_new[global.cell_edges[c][k]];
    }
    m.cells.push_back(v);
    m.cell_edges.push_back(e);
    h.parent_cell.push_back(static_cast<int32_t>(c / per_parent + 1));
    h.child_cell.push_back({kNone, kNone, kNone, kNone});
    h.refin_c.push_back(row_c[i]);
  }
  // An edge of the lateral boundary runs from its second vertex to its first in its only cell,
  // which makes that cell its cell 1, as in the global grid.
  for (size_t e = 0; e < edges.size(); ++e) {
    const int32_t g = edges[edge_order[e]];
    const int32_t c1 = t.edge_cells[g][0], c2 = t.edge_cells[g][1];
    const bool has1 = in[c1] != 0, has2 = in[c2] != 0;
    if (has1 && has2) continue;
    const int32_t only = has1 ? c1 : c2;
    const auto& corners_of = global.cells[only];
    for (int k = 0; k < 3; ++k)
      if (global.cell_edges[only][k] == g) m.edges[e] = {vert_new[corners_of[(k + 1) % 3]], vert_new[corners_of[k]]};
  }
  return out;
}

}  // namespace finecast::coupling
