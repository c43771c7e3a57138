// SPDX-License-Identifier: BSD-3-Clause
// Real surface height on ICON cells: a relief data set (etopo5/etopo20) averaged over each cell.
#pragma once

#include <string>
#include <vector>

#include "coupling/grid/icon_grid.hpp"

namespace finecast::host {

/// Per-cell surface data of the cells asked for, in their order.
struct CellOrography {
  std::vector<double> height;         ///< m, mean of max(relief, 0): the sea surface is 0
  std::vector<double> land_fraction;  ///< share of the cell (area-weighted) with relief > 0
};

/// Averages a regular lon-lat relief field (a 2-D float variable such as etopo5's ROSE, with
/// evenly spaced 1-D coordinate variables, longitudes covering 360 degrees) over the relief
/// points inside each spherical triangle `cells` (0-based) of `grid`, weighting by cos(lat).
/// Reads only the rows the cells need. Each cell's value depends on that cell alone, so any
/// decomposition gives identical values. Throws IoError naming the file and variable.
CellOrography average_orography(const std::string& relief_path, const std::string& variable,
                                const coupling::IconGrid& grid, const std::vector<int>& cells);

}  // namespace finecast::host
