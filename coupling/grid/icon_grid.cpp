// SPDX-License-Identifier: BSD-3-Clause
// Reading ICON grid files: centres, de-duplicated vertices, edge neighbours, areas, parents.
#include "coupling/grid/icon_grid.hpp"

#include <netcdf.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <unordered_map>

#include "coupling/error.hpp"
#include "coupling/grid/edge_neighbours.hpp"
#include "coupling/grid/spherical.hpp"
#include "coupling/io/nc_file.hpp"

namespace finecast::coupling {
namespace {

int find_var(int nc, const char* name) {
  int id = -1;
  return nc_inq_varid(nc, name, &id) == NC_NOERR ? id : -1;
}

std::vector<size_t> var_shape(int nc, int var, const std::string& ctx) {
  int ndims = 0;
  CHECK_NC(nc_inq_varndims(nc, var, &ndims), ctx);
  std::vector<int> dims(ndims);
  CHECK_NC(nc_inq_vardimid(nc, var, dims.data()), ctx);
  std::vector<size_t> shape(ndims);
  for (int i = 0; i < ndims; ++i) CHECK_NC(nc_inq_dimlen(nc, dims[i], &shape[i]), ctx);
  return shape;
}

std::string text_attribute(int nc, int var, const char* name) {
  size_t len = 0;
  if (nc_inq_attlen(nc, var, name, &len) != NC_NOERR) return {};
  std::string s(len, '\0');
  if (nc_get_att_text(nc, var, name, s.data()) != NC_NOERR) return {};
  while (!s.empty() && s.back() == '\0') s.pop_back();
  return s;
}

/// Reads a whole variable of `expected` values as doubles (radians when `angle` and the units
/// say degrees).
std::vector<double> read_doubles(int nc, const std::string& path, const char* name, size_t expected, bool angle) {
  const std::string ctx = "ICON grid file '" + path + "', variable '" + name + "'";
  const int var = find_var(nc, name);
  if (var < 0) throw IoError(ctx + ": missing");
  size_t total = 1;
  for (size_t n : var_shape(nc, var, ctx)) total *= n;
  if (total != expected)
    throw IoError(ctx + ": has " + std::to_string(total) + " values, expected " + std::to_string(expected));
  std::vector<double> v(total);
  CHECK_NC(nc_get_var_double(nc, var, v.data()), ctx);
  if (angle && text_attribute(nc, var, "units").find("degree") != std::string::npos)
    for (double& x : v) x *= sphere::kDeg;
  return v;
}

/// Longitudes finite and latitudes in [-pi/2, pi/2] (radians): a damaged grid file refused with
/// the variable and index, instead of cells at impossible places.
void check_lonlat(const std::string& path, const char* lon_name, const std::vector<double>& lon, const char* lat_name,
                  const std::vector<double>& lat) {
  constexpr double kHalfPi = 1.5707963267948966 * (1 + 1e-12);
  for (size_t i = 0; i < lon.size(); ++i) {
    if (!std::isfinite(lon[i]))
      throw IoError("ICON grid file '" + path + "', variable '" + lon_name + "': value " + std::to_string(lon[i]) +
                    " at index " + std::to_string(i) + ", expected a finite longitude");
    if (!(std::fabs(lat[i]) <= kHalfPi))
      throw IoError("ICON grid file '" + path + "', variable '" + lat_name + "': value " +
                    std::to_string(lat[i] / sphere::kDeg) + " degrees at index " + std::to_string(i) +
                    ", expected a latitude in [-90, 90]");
  }
}

std::vector<int32_t> read_ints(int nc, const std::string& path, const char* name, size_t expected) {
  const std::string ctx = "ICON grid file '" + path + "', variable '" + name + "'";
  const int var = find_var(nc, name);
  size_t total = 1;
  for (size_t n : var_shape(nc, var, ctx)) total *= n;
  if (total != expected)
    throw IoError(ctx + ": has " + std::to_string(total) + " values, expected " + std::to_string(expected));
  std::vector<int32_t> v(total);
  CHECK_NC(nc_get_var_int(nc, var, v.data()), ctx);
  return v;
}

/// Merges points closer than a small chord tolerance. Grid files write a shared vertex once per
/// cell, so copies of one vertex agree to rounding only; bucketed hashing keeps this linear.
class VertexMerger {
 public:
  explicit VertexMerger(size_t reserve) { buckets_.reserve(reserve); }

