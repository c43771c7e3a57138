// SPDX-License-Identifier: BSD-3-Clause
// A static fine field (a covariate such as the surface height) read from FILE:VAR onto a grid,
// checked against it: finecast-replay's input.static and finecast-downscale's --static.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "coupling/grid/icon_grid.hpp"
#include "coupling/grid/latlon_grid.hpp"

namespace finecast::coupling {

/// FILE:VAR -> (FILE, VAR); a colon followed by a path separator belongs to the file name. VAR
/// is "" when absent.
std::pair<std::string, std::string> split_file_var(const std::string& text);

/// The first step of `var` of `file` on the lat-lon `grid` (row-major, grid.nlat x grid.nlon).
/// The file may hold a larger grid that contains this one: it is located by its 1-D
/// coordinates (within 1e-3 of a spacing, as finecast-eval matches grids); a file without
/// coordinates must have the grid's shape. Throws GridError naming both files (`grid_source`
/// says where the grid came from) when neither holds.
std::vector<float> read_static_latlon(const std::string& file, const std::string& var, const LatLonGrid& grid,
                                      const std::string& grid_source);

/// The first step of `var` of `file` on the ICON `grid`: one value per cell, and the cell
/// centres, when the file has clon/clat, those of the grid. Throws GridError naming both files.
std::vector<float> read_static_icon(const std::string& file, const std::string& var, const IconGrid& grid);

}  // namespace finecast::coupling
