// SPDX-License-Identifier: BSD-3-Clause
// Rebuilding the refinement hierarchy of a global ICON grid from its topology alone (limited-area
// grids: icon_limited_area.cpp), and the patch assembly both share.
//
// Why topology: ICON grids are often spring-optimised, so fine-cell centres can lie outside the
// geometric parent triangle (on the R2B4 grid of libncarg-data, centre-in-triangle puts 256
// cells into only 1 of the 80 R2B0 parents). The connectivity of a refined icosahedron is exact.
#include "coupling/grid/icon_hierarchy.hpp"

#include <algorithm>
#include <array>
#include <bitset>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "common/error.hpp"
#include "coupling/grid/edge_neighbours.hpp"
#include "coupling/grid/icon_limited_area.hpp"
#include "coupling/grid/icon_patch_assembly.hpp"
#include "coupling/grid/spherical.hpp"

namespace finecast::coupling {
namespace {

using sphere::Vec3;

constexpr int kMaxDegree = 8;  // 6 in a valid grid; room to report what is wrong instead

[[noreturn]] void fail(const IconGrid& g, const std::string& what) {
  throw GridError("ICON grid '" + g.path + "': " + what);
}

/// Edge-hop distances from `source` to every vertex (breadth-first search).
void bfs(const std::vector<int32_t>& adj, const std::vector<uint8_t>& deg, int32_t source, int32_t* dist,
         std::vector<int32_t>& queue) {
  const size_t nv = deg.size();
  std::fill(dist, dist + nv, -1);
  queue.clear();
  queue.push_back(source);
  dist[source] = 0;
  for (size_t head = 0; head < queue.size(); ++head) {
    const int32_t v = queue[head];
    for (int k = 0; k < deg[v]; ++k) {
      const int32_t w = adj[v * kMaxDegree + k];
      if (dist[w] < 0) {
        dist[w] = dist[v] + 1;
        queue.push_back(w);
      }
    }
  }
}

/// The vertex graph of the fine grid and the 12 icosahedron corners (the vertices of five cells).
struct VertexGraph {
  std::vector<int32_t> adj;  ///< [nv][kMaxDegree]
  std::vector<uint8_t> deg;
  std::vector<int32_t> corners;
};

VertexGraph vertex_graph(const IconGrid& g) {
  const int64_t nv = g.n_vertices;
  VertexGraph graph;
  graph.adj.resize(nv * kMaxDegree);
  graph.deg.assign(nv, 0);
  std::vector<uint8_t> cells_at(nv, 0);
  auto link = [&](int32_t a, int32_t b) {
    for (int k = 0; k < graph.deg[a]; ++k)
      if (graph.adj[a * kMaxDegree + k] == b) return;
    if (graph.deg[a] == kMaxDegree)
      fail(g, "vertex " + std::to_string(a) + " has more than " + std::to_string(kMaxDegree) +
                  " edges; not an icosahedral grid");
    graph.adj[a * kMaxDegree + graph.deg[a]++] = b;
  };
  for (const auto& c : g.cell_vertices)
    for (int k = 0; k < 3; ++k) {
      link(c[k], c[(k + 1) % 3]);
      link(c[(k + 1) % 3], c[k]);
      if (cells_at[c[k]] < 255) ++cells_at[c[k]];
    }
  for (int64_t v = 0; v < nv; ++v) {
    if (cells_at[v] == 5)
      graph.corners.push_back(static_cast<int32_t>(v));
    else if (cells_at[v] != 6)
      fail(g, "vertex " + std::to_string(v) + " belongs to " + std::to_string(cells_at[v]) +
                  " cells, expected 5 or 6 in a global icosahedral grid (a regional grid?)");
  }
  if (graph.corners.size() != 12)
    fail(g, std::to_string(graph.corners.size()) +
                " vertices belong to exactly five cells, expected the 12 icosahedron corners");
  return graph;
}

/// The icosahedron behind the grid: hop distances of every vertex from the 12 corners, the 20
/// faces (corner triples), and for each vertex the faces it lies in.
struct Icosahedron {
  std::vector<int32_t> corners;
  std::vector<int32_t> hops;  ///< [vertex][corner]
  std::vector<std::array<int, 3>> faces;
  std::vector<uint32_t> face_mask;  ///< per vertex: bit f set when it lies in face f
  int32_t d(int corner, int64_t v) const { return hops[v * 12 + corner]; }
};

Icosahedron icosahedron(const IconGrid& g, const VertexGraph& graph, int64_t side, const std::string& fine_name) {
  const int64_t nv = g.n_vertices;
  Icosahedron ico;
  ico.corners = graph.corners;
  std::vector<int32_t> dist(12 * nv), queue;
  queue.reserve(nv);
  for (int a = 0; a < 12; ++a) bfs(graph.adj, graph.deg, ico.corners[a], &dist[a * nv], queue);
  // Vertex-major: the face tests read all corners of one vertex together.
  ico.hops.resize(12 * nv);
  for (int a = 0; a < 12; ++a)
    for (int64_t v = 0; v < nv; ++v) ico.hops[v * 12 + a] = dist[a * nv + v];

  // Edges: corner pairs at the smallest hop distance; faces: mutually adjacent triples.
  int32_t edge_hops = std::numeric_limits<int32_t>::max();
  for (int a = 0; a < 12; ++a)
    for (int b = a + 1; b < 12; ++b) {
      if (ico.d(a, ico.corners[b]) < 0) fail(g, "the vertex graph is not connected");
      edge_hops = std::min(edge_hops, ico.d(a, ico.corners[b]));
    }
  if (edge_hops != side)
    fail(g, "icosahedron corners are " + std::to_string(edge_hops) + " edges apart, expected " + std::to_string(side) +
                " for an " + fine_name + " grid");
  std::array<std::bitset<12>, 12> adjacent;
  for (int a = 0; a < 12; ++a) {
    for (int b = 0; b < 12; ++b) adjacent[a][b] = a != b && ico.d(a, ico.corners[b]) == side;
    if (adjacent[a].count() != 5)
      fail(g, "icosahedron corner " + std::to_string(ico.corners[a]) + " has " + std::to_string(adjacent[a].count()) +
                  " neighbouring corners, expected 5");
  }
  for (int a = 0; a < 12; ++a)
    for (int b = a + 1; b < 12; ++b)
      for (int c = b + 1; c < 12; ++c)
        if (adjacent[a][b] && adjacent[b][c] && adjacent[a][c]) ico.faces.push_back({a, b, c});
  if (ico.faces.size() != 20) fail(g, std::to_string(ico.faces.size()) + " icosahedron faces found, expected 20");

  // Discrete barycentric coordinates: inside face (a, b, c) a vertex's hop distances are
  // side - lambda for each corner, so they sum to 2 * side there and exceed it elsewhere.
  ico.face_mask.assign(nv, 0);
  for (int64_t v = 0; v < nv; ++v)
    for (int f = 0; f < 20; ++f) {
      const auto& F = ico.faces[f];
      if (ico.d(F[0], v) + ico.d(F[1], v) + ico.d(F[2], v) == 2 * side) ico.face_mask[v] |= 1u << f;
    }
  return ico;
}

/// The sizes of the refinement: fine and coarse edges per icosahedron edge, fine edges per
/// coarse edge, and the coarse triangles.
struct Refinement {
  int64_t side = 0;  ///< fine edges per icosahedron edge
  int64_t r = 0;     ///< fine edges per coarse edge
  int64_t m = 0;     ///< coarse edges per icosahedron edge
  int64_t per_face() const { return m * m; }
  int64_t n_coarse() const { return 20 * per_face(); }
  int64_t patch_size() const { return r * r; }
};

/// Every coarse triangle's corners in canonical order (northernmost first, then
/// anticlockwise), and for each canonical corner the lattice corner it is.
struct CoarseTriangles {
  std::vector<std::array<int32_t, 3>> corner;
  std::vector<std::array<int8_t, 3>> slot;
};

CoarseTriangles coarse_triangles(const IconGrid& g, const Icosahedron& ico, const Refinement& ref) {
  const int64_t row = ref.m + 1;
  std::vector<int32_t> lattice_vertex(20 * row * row, -1);
  for (int64_t v = 0; v < g.n_vertices; ++v)
    for (uint32_t mask = ico.face_mask[v]; mask != 0; mask &= mask - 1) {
      const int f = __builtin_ctz(mask);
      const int64_t p = ref.side - ico.d(ico.faces[f][1], v), q = ref.side - ico.d(ico.faces[f][2], v);
      if (p % ref.r == 0 && q % ref.r == 0)
        lattice_vertex[(f * row + p / ref.r) * row + q / ref.r] = static_cast<int32_t>(v);
    }
  CoarseTriangles tri;
  tri.corner.resize(ref.n_coarse());
  tri.slot.resize(ref.n_coarse());
  const int64_t m = ref.m;
  for (int f = 0; f < 20; ++f)
    for (int64_t I = 0; I < m; ++I)
      for (int64_t J = 0; I + J < m; ++J)
        for (int down = 0; down < 2; ++down) {
          if (down && I + J + 1 >= m) continue;
          // Lattice corners K0, K1, K2 in (p, q); K0 is the corner the local coordinates start at.
          const int64_t k[3][2] = {{down ? I + 1 : I, down ? J + 1 : J},
                                   {down ? I : I + 1, down ? J + 1 : J},
                                   {down ? I + 1 : I, down ? J : J + 1}};
          std::array<int32_t, 3> K{};
          for (int c = 0; c < 3; ++c) {
            K[c] = lattice_vertex[(f * row + k[c][0]) * row + k[c][1]];
            if (K[c] < 0) fail(g, "a coarse triangle corner is missing from the vertex lattice");
          }
          const int64_t id = f * ref.per_face() + lattice_index(m, I, J, down != 0);
          tri.corner[id] = canonical_corners(g, K, tri.slot[id]);
        }
  return tri;
}

/// The fine cell at each canonical slot of each coarse triangle, [n_coarse][patch_size]: its
/// face, then its coarse triangle and its place in it, from the vertices' hop distances.
std::vector<int64_t> fine_cells_by_slot(const IconGrid& g, const Icosahedron& ico, const Refinement& ref,
                                        const CoarseTriangles& tri, const std::string& coarse_name) {
  const int64_t P = ref.patch_size(), r = ref.r, m = ref.m, n_coarse = ref.n_coarse();
  std::vector<int64_t> slot_cell(n_coarse * P, -1);
  std::vector<int64_t> count(n_coarse, 0);
  for (int64_t c = 0; c < g.n_cells; ++c) {
    const auto& cv = g.cell_vertices[c];
    const uint32_t mask = ico.face_mask[cv[0]] & ico.face_mask[cv[1]] & ico.face_mask[cv[2]];
    if (mask == 0 || (mask & (mask - 1)) != 0)
      fail(g, "cell " + std::to_string(c) + " lies in " + std::to_string(__builtin_popcount(mask)) +
                  " icosahedron faces, expected exactly 1");
    const int f = __builtin_ctz(mask);
    int64_t p[3], q[3];
    for (int k = 0; k < 3; ++k) {
      p[k] = ref.side - ico.d(ico.faces[f][1], cv[k]);
      q[k] = ref.side - ico.d(ico.faces[f][2], cv[k]);
    }
    int64_t I, J;
    bool down;
    lattice_locate(p[0] + p[1] + p[2], q[0] + q[1] + q[2], r, I, J, down);
    const int64_t id = f * ref.per_face() + lattice_index(m, I, J, down);
    if (I + J >= m || id >= n_coarse) fail(g, "cell " + std::to_string(c) + " falls outside its face");
    // Local barycentric coordinates w.r.t. the lattice corners K0, K1, K2, then canonical order.
    int64_t sb = 0, sc = 0;
    for (int k = 0; k < 3; ++k) {
      const int64_t s = down ? r * (I + 1) - p[k] : p[k] - r * I;
      const int64_t t = down ? r * (J + 1) - q[k] : q[k] - r * J;
      const int64_t bary[3] = {r - s - t, s, t};
      sb += bary[tri.slot[id][1]];
      sc += bary[tri.slot[id][2]];
    }
    int64_t i, j;
    bool fine_down;
    lattice_locate(sb, sc, 1, i, j, fine_down);
    const int64_t local = lattice_index(r, i, j, fine_down);
    if (local < 0 || local >= P || slot_cell[id * P + local] >= 0)
      fail(g, "cells " + std::to_string(c) + " and " +
                  std::to_string(local >= 0 && local < P ? slot_cell[id * P + local] : -1) +
                  " map to the same place in a coarse cell; the refinement is not regular");
    slot_cell[id * P + local] = c;
    ++count[id];
  }
  const auto [lo, hi] = std::minmax_element(count.begin(), count.end());
  if (*lo != P || *hi != P)
    fail(g, coarse_name + " coarse cells hold " + std::to_string(*lo) + " to " + std::to_string(*hi) +
                " fine cells, expected exactly " + std::to_string(P) + " each");
  return slot_cell;
}

/// The file's own parents (parent_cell_index), when it has them, must agree with the topology.
void check_file_parents(const IconGrid& g, const PatchMap& pm) {
  const int64_t P = pm.patch_size;
  std::vector<int8_t> seen;
  for (int64_t k = 0; k < pm.n_coarse; ++k) {
    const int32_t parent = g.parent_cell[pm.fine_of_patch[k * P]];
    for (int64_t s = 1; s < P; ++s)
      if (g.parent_cell[pm.fine_of_patch[k * P + s]] != parent)
        fail(g, "parent_cell_index disagrees with the topology: cells " + std::to_string(pm.fine_of_patch[k * P]) +
                    " and " + std::to_string(pm.fine_of_patch[k * P + s]) +
                    " share a parent triangle but have parents " + std::to_string(parent) + " and " +
                    std::to_string(g.parent_cell[pm.fine_of_patch[k * P + s]]));
    if (parent < 0) fail(g, "parent_cell_index is missing for cell " + std::to_string(pm.fine_of_patch[k * P]));
    if (static_cast<size_t>(parent) >= seen.size()) seen.resize(parent + 1, 0);
    if (seen[parent]++)
      fail(g, "parent_cell_index names parent " + std::to_string(parent) + " for two coarse triangles");
  }
}

/// The count of a global R<root>B<level> grid, 0 when it does not fit in 63 bits.
int64_t global_cells(int root, int level) {
  if (root < 1 || root > 64 || level < 0 || level > 20) return 0;
  return 20LL * root * root * (int64_t{1} << (2 * level));
}

}  // namespace

std::string icon_grid_name(int root, int level) { return "R" + std::to_string(root) + "B" + std::to_string(level); }

IconGridSize icon_grid_size(const IconGrid& g) {
  IconGridSize size;
  for (const auto& nb : g.cell_neighbours)
    if (nb[0] < 0 || nb[1] < 0 || nb[2] < 0) {
      size.limited_area = true;
      break;
    }
  if (g.grid_root > 0 && g.grid_level >= 0) {
    size.root = g.grid_root;
    size.level = g.grid_level;
    const int64_t whole = global_cells(size.root, size.level);
    if (whole == 0)
      fail(g, "grid_root " + std::to_string(size.root) + " and grid_level " + std::to_string(size.level) +
                  " give no grid this tool can hold");
    if (!size.limited_area && g.n_cells != whole)
      fail(g, std::to_string(g.n_cells) + " cells, but the global attributes say " +
                  icon_grid_name(size.root, size.level) + ", which has " + std::to_string(whole) +
                  " (20 grid_root^2 4^grid_level) on the whole sphere");
    if (size.limited_area && g.n_cells >= whole)
      fail(g, "a limited-area grid of " + std::to_string(g.n_cells) + " cells, as many as the whole " +
                  icon_grid_name(size.root, size.level) + " has (" + std::to_string(whole) + ")");
    return size;
  }
  if (size.limited_area)
    fail(g,
         "a limited-area grid (cells with an edge on the domain's boundary) without the global attributes "
         "grid_root and grid_level, which say what R<n>B<k> grid it was cut from (ICON's grid files have them)");
  // 20 n^2 4^k with n = 2 (then n^2 4^k is a power of 4) or n odd.
  const int64_t n = g.n_cells;
  if (n >= 80 && n % 20 == 0) {
    int64_t q = n / 20;
    int k = 0;
    while (q % 4 == 0) {
      q /= 4;
      ++k;
    }
    const auto odd = static_cast<int64_t>(std::llround(std::sqrt(static_cast<double>(q))));
    if (odd * odd == q && odd % 2 == 1) {
      size.root = odd == 1 ? 2 : static_cast<int>(odd);
      size.level = odd == 1 ? k - 1 : k;
      if (size.level >= 0 && size.root <= 64) return size;
    }
  }
  fail(g, std::to_string(n) +
              " cells is no global R<n>B<k> grid size (20 n^2 4^k cells: R2B<k> 80, 320, 1280, 5120, 20480, ...; "
              "R3B<k> 180, 720, 2880, ...)");
}

int icon_grid_level(const IconGrid& g) { return icon_grid_size(g).level; }

std::string limited_area_text(const PatchMap& map) {
  const LimitedAreaSummary& la = map.limited_area;
  if (!la.on) return std::string();
  const int64_t covered = map.n_coarse * map.patch_size;
  return "limited area: " + std::to_string(map.n_coarse) + " of " + std::to_string(la.coarse_total) +
         " coarse cells are patches; left out of training and sampling: " + std::to_string(la.left_out_partial) +
         " cut by the domain's edge (fewer than " + std::to_string(map.patch_size) + " fine cells) and " +
         std::to_string(la.left_out_boundary) + " reaching into the lateral boundary zone (refin_c_ctrl 1.." +
         std::to_string(la.boundary_rows) +
         (la.rows_from_topology ? ", rows counted from the boundary: the file has no refin_c_ctrl" : "") + "); " +
         std::to_string(map.n_fine - covered) + " of " + std::to_string(map.n_fine) +
         " fine cells in no patch (missing in the output); a neighbour left out counts as the patch's own coarse "
         "value in the context; hierarchy from " +
         la.hierarchy;
}

std::array<int32_t, 3> canonical_corners(const IconGrid& g, const std::array<int32_t, 3>& k,
                                         std::array<int8_t, 3>& from) {
  const Vec3 x[3] = {sphere::to_xyz(g.vlon[k[0]], g.vlat[k[0]]), sphere::to_xyz(g.vlon[k[1]], g.vlat[k[1]]),
                     sphere::to_xyz(g.vlon[k[2]], g.vlat[k[2]])};
  // Geographic "northernmost" order with exact ties broken by the other coordinates, so the
  // choice depends on positions only (renumbering a grid cannot change it).
  auto further_north = [](const Vec3& a, const Vec3& b) {
    if (a[2] != b[2]) return a[2] > b[2];
    if (a[0] != b[0]) return a[0] > b[0];
    return a[1] > b[1];
  };
  int first = 0;
  for (int c = 1; c < 3; ++c)
    if (further_north(x[c], x[first])) first = c;
  int second = (first + 1) % 3, third = (first + 2) % 3;
  if (sphere::dot(x[first], sphere::cross(x[second], x[third])) < 0) std::swap(second, third);
  from = {static_cast<int8_t>(first), static_cast<int8_t>(second), static_cast<int8_t>(third)};
  return {k[first], k[second], k[third]};
}

bool canonical_slots(const IconGrid& g, const std::vector<int64_t>& cells, const std::array<int32_t, 3>& corners,
                     int64_t r, std::vector<int64_t>& slots) {
  const int64_t P = r * r;
  slots.assign(cells.size(), -1);
  if (static_cast<int64_t>(cells.size()) != P) return false;
  // The triangle's vertices, numbered locally, and their edges.
  std::vector<int32_t> verts;
  verts.reserve(3 * cells.size());
  for (int64_t c : cells)
    for (int32_t v : g.cell_vertices[c]) verts.push_back(v);
  std::sort(verts.begin(), verts.end());
  verts.erase(std::unique(verts.begin(), verts.end()), verts.end());
  auto local = [&](int32_t v) {
    const auto it = std::lower_bound(verts.begin(), verts.end(), v);
    return it != verts.end() && *it == v ? static_cast<int32_t>(it - verts.begin()) : -1;
  };
  const size_t nv = verts.size();
  std::vector<std::vector<int32_t>> adj(nv);
  for (int64_t c : cells)
    for (int k = 0; k < 3; ++k) {
      const int32_t a = local(g.cell_vertices[c][k]), b = local(g.cell_vertices[c][(k + 1) % 3]);
      adj[a].push_back(b);
      adj[b].push_back(a);
    }
  std::vector<int64_t> coord[2];  // beta, gamma
  std::vector<int32_t> queue;
  for (int which = 0; which < 2; ++which) {
    const int32_t source = local(corners[1 + which]);
    if (source < 0) return false;
    std::vector<int64_t>& d = coord[which];
    d.assign(nv, -1);
    d[source] = 0;
    queue.assign(1, source);
    for (size_t head = 0; head < queue.size(); ++head)
      for (int32_t w : adj[queue[head]])
        if (d[w] < 0) {
          d[w] = d[queue[head]] + 1;
          queue.push_back(w);
        }
    for (int64_t& x : d) {
      if (x < 0 || x > r) return false;
      x = r - x;
    }
  }
  std::vector<char> taken(static_cast<size_t>(P), 0);
  for (size_t i = 0; i < cells.size(); ++i) {
    int64_t sb = 0, sc = 0;
    for (int32_t v : g.cell_vertices[cells[i]]) {
      sb += coord[0][local(v)];
      sc += coord[1][local(v)];
    }
    int64_t a, b;
    bool down;
    lattice_locate(sb, sc, 1, a, b, down);
    const int64_t slot = lattice_index(r, a, b, down);
    if (slot < 0 || slot >= P || taken[slot]) return false;
    taken[slot] = 1;
    slots[i] = slot;
  }
  return true;
}

PatchMap assemble_icon_patch_map(const IconGrid& g, int64_t n_coarse, int64_t P,
                                 const std::vector<std::array<int32_t, 3>>& corners,
                                 const std::vector<int64_t>& slot_cell, bool closed) {
  std::vector<int64_t> smallest(n_coarse), order(n_coarse);
  for (int64_t id = 0; id < n_coarse; ++id) {
    smallest[id] = *std::min_element(&slot_cell[id * P], &slot_cell[id * P] + P);
    order[id] = id;
  }
  std::sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return smallest[a] < smallest[b]; });

  PatchMap pm;
  pm.kind = PatchMap::Kind::kIconTriangles;
  pm.n_fine = g.n_cells;
  pm.n_coarse = n_coarse;
  pm.patch_size = static_cast<int>(P);
  pm.n_neighbours = 3;
  pm.fine_of_patch.resize(n_coarse * P);
  pm.fine_weight.resize(n_coarse * P);
  pm.patch_area.resize(n_coarse);
  pm.neighbours.assign(n_coarse * 3, -1);
  pm.coarse_lon.resize(n_coarse);
  pm.coarse_lat.resize(n_coarse);
  pm.fine_lon = g.clon;
  pm.fine_lat = g.clat;
  for (int64_t k = 0; k < n_coarse; ++k) {
    const int64_t id = order[k];
    double total = 0.0;
    Vec3 centre{0, 0, 0};
    for (int64_t s = 0; s < P; ++s) {
      const int64_t c = slot_cell[id * P + s];
      pm.fine_of_patch[k * P + s] = c;
      total += g.cell_area[c];
      const Vec3 x = sphere::to_xyz(g.clon[c], g.clat[c]);
      for (int e = 0; e < 3; ++e) centre[e] += g.cell_area[c] * x[e];
    }
    for (int64_t s = 0; s < P; ++s) pm.fine_weight[k * P + s] = g.cell_area[slot_cell[id * P + s]] / total;
    pm.patch_area[k] = total;
    sphere::to_lonlat(centre, pm.coarse_lon[k], pm.coarse_lat[k]);
  }

  std::vector<std::array<int32_t, 3>> ordered_corners(n_coarse);
  for (int64_t k = 0; k < n_coarse; ++k) ordered_corners[k] = corners[order[k]];
  const auto coarse_neighbours =
      edge_neighbours(ordered_corners, g.n_vertices, "ICON grid '" + g.path + "', coarse triangles");
  for (int64_t k = 0; k < n_coarse; ++k)
    for (int s = 0; s < 3; ++s) {
      // The coarse triangles of a global grid close up: every edge has a triangle on each side.
      if (closed && coarse_neighbours[k][s] < 0) fail(g, "a coarse edge is not shared by exactly two coarse cells");
      pm.neighbours[k * 3 + s] = coarse_neighbours[k][s];
    }
  return pm;
}

