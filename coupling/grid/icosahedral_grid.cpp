// SPDX-License-Identifier: BSD-3-Clause
// Root division and recursive bisection of the icosahedron into an ICON-like R<n>B<k> grid.
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
  out.root = in.root;
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

/// The point at fraction t along the great circle from unit vector a to b (equal angles).
Vec3 slerp(const Vec3& a, const Vec3& b, double t) {
  const double theta = sphere::arc_length(a, b);
  const double s = std::sin(theta);
  const double wa = std::sin((1 - t) * theta) / s, wb = std::sin(t * theta) / s;
  return sphere::normalised({wa * a[0] + wb * b[0], wa * a[1] + wb * b[1], wa * a[2] + wb * b[2]});
}

/// The root division R<n>B0 of the icosahedron (n >= 3; n = 2 is `bisect`, whose numbering the
/// R2B grids keep), in the numbering of IcosahedralMesh.
IcosahedralMesh divide(const IcosahedralMesh& ico, int n) {
  IcosahedralMesh out;
  out.root = n;
  out.level = 0;
  out.vertices = ico.vertices;
  const auto n_ico_edges = static_cast<int32_t>(ico.edges.size());
  // Edge points: 12 + e (n - 1) + t - 1 lies t/n of the way from edge e's first vertex.
  for (int32_t e = 0; e < n_ico_edges; ++e)
    for (int t = 1; t < n; ++t)
      out.vertices.push_back(slerp(ico.vertices[ico.edges[e][0]], ico.vertices[ico.edges[e][1]], double(t) / n));
  auto edge_of = [&](int32_t a, int32_t b) {
    for (int32_t e = 0; e < n_ico_edges; ++e)
      if ((ico.edges[e][0] == a && ico.edges[e][1] == b) || (ico.edges[e][0] == b && ico.edges[e][1] == a)) return e;
    throw InternalError("icosahedron: no edge joins its corners " + std::to_string(a) + " and " + std::to_string(b));
  };
  // The vertex t/n of the way from corner a to corner b.
  auto on_edge = [&](int32_t a, int32_t b, int t) -> int32_t {
    if (t == 0) return a;
    if (t == n) return b;
    const int32_t e = edge_of(a, b);
    return 12 + e * (n - 1) + (ico.edges[e][0] == a ? t : n - t) - 1;
  };
  const int interior = (n - 1) * (n - 2) / 2;
  std::vector<int32_t> on_ico_edge(out.vertices.size(), -1);
  for (int32_t e = 0; e < n_ico_edges; ++e)
    for (int t = 1; t < n; ++t) on_ico_edge[12 + e * (n - 1) + t - 1] = e;
  for (size_t f = 0; f < ico.cells.size(); ++f) {
    const auto& c = ico.cells[f];
    // P(i, j): barycentric (n - i - j, i, j) / n on the face's corners (c0, c1, c2).
    std::vector<int32_t> point((n + 1) * (n + 1), -1);
    auto P = [&](int i, int j) -> int32_t& { return point[i * (n + 1) + j]; };
    for (int i = 0; i <= n; ++i)
      for (int j = 0; i + j <= n; ++j) {
        const int k = n - i - j;
        if (j == 0)
          P(i, j) = on_edge(c[0], c[1], i);
        else if (i == 0)
          P(i, j) = on_edge(c[0], c[2], j);
        else if (k == 0)
          P(i, j) = on_edge(c[1], c[2], j);
      }
    const int32_t first = static_cast<int32_t>(out.vertices.size());
    int next = 0;
    for (int i = 1; i < n; ++i)
      for (int j = 1; i + j < n; ++j) {
        const int k = n - i - j;
        // The great-circle n-sections through the point: lines of constant k, i and j.
        const Vec3 a = slerp(out.vertices[P(n - k, 0)], out.vertices[P(0, n - k)], double(j) / (n - k));
        const Vec3 b = slerp(out.vertices[P(i, 0)], out.vertices[P(i, n - i)], double(j) / (n - i));
        const Vec3 d = slerp(out.vertices[P(0, j)], out.vertices[P(n - j, j)], double(i) / (n - j));
        out.vertices.push_back(sphere::normalised({a[0] + b[0] + d[0], a[1] + b[1] + d[1], a[2] + b[2] + d[2]}));
        on_ico_edge.push_back(-1);
        P(i, j) = first + next++;
      }
    if (next != interior) throw InternalError("divide: face points miscounted");
    std::vector<std::array<int32_t, 3>> cells(static_cast<size_t>(n) * n);
    for (int i = 0; i < n; ++i)
      for (int j = 0; i + j < n; ++j) {
        cells[2 * n * i - i * i + 2 * j] = {P(i, j), P(i + 1, j), P(i, j + 1)};
        if (i + j + 1 < n) cells[2 * n * i - i * i + 2 * j + 1] = {P(i + 1, j), P(i + 1, j + 1), P(i, j + 1)};
      }
    out.cells.insert(out.cells.end(), cells.begin(), cells.end());
  }
  number_edges(out);
  out.parent_edge.assign(out.edges.size(), -1);
  for (size_t e = 0; e < out.edges.size(); ++e) {
    const auto [a, b] = out.edges[e];
    const int32_t ea = on_ico_edge[a], eb = on_ico_edge[b];
    // An edge on an icosahedron edge joins two of its points, or one of them and its corner.
    const int32_t along = ea >= 0 ? ea : eb;
    if (along < 0) continue;
    auto on = [&](int32_t v) {
      return on_ico_edge[v] == along || ico.edges[along][0] == v || ico.edges[along][1] == v;
    };
    if (on(a) && on(b)) out.parent_edge[e] = along;
  }
  return out;
}

