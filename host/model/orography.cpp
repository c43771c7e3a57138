// SPDX-License-Identifier: BSD-3-Clause
// Cell means of a lon-lat relief field by point-in-spherical-triangle binning.
#include "host/model/orography.hpp"

#include <fmt/format.h>
#include <netcdf.h>

#include <algorithm>
#include <cmath>

#include "common/log.hpp"
#include "coupling/error.hpp"
#include "coupling/grid/spherical.hpp"
#include "coupling/io/nc_file.hpp"
#include "coupling/io/plausibility.hpp"

namespace finecast::host {
namespace {

namespace sphere = coupling::sphere;
using sphere::Vec3;

// An evenly spaced coordinate axis read from its 1-D variable.
struct Axis {
  size_t n = 0;
  double first = 0, step = 0;  // degrees
};

std::string text_attribute(int nc, int var, const char* name) {
  size_t len = 0;
  nc_type type = NC_NAT;
  if (nc_inq_att(nc, var, name, &type, &len) != NC_NOERR || type != NC_CHAR) return "";
  std::string s(len, '\0');
  if (nc_get_att_text(nc, var, name, s.data()) != NC_NOERR) return "";
  while (!s.empty() && s.back() == '\0') s.pop_back();
  return s;
}

/// Relief values outside the plausible range of the variable's units and standard_name (or
/// its override) become `fill`, so that the averaging skips them like missing points; one
/// warning says how many and where the first was.
void mask_implausible(std::vector<float>& relief, float fill, int nc, int varid, const std::string& variable,
                      size_t row0, size_t nx, const std::string& context) {
  const coupling::PlausibleRange* o = coupling::plausible_override(variable);
  const coupling::PlausibleRange range =
      o ? *o
        : coupling::plausible_range(text_attribute(nc, varid, "units"), text_attribute(nc, varid, "standard_name"));
  int64_t dropped = 0;
  size_t first = 0;
  float first_value = 0;
  for (size_t k = 0; k < relief.size(); ++k)
    if (relief[k] != fill && std::isfinite(relief[k]) && !range.contains(relief[k])) {
      if (dropped++ == 0) first = k, first_value = relief[k];
      relief[k] = fill;
    }
  if (dropped > 0)
    log::warning(context + ": " + std::to_string(dropped) + " value(s) outside the plausible range " + range.text() +
                 " (" + range.source + ") treated as missing, e.g. row " + std::to_string(row0 + first / nx) +
                 ", column " + std::to_string(first % nx) + ": " + fmt::format("{:g}", first_value));
}

Axis read_axis(int nc, int dimid, const std::string& context) {
  char name[NC_MAX_NAME + 1];
  size_t n = 0;
  CHECK_NC(nc_inq_dim(nc, dimid, name, &n), context);
  int varid = -1;
  CHECK_NC(nc_inq_varid(nc, name, &varid), context + ": coordinate variable " + name);
  std::vector<double> v(n);
  CHECK_NC(nc_get_var_double(nc, varid, v.data()), context + ": coordinate variable " + name);
  if (n < 2) throw IoError(context + ": coordinate " + name + " has fewer than 2 values");
  Axis a;
  a.n = n;
  a.first = v.front();
  a.step = (v.back() - v.front()) / static_cast<double>(n - 1);
  if (!(std::fabs(a.step) > 0)) throw IoError(context + ": coordinate " + name + " is not increasing");
  return a;
}

// The three inward edge normals of a cell: a point p is inside when all dot(n, p) >= 0.
struct Triangle {
  Vec3 normal[3];
  Vec3 centre;
};

Triangle triangle(const coupling::IconGrid& g, int cell) {
  Vec3 v[3];
  for (int k = 0; k < 3; ++k) {
    const int32_t id = g.cell_vertices[cell][k];
    v[k] = sphere::to_xyz(g.vlon[id], g.vlat[id]);
  }
  Triangle t;
  t.centre =
      sphere::normalised({v[0][0] + v[1][0] + v[2][0], v[0][1] + v[1][1] + v[2][1], v[0][2] + v[1][2] + v[2][2]});
  for (int k = 0; k < 3; ++k) {
    Vec3 n = sphere::cross(v[k], v[(k + 1) % 3]);
    if (sphere::dot(n, t.centre) < 0) n = {-n[0], -n[1], -n[2]};
    t.normal[k] = n;
  }
  return t;
}

bool inside(const Triangle& t, const Vec3& p) {
  return sphere::dot(t.normal[0], p) >= 0 && sphere::dot(t.normal[1], p) >= 0 && sphere::dot(t.normal[2], p) >= 0;
}

// Latitude/longitude box (degrees; lon relative to nothing, may exceed [0, 360)) around a cell.
struct Box {
  double lat0, lat1, lon0, lon1;
  bool all_lon;
};

Box bounding_box(const coupling::IconGrid& g, int cell, const Triangle& t) {
  constexpr double kMarginDeg = 1.0;  // covers great-circle edges bulging past their end points
  double clon = 0, clat = 0;
  sphere::to_lonlat(t.centre, clon, clat);
  Box b{90, -90, 0, 0, false};
  double dlo = 0, dhi = 0;
  for (int k = 0; k < 3; ++k) {
    const int32_t id = g.cell_vertices[cell][k];
    b.lat0 = std::min(b.lat0, g.vlat[id] / sphere::kDeg);
    b.lat1 = std::max(b.lat1, g.vlat[id] / sphere::kDeg);
    double d = std::remainder(g.vlon[id] - clon, 2 * sphere::kPi) / sphere::kDeg;
    dlo = std::min(dlo, d);
    dhi = std::max(dhi, d);
  }
  b.lat0 = std::max(-90.0, b.lat0 - kMarginDeg);
  b.lat1 = std::min(90.0, b.lat1 + kMarginDeg);
  const bool north_pole = inside(t, {0, 0, 1}), south_pole = inside(t, {0, 0, -1});
  if (north_pole) b.lat1 = 90;
  if (south_pole) b.lat0 = -90;
  const double max_abs_lat = std::max(std::fabs(b.lat0), std::fabs(b.lat1));
  b.all_lon = north_pole || south_pole || max_abs_lat > 88.0;
  const double lon_margin = kMarginDeg / std::max(std::cos(max_abs_lat * sphere::kDeg), 0.05);
  b.lon0 = clon / sphere::kDeg + dlo - lon_margin;
  b.lon1 = clon / sphere::kDeg + dhi + lon_margin;
  return b;
}

}  // namespace

CellOrography average_orography(const std::string& relief_path, const std::string& variable,
                                const coupling::IconGrid& grid, const std::vector<int>& cells) {
  const std::string context = relief_path + ": " + variable;
  if (grid.cell_vertices.size() != static_cast<size_t>(grid.n_cells))
    throw IoError(grid.path + ": the grid has no cell vertices, needed to average " + context);
  // Damaged or truncated classic files are refused as every NetCDF input is.
  const coupling::NcReadFile file(relief_path, "relief file");
  const int nc = file.id;
  int varid = -1, ndims = 0;
  CHECK_NC(nc_inq_varid(nc, variable.c_str(), &varid), context);
  CHECK_NC(nc_inq_varndims(nc, varid, &ndims), context);
  if (ndims != 2) throw IoError(context + ": expected 2 dimensions (lat, lon), got " + std::to_string(ndims));
  int dims[2];
  CHECK_NC(nc_inq_vardimid(nc, varid, dims), context);
  const Axis lat_axis = read_axis(nc, dims[0], context);
  const Axis lon_axis = read_axis(nc, dims[1], context);
  // Some files repeat the first longitude at the end (etopo20: 1081 columns); skip that column.
  // Files round their coordinates (etopo5 ends at 359.92, not 359.9167): the spacing is taken
  // as exactly 360 / columns once the columns are known to cover the circle.
  Axis lon_grid = lon_axis;
  const double step_abs = std::fabs(lon_axis.step);
  size_t nx = lon_axis.n;
  if (std::fabs(step_abs * (lon_axis.n - 1) - 360.0) < 0.5 * step_abs)
    nx = lon_axis.n - 1;
  else if (std::fabs(step_abs * lon_axis.n - 360.0) > 0.5 * step_abs)
    throw IoError(context + ": longitudes do not cover 360 degrees evenly");
  lon_grid.step = std::copysign(360.0 / static_cast<double>(nx), lon_axis.step);
  const size_t nx_file = lon_axis.n;
  float fill = -1e34f;
  if (nc_get_att_float(nc, varid, "_FillValue", &fill) != NC_NOERR) fill = -1e34f;

  // The cells' boxes decide which rows to read.
  std::vector<Triangle> tris(cells.size());
  std::vector<Box> boxes(cells.size());
  auto row_of = [&](double lat) { return (lat - lat_axis.first) / lat_axis.step; };
  long row_lo = static_cast<long>(lat_axis.n), row_hi = -1;
  for (size_t i = 0; i < cells.size(); ++i) {
    if (cells[i] < 0 || cells[i] >= grid.n_cells)
      throw InternalError("average_orography: cell " + std::to_string(cells[i]) + " outside the grid");
    tris[i] = triangle(grid, cells[i]);
    boxes[i] = bounding_box(grid, cells[i], tris[i]);
    const double r0 = row_of(boxes[i].lat0), r1 = row_of(boxes[i].lat1);
    row_lo = std::min(row_lo, static_cast<long>(std::floor(std::min(r0, r1))));
    row_hi = std::max(row_hi, static_cast<long>(std::ceil(std::max(r0, r1))));
  }
  CellOrography out;
  out.height.assign(cells.size(), 0.0);
  out.land_fraction.assign(cells.size(), 0.0);
  if (cells.empty()) return out;
  row_lo = std::max(row_lo, 0L);
  row_hi = std::min(row_hi, static_cast<long>(lat_axis.n) - 1);
  const size_t nrows = static_cast<size_t>(row_hi - row_lo + 1);
  std::vector<float> relief(nrows * nx_file);
  const size_t start[2] = {static_cast<size_t>(row_lo), 0}, count[2] = {nrows, nx_file};
  CHECK_NC(nc_get_vara_float(nc, varid, start, count, relief.data()), context);
  mask_implausible(relief, fill, nc, varid, variable, static_cast<size_t>(row_lo), nx_file, context);

  std::vector<double> row_sin(nrows), row_cos(nrows), col_sin(nx), col_cos(nx);
  for (size_t r = 0; r < nrows; ++r) {
    const double lat = (lat_axis.first + lat_axis.step * (row_lo + static_cast<long>(r))) * sphere::kDeg;
    row_sin[r] = std::sin(lat);
    row_cos[r] = std::cos(lat);
  }
  for (size_t c = 0; c < nx; ++c) {
    const double lon = (lon_grid.first + lon_grid.step * c) * sphere::kDeg;
    col_sin[c] = std::sin(lon);
    col_cos[c] = std::cos(lon);
  }
  const long nxl = static_cast<long>(nx);
  for (size_t i = 0; i < cells.size(); ++i) {
    const Box& b = boxes[i];
    long r0 = static_cast<long>(std::floor(std::min(row_of(b.lat0), row_of(b.lat1))));
    long r1 = static_cast<long>(std::ceil(std::max(row_of(b.lat0), row_of(b.lat1))));
    r0 = std::max(r0, row_lo);
    r1 = std::min(r1, row_hi);
    long c0 = 0, c1 = nxl - 1;
    if (!b.all_lon) {
      const double a0 = (b.lon0 - lon_grid.first) / lon_grid.step, a1 = (b.lon1 - lon_grid.first) / lon_grid.step;
      c0 = static_cast<long>(std::floor(std::min(a0, a1)));
      c1 = static_cast<long>(std::ceil(std::max(a0, a1)));
      if (c1 - c0 >= nxl) c1 = c0 + nxl - 1;
    }
    double w_sum = 0, h_sum = 0, land = 0;
    for (long r = r0; r <= r1; ++r) {
      const size_t rr = static_cast<size_t>(r - row_lo);
      for (long c = c0; c <= c1; ++c) {
        const size_t cc = static_cast<size_t>(((c % nxl) + nxl) % nxl);
        const Vec3 p{row_cos[rr] * col_cos[cc], row_cos[rr] * col_sin[cc], row_sin[rr]};
        if (!inside(tris[i], p)) continue;
        const float z = relief[rr * nx_file + cc];
        if (z == fill || !std::isfinite(z)) continue;
        const double w = row_cos[rr];
        w_sum += w;
        h_sum += w * std::max(0.0, static_cast<double>(z));
        if (z > 0) land += w;
      }
    }
    if (w_sum > 0) {
      out.height[i] = h_sum / w_sum;
      out.land_fraction[i] = land / w_sum;
    } else {
      // A cell smaller than the relief spacing: the nearest relief point stands for it.
      double lon = 0, lat = 0;
      sphere::to_lonlat(tris[i].centre, lon, lat);
      long r = std::lround(row_of(lat / sphere::kDeg));
      r = std::clamp(r, row_lo, row_hi);
      long c = std::lround((lon / sphere::kDeg - lon_grid.first) / lon_grid.step);
      const float z = relief[static_cast<size_t>(r - row_lo) * nx_file + static_cast<size_t>(((c % nxl) + nxl) % nxl)];
      out.height[i] = z == fill ? 0.0 : std::max(0.0, static_cast<double>(z));
      out.land_fraction[i] = z > 0 && z != fill ? 1.0 : 0.0;
    }
  }
  return out;
}

}  // namespace finecast::host
