// SPDX-License-Identifier: BSD-3-Clause
// Constructors and cropping of output grid descriptions.
#include "coupling/io/nc_metadata.hpp"

#include <cmath>
#include <stdexcept>

#include "coupling/grid/icon_grid.hpp"
#include "coupling/grid/latlon_grid.hpp"
#include "coupling/grid/spherical.hpp"
#include "coupling/io/field_reader.hpp"

namespace finecast::coupling {

OutputGrid OutputGrid::icon(std::vector<double> clon, std::vector<double> clat) {
  if (clon.size() != clat.size())
    throw std::invalid_argument("OutputGrid::icon: clon has " + std::to_string(clon.size()) + " values, clat " +
                                std::to_string(clat.size()));
  OutputGrid g;
  g.kind = Kind::kIcon;
  g.clon = std::move(clon);
  g.clat = std::move(clat);
  return g;
}

OutputGrid OutputGrid::of(const IconGrid& grid) {
  OutputGrid g = icon(grid.clon, grid.clat);
  g.clon_bnds.resize(3 * grid.clon.size());
  g.clat_bnds.resize(3 * grid.clon.size());
  for (size_t c = 0; c < grid.cell_vertices.size(); ++c)
    for (int k = 0; k < 3; ++k) {
      const int32_t v = grid.cell_vertices[c][k];
      g.clon_bnds[3 * c + k] = grid.vlon[v];
      g.clat_bnds[3 * c + k] = grid.vlat[v];
    }
  g.uuid_of_hgrid = grid.uuid_of_hgrid;
  g.number_of_grid_used = grid.number_of_grid_used;
  g.grid_file = grid.path;
  return g;
}

namespace {
/// [n][2] CF bounds from n+1 cell edges.
std::vector<double> bounds_from_edges(const std::vector<double>& edges) {
  std::vector<double> b;
  for (size_t i = 0; i + 1 < edges.size(); ++i) b.insert(b.end(), {edges[i], edges[i + 1]});
  return b;
}
}  // namespace

OutputGrid OutputGrid::of(const LatLonGrid& grid, const std::string& var) {
  OutputGrid g =
      grid.path.rfind("synthetic:", 0) == 0 ? latlon(grid.lat, grid.lon) : FieldReader(grid.path, var).output_grid();
  g.y.bounds = bounds_from_edges(grid.lat_edges);
  g.x.bounds = bounds_from_edges(grid.lon_edges);
  g.grid_file = grid.path;
  if (grid.rotated) {
    g.lat_2d.resize(static_cast<size_t>(grid.nlat * grid.nlon));
    g.lon_2d.resize(g.lat_2d.size());
    for (int64_t r = 0; r < grid.nlat; ++r)
      for (int64_t c = 0; c < grid.nlon; ++c) {
        double lon = 0, lat = 0;
        latlon_cell_centre(grid, r, c, lon, lat);
        g.lat_2d[r * grid.nlon + c] = lat / sphere::kDeg;
        g.lon_2d[r * grid.nlon + c] = lon / sphere::kDeg;
      }
  }
  return g;
}

OutputGrid OutputGrid::latlon(std::vector<double> lat_deg, std::vector<double> lon_deg) {
  OutputGrid g;
  g.kind = Kind::kLatLon;
  g.y = CoordVar{"lat",
                 std::move(lat_deg),
                 {{"units", "degrees_north"}, {"standard_name", "latitude"}, {"long_name", "latitude"}, {"axis", "Y"}},
                 {},
                 {}};
  g.x = CoordVar{"lon",
                 std::move(lon_deg),
                 {{"units", "degrees_east"}, {"standard_name", "longitude"}, {"long_name", "longitude"}, {"axis", "X"}},
                 {},
                 {}};
  return g;
}

OutputGrid OutputGrid::cropped(int64_t y0, int64_t ny, int64_t x0, int64_t nx) const {
  if (kind != Kind::kLatLon) throw std::invalid_argument("OutputGrid::cropped: only lat-lon grids can be cropped");
  const auto sy = static_cast<int64_t>(y.values.size()), sx = static_cast<int64_t>(x.values.size());
  if (y0 < 0 || ny < 1 || y0 + ny > sy || x0 < 0 || nx < 1 || x0 + nx > sx)
    throw std::invalid_argument("OutputGrid::cropped: window rows " + std::to_string(y0) + "+" + std::to_string(ny) +
                                ", columns " + std::to_string(x0) + "+" + std::to_string(nx) + " is outside the " +
                                std::to_string(sy) + " x " + std::to_string(sx) + " grid");
  OutputGrid g = *this;
  g.y.values.assign(y.values.begin() + y0, y.values.begin() + y0 + ny);
  g.x.values.assign(x.values.begin() + x0, x.values.begin() + x0 + nx);
  if (!y.bounds.empty()) g.y.bounds.assign(y.bounds.begin() + 2 * y0, y.bounds.begin() + 2 * (y0 + ny));
  if (!x.bounds.empty()) g.x.bounds.assign(x.bounds.begin() + 2 * x0, x.bounds.begin() + 2 * (x0 + nx));
  if (!lat_2d.empty()) {
    g.lat_2d.clear();
    g.lon_2d.clear();
    for (int64_t r = y0; r < y0 + ny; ++r) {
      g.lat_2d.insert(g.lat_2d.end(), lat_2d.begin() + r * sx + x0, lat_2d.begin() + r * sx + x0 + nx);
      g.lon_2d.insert(g.lon_2d.end(), lon_2d.begin() + r * sx + x0, lon_2d.begin() + r * sx + x0 + nx);
    }
  }
  return g;
}

}  // namespace finecast::coupling
