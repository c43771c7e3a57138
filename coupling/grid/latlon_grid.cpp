// SPDX-License-Identifier: BSD-3-Clause
// CF latitude-longitude grids (regular and rotated-pole): reading, areas, k x k block patches.
#include "coupling/grid/latlon_grid.hpp"

#include <netcdf.h>

#include <algorithm>
#include <cmath>

#include "coupling/error.hpp"
#include "coupling/io/nc_file.hpp"
#include "coupling/grid/spherical.hpp"
#include "common/log.hpp"

namespace finecast::coupling {
namespace {

std::string text_attribute(int nc, int var, const char* name) {
  size_t len = 0;
  nc_type type;
  if (nc_inq_att(nc, var, name, &type, &len) != NC_NOERR || type != NC_CHAR) return {};
  std::string s(len, '\0');
  if (nc_get_att_text(nc, var, name, s.data()) != NC_NOERR) return {};
  while (!s.empty() && s.back() == '\0') s.pop_back();
  return s;
}

/// Edges of cells centred at `x`: halfway between centres, the ends mirrored.
std::vector<double> midpoint_edges(const std::vector<double>& x) {
  const size_t n = x.size();
  std::vector<double> e(n + 1);
  if (n == 1) {
    e[0] = x[0] - 0.5;
    e[1] = x[0] + 0.5;
    return e;
  }
  for (size_t i = 1; i < n; ++i) e[i] = 0.5 * (x[i - 1] + x[i]);
  e[0] = x[0] - (e[1] - x[0]);
  e[n] = x[n - 1] + (x[n - 1] - e[n - 1]);
  return e;
}

/// Cell areas and the longitude wrap flag from cell edges (degrees).
void finish(LatLonGrid& g, std::vector<double> lat_edges, const std::vector<double>& lon_edges) {
  for (double& e : lat_edges) e = std::clamp(e, -90.0, 90.0);
  g.lat_edges = lat_edges;
  g.lon_edges = lon_edges;
  g.cell_area.resize(g.nlat * g.nlon);
  const double r2 = sphere::kEarthRadius * sphere::kEarthRadius;
  for (int64_t i = 0; i < g.nlat; ++i) {
    const double band = std::fabs(std::sin(lat_edges[i + 1] * sphere::kDeg) - std::sin(lat_edges[i] * sphere::kDeg));
    for (int64_t j = 0; j < g.nlon; ++j)
      g.cell_area[i * g.nlon + j] = r2 * band * std::fabs(lon_edges[j + 1] - lon_edges[j]) * sphere::kDeg;
  }
  if (g.nlon >= 2) {
    const double dlon = std::fabs(g.lon[g.nlon - 1] - g.lon[0]) / static_cast<double>(g.nlon - 1);
    const double span = dlon * static_cast<double>(g.nlon);
    // Also true for files that repeat the first column at the end (ferret's etopo).
    g.global_lon = span >= 360.0 - 0.5 * dlon && span <= 360.0 + 1.5 * dlon;
  }
}

std::vector<double> read_coordinate(int nc, const std::string& path, const std::string& var, int dim, std::string& name,
                                    std::vector<double>& edges) {
  char dim_name[NC_MAX_NAME + 1];
  size_t len = 0;
  CHECK_NC(nc_inq_dim(nc, dim, dim_name, &len), "'" + path + "', variable '" + var + "'");
  name = dim_name;
  int cv = -1;
  int ndims = 0;
  if (nc_inq_varid(nc, dim_name, &cv) != NC_NOERR || nc_inq_varndims(nc, cv, &ndims) != NC_NOERR || ndims != 1)
    throw IoError("'" + path + "', variable '" + var + "': dimension '" + name +
                  "' has no 1-D coordinate variable; expected CF latitude/longitude coordinates");
  const std::string ctx = "'" + path + "', coordinate variable '" + name + "'";
  std::vector<double> x(len);
  CHECK_NC(nc_get_var_double(nc, cv, x.data()), ctx);
  const std::string units = text_attribute(nc, cv, "units");
  const bool radians = units.find("radian") != std::string::npos;
  if (radians)
    for (double& v : x) v /= sphere::kDeg;
  for (size_t i = 1; i < len; ++i)
    if (!((x[i] > x[i - 1]) == (x[1] > x[0])) || x[i] == x[i - 1])
      throw IoError(ctx + ": values are not strictly monotonic (at index " + std::to_string(i) + ")");
  edges = midpoint_edges(x);
  const std::string bounds = text_attribute(nc, cv, "bounds");
  int bv = -1;
  if (!bounds.empty() && nc_inq_varid(nc, bounds.c_str(), &bv) == NC_NOERR) {
    std::vector<double> b(2 * len);
    int bd = 0;
    size_t blen = 0;
    if (nc_inq_varndims(nc, bv, &ndims) == NC_NOERR && ndims == 2) {
      int dims[2];
      CHECK_NC(nc_inq_vardimid(nc, bv, dims), ctx);
      CHECK_NC(nc_inq_dimlen(nc, dims[1], &blen), ctx);
      bd = dims[0];
      size_t n0 = 0;
      CHECK_NC(nc_inq_dimlen(nc, bd, &n0), ctx);
      if (blen == 2 && n0 == len) {
        CHECK_NC(nc_get_var_double(nc, bv, b.data()), "'" + path + "', bounds variable '" + bounds + "'");
        if (radians)
          for (double& v : b) v /= sphere::kDeg;
        // Bounds of cell i as [lower, upper] in the direction the coordinates run.
        for (size_t i = 0; i < len; ++i) edges[i] = b[2 * i];
        edges[len] = b[2 * len - 1];
      }
    }
  }
  return x;
}

}  // namespace

LatLonGrid read_latlon_grid(const std::string& path, const std::string& var) {
  NcReadFile file(path, "lat-lon grid file");
  const int nc = file.id;
  int vid = -1;
  if (nc_inq_varid(nc, var.c_str(), &vid) != NC_NOERR) throw IoError("'" + path + "': no variable '" + var + "'");
  int ndims = 0;
  CHECK_NC(nc_inq_varndims(nc, vid, &ndims), "'" + path + "', variable '" + var + "'");
  if (ndims < 2)
    throw IoError("'" + path + "', variable '" + var + "': has " + std::to_string(ndims) +
                  " dimensions, expected at least 2 (..., latitude, longitude)");
  std::vector<int> dims(ndims);
  CHECK_NC(nc_inq_vardimid(nc, vid, dims.data()), "'" + path + "', variable '" + var + "'");

  LatLonGrid g;
  g.path = path;
  std::vector<double> lat_edges, lon_edges;
  g.lat = read_coordinate(nc, path, var, dims[ndims - 2], g.lat_name, lat_edges);
  g.lon = read_coordinate(nc, path, var, dims[ndims - 1], g.lon_name, lon_edges);
  g.nlat = static_cast<int64_t>(g.lat.size());
  g.nlon = static_cast<int64_t>(g.lon.size());
  // Areas, neighbours and the output take the rows as latitudes in degrees: latitude 200 once
  // went through replay and downscale into the output.
  for (int64_t i = 0; i < g.nlat; ++i)
    if (!(std::fabs(g.lat[i]) <= 90.0))
      throw IoError("'" + path + "', variable '" + var + "': latitude coordinate '" + g.lat_name + "' is " +
                    std::to_string(g.lat[i]) + " at index " + std::to_string(i) + ", expected degrees in [-90, 90]");
  for (int64_t j = 0; j < g.nlon; ++j)
    if (!std::isfinite(g.lon[j]))
      throw IoError("'" + path + "', variable '" + var + "': longitude coordinate '" + g.lon_name + "' is " +
                    std::to_string(g.lon[j]) + " at index " + std::to_string(j) + ", expected a finite number");
  int lon_var = -1;
  nc_inq_varid(nc, g.lon_name.c_str(), &lon_var);
  const std::string lon_units = text_attribute(nc, lon_var, "units");
  const std::string lon_std = text_attribute(nc, lon_var, "standard_name");
  if (lon_units.find("north") != std::string::npos || lon_std == "latitude" || lon_std == "grid_latitude")
    throw IoError("'" + path + "', variable '" + var + "': its last dimension '" + g.lon_name +
                  "' is a latitude; expected dimensions (..., latitude, longitude)");

  const std::string mapping = text_attribute(nc, vid, "grid_mapping");
  if (!mapping.empty()) {
    int mv = -1;
    if (nc_inq_varid(nc, mapping.c_str(), &mv) != NC_NOERR)
      throw IoError("'" + path + "', variable '" + var + "': grid_mapping '" + mapping +
                    "' is not a variable of the file");
    const std::string kind = text_attribute(nc, mv, "grid_mapping_name");
    if (kind == "rotated_latitude_longitude") {
      g.rotated = true;
      const std::string ctx = "'" + path + "', grid mapping '" + mapping + "'";
      CHECK_NC(nc_get_att_double(nc, mv, "grid_north_pole_latitude", &g.pole_lat), ctx);
      CHECK_NC(nc_get_att_double(nc, mv, "grid_north_pole_longitude", &g.pole_lon), ctx);
      if (!(std::fabs(g.pole_lat) <= 90.0) || !std::isfinite(g.pole_lon))
        throw IoError(ctx + ": grid_north_pole_latitude " + std::to_string(g.pole_lat) + ", longitude " +
                      std::to_string(g.pole_lon) + ": expected a latitude in [-90, 90] and a finite longitude");
      double gamma = 0.0;
      if (nc_get_att_double(nc, mv, "north_pole_grid_longitude", &gamma) == NC_NOERR && gamma != 0.0)
        throw IoError(ctx + ": north_pole_grid_longitude = " + std::to_string(gamma) + " is not supported, expected 0");
    } else if (!kind.empty() && kind != "latitude_longitude") {
      throw IoError("'" + path + "', variable '" + var + "': grid mapping '" + kind +
                    "' is not supported, expected latitude_longitude or rotated_latitude_longitude");
    }
  }
  finish(g, std::move(lat_edges), lon_edges);
  return g;
}

std::string find_latlon_variable(const std::string& path) {
  NcReadFile file(path, "lat-lon grid file");
  int nvars = 0;
  CHECK_NC(nc_inq_nvars(file.id, &nvars), "'" + path + "'");
  auto is_coordinate = [&](int dim) {
    char name[NC_MAX_NAME + 1];
    int cv = -1, nd = 0;
    return nc_inq_dimname(file.id, dim, name) == NC_NOERR && nc_inq_varid(file.id, name, &cv) == NC_NOERR &&
           nc_inq_varndims(file.id, cv, &nd) == NC_NOERR && nd == 1;
  };
  for (int v = 0; v < nvars; ++v) {
    int nd = 0;
    CHECK_NC(nc_inq_varndims(file.id, v, &nd), "'" + path + "'");
    if (nd < 2) continue;
    std::vector<int> dims(nd);
    CHECK_NC(nc_inq_vardimid(file.id, v, dims.data()), "'" + path + "'");
    char name[NC_MAX_NAME + 1];
    CHECK_NC(nc_inq_varname(file.id, v, name), "'" + path + "'");
    // 2-D latitude/longitude arrays of rotated grids are coordinates, not fields.
    const std::string standard_name = text_attribute(file.id, v, "standard_name");
    if (standard_name == "latitude" || standard_name == "longitude") continue;
    if (is_coordinate(dims[nd - 2]) && is_coordinate(dims[nd - 1])) return name;
  }
  throw IoError("'" + path + "': no variable on a latitude-longitude grid (expected one whose " +
                "last two dimensions have 1-D coordinate variables)");
}

LatLonGrid make_latlon_grid(std::vector<double> lat, std::vector<double> lon) {
  LatLonGrid g;
  g.path = "synthetic:latlon";
  g.nlat = static_cast<int64_t>(lat.size());
  g.nlon = static_cast<int64_t>(lon.size());
  g.lat = std::move(lat);
  g.lon = std::move(lon);
  g.lat_name = "lat";
  g.lon_name = "lon";
  finish(g, midpoint_edges(g.lat), midpoint_edges(g.lon));
  return g;
}

void latlon_cell_centre(const LatLonGrid& g, int64_t row, int64_t col, double& lon, double& lat) {
  if (g.rotated) {
    sphere::unrotate(g.lon[col], g.lat[row], g.pole_lon, g.pole_lat, lon, lat);
    lon *= sphere::kDeg;
    lat *= sphere::kDeg;
  } else {
    lon = g.lon[col] * sphere::kDeg;
    lat = g.lat[row] * sphere::kDeg;
  }
}

PatchMap latlon_patch_map(const LatLonGrid& g, int block) {
  if (block < 1)
    throw GridError("lat-lon grid '" + g.path + "': block size " + std::to_string(block) + ", expected >= 1");
  const int64_t rows = g.nlat / block, cols = g.nlon / block;
  if (rows == 0 || cols == 0)
    throw GridError("lat-lon grid '" + g.path + "' (" + std::to_string(g.nlat) + " x " + std::to_string(g.nlon) +
                    ") is smaller than one " + std::to_string(block) + " x " + std::to_string(block) + " block");
  const int64_t drop_rows = g.nlat - rows * block, drop_cols = g.nlon - cols * block;
  if (drop_rows > 0 || drop_cols > 0)
    log::warning("lat-lon grid '" + g.path + "': " + std::to_string(g.nlat) + " x " + std::to_string(g.nlon) +
                 " is not a multiple of " + std::to_string(block) + "; dropped the last " + std::to_string(drop_rows) +
                 " rows and the last " + std::to_string(drop_cols) + " columns (" + std::to_string(rows) + " x " +
                 std::to_string(cols) + " blocks)");
  bool wrap = false;
  if (g.global_lon && g.nlon >= 2) {
    const double dlon = std::fabs(g.lon[g.nlon - 1] - g.lon[0]) / static_cast<double>(g.nlon - 1);
    wrap = std::fabs(static_cast<double>(cols * block) * dlon - 360.0) < 0.5 * dlon;
  }

  const int64_t P = static_cast<int64_t>(block) * block;
  PatchMap pm;
  pm.kind = PatchMap::Kind::kLatLonBlocks;
  pm.n_fine = g.nlat * g.nlon;
  pm.n_coarse = rows * cols;
  pm.patch_size = static_cast<int>(P);
  pm.n_neighbours = 4;
  pm.fine_of_patch.resize(pm.n_coarse * P);
  pm.fine_weight.resize(pm.n_coarse * P);
  pm.patch_area.resize(pm.n_coarse);
  pm.neighbours.resize(pm.n_coarse * 4);
  pm.coarse_lon.resize(pm.n_coarse);
  pm.coarse_lat.resize(pm.n_coarse);
  pm.block_rows = rows;
  pm.block_cols = cols;
  pm.block = block;
  pm.grid_columns = g.nlon;
  pm.wrap_columns = wrap;
  for (int64_t I = 0; I < rows; ++I)
    for (int64_t J = 0; J < cols; ++J) {
      const int64_t k = I * cols + J;
      double total = 0.0;
      sphere::Vec3 centre{0, 0, 0};
      for (int64_t a = 0; a < block; ++a)
        for (int64_t b = 0; b < block; ++b) {
          const int64_t row = I * block + a, col = J * block + b;
          const int64_t fine = row * g.nlon + col;
          pm.fine_of_patch[k * P + a * block + b] = fine;
          const double area = g.cell_area[fine];
          total += area;
          double lon, lat;
          latlon_cell_centre(g, row, col, lon, lat);
          const sphere::Vec3 x = sphere::to_xyz(lon, lat);
          for (int e = 0; e < 3; ++e) centre[e] += area * x[e];
        }
      for (int64_t s = 0; s < P; ++s) pm.fine_weight[k * P + s] = g.cell_area[pm.fine_of_patch[k * P + s]] / total;
      pm.patch_area[k] = total;
      sphere::to_lonlat(centre, pm.coarse_lon[k], pm.coarse_lat[k]);
      int64_t* nb = &pm.neighbours[k * 4];
      nb[0] = I > 0 ? k - cols : -1;
      nb[1] = I + 1 < rows ? k + cols : -1;
      nb[2] = J > 0 ? k - 1 : (wrap ? I * cols + cols - 1 : -1);
      nb[3] = J + 1 < cols ? k + 1 : (wrap ? I * cols : -1);
    }
  return pm;
}

}  // namespace finecast::coupling