IcosahedralMesh divide_root(const IcosahedralMesh& ico, int root) {
  if (root == 2) return bisect(ico);
  return divide(ico, root);
}

void check_root(int root, const char* what) {
  if (root < 2 || root > kMaxIconRoot)
    throw GridError(std::string(what) + ": root " + std::to_string(root) + " out of range, expected 2.." +
                    std::to_string(kMaxIconRoot));
}

/// The corners and circumscribed cap of each cell meet the cap (centre, radius)?
std::vector<char> cells_meeting(const IcosahedralMesh& m, const Vec3& centre, double radius) {
  std::vector<char> keep(m.cells.size(), 0);
  for (size_t c = 0; c < m.cells.size(); ++c) {
    const auto& v = m.cells[c];
    const Vec3 cc = sphere::circumcentre(m.vertices[v[0]], m.vertices[v[1]], m.vertices[v[2]]);
    const double rho = std::max({sphere::arc_length(cc, m.vertices[v[0]]), sphere::arc_length(cc, m.vertices[v[1]]),
                                 sphere::arc_length(cc, m.vertices[v[2]])});
    keep[c] = sphere::arc_length(cc, centre) <= radius + rho + 1e-9 ? 1 : 0;
  }
  return keep;
}

/// An IconGrid of `mesh` with cells and vertices renumbered: new cell i is mesh cell cell_perm[i],
/// new vertex i mesh vertex vert_perm[i].
IconGrid grid_from_mesh(const IcosahedralMesh& mesh, const std::vector<int32_t>& cell_perm,
                        const std::vector<int32_t>& vert_perm, const std::string& path) {
  const auto n = static_cast<int64_t>(cell_perm.size());
  const auto nv = static_cast<int64_t>(vert_perm.size());
  std::vector<int32_t> vert_new(nv);
  for (int64_t i = 0; i < nv; ++i) vert_new[vert_perm[i]] = static_cast<int32_t>(i);
  IconGrid g;
  g.path = path;
  g.n_cells = n;
  g.n_vertices = nv;
  g.grid_root = mesh.root;
  g.grid_level = mesh.level;
  g.vlon.resize(nv);
  g.vlat.resize(nv);
  for (int64_t i = 0; i < nv; ++i) sphere::to_lonlat(mesh.vertices[vert_perm[i]], g.vlon[i], g.vlat[i]);
  g.cell_vertices.resize(n);
  g.clon.resize(n);
  g.clat.resize(n);
  for (int64_t i = 0; i < n; ++i) {
    const auto& c = mesh.cells[cell_perm[i]];
    for (int k = 0; k < 3; ++k) g.cell_vertices[i][k] = vert_new[c[k]];
    const Vec3 centre = sphere::circumcentre(mesh.vertices[c[0]], mesh.vertices[c[1]], mesh.vertices[c[2]]);
    sphere::to_lonlat(centre, g.clon[i], g.clat[i]);
  }
  complete_icon_grid(g);
  return g;
}

}  // namespace