PatchMap icon_patch_map(const IconGrid& g, int coarse_level, const LimitedAreaRules& rules) {
  const IconGridSize size = icon_grid_size(g);
  const int fine_level = size.level;
  if (coarse_level < 0 || coarse_level > fine_level)
    fail(g, "coarse level " + std::to_string(coarse_level) + " out of range for an " +
                icon_grid_name(size.root, fine_level) + " grid, expected 0.." + std::to_string(fine_level));
  if (size.limited_area) return limited_area_patch_map(g, size, coarse_level, rules);
  Refinement ref;
  ref.side = int64_t{size.root} << fine_level;
  ref.r = int64_t(1) << (fine_level - coarse_level);
  ref.m = ref.side / ref.r;
  const Icosahedron ico = icosahedron(g, vertex_graph(g), ref.side, icon_grid_name(size.root, fine_level));
  const CoarseTriangles tri = coarse_triangles(g, ico, ref);
  const std::vector<int64_t> slot_cell = fine_cells_by_slot(g, ico, ref, tri, icon_grid_name(size.root, coarse_level));
  const PatchMap pm = assemble_icon_patch_map(g, ref.n_coarse(), ref.patch_size(), tri.corner, slot_cell, true);
  if (!g.parent_cell.empty() && coarse_level == fine_level - 1) check_file_parents(g, pm);
  return pm;
}

}  // namespace finecast::coupling
