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
#include "coupling/grid/icon_grid_cut.hpp"
#include "coupling/grid/icon_grid_layout.hpp"
#include "coupling/grid/icon_mesh_tables.hpp"
#include "coupling/grid/icosahedral_grid.hpp"
#include "coupling/grid/spherical.hpp"

namespace finecast::coupling {
namespace {

using sphere::Vec3;

constexpr int kRing = kIconRing;
constexpr int32_t kNone = kNoEntity;

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
  const IconMeshTables global_tables(global);
  std::optional<LimitedAreaCut> cut;
  if (request.region) {
    const std::vector<char> in = region_cells(global, global_tables, *request.region);
    if (std::count(in.begin(), in.end(), 1) < 2)
      throw ConfigError("ICON grid file '" + path + "': the region holds no " + name +
                        " cells whose centres lie in it");
    cut.emplace(cut_limited_area(global, global_tables, in, request.boundary_depth));
  }
  std::optional<IconMeshTables> cut_tables;
  if (cut) cut_tables.emplace(cut->mesh);
  const IcosahedralMesh& mesh = cut ? cut->mesh : global;
  const IconMeshTables& t = cut ? *cut_tables : global_tables;
  const IconMeshHierarchy h = cut ? cut->hierarchy : global_mesh_hierarchy(global, global_tables);
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
    const Vec3 c2 =
        t.edge_cells[e][1] != kNone ? t.cell_centre[t.edge_cells[e][1]] : sphere::mirrored(c1, t.edge_centre[e]);
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