IcosahedralMesh make_icosahedral_mesh(int level, int root) {
  if (level < -1 || level > 9)
    throw GridError("make_icosahedral_mesh: level " + std::to_string(level) + " out of range, expected -1..9");
  check_root(root, "make_icosahedral_mesh");
  IcosahedralMesh mesh = icosahedron();
  mesh.root = root;
  for (int l = 0; l <= level; ++l) mesh = l == 0 ? divide_root(mesh, root) : bisect(mesh);
  return mesh;
}

IcosahedralMesh bisect_mesh(const IcosahedralMesh& mesh) {
  if (mesh.level < 0) throw InternalError("bisect_mesh: the icosahedron is divided by its root first");
  return bisect(mesh);
}

IcosahedralMesh keep_cells(const IcosahedralMesh& mesh, const std::vector<char>& keep) {
  IcosahedralMesh out;
  out.root = mesh.root;
  out.level = mesh.level;
  out.vertices = mesh.vertices;
  for (size_t c = 0; c < mesh.cells.size(); ++c)
    if (keep[c]) out.cells.push_back(mesh.cells[c]);
  number_edges(out);
  return out;
}

IcosahedralMesh make_icosahedral_region(int level, int root, int coarse_level, const std::array<double, 3>& centre,
                                        double radius) {
  if (level < 0 || level > 15 || coarse_level < -1 || coarse_level > level)
    throw GridError("make_icosahedral_region: levels " + std::to_string(coarse_level) + " and " +
                    std::to_string(level) + " out of range, expected -1 <= coarse <= level <= 15");
  check_root(root, "make_icosahedral_region");
  IcosahedralMesh mesh = icosahedron();
  mesh.root = root;
  mesh = keep_cells(mesh, cells_meeting(mesh, centre, radius));
  for (int l = 0; l <= level; ++l) {
    mesh = l == 0 ? divide_root(mesh, root) : bisect(mesh);
    if (l <= coarse_level) mesh = keep_cells(mesh, cells_meeting(mesh, centre, radius));
  }
  return mesh;
}

IconGrid icon_grid_of_mesh(const IcosahedralMesh& mesh, const std::string& path) {
  std::vector<int32_t> cells(mesh.cells.size()), verts(mesh.vertices.size());
  std::iota(cells.begin(), cells.end(), 0);
  std::iota(verts.begin(), verts.end(), 0);
  return grid_from_mesh(mesh, cells, verts, path);
}

IconGrid make_icosahedral_grid(int level, uint64_t shuffle_seed, int root) {
  if (level < 0 || level > 9)
    throw GridError("make_icosahedral_grid: level " + std::to_string(level) + " out of range, expected 0..9");
  const IcosahedralMesh mesh = make_icosahedral_mesh(level, root);
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
  IconGrid g =
      grid_from_mesh(mesh, cell_perm, vert_perm, "synthetic:R" + std::to_string(root) + "B" + std::to_string(level));
  if (level > 0) {
    g.parent_cell.resize(n);
    for (int64_t i = 0; i < n; ++i) g.parent_cell[i] = cell_perm[i] / 4;
  }
  return g;
}

}  // namespace finecast::coupling
