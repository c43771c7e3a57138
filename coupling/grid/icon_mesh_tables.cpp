// SPDX-License-Identifier: BSD-3-Clause
// ICON's tables of a mesh: the cells of each edge and its orientation, the geometry of ICON's
// grid generator (circumcentres, normals, lengths, areas), the rings around each vertex.
#include "coupling/grid/icon_mesh_tables.hpp"

#include <string>

#include "common/error.hpp"

namespace finecast::coupling {
namespace {

using sphere::add;
using sphere::sub;
using sphere::Vec3;
constexpr int32_t kNone = kNoEntity;
constexpr int kRing = kIconRing;

int8_t sign(double x) { return x < 0 ? -1 : 1; }

}  // namespace

IconMeshTables::IconMeshTables(const IcosahedralMesh& m) : mesh(m) {
  nc = static_cast<int64_t>(m.cells.size());
  ne = static_cast<int64_t>(m.edges.size());
  nv = static_cast<int64_t>(m.vertices.size());
  connect();
  measure();
  ring();
}

/// The cells of each edge: the one that runs the edge from its second vertex to its first in

/// its counter-clockwise order is cell 1 (so every edge_system_orientation comes out +1). On a

/// limited-area mesh an edge of the lateral boundary has cell 1 only (its vertices are ordered

/// so: limited_area_mesh), cell 2 kNone.
void IconMeshTables::connect() {
  edge_cells.assign(ne, {kNone, kNone});
  for (int64_t c = 0; c < nc; ++c)
    for (int k = 0; k < 3; ++k) {
      const int32_t e = mesh.cell_edges[c][k];
      int32_t& slot = edge_cells[e][mesh.cells[c][k] == mesh.edges[e][0] ? 1 : 0];
      if (slot != kNone) throw InternalError("icosahedral mesh: edge " + std::to_string(e) + " run twice one way");
      slot = static_cast<int32_t>(c);
    }
  for (int64_t e = 0; e < ne; ++e)
    if (edge_cells[e][0] == kNone)
      throw InternalError("icosahedral mesh: boundary edge " + std::to_string(e) + " runs the wrong way");
  cell_neighbours.resize(nc);
  cell_orientation.resize(nc);
  for (int64_t c = 0; c < nc; ++c)
    for (int k = 0; k < 3; ++k) {
      const int32_t e = mesh.cell_edges[c][k];
      cell_neighbours[c][k] = other_cell(e, static_cast<int32_t>(c));
      cell_orientation[c][k] = edge_cells[e][0] == c ? 1 : -1;
    }
}

/// The geometry of ICON's grid generator: circumcentres, edge centres where the edge crosses

/// its dual edge (the great-circle midpoint, as circumcentres lie on the perpendicular

/// bisector), the primal normal from cell 1 to cell 2, the dual normal (tangent) n x r. A

/// lateral-boundary edge has cell 1's mirror image across it in place of cell 2: the normal

/// leaves the domain, the dual edge is twice cell 1's distance, its middle the edge centre.
void IconMeshTables::measure() {
  const double r = sphere::kEarthRadius;
  cell_centre.resize(nc);
  cell_area.resize(nc);
  for (int64_t c = 0; c < nc; ++c) {
    const auto& v = mesh.cells[c];
    const Vec3 &a = mesh.vertices[v[0]], &b = mesh.vertices[v[1]], &d = mesh.vertices[v[2]];
    cell_centre[c] = sphere::circumcentre(a, b, d);
    cell_area[c] = sphere::triangle_area(a, b, d) * r * r;
  }
  edge_centre.resize(ne);
  primal_normal.resize(ne);
  dual_normal.resize(ne);
  dual_middle.resize(ne);
  edge_length.resize(ne);
  dual_edge_length.resize(ne);
  edge_cell_distance.resize(ne);
  system_orientation.resize(ne);
  for (int64_t e = 0; e < ne; ++e) {
    const Vec3& v1 = mesh.vertices[mesh.edges[e][0]];
    const Vec3& v2 = mesh.vertices[mesh.edges[e][1]];
    const Vec3& c1 = cell_centre[edge_cells[e][0]];
    const Vec3 m = sphere::normalised(add(v1, v2));
    const bool open = edge_cells[e][1] == kNone;
    const Vec3 c2 = open ? sphere::mirrored(c1, m) : cell_centre[edge_cells[e][1]];
    const Vec3 along = sub(v2, v1), across = sub(c2, c1);
    Vec3 n = sphere::normalised(sphere::cross(along, m));
    if (sphere::dot(n, across) < 0) n = {-n[0], -n[1], -n[2]};
    edge_centre[e] = m;
    primal_normal[e] = n;
    dual_normal[e] = sphere::cross(n, m);
    dual_middle[e] = open ? m : sphere::normalised(add(c1, c2));
    system_orientation[e] = sign(sphere::dot(sphere::cross(along, across), m));
    edge_length[e] = sphere::arc_length(v1, v2) * r;
    edge_cell_distance[e] = {sphere::arc_length(m, c1) * r, sphere::arc_length(m, c2) * r};
    dual_edge_length[e] = edge_cell_distance[e][0] + edge_cell_distance[e][1];
  }
}

/// Each vertex's cells counter-clockwise seen from outside, starting at its lowest-numbered

/// cell: edge i joins cell i to cell i + 1 and ends at vertex i (its other end); the edge

/// orientation is +1 where the edge's normal turns counter-clockwise about the vertex. The

/// dual area sums the triangles (cell 1 centre, vertex, cell 2 centre) of its edges. A vertex

/// on a lateral boundary has an open fan of k cells: they start at the one with no cell

/// clockwise before it, edge i follows cell i (edge k - 1 the boundary edge after the last),

/// and slot k holds the boundary edge before cell 0 (k + 1 edges and vertices, k cells); its

/// dual area takes the edge centre in place of a missing cell.
void IconMeshTables::ring() {
  std::vector<int32_t> first(nv, kNone);
  std::vector<int> degree(nv, 0);
  for (int64_t c = 0; c < nc; ++c)
    for (int32_t v : mesh.cells[c]) {
      if (first[v] == kNone) first[v] = static_cast<int32_t>(c);
      ++degree[v];
    }
  ring_cells.assign(nv, {});
  ring_edges.assign(nv, {});
  ring_vertices.assign(nv, {});
  ring_orientation.assign(nv, {});
  dual_area.assign(nv, 0.0);
  const double r2 = sphere::kEarthRadius * sphere::kEarthRadius;
  auto at_of = [&](int32_t c, int64_t v) {
    const auto& corners = mesh.cells[c];
    return corners[0] == v ? 0 : corners[1] == v ? 1 : 2;
  };
  for (int64_t v = 0; v < nv; ++v) {
    ring_cells[v].fill(kNone);
    ring_edges[v].fill(kNone);
    ring_vertices[v].fill(kNone);
    ring_orientation[v].fill(0);
    if (degree[v] == 0) continue;
    if (degree[v] > kRing)
      throw InternalError("icosahedral mesh: vertex " + std::to_string(v) + " has " + std::to_string(degree[v]) +
                          " cells, expected at most 6");
    // An open fan starts where no cell lies clockwise before (across the edge from v to the
    // corner after it).
    int32_t c = first[v];
    bool open = false;
    for (int i = 0; i < degree[v]; ++i) {
      const int32_t prev = other_cell(mesh.cell_edges[c][at_of(c, v)], c);
      if (prev == kNone) {
        open = true;
        break;
      }
      c = prev;
    }
    if (!open) c = first[v];
    const int32_t start = c;
    const auto& first_corners = mesh.cells[start];
    int slots = 0;
    auto add_edge = [&](int i, int32_t e, int32_t other_end) {
      ring_edges[v][i] = e;
      ring_vertices[v][i] = other_end;
      ring_orientation[v][i] = mesh.edges[e][0] == v ? system_orientation[e] : -system_orientation[e];
      const int32_t c1 = edge_cells[e][0], c2 = edge_cells[e][1];
      const Vec3& far = c2 == kNone ? edge_centre[e] : cell_centre[c2];
      dual_area[v] += sphere::triangle_area(cell_centre[c1], mesh.vertices[v], far) * r2;
    };
    for (int i = 0; i < degree[v]; ++i) {
      const auto& corners = mesh.cells[c];
      const int before = (at_of(c, v) + 2) % 3;
      const int32_t e = mesh.cell_edges[c][before];  // runs from the corner before v to v
      ring_cells[v][i] = c;
      add_edge(i, e, corners[before]);
      ++slots;
      c = other_cell(e, c);
      if (c == kNone) break;
    }
    if (open) {
      if (c != kNone || slots != degree[v] || degree[v] + 1 > kRing)
        throw InternalError("icosahedral mesh: the cells around boundary vertex " + std::to_string(v) +
                            " are not one fan");
      const int at = at_of(start, v);
      add_edge(degree[v], mesh.cell_edges[start][at], first_corners[(at + 1) % 3]);
    } else if (c != start || slots != degree[v] || (degree[v] != 5 && degree[v] != 6)) {
      throw InternalError("icosahedral mesh: the cells around vertex " + std::to_string(v) + " do not close");
    }
  }
}

}  // namespace finecast::coupling
