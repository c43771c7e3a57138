// SPDX-License-Identifier: BSD-3-Clause
// The ICON grid file of the uniform R2B<n> grid: ICON's topology tables (edges, vertex rings,
// orientations), its geometry (circumcentres, normals, lengths, areas) and the metadata ICON's
// read_pre_patch / read_remaining_patch / copy_grid_info read.
#include "coupling/grid/icon_grid_file_writer.hpp"

#include <netcdf.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <numeric>
#include <optional>
#include <utility>
#include <vector>

#include "common/atomic_file.hpp"
#include "coupling/error.hpp"
#include "coupling/grid/icon_grid_layout.hpp"
#include "coupling/grid/icon_limited_area.hpp"
#include "coupling/grid/icosahedral_grid.hpp"
#include "coupling/grid/spherical.hpp"

namespace finecast::coupling {
namespace {

using sphere::Vec3;

constexpr int kRing = 6;  // ICON's "ne": cells, edges, vertices around a vertex (5 at pentagons)
constexpr int kNone = -1;

Vec3 sub(const Vec3& a, const Vec3& b) { return {a[0] - b[0], a[1] - b[1], a[2] - b[2]}; }
Vec3 add(const Vec3& a, const Vec3& b) { return {a[0] + b[0], a[1] + b[1], a[2] + b[2]}; }
int8_t sign(double x) { return x < 0 ? -1 : 1; }

/// ICON's connectivity and geometry of a mesh, 0-based (kNone where a pentagon has no 6th).
struct Tables {
  const IcosahedralMesh& mesh;
  int64_t nc = 0, ne = 0, nv = 0;
  std::vector<std::array<int32_t, 2>> edge_cells;  ///< normal points from [0] to [1]
  std::vector<std::array<int32_t, 3>> cell_neighbours;
  std::vector<std::array<int32_t, 3>> cell_orientation;  ///< +1: the edge's normal leaves the cell
  std::vector<std::array<int32_t, kRing>> ring_cells, ring_edges, ring_vertices, ring_orientation;
  std::vector<int32_t> system_orientation;
  std::vector<Vec3> cell_centre, edge_centre, primal_normal, dual_normal, dual_middle;
  std::vector<double> cell_area, dual_area, edge_length, dual_edge_length;
  std::vector<std::array<double, 2>> edge_cell_distance;

  explicit Tables(const IcosahedralMesh& m) : mesh(m) {
    nc = static_cast<int64_t>(m.cells.size());
    ne = static_cast<int64_t>(m.edges.size());
    nv = static_cast<int64_t>(m.vertices.size());
    connect();
    measure();
    ring();
  }

  int32_t other_cell(int32_t e, int32_t c) const { return edge_cells[e][0] == c ? edge_cells[e][1] : edge_cells[e][0]; }

