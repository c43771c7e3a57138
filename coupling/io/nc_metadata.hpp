// SPDX-License-Identifier: BSD-3-Clause
// The metadata carried from an input NetCDF field to finecast's output: attributes and grid.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace finecast::coupling {

struct IconGrid;
struct LatLonGrid;

/// The CF attributes of a field that the output copies from the input.
struct VarAttributes {
  std::string units, long_name, standard_name;
};

/// A 1-D coordinate variable (e.g. lat, rlon) with the attributes to copy.
struct CoordVar {
  std::string name;
  std::vector<double> values;
  std::map<std::string, std::string> text_attrs;  ///< units, standard_name, long_name, axis, ...
  std::map<std::string, double> num_attrs;
  std::vector<double> bounds;  ///< optional, [n][2]: written as "<name>_bnds"
};

/// The horizontal grid of an output file: ICON cells (clon, clat in radians, in global cell
/// order) or a regular / rotated-pole latitude-longitude grid (1-D y and x coordinates, values
/// row-major [y][x]), with an optional CF grid mapping variable (rotated pole).
struct OutputGrid {
  enum class Kind { kIcon, kLatLon };
  Kind kind = Kind::kIcon;
  // ICON
  std::vector<double> clon, clat;            ///< radians, n_cells each
  std::vector<double> clon_bnds, clat_bnds;  ///< optional cell corners, [n_cells][3] radians
  std::string uuid_of_hgrid;                 ///< ICON's grid uuid ("" = unknown)
  int number_of_grid_used = -1;              ///< ICON's grid number (-1 = unknown)
  std::string grid_file;                     ///< the grid file ("" = unknown): global grid_file_uri
  // lat-lon
  CoordVar y, x;
  std::string grid_mapping;  ///< name of the grid mapping variable; empty = none
  std::map<std::string, std::string> grid_mapping_text_attrs;
  std::map<std::string, double> grid_mapping_num_attrs;
  std::vector<double> lat_2d, lon_2d;  ///< rotated grids: geographic centres, [ny][nx] degrees

  int64_t n_cells() const {
    return kind == Kind::kIcon ? static_cast<int64_t>(clon.size())
                               : static_cast<int64_t>(y.values.size() * x.values.size());
  }
  /// An ICON grid from cell centres (radians), without corners or identity (tests).
  static OutputGrid icon(std::vector<double> clon, std::vector<double> clat);
  /// The grid of a grid file: ICON cells with corners, uuidOfHGrid, number_of_grid_used and the
  /// file name.
  static OutputGrid of(const IconGrid& grid);
  /// The grid of `var` in a lat-lon file (the coordinates' names and attributes and the grid
  /// mapping as the file has them, see FieldReader::output_grid), with cell bounds; a rotated
  /// grid also gets 2-D geographic lat/lon. A grid built in memory gets CF lat/lon.
  static OutputGrid of(const LatLonGrid& grid, const std::string& var);
  /// A regular grid from latitudes and longitudes in degrees, with CF attributes.
  static OutputGrid latlon(std::vector<double> lat_deg, std::vector<double> lon_deg);
  /// The lat-lon sub-grid of rows y0..y0+ny-1 and columns x0..x0+nx-1 (e.g. cropped to whole
  /// k x k blocks). Throws std::invalid_argument for an ICON grid or an out-of-range window.
  OutputGrid cropped(int64_t y0, int64_t ny, int64_t x0, int64_t nx) const;
};

}  // namespace finecast::coupling
