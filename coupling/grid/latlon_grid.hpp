// SPDX-License-Identifier: BSD-3-Clause
// Regular and rotated-pole latitude-longitude grids (CF coordinates) and their k x k blocks.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "coupling/grid/patch_map.hpp"

namespace finecast::coupling {

/// A rectilinear grid as the file stores it: fine cell (row, col) has global index
/// row * nlon + col, rows along the file's latitude-like dimension in storage order.
struct LatLonGrid {
  std::string path;
  int64_t nlat = 0, nlon = 0;
  std::vector<double> lat, lon;              ///< degrees as in the file (rotated coordinates when rotated)
  bool rotated = false;                      ///< CF rotated_latitude_longitude grid mapping
  double pole_lat = 90, pole_lon = 0;        ///< grid_north_pole_latitude/longitude when rotated
  bool global_lon = false;                   ///< the columns cover the full circle (a duplicate column allowed)
  std::vector<double> cell_area;             ///< nlat*nlon, m^2 on the sphere, from the cell bounds
  std::vector<double> lat_edges, lon_edges;  ///< cell bounds, degrees: nlat+1 and nlon+1 values
  std::string lat_name, lon_name;            ///< coordinate variable names (for the writer)
};

/// Reads the CF coordinates of `var` (its last two dimensions are latitude-like, longitude-like,
/// each with a 1-D coordinate variable; a grid_mapping of rotated_latitude_longitude makes the
/// grid rotated). Cell bounds come from the coordinates' `bounds` variables when present, else
/// from midpoints. Throws IoError naming the file and variable and what was expected.
LatLonGrid read_latlon_grid(const std::string& path, const std::string& var);

/// The first variable of the file whose last two dimensions both have 1-D coordinate variables
/// (a field on a lat-lon grid); throws IoError naming the file when there is none.
std::string find_latlon_variable(const std::string& path);

/// A grid built in memory (tests, synthetic benchmarks): regular spacing, bounds at midpoints.
LatLonGrid make_latlon_grid(std::vector<double> lat, std::vector<double> lon);

/// Geographic (lon, lat) of fine cell (row, col), radians (un-rotated when the grid is rotated).
void latlon_cell_centre(const LatLonGrid& grid, int64_t row, int64_t col, double& lon, double& lat);

/// Patches of `block` x `block` cells, row-major inside each block, blocks numbered row-major.
/// Trailing rows/columns that do not fill a block are dropped with a log::warning saying how
/// many. Neighbour slots: previous row, next row, previous column, next column (storage order);
/// -1 at a regional edge; columns wrap when the kept columns span exactly 360 degrees.
PatchMap latlon_patch_map(const LatLonGrid& grid, int block);

}  // namespace finecast::coupling
