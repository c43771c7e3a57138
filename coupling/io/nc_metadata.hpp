// SPDX-License-Identifier: BSD-3-Clause
// The metadata carried from an input NetCDF field to finecast's output: attributes and grid.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace finecast::coupling {

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
};

/// The horizontal grid of an output file: ICON cells (clon, clat in radians, in global cell
/// order) or a regular / rotated-pole latitude-longitude grid (1-D y and x coordinates, values
/// row-major [y][x]), with an optional CF grid mapping variable (rotated pole).
struct OutputGrid {
  enum class Kind { kIcon, kLatLon };
  Kind kind = Kind::kIcon;
  // ICON
  std::vector<double> clon, clat;                    ///< radians, n_cells each
  std::vector<double> clon_vertices, clat_vertices;  ///< optional, [n_cells][3] radians
  // lat-lon
  CoordVar y, x;
  std::string grid_mapping;  ///< name of the grid mapping variable; empty = none
  std::map<std::string, std::string> grid_mapping_text_attrs;
  std::map<std::string, double> grid_mapping_num_attrs;

  int64_t n_cells() const {
    return kind == Kind::kIcon ? static_cast<int64_t>(clon.size())
                               : static_cast<int64_t>(y.values.size() * x.values.size());
  }
  /// An ICON grid from cell centres (radians).
  static OutputGrid icon(std::vector<double> clon, std::vector<double> clat);
  /// A regular grid from latitudes and longitudes in degrees, with CF attributes.
  static OutputGrid latlon(std::vector<double> lat_deg, std::vector<double> lon_deg);
  /// The lat-lon sub-grid of rows y0..y0+ny-1 and columns x0..x0+nx-1 (e.g. cropped to whole
  /// k x k blocks). Throws std::invalid_argument for an ICON grid or an out-of-range window.
  OutputGrid cropped(int64_t y0, int64_t ny, int64_t x0, int64_t nx) const;
};

}  // namespace finecast::coupling