  int32_t add(const sphere::Vec3& p) {
    int64_t key[3];
    int64_t lo[3], hi[3];
    for (int d = 0; d < 3; ++d) {
      const double s = p[d] / kBucket;
      key[d] = static_cast<int64_t>(std::floor(s));
      const double frac = s - static_cast<double>(key[d]);
      lo[d] = frac < kTol / kBucket ? key[d] - 1 : key[d];
      hi[d] = frac > 1.0 - kTol / kBucket ? key[d] + 1 : key[d];
    }
    for (int64_t x = lo[0]; x <= hi[0]; ++x)
      for (int64_t y = lo[1]; y <= hi[1]; ++y)
        for (int64_t z = lo[2]; z <= hi[2]; ++z) {
          auto it = buckets_.find(hash(x, y, z));
          if (it == buckets_.end()) continue;
          for (int32_t id : it->second) {
            const sphere::Vec3& q = points_[id];
            const double dx = p[0] - q[0], dy = p[1] - q[1], dz = p[2] - q[2];
            if (dx * dx + dy * dy + dz * dz < kTol * kTol) return id;
          }
        }
    const auto id = static_cast<int32_t>(points_.size());
    points_.push_back(p);
    buckets_[hash(key[0], key[1], key[2])].push_back(id);
    return id;
  }
  const std::vector<sphere::Vec3>& points() const { return points_; }

