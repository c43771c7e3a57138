// SPDX-License-Identifier: BSD-3-Clause
// finecast-host's surface fields (topography_c, fr_land) on every ICON cell, as a NetCDF file:
// what finecast-downscale's --orography reads to rebuild an orography context offline.
#pragma once

#include <string>

#include "coupling/grid/icon_grid.hpp"
#include "host/model/orography.hpp"

namespace finecast::host {

/// Writes `surface` (one value per cell of `grid`, in the grid's cell order) as CF NetCDF:
/// topography_c(ncells) and fr_land(ncells) in double precision, exactly the values the host
/// hands its plugins, with clon/clat and their corners from the grid and the grid's identity
/// (grid_file_uri, uuidOfHGrid, number_of_grid_used). `source` names the relief data set.
/// Written atomically; throws IoError naming the file.
void write_surface_file(const std::string& path, const coupling::IconGrid& grid, const CellOrography& surface,
                        const std::string& source);

}  // namespace finecast::host
