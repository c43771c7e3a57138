// SPDX-License-Identifier: BSD-3-Clause
// Recursive bisection of the icosahedron into an ICON-like R2Bk grid.
#include "coupling/grid/icosahedral_grid.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/error.hpp"
#include "coupling/grid/spherical.hpp"

namespace finecast::coupling {
namespace {

using sphere::Vec3;

/// Numbers the edges of `m`'s cells in order of first appearance (cells in order, slots
/// corner 0-1, 1-2, 2-0), each edge oriented as its first cell traverses it.
void number_edges(IcosahedralMesh& m) {
  std::unordered_map<int64_t, int32_t> seen;
  const auto nv = static_cast<int64_t>(m.vertices.size());
  m.cell_edges.resize(m.cells.size());
  for (size_t c = 0; c < m.cells.size(); ++c)
    for (int k = 0; k < 3; ++k) {
      const int32_t a = m.cells[c][k], b = m.cells[c][(k + 1) % 3];
      const int64_t key = std::min(a, b) * nv + std::max(a, b);
      auto [it, fresh] = seen.emplace(key, static_cast<int32_t>(m.edges.size()));
      if (fresh) m.edges.push_back({a, b});
      m.cell_edges[c][k] = it->second;
    }
}

/// The icosahedron of ICON's standard grids: pentagons at the poles, five at latitude
/// atan(1/2) = 26.57N at longitudes 0, +-72, +-144 and five at 26.57S at +-36, +-108, 180.
/// Cells are counter-clockwise seen from outside, as in ICON grid files.
IcosahedralMesh icosahedron() {
  IcosahedralMesh m;
  const double lat = std::atan(0.5);
  m.vertices.push_back({0, 0, 1});                                                                 // 0: north pole
  for (int i = 0; i < 5; ++i) m.vertices.push_back(sphere::to_xyz(72.0 * i * sphere::kDeg, lat));  // 1..5
  for (int i = 0; i < 5; ++i) m.vertices.push_back(sphere::to_xyz((36.0 + 72.0 * i) * sphere::kDeg, -lat));  // 6..10
  m.vertices.push_back({0, 0, -1});  // 11: south pole
  for (int i = 0; i < 5; ++i) {
    const int32_t u = 1 + i, u1 = 1 + (i + 1) % 5;  // northern ring, eastward
    const int32_t l = 6 + i, l1 = 6 + (i + 1) % 5;  // southern ring: l lies between u and u1
    m.cells.push_back({0, u, u1});
    m.cells.push_back({u, l, u1});
    m.cells.push_back({u1, l, l1});
    m.cells.push_back({11, l1, l});
  }
  number_edges(m);
  return m;
}

/// One bisection in the hierarchical numbering of IcosahedralMesh: the midpoint of edge e is
/// vertex nv + e (great-circle midpoint), its halves are edges 2e and 2e + 1, the central child
/// of cell p brings edges 2 ne + 3p + j (j: parallel to the parent's edge j).
IcosahedralMesh bisect(const IcosahedralMesh& in) {
  const auto nv = static_cast<int32_t>(in.vertices.size());
  const auto ne = static_cast<int32_t>(in.edges.size());
  const auto nc = static_cast<int32_t>(in.cells.size());
  IcosahedralMesh out;
  out.level = in.level + 1;
  out.vertices = in.vertices;
  out.vertices.reserve(static_cast<size_t>(nv) + ne);
  out.edges.resize(2 * static_cast<size_t>(ne) + 3 * static_cast<size_t>(nc));
  out.parent_edge.resize(out.edges.size());
  for (int32_t e = 0; e < ne; ++e) {
    const auto [a, b] = in.edges[e];
    const Vec3& p = in.vertices[a];
    const Vec3& q = in.vertices[b];
    out.vertices.push_back(sphere::normalised({p[0] + q[0], p[1] + q[1], p[2] + q[2]}));
    out.edges[2 * e] = {a, nv + e};
    out.edges[2 * e + 1] = {nv + e, b};
    out.parent_edge[2 * e] = out.parent_edge[2 * e + 1] = e;
  }
  // The half of parent edge e that ends at parent vertex x.
  auto half = [&](int32_t e, int32_t x) { return in.edges[e][0] == x ? 2 * e : 2 * e + 1; };
  out.cells.reserve(4 * static_cast<size_t>(nc));
  out.cell_edges.reserve(4 * static_cast<size_t>(nc));
  for (int32_t p = 0; p < nc; ++p) {
    const auto& c = in.cells[p];
    const auto& pe = in.cell_edges[p];
    const int32_t m0 = nv + pe[0], m1 = nv + pe[1], m2 = nv + pe[2];  // midpoints of edges c0-c1, c1-c2, c2-c0
    const int32_t inner = 2 * ne + 3 * p;                             // + j: joins the midpoints beside edge j
    out.edges[inner + 0] = {m1, m2};
    out.edges[inner + 1] = {m2, m0};
    out.edges[inner + 2] = {m0, m1};
    for (int j = 0; j < 3; ++j) out.parent_edge[inner + j] = pe[j];
    out.cells.push_back({c[0], m0, m2});
    out.cell_edges.push_back({half(pe[0], c[0]), inner + 1, half(pe[2], c[0])});
    out.cells.push_back({m0, c[1], m1});
    out.cell_edges.push_back({half(pe[0], c[1]), half(pe[1], c[1]), inner + 2});
    out.cells.push_back({m2, m1, c[2]});
    out.cell_edges.push_back({inner + 0, half(pe[1], c[2]), half(pe[2], c[2])});
    out.cells.push_back({m0, m1, m2});
    out.cell_edges.push_back({inner + 2, inner + 0, inner + 1});
  }
  return out;
}

}  // namespace

IcosahedralMesh make_icosahedral_mesh(int level) {
  if (level < -1 || level > 9)
    throw GridError("make_icosahedral_mesh: level " + std::to_string(level) + " out of range, expected -1..9");
  IcosahedralMesh mesh = icosahedron();
  for (int l = 0; l <= level; ++l) mesh = bisect(mesh);  // l = 0: the root bisection (R2B0)
  return mesh;
}

IconGrid make_icosahedral_grid(int level, uint64_t shuffle_seed) {
  if (level < 0 || level > 9)
    throw GridError("make_icosahedral_grid: level " + std::to_string(level) + " out of range, expected 0..9");
  const IcosahedralMesh mesh = make_icosahedral_mesh(level);

  const auto n = static_cast<int64_t>(mesh.cells.size());
  const auto nv = static_cast<int64_t>(mesh.vertices.size());
  std::vector<int32_t> cell_perm(n), vert_perm(nv);  // new index -> hierarchical index
  std::iota(cell_perm.begin(), cell_perm.end(), 0);
  std::iota(vert_perm.begin(), vert_perm.end(), 0);
  if (shuffle_seed != 0) {
    std::mt19937_64 rng(shuffle_seed);
    std::shuffle(cell_perm.begin(), cell_perm.end(), rng);
    std::shuffle(vert_perm.begin(), vert_perm.end(), rng);
  }
  std::vector<int32_t> vert_new(nv);
  for (int64_t i = 0; i < nv; ++i) vert_new[vert_perm[i]] = static_cast<int32_t>(i);

  IconGrid g;
  g.path = "synthetic:R2B" + std::to_string(level);
  g.n_cells = n;
  g.n_vertices = nv;
  g.vlon.resize(nv);
  g.vlat.resize(nv);
  for (int64_t i = 0; i < nv; ++i) sphere::to_lonlat(mesh.vertices[vert_perm[i]], g.vlon[i], g.vlat[i]);
  g.cell_vertices.resize(n);
  g.clon.resize(n);
  g.clat.resize(n);
  if (level > 0) g.parent_cell.resize(n);
  for (int64_t i = 0; i < n; ++i) {
    const auto& c = mesh.cells[cell_perm[i]];
    for (int k = 0; k < 3; ++k) g.cell_vertices[i][k] = vert_new[c[k]];
    const Vec3 centre = sphere::circumcentre(mesh.vertices[c[0]], mesh.vertices[c[1]], mesh.vertices[c[2]]);
    sphere::to_lonlat(centre, g.clon[i], g.clat[i]);
    if (level > 0) g.parent_cell[i] = cell_perm[i] / 4;
  }
  complete_icon_grid(g);
  return g;
}

}  // namespace finecast::coupling