 private:
  // 1e-6 of the radius is about 6 m: far below any grid spacing, far above rounding.
  static constexpr double kBucket = 1e-6;
  static constexpr double kTol = 1e-8;
  static uint64_t hash(int64_t x, int64_t y, int64_t z) {
    return static_cast<uint64_t>(x) * 73856093ULL ^ static_cast<uint64_t>(y) * 19349663ULL ^
           static_cast<uint64_t>(z) * 83492791ULL;
  }
  std::vector<sphere::Vec3> points_;
  std::unordered_map<uint64_t, std::vector<int32_t>> buckets_;
};

}  // namespace

void complete_icon_grid(IconGrid& g) {
  const int64_t n = g.n_cells;
  if (g.cell_neighbours.empty())
    g.cell_neighbours = edge_neighbours(g.cell_vertices, g.n_vertices, "ICON grid '" + g.path + "'");
  if (g.cell_area.empty()) {
    g.cell_area.resize(n);
    for (int64_t c = 0; c < n; ++c) {
      sphere::Vec3 p[3];
      for (int k = 0; k < 3; ++k) {
        const int32_t v = g.cell_vertices[c][k];
        p[k] = sphere::to_xyz(g.vlon[v], g.vlat[v]);
      }
      g.cell_area[c] = sphere::triangle_area(p[0], p[1], p[2]) * sphere::kEarthRadius * sphere::kEarthRadius;
    }
  }
}

IconGrid read_icon_grid(const std::string& path) {
  NcReadFile file(path, "ICON grid file");
  const int nc = file.id;
  IconGrid g;
  g.path = path;
  // The grid's identity, which ICON's output and CDO use to find the grid again.
  size_t len = 0;
  nc_type type = NC_NAT;
  if (nc_inq_att(nc, NC_GLOBAL, "uuidOfHGrid", &type, &len) == NC_NOERR && type == NC_CHAR) {
    g.uuid_of_hgrid.assign(len, '\0');
    CHECK_NC(nc_get_att_text(nc, NC_GLOBAL, "uuidOfHGrid", g.uuid_of_hgrid.data()),
             "ICON grid file '" + path + "', attribute uuidOfHGrid");
    while (!g.uuid_of_hgrid.empty() && g.uuid_of_hgrid.back() == '\0') g.uuid_of_hgrid.pop_back();
  }
  auto int_attribute = [&](const char* name, int& value) {
    int v = -1;
    if (nc_inq_att(nc, NC_GLOBAL, name, &type, &len) == NC_NOERR && len == 1 && type != NC_CHAR &&
        nc_get_att_int(nc, NC_GLOBAL, name, &v) == NC_NOERR)
      value = v;
  };
  int_attribute("number_of_grid_used", g.number_of_grid_used);
  int_attribute("grid_root", g.grid_root);
  int_attribute("grid_level", g.grid_level);
  if (g.grid_root == 0 || g.grid_root < -1 || g.grid_level < -1)
    throw IoError("ICON grid file '" + path + "': global attributes grid_root " + std::to_string(g.grid_root) +
                  " and grid_level " + std::to_string(g.grid_level) +
                  ", expected a positive root and a level >= 0 (R<root>B<level>)");

  const int clon_id = find_var(nc, "clon");
  if (clon_id < 0 || find_var(nc, "clat") < 0)
    throw IoError("ICON grid file '" + path +
                  "': no 'clon'/'clat' variables (cell centres); is this an ICON grid file?");
  const auto shape = var_shape(nc, clon_id, "ICON grid file '" + path + "', variable 'clon'");
  if (shape.size() != 1) throw IoError("ICON grid file '" + path + "', variable 'clon': expected 1 dimension (cells)");
  g.n_cells = static_cast<int64_t>(shape[0]);
  const size_t n = shape[0];
  g.clon = read_doubles(nc, path, "clon", n, true);
  g.clat = read_doubles(nc, path, "clat", n, true);
  check_lonlat(path, "clon", g.clon, "clat", g.clat);

  g.cell_vertices.resize(n);
  if (find_var(nc, "vertex_of_cell") >= 0 && find_var(nc, "vlon") >= 0 && find_var(nc, "vlat") >= 0) {
    // ICON writes Fortran (nv, cell) arrays with 1-based indices.
    const int vlon_id = find_var(nc, "vlon");
    const auto vshape = var_shape(nc, vlon_id, "ICON grid file '" + path + "', variable 'vlon'");
    const size_t nv = vshape.empty() ? 0 : vshape[0];
    const auto vlon = read_doubles(nc, path, "vlon", nv, true);
    const auto vlat = read_doubles(nc, path, "vlat", nv, true);
    check_lonlat(path, "vlon", vlon, "vlat", vlat);
    VertexMerger merger(nv);
    std::vector<int32_t> unique(nv);
    for (size_t v = 0; v < nv; ++v) unique[v] = merger.add(sphere::to_xyz(vlon[v], vlat[v]));
    const auto voc = read_ints(nc, path, "vertex_of_cell", 3 * n);
    for (size_t c = 0; c < n; ++c)
      for (int k = 0; k < 3; ++k) {
        const int32_t v = voc[k * n + c] - 1;
        if (v < 0 || static_cast<size_t>(v) >= nv)
          throw IoError("ICON grid file '" + path + "', variable 'vertex_of_cell': cell " + std::to_string(c + 1) +
                        " names vertex " + std::to_string(v + 1) + ", expected 1.." + std::to_string(nv));
        g.cell_vertices[c][k] = unique[v];
      }
    for (const auto& p : merger.points()) {
      double lon, lat;
      sphere::to_lonlat(p, lon, lat);
      g.vlon.push_back(lon);
      g.vlat.push_back(lat);
    }
  } else if (find_var(nc, "clon_vertices") >= 0 && find_var(nc, "clat_vertices") >= 0) {
    // CDI-style files: (cell, nv) corner coordinates, one copy of a vertex per cell.
    const auto cx = read_doubles(nc, path, "clon_vertices", 3 * n, true);
    const auto cy = read_doubles(nc, path, "clat_vertices", 3 * n, true);
    check_lonlat(path, "clon_vertices", cx, "clat_vertices", cy);
    VertexMerger merger(3 * n);
    for (size_t c = 0; c < n; ++c)
      for (int k = 0; k < 3; ++k) g.cell_vertices[c][k] = merger.add(sphere::to_xyz(cx[3 * c + k], cy[3 * c + k]));
    for (const auto& p : merger.points()) {
      double lon, lat;
      sphere::to_lonlat(p, lon, lat);
      g.vlon.push_back(lon);
      g.vlat.push_back(lat);
    }
  } else {
    throw IoError("ICON grid file '" + path +
                  "': no cell vertices; expected 'vertex_of_cell' with 'vlon'/'vlat', or "
                  "'clon_vertices'/'clat_vertices'");
  }
  g.n_vertices = static_cast<int64_t>(g.vlon.size());
  for (size_t c = 0; c < n; ++c) {
    const auto& v = g.cell_vertices[c];
    if (v[0] == v[1] || v[1] == v[2] || v[0] == v[2])
      throw IoError("ICON grid file '" + path + "': cell " + std::to_string(c) + " has two coinciding vertices");
  }

  if (find_var(nc, "neighbor_cell_index") >= 0) {
    const auto nb = read_ints(nc, path, "neighbor_cell_index", 3 * n);
    g.cell_neighbours.resize(n);
    for (size_t c = 0; c < n; ++c)
      for (int k = 0; k < 3; ++k) {
        const int32_t v = nb[k * n + c];
        g.cell_neighbours[c][k] = v >= 1 && static_cast<size_t>(v) <= n ? v - 1 : -1;
      }
  }
  if (find_var(nc, "cell_area") >= 0) {
    g.cell_area = read_doubles(nc, path, "cell_area", n, false);
    for (size_t c = 0; c < n; ++c)
      if (!(g.cell_area[c] > 0.0))
        throw IoError("ICON grid file '" + path + "', variable 'cell_area': cell " + std::to_string(c) + " has area " +
                      std::to_string(g.cell_area[c]) + ", expected > 0");
  }
  if (find_var(nc, "parent_cell_index") >= 0) {
    const auto parent = read_ints(nc, path, "parent_cell_index", n);
    g.parent_cell.resize(n);
    for (size_t c = 0; c < n; ++c) g.parent_cell[c] = parent[c] >= 1 ? parent[c] - 1 : -1;
  }
  if (find_var(nc, "refin_c_ctrl") >= 0) {
    g.refin_c_ctrl = read_ints(nc, path, "refin_c_ctrl", n);
    // All 0: a global grid without nests, the same as no flags.
    if (std::all_of(g.refin_c_ctrl.begin(), g.refin_c_ctrl.end(), [](int32_t f) { return f == 0; }))
      g.refin_c_ctrl.clear();
  }
  complete_icon_grid(g);
  return g;
}

}  // namespace finecast::coupling
