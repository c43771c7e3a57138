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

struct Mesh {
  std::vector<Vec3> vertices;
  std::vector<std::array<int32_t, 3>> cells;
};

/// The icosahedron of ICON's standard grids: pentagons at the poles, five at latitude
/// atan(1/2) = 26.57N at longitudes 0, +-72, +-144 and five at 26.57S at +-36, +-108, 180.
/// Cells are counter-clockwise seen from outside, as in ICON grid files.
Mesh icosahedron() {
  Mesh m;
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
  return m;
}

/// One bisection: child 4p+0..2 at the parent's corners, 4p+3 the central (inverted) one.
Mesh bisect(const Mesh& in) {
  Mesh out;
  out.vertices = in.vertices;
  std::unordered_map<int64_t, int32_t> midpoint;
  midpoint.reserve(2 * in.cells.size());  // 3/2 edges per cell
  const auto nv = static_cast<int64_t>(in.vertices.size());
  auto mid = [&](int32_t a, int32_t b) {
    const int64_t key = std::min(a, b) * nv + std::max(a, b);
    auto it = midpoint.find(key);
    if (it != midpoint.end()) return it->second;
    const Vec3& p = in.vertices[a];
    const Vec3& q = in.vertices[b];
    const auto id = static_cast<int32_t>(out.vertices.size());
    out.vertices.push_back(sphere::normalised({p[0] + q[0], p[1] + q[1], p[2] + q[2]}));
    midpoint.emplace(key, id);
    return id;
  };
  out.cells.reserve(4 * in.cells.size());
  for (const auto& c : in.cells) {
    const int32_t ab = mid(c[0], c[1]), bc = mid(c[1], c[2]), ca = mid(c[2], c[0]);
    out.cells.push_back({c[0], ab, ca});
    out.cells.push_back({ab, c[1], bc});
    out.cells.push_back({ca, bc, c[2]});
    out.cells.push_back({ab, bc, ca});
  }
  return out;
}

}  // namespace

IconGrid make_icosahedral_grid(int level, uint64_t shuffle_seed) {
  if (level < 0 || level > 9)
    throw GridError("make_icosahedral_grid: level " + std::to_string(level) + " out of range, expected 0..9");
  Mesh mesh = bisect(icosahedron());  // R2B0: the root bisection
  for (int l = 0; l < level; ++l) mesh = bisect(mesh);

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
