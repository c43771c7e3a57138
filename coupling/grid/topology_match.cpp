// SPDX-License-Identifier: BSD-3-Clause
// Cell-to-cell and vertex-to-vertex matches of triangle meshes, propagated across shared edges.
#include "coupling/grid/topology_match.hpp"

#include <algorithm>

#include "coupling/grid/edge_neighbours.hpp"

namespace finecast::coupling {

using sphere::Vec3;

MeshTopology mesh_topology(const IconGrid& g) {
  MeshTopology t;
  t.corners = &g.cell_vertices;
  t.across = edge_neighbours(g.cell_vertices, g.n_vertices, "ICON grid '" + g.path + "'");
  t.degree.assign(static_cast<size_t>(g.n_vertices), 0);
  t.first_cell.assign(static_cast<size_t>(g.n_vertices), -1);
  t.on_boundary.assign(static_cast<size_t>(g.n_vertices), 0);
  for (size_t c = 0; c < g.cell_vertices.size(); ++c) {
    const auto& v = g.cell_vertices[c];
    for (int k = 0; k < 3; ++k) {
      ++t.degree[v[k]];
      if (t.first_cell[v[k]] < 0) t.first_cell[v[k]] = static_cast<int32_t>(c);
      if (t.across[c][k] < 0) t.on_boundary[v[(k + 1) % 3]] = t.on_boundary[v[(k + 2) % 3]] = 1;
    }
  }
  return t;
}

int corner_slot(const std::array<int32_t, 3>& cell, int32_t v) {
  for (int k = 0; k < 3; ++k)
    if (cell[k] == v) return k;
  return -1;
}

int corner_orientation(const Vec3& a, const Vec3& b, const Vec3& c) {
  return sphere::dot(a, sphere::cross(b, c)) >= 0 ? 1 : -1;
}

std::vector<Vec3> cell_centres(const IconGrid& g) {
  std::vector<Vec3> c(static_cast<size_t>(g.n_cells));
  for (size_t i = 0; i < c.size(); ++i) c[i] = sphere::to_xyz(g.clon[i], g.clat[i]);
  return c;
}

std::vector<Vec3> vertex_positions(const IconGrid& g) {
  std::vector<Vec3> v(static_cast<size_t>(g.n_vertices));
  for (size_t i = 0; i < v.size(); ++i) v[i] = sphere::to_xyz(g.vlon[i], g.vlat[i]);
  return v;
}

bool match_from(const MeshTopology& file, const MeshTopology& gen, const std::vector<Vec3>& file_centres,
                const std::vector<Vec3>& gen_centres, int32_t fc, int32_t gc, const std::array<int32_t, 3>& fv,
                const std::array<int32_t, 3>& gv, double give_up, MeshMatch& m, MatchScratch& s) {
  const size_t n = file.corners->size();
  m.cell.assign(n, -1);
  m.vertex.assign(file.degree.size(), -1);
  s.gen_taken.assign(gen.corners->size(), -1);
  s.gen_vertex_taken.assign(gen.degree.size(), -1);
  m.score = 0;
  auto map_vertex = [&](int32_t f, int32_t g) {
    if (m.vertex[f] >= 0) return m.vertex[f] == g;
    if (s.gen_vertex_taken[g] >= 0) return false;
    // A vertex inside the file's mesh has all its cells there; one on its boundary some of them.
    if (file.on_boundary[f] ? file.degree[f] > gen.degree[g] : file.degree[f] != gen.degree[g]) return false;
    m.vertex[f] = g;
    s.gen_vertex_taken[g] = f;
    return true;
  };
  auto map_cell = [&](int32_t f, int32_t g) {
    if (m.cell[f] >= 0) return m.cell[f] == g ? 0 : -1;
    if (s.gen_taken[g] >= 0) return -1;
    m.cell[f] = g;
    s.gen_taken[g] = f;
    const Vec3& a = file_centres[f];
    const Vec3& b = gen_centres[g];
    m.score += (a[0] - b[0]) * (a[0] - b[0]) + (a[1] - b[1]) * (a[1] - b[1]) + (a[2] - b[2]) * (a[2] - b[2]);
    return 1;
  };
  for (int k = 0; k < 3; ++k)
    if (!map_vertex(fv[k], gv[k])) return false;
  map_cell(fc, gc);
  s.queue.clear();
  s.queue.push_back(fc);
  for (size_t head = 0; head < s.queue.size(); ++head) {
    if (m.score > give_up) return false;
    const int32_t f = s.queue[head];
    const int32_t g = m.cell[f];
    const auto& fcorners = (*file.corners)[f];
    const auto& gcorners = (*gen.corners)[g];
    for (int k = 0; k < 3; ++k) {
      const int32_t fn = file.across[f][k];
      if (fn < 0) continue;  // the file's boundary
      // The edge opposite corner k of f, and the same edge in g: the corners other than k's image.
      const int32_t gk = corner_slot(gcorners, m.vertex[fcorners[k]]);
      if (gk < 0) return false;
      const int32_t gn = gen.across[g][gk];
      if (gn < 0) return false;  // the file goes on where the generated mesh ends
      const int added = map_cell(fn, gn);
      if (added < 0) return false;
      // The third corner of the neighbour, the one off the shared edge, on both sides.
      const auto& fnc = (*file.corners)[fn];
      const auto& gnc = (*gen.corners)[gn];
      int32_t f3 = -1, g3 = -1;
      for (int j = 0; j < 3; ++j) {
        if (corner_slot(fcorners, fnc[j]) < 0) f3 = fnc[j];
        if (corner_slot(gcorners, gnc[j]) < 0) g3 = gnc[j];
      }
      if (f3 < 0 || g3 < 0 || !map_vertex(f3, g3)) return false;
      if (added > 0) s.queue.push_back(fn);
    }
  }
  return s.queue.size() == n;  // every cell reached: the file's cells are edge-connected
}

}  // namespace finecast::coupling