 private:
  /// The cells of each edge: the one that runs the edge from its second vertex to its first in
  /// its counter-clockwise order is cell 1 (so every edge_system_orientation comes out +1). On a
  /// limited-area mesh an edge of the lateral boundary has cell 1 only (its vertices are ordered
  /// so: limited_area_mesh), cell 2 kNone.
  void connect() {
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
  void measure() {
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
      const Vec3 c2 = open ? sphere::normalised(sub(add(m, m), c1)) : cell_centre[edge_cells[e][1]];
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
  void ring() {
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
};

using Attrs = std::vector<std::pair<std::string, std::string>>;

/// A NetCDF file defined variable by variable and written at close(), atomically.
class GridFile {
 public:
  explicit GridFile(const std::string& path) : file_(path), ctx_("writing ICON grid file '" + path + "'") {
    CHECK_NC(nc_create(file_.tmp_path().c_str(), NC_CLOBBER | NC_64BIT_OFFSET, &nc_), ctx_);
  }
  ~GridFile() {
    if (nc_ >= 0) nc_close(nc_);
  }
  GridFile(const GridFile&) = delete;
  GridFile& operator=(const GridFile&) = delete;

  int dim(const char* name, size_t len) {
    int id = -1;
    CHECK_NC(nc_def_dim(nc_, name, len, &id), ctx_ + ", dimension " + name);
    lengths_.push_back(len);
    return id;
  }
  void doubles(const std::string& name, std::vector<int> dims, std::vector<double> values, const Attrs& attrs) {
    pending_.push_back({define(name, NC_DOUBLE, dims, values.size(), attrs), std::move(values), {}});
  }
  void ints(const std::string& name, std::vector<int> dims, std::vector<int32_t> values, const Attrs& attrs) {
    pending_.push_back({define(name, NC_INT, dims, values.size(), attrs), {}, std::move(values)});
  }
  void global(const char* name, const std::string& text) {
    CHECK_NC(nc_put_att_text(nc_, NC_GLOBAL, name, text.size(), text.c_str()), ctx_ + ", attribute " + name);
  }
  void global(const char* name, int value) {
    CHECK_NC(nc_put_att_int(nc_, NC_GLOBAL, name, NC_INT, 1, &value), ctx_ + ", attribute " + name);
  }
  void global(const char* name, const std::vector<double>& values) {
    CHECK_NC(nc_put_att_double(nc_, NC_GLOBAL, name, NC_DOUBLE, values.size(), values.data()),
             ctx_ + ", attribute " + name);
  }
  void close() {
    CHECK_NC(nc_enddef(nc_), ctx_);
    for (const Pending& p : pending_) {
      if (!p.d.empty()) CHECK_NC(nc_put_var_double(nc_, p.var, p.d.data()), ctx_);
      if (!p.i.empty()) CHECK_NC(nc_put_var_int(nc_, p.var, p.i.data()), ctx_);
    }
    const int nc = nc_;
    nc_ = -1;
    CHECK_NC(nc_close(nc), ctx_);
    file_.commit();
  }

 private:
  struct Pending {
    int var;
    std::vector<double> d;
    std::vector<int32_t> i;
  };
  int define(const std::string& name, nc_type type, const std::vector<int>& dims, size_t count, const Attrs& attrs) {
    size_t expected = 1;
    for (int d : dims) expected *= lengths_.at(d);
    if (count != expected)
      throw InternalError(ctx_ + ": variable " + name + " has " + std::to_string(count) + " values for " +
                          std::to_string(expected) + " places");
    int id = -1;
    CHECK_NC(nc_def_var(nc_, name.c_str(), type, static_cast<int>(dims.size()), dims.data(), &id), ctx_ + ", " + name);
    for (const auto& [key, value] : attrs)
      CHECK_NC(nc_put_att_text(nc_, id, key.c_str(), value.size(), value.c_str()), ctx_ + ", " + name + ":" + key);
    return id;
  }

  AtomicFile file_;
  std::string ctx_;
  int nc_ = -1;
  std::vector<size_t> lengths_;  // by dimension id (ids are 0, 1, ... in definition order)
  std::vector<Pending> pending_;
};

/// ICON's Fortran (entity, slot) arrays are NetCDF (slot, entity): slot k of entity i at k * n + i.
template <class T, size_t K>
std::vector<T> slot_major(const std::vector<std::array<T, K>>& a) {
  const size_t n = a.size();
  std::vector<T> out(K * n);
  for (size_t i = 0; i < n; ++i)
    for (size_t k = 0; k < K; ++k) out[k * n + i] = a[i][k];
  return out;
}

/// An index table in that layout, 1-based, 0 where there is none.
template <size_t K>
std::vector<int32_t> one_based(const std::vector<std::array<int32_t, K>>& a) {
  std::vector<int32_t> out = slot_major(a);
  for (int32_t& x : out) x = x == kNone ? 0 : x + 1;
  return out;
}

std::vector<double> component(const std::vector<Vec3>& v, int d) {
  std::vector<double> out(v.size());
  for (size_t i = 0; i < v.size(); ++i) out[i] = v[i][d];
  return out;
}

/// Longitudes and latitudes (radians) of unit vectors.
void lonlat(const std::vector<Vec3>& v, std::vector<double>& lon, std::vector<double>& lat) {
  lon.resize(v.size());
  lat.resize(v.size());
  for (size_t i = 0; i < v.size(); ++i) sphere::to_lonlat(v[i], lon[i], lat[i]);
}

/// CF bounds (entity, corner), counter-clockwise: a corner at a pole (where longitude means
/// nothing) takes the entity's own longitude, as ICON's grid generator writes them.
struct Bounds {
  std::vector<double> lon, lat;
  Bounds(size_t n, size_t k) : lon(n * k), lat(n * k) {}
  void set(size_t i, size_t k, size_t corners, const Vec3& p, double own_lon) {
    double lo, la;
    sphere::to_lonlat(p, lo, la);
    if (std::fabs(la) > sphere::kPi / 2 - 1e-12) lo = own_lon;
    lon[i * corners + k] = lo;
    lat[i * corners + k] = la;
  }
};

double mean(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return s / static_cast<double>(v.size());
}

/// 64-bit FNV-1a of `text` from `basis`, then splitmix64's finaliser so that names differing in
/// one character differ in every byte.
uint64_t hash64(const std::string& text, uint64_t basis) {
  uint64_t h = basis;
  for (unsigned char ch : text) {
    h ^= ch;
    h *= 0x100000001b3ULL;
  }
  h = (h ^ (h >> 30)) * 0xbf58476d1ce4e5b9ULL;
  h = (h ^ (h >> 27)) * 0x94d049bb133111ebULL;
  return h ^ (h >> 31);
}

/// An RFC 9562 version-8 UUID that is a fixed function of `name`.
std::string uuid_of(const std::string& name) {
  const uint64_t hi = hash64(name, 0xcbf29ce484222325ULL), lo = hash64(name, 0x84222325cbf29ce4ULL);
  unsigned char b[16];
  for (int i = 0; i < 8; ++i) {
    b[i] = static_cast<unsigned char>(hi >> (56 - 8 * i));
    b[8 + i] = static_cast<unsigned char>(lo >> (56 - 8 * i));
  }
  b[6] = static_cast<unsigned char>((b[6] & 0x0f) | 0x80);  // version 8: custom
  b[8] = static_cast<unsigned char>((b[8] & 0x3f) | 0x80);  // variant 10
  char s[37];
  std::snprintf(s, sizeof s, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0], b[1], b[2],
                b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]);
  return s;
}

/// Hierarchy and refinement control of the entities of a mesh to write: parents 1-based (0 =
/// none), children 0-based (kNone = none), the refin_*_ctrl flags.
struct Hierarchy {
  std::vector<int32_t> parent_cell, parent_edge;
  std::vector<std::array<int32_t, 4>> child_cell, child_edge;
  std::vector<int32_t> refin_c, refin_e, refin_v;
};

/// The global mesh's: parents in the hierarchical numbering, children in the next level's, no flags.
Hierarchy global_hierarchy(const IcosahedralMesh& mesh, const Tables& t) {
  const auto nc = static_cast<size_t>(t.nc), ne = static_cast<size_t>(t.ne), nv = static_cast<size_t>(t.nv);
  const size_t per_parent = mesh.level == 0 ? static_cast<size_t>(mesh.root) * mesh.root : 4;
  Hierarchy h;
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
std::vector<char> region_cells(const IcosahedralMesh& global, const Tables& t, const LatLonBox& box) {
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

/// A limited area cut from the global mesh: its mesh in the file's numbering and its hierarchy.
struct LimitedArea {
  IcosahedralMesh mesh;
  Hierarchy hierarchy;
};

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

LimitedArea cut_limited_area(const IcosahedralMesh& global, const Tables& t, const std::vector<char>& in, int depth) {
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

  LimitedArea out;
  IcosahedralMesh& m = out.mesh;
  Hierarchy& h = out.hierarchy;
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

}  // namespace

bool LatLonBox::contains(double lat, double lon) const {
  if (lat < lat0 || lat > lat1) return false;
  if (lon1 - lon0 >= 360) return true;
  const auto wrap = [](double x) { return x - 360.0 * std::floor(x / 360.0); };  // [0, 360)
  const double span = wrap(lon1 - lon0), from = wrap(lon - lon0);
  return from <= span;
}

LatLonBox parse_latlon_box(const std::string& text, const std::string& what) {
  LatLonBox b;
  double* out[4] = {&b.lat0, &b.lat1, &b.lon0, &b.lon1};
  size_t pos = 0;
  for (int i = 0; i < 4; ++i) {
    const size_t comma = text.find(',', pos);
    const std::string part = text.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    char* end = nullptr;
    *out[i] = std::strtod(part.c_str(), &end);
    if (part.empty() || end == part.c_str() || *end != '\0' || !std::isfinite(*out[i]) ||
        (i < 3 && comma == std::string::npos) || (i == 3 && comma != std::string::npos))
      throw ConfigError(what + ": \"" + text + "\", expected lat0,lat1,lon0,lon1 in degrees (four numbers)");
    pos = comma + 1;
  }
  if (!(b.lat0 >= -90 && b.lat0 < b.lat1 && b.lat1 <= 90))
    throw ConfigError(what + ": \"" + text + "\", expected -90 <= lat0 < lat1 <= 90");
  if (!(b.lon0 >= -360 && b.lon0 <= 360 && b.lon1 >= -360 && b.lon1 <= 360) || b.lon0 == b.lon1)
    throw ConfigError(what + ": \"" + text + "\", expected longitudes in -360..360 with lon0 != lon1");
  return b;
}

std::string uniform_icon_grid_uuid(int level, int root) {
  return uuid_of("finecast uniform icosahedral ICON grid R" + std::to_string(root) + "B" + std::to_string(level));
}

IconGridFileSummary write_icon_grid_file(const std::string& path, int level) {
  IconGridFileRequest request;
  request.level = level;
  return write_icon_grid_file(path, request);
}

IconGridFileSummary write_icon_grid_file(const std::string& path, const IconGridFileRequest& request) {
  const int level = request.level, root = request.root;
  const std::string name = "R" + std::to_string(root) + "B" + std::to_string(level);
  // At most R2B9's 5,242,880 cells on the whole sphere.
  if (root < 2 || root > kMaxIconRoot || level < 0 || level > 9 ||
      int64_t{root} * root << (2 * level) > int64_t{4} << 18)
    throw ConfigError("ICON grid file '" + path + "': " + name + " out of range, expected root 2.." +
                      std::to_string(kMaxIconRoot) + ", level 0..9 and at most 20 * 4^10 cells on the sphere (R2B9)");
  if (request.region && (request.boundary_depth < 1 || request.boundary_depth > 64))
    throw ConfigError("ICON grid file '" + path + "': boundary depth " + std::to_string(request.boundary_depth) +
                      ", expected 1..64 rows");
  const IcosahedralMesh global = make_icosahedral_mesh(level, root);
  const Tables global_tables(global);
  std::optional<LimitedArea> cut;
  if (request.region) {
    const std::vector<char> in = region_cells(global, global_tables, *request.region);
    if (std::count(in.begin(), in.end(), 1) < 2)
      throw ConfigError("ICON grid file '" + path + "': the region holds no " + name +
                        " cells whose centres lie in it");
    cut.emplace(cut_limited_area(global, global_tables, in, request.boundary_depth));
  }
  std::optional<Tables> cut_tables;
  if (cut) cut_tables.emplace(cut->mesh);
  const IcosahedralMesh& mesh = cut ? cut->mesh : global;
  const Tables& t = cut ? *cut_tables : global_tables;
  const Hierarchy h = cut ? cut->hierarchy : global_hierarchy(global, global_tables);
  const size_t nc = t.nc, ne = t.ne, nv = t.nv;

  GridFile f(path);
  const int d_cell = f.dim("cell", nc), d_vertex = f.dim("vertex", nv), d_edge = f.dim("edge", ne);
  const int d_nc = f.dim("nc", 2), d_nv = f.dim("nv", 3), d_ne = f.dim("ne", kRing), d_no = f.dim("no", 4);
  const int d_two = f.dim("two_grf", 2), d_chdom = f.dim("max_chdom", 1);
  const int d_cell_grf = f.dim(kIconCellLists.list_dim, kIconCellLists.size());
  const int d_edge_grf = f.dim(kIconEdgeLists.list_dim, kIconEdgeLists.size());
  const int d_vert_grf = f.dim(kIconVertLists.list_dim, kIconVertLists.size());
  const Attrs ignore{{"cdi", "ignore"}};
  auto with = [](Attrs a, const char* long_name, const char* units) {
    a.emplace_back("long_name", long_name);
    if (units[0]) a.emplace_back("units", units);
    return a;
  };
  auto coordinate = [](const char* long_name, bool lon, const char* bounds) {
    Attrs a{{"long_name", long_name}, {"units", "radian"}, {"standard_name", lon ? "longitude" : "latitude"}};
    if (bounds[0]) a.emplace_back("bounds", bounds);
    return a;
  };

  // Positions: CF coordinates with bounds (read by ICON's copy_grid_info for output) and the
  // names ICON's read_pre_patch / read_remaining_patch read.
  std::vector<double> clon, clat, vlon, vlat, elon, elat;
  lonlat(t.cell_centre, clon, clat);
  lonlat(mesh.vertices, vlon, vlat);
  lonlat(t.edge_centre, elon, elat);
  Bounds cb(nc, 3), vb(nv, kRing), eb(ne, 4);
  for (size_t c = 0; c < nc; ++c)
    for (size_t k = 0; k < 3; ++k) cb.set(c, k, 3, mesh.vertices[mesh.cells[c][k]], clon[c]);
  for (size_t v = 0; v < nv; ++v) {
    // The ring's cell centres; on a lateral boundary then the centres of the boundary edges after
    // the last cell and before the first; a pentagon (or a short fan) repeats its last corner.
    std::vector<Vec3> corners;
    int k = 0;
    while (k < kRing && t.ring_cells[v][k] != kNone) corners.push_back(t.cell_centre[t.ring_cells[v][k++]]);
    if (k < kRing && t.ring_edges[v][k] != kNone)
      for (int j : {k - 1, k})
        if (corners.size() < static_cast<size_t>(kRing)) corners.push_back(t.edge_centre[t.ring_edges[v][j]]);
    if (corners.empty()) corners.push_back(mesh.vertices[v]);  // a vertex of no cell (none are written)
    for (size_t j = 0; j < kRing; ++j) vb.set(v, j, kRing, corners[std::min(j, corners.size() - 1)], vlon[v]);
  }
  for (size_t e = 0; e < ne; ++e) {  // counter-clockwise: vertex 1, cell 1, vertex 2, cell 2
    const auto [a, b] = mesh.edges[e];
    const Vec3& c1 = t.cell_centre[t.edge_cells[e][0]];
    // A lateral-boundary edge: cell 1's mirror image across the edge in place of cell 2.
    const Vec3 c2 = t.edge_cells[e][1] != kNone ? t.cell_centre[t.edge_cells[e][1]]
                                                : sphere::normalised(sub(add(t.edge_centre[e], t.edge_centre[e]), c1));
    eb.set(e, 0, 4, mesh.vertices[a], elon[e]);
    eb.set(e, 1, 4, c1, elon[e]);
    eb.set(e, 2, 4, mesh.vertices[b], elon[e]);
    eb.set(e, 3, 4, c2, elon[e]);
  }
  f.doubles("clon", {d_cell}, clon, coordinate("center longitude", true, "clon_vertices"));
  f.doubles("clat", {d_cell}, clat, coordinate("center latitude", false, "clat_vertices"));
  f.doubles("clon_vertices", {d_cell, d_nv}, cb.lon, {{"units", "radian"}});
  f.doubles("clat_vertices", {d_cell, d_nv}, cb.lat, {{"units", "radian"}});
  f.doubles("vlon", {d_vertex}, vlon, coordinate("vertex longitude", true, "vlon_vertices"));
  f.doubles("vlat", {d_vertex}, vlat, coordinate("vertex latitude", false, "vlat_vertices"));
  f.doubles("vlon_vertices", {d_vertex, d_ne}, vb.lon, {{"units", "radian"}});
  f.doubles("vlat_vertices", {d_vertex, d_ne}, vb.lat, {{"units", "radian"}});
  f.doubles("elon", {d_edge}, elon, coordinate("edge midpoint longitude", true, "elon_vertices"));
  f.doubles("elat", {d_edge}, elat, coordinate("edge midpoint latitude", false, "elat_vertices"));
  f.doubles("elon_vertices", {d_edge, d_no}, eb.lon, {{"units", "radian"}});
  f.doubles("elat_vertices", {d_edge, d_no}, eb.lat, {{"units", "radian"}});
  f.doubles("lon_cell_centre", {d_cell}, clon, with(ignore, "longitude of cell centre", "radian"));
  f.doubles("lat_cell_centre", {d_cell}, clat, with(ignore, "latitude of cell centre", "radian"));
  f.doubles("longitude_vertices", {d_vertex}, vlon, with(ignore, "longitude of vertices", "radian"));
  f.doubles("latitude_vertices", {d_vertex}, vlat, with(ignore, "latitude of vertices", "radian"));
  f.doubles("lon_edge_centre", {d_edge}, elon, with(ignore, "longitudes of edge midpoints", "radian"));
  f.doubles("lat_edge_centre", {d_edge}, elat, with(ignore, "latitudes of edge midpoints", "radian"));

  // Areas and lengths on the Earth's radius.
  f.doubles("cell_area", {d_cell}, t.cell_area,
            with({{"units", "m2"}, {"coordinates", "clon clat"}}, "area of grid cell", ""));
  f.doubles("dual_area", {d_vertex}, t.dual_area,
            with({{"units", "m2"}, {"coordinates", "vlon vlat"}}, "areas of dual hexagonal/pentagonal cells", ""));
  f.doubles("cell_area_p", {d_cell}, t.cell_area, with(ignore, "area of grid cell", "m2"));
  f.doubles("dual_area_p", {d_vertex}, t.dual_area, with(ignore, "areas of dual hexagonal/pentagonal cells", "m2"));
  f.doubles("edge_length", {d_edge}, t.edge_length, with(ignore, "lengths of edges of triangular cells", "m"));
  f.doubles("dual_edge_length", {d_edge}, t.dual_edge_length,
            with(ignore, "lengths of dual edges (distances between triangular cell circumcenters)", "m"));
  std::vector<std::array<double, 2>> half_edges(ne);
  for (size_t e = 0; e < ne; ++e) half_edges[e] = {t.edge_length[e] / 2, t.edge_length[e] / 2};
  f.doubles("edge_vert_distance", {d_nc, d_edge}, slot_major(half_edges),
            with(ignore, "distances between edge midpoint and vertices of that edge", "m"));
  f.doubles("edge_cell_distance", {d_nc, d_edge}, slot_major(t.edge_cell_distance),
            with(ignore, "distances between edge midpoint and adjacent triangle midpoints", "m"));

  // Normals: zonal and meridional components at the edge centre.
  std::vector<double> zn(ne), mn(ne), zd(ne), md(ne);
  for (size_t e = 0; e < ne; ++e) {
    const Vec3 east = sphere::east(elon[e]), north = sphere::north(elon[e], elat[e]);
    zn[e] = sphere::dot(t.primal_normal[e], east);
    mn[e] = sphere::dot(t.primal_normal[e], north);
    zd[e] = sphere::dot(t.dual_normal[e], east);
    md[e] = sphere::dot(t.dual_normal[e], north);
  }
  f.doubles("zonal_normal_primal_edge", {d_edge}, zn, with(ignore, "zonal component of normal to primal edge", ""));
  f.doubles("meridional_normal_primal_edge", {d_edge}, mn,
            with(ignore, "meridional component of normal to primal edge", ""));
  f.doubles("zonal_normal_dual_edge", {d_edge}, zd, with(ignore, "zonal component of normal to dual edge", ""));
  f.doubles("meridional_normal_dual_edge", {d_edge}, md,
            with(ignore, "meridional component of normal to dual edge", ""));

  // Cartesian positions and normals on the unit sphere (read_cartesian_positions).
  const char* xyz = "xyz";
  for (int d = 0; d < 3; ++d) {
    const std::string s(1, xyz[d]);
    f.doubles("cell_circumcenter_cartesian_" + s, {d_cell}, component(t.cell_centre, d),
              with(ignore, "cartesian position of cell circumcenter on the unit sphere", ""));
    f.doubles("edge_middle_cartesian_" + s, {d_edge}, component(t.edge_centre, d),
              with(ignore, "cartesian position of edge middle on the unit sphere", ""));
    f.doubles("edge_dual_middle_cartesian_" + s, {d_edge}, component(t.dual_middle, d),
              with(ignore, "cartesian position of the dual edge middle on the unit sphere", ""));
    f.doubles("edge_primal_normal_cartesian_" + s, {d_edge}, component(t.primal_normal, d),
              with(ignore, "unit normal to the edge, from adjacent cell 1 to cell 2", ""));
    f.doubles("edge_dual_normal_cartesian_" + s, {d_edge}, component(t.dual_normal, d),
              with(ignore, "unit normal to the dual edge (primal normal x position)", ""));
    f.doubles("cartesian_" + s + "_vertices", {d_vertex}, component(mesh.vertices, d),
              with(ignore, "cartesian position of vertex on the unit sphere", ""));
  }

  // Connectivity, 1-based.
  f.ints("vertex_of_cell", {d_nv, d_cell}, one_based(mesh.cells), with(ignore, "vertices of each triangular cell", ""));
  f.ints("edge_of_cell", {d_nv, d_cell}, one_based(mesh.cell_edges), with(ignore, "edges of each triangular cell", ""));
  f.ints("neighbor_cell_index", {d_nv, d_cell}, one_based(t.cell_neighbours), with(ignore, "cell neighbor index", ""));
  f.ints("orientation_of_normal", {d_nv, d_cell}, slot_major(t.cell_orientation),
         with(ignore, "orientations of normals to triangular cell edges", ""));
  f.ints("adjacent_cell_of_edge", {d_nc, d_edge}, one_based(t.edge_cells),
         with(ignore, "cells adjacent to each edge", ""));
  f.ints("edge_vertices", {d_nc, d_edge}, one_based(mesh.edges),
         with(ignore, "vertices at the end of of each edge", ""));
  f.ints("edge_system_orientation", {d_edge}, t.system_orientation, with(ignore, "edge system orientation", ""));
  f.ints("cells_of_vertex", {d_ne, d_vertex}, one_based(t.ring_cells), with(ignore, "cells around each vertex", ""));
  f.ints("edges_of_vertex", {d_ne, d_vertex}, one_based(t.ring_edges), with(ignore, "edges around each vertex", ""));
  f.ints("vertices_of_vertex", {d_ne, d_vertex}, one_based(t.ring_vertices),
         with(ignore, "vertices around each vertex", ""));
  f.ints("edge_orientation", {d_ne, d_vertex}, slot_major(t.ring_orientation), with(ignore, "edge orientation", ""));

  // Identity, hierarchy and refinement control.
  auto iota1 = [](size_t n) {
    std::vector<int32_t> v(n);
    for (size_t i = 0; i < n; ++i) v[i] = static_cast<int32_t>(i + 1);
    return v;
  };
  f.ints("cell_index", {d_cell}, iota1(nc), with(ignore, "cell index", ""));
  f.ints("edge_index", {d_edge}, iota1(ne), with(ignore, "edge index", ""));
  f.ints("vertex_index", {d_vertex}, iota1(nv), with(ignore, "vertices index", ""));
  const std::vector<int32_t> zeros_c(nc, 0), zeros_e(ne, 0), ones_c(nc, 1), ones_e(ne, 1);
  f.ints("parent_cell_index", {d_cell}, h.parent_cell, with(ignore, "parent cell index", ""));
  f.ints("child_cell_index", {d_no, d_cell}, one_based(h.child_cell), with(ignore, "child cell index", ""));
  f.ints("child_cell_id", {d_cell}, zeros_c, with(ignore, "domain ID of child cell", ""));
  f.ints("parent_edge_index", {d_edge}, h.parent_edge, with(ignore, "parent edge index", ""));
  f.ints("child_edge_index", {d_no, d_edge}, one_based(h.child_edge), with(ignore, "child edge index", ""));
  f.ints("child_edge_id", {d_edge}, zeros_e, with(ignore, "domain ID of child edge", ""));
  f.ints("phys_cell_id", {d_cell}, ones_c, with(ignore, "physical domain ID of cell", ""));
  f.ints("phys_edge_id", {d_edge}, ones_e, with(ignore, "physical domain ID of edge", ""));
  const std::pair<const IconIndexLists*, int> lists[3] = {
      {&kIconCellLists, d_cell_grf}, {&kIconEdgeLists, d_edge_grf}, {&kIconVertLists, d_vert_grf}};
  const std::vector<int32_t>* flags[3] = {&h.refin_c, &h.refin_e, &h.refin_v};
  const char* names[3] = {"cells", "edges", "vertices"};
  for (int i = 0; i < 3; ++i) {
    const IconIndexLists& l = *lists[i].first;
    const std::string s = l.suffix, what = names[i];
    std::vector<int32_t> start, end;
    if (!icon_index_lists(l, *flags[i], start, end))
      throw InternalError("writing ICON grid file '" + path + "': the " + what + " are not sorted by row");
    std::vector<int32_t> both(start);
    both.insert(both.end(), end.begin(), end.end());
    f.ints("refin_" + s + "_ctrl",
           {s == "c"   ? d_cell
            : s == "e" ? d_edge
                       : d_vertex},
           *flags[i], with(ignore, ("refinement control flag for " + what).c_str(), ""));
    f.ints("index_" + s + "_list", {d_two, lists[i].second}, both,
           with(ignore, ("list of start and end indices for each refinement control level for " + what).c_str(), ""));
    f.ints("start_idx_" + s, {d_chdom, lists[i].second}, start,
           with(ignore, ("list of start indices for each refinement control level for " + what).c_str(), ""));
    f.ints("end_idx_" + s, {d_chdom, lists[i].second}, end,
           with(ignore, ("list of end indices for each refinement control level for " + what).c_str(), ""));
  }

  // Global attributes: identity (read_pre_patch), geometry (parallel_read_geometry_info), CF.
  const double r = sphere::kEarthRadius;
  char title[160], region[128] = "";
  if (cut) {
    const LatLonBox& b = *request.region;
    std::snprintf(region, sizeof region, "lat %g..%g, lon %g..%g, boundary depth %d", b.lat0, b.lat1, b.lon0, b.lon1,
                  request.boundary_depth);
  }
  const std::string uuid =
      cut ? uuid_of("finecast limited-area ICON grid " + name + " " + region) : uniform_icon_grid_uuid(level, root);
  std::snprintf(title, sizeof title, "ICON grid R%02dB%02d, uniform icosahedral geometry%s%s", root, level,
                cut ? ", limited area " : "", region);
  f.global("title", std::string(title));
  f.global("source", std::string("finecast-grid ") + FINECAST_VERSION + " --write-icon-grid");
  f.global("history",
           std::string(root == 2 ? "icosahedron (pentagons at the poles) bisected"
                                 : "icosahedron (pentagons at the poles) divided into " + std::to_string(root) +
                                       " sections along great circles, then bisected") +
               " with great-circle midpoints; circumcentres; hierarchical numbering" +
               (cut ? "; limited area: the cells whose centres lie in the region, renumbered by boundary row" : "") +
               " (see finecast docs/grids.md)");
  f.global("uuidOfHGrid", uuid);
  f.global("number_of_grid_used", 0);  // 0: no number of the WMO/DWD grid register (private use)
  f.global("centre", 255);             // 255: missing (no registered generating centre)
  f.global("subcentre", 255);
  f.global("grid_mapping_name", std::string("lat_long_on_sphere"));
  f.global("crs_id", std::string("urn:ogc:def:cs:EPSG:6.0:6422"));
  f.global("crs_name", std::string("Spherical 2D Coordinate System"));
  f.global("ellipsoid_name", std::string("Sphere"));
  f.global("semi_major_axis", std::vector<double>{r});
  f.global("inverse_flattening", std::vector<double>{0.0});
  f.global("grid_level", level);
  f.global("grid_root", root);
  if (cut) f.global("boundary_depth_index", request.boundary_depth);
  f.global("grid_ID", 1);
  f.global("parent_grid_ID", 0);
  f.global("max_childdom", 1);
  f.global("grid_geometry", kIconSphereGeometry);
  f.global("grid_cell_type", kIconTriangularCell);
  f.global("mean_edge_length", std::vector<double>{mean(t.edge_length)});
  f.global("mean_dual_edge_length", std::vector<double>{mean(t.dual_edge_length)});
  f.global("mean_cell_area", std::vector<double>{mean(t.cell_area)});
  f.global("mean_dual_cell_area", std::vector<double>{mean(t.dual_area)});
  f.global("domain_length", std::vector<double>{2 * sphere::kPi * r});
  f.global("domain_height", std::vector<double>{2 * sphere::kPi * r});
  f.global("sphere_radius", std::vector<double>{r});
  f.global("domain_cartesian_center", std::vector<double>{0.0, 0.0, 0.0});
  f.close();
  IconGridFileSummary summary;
  summary.root = root;
  summary.level = level;
  summary.limited_area = cut.has_value();
  summary.n_cells = static_cast<int64_t>(nc);
  summary.n_edges = static_cast<int64_t>(ne);
  summary.n_vertices = static_cast<int64_t>(nv);
  summary.uuid = uuid;
  if (cut) {
    summary.cells_per_row.assign(static_cast<size_t>(request.boundary_depth), 0);
    for (int32_t row : h.refin_c)
      if (row >= 1) ++summary.cells_per_row[row - 1];
  }
  return summary;
}

}  // namespace finecast::coupling
