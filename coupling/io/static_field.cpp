// SPDX-License-Identifier: BSD-3-Clause
// Static fine fields read onto a grid, located by coordinates, checked against it.
#include "coupling/io/static_field.hpp"

#include <cmath>
#include <sstream>

#include "common/error.hpp"
#include "common/log.hpp"
#include "coupling/io/field_reader.hpp"

namespace finecast::coupling {
namespace {

/// i with full[i + j] ~ sub[j] for all j (tolerance 1e-3 of sub's spacing), or -1.
int64_t find_offset(const std::vector<double>& full, const std::vector<double>& sub) {
  if (sub.empty() || sub.size() > full.size()) return -1;
  const double spacing = sub.size() > 1 ? std::abs(sub[1] - sub[0]) : 1.0;
  const double tol = 1e-3 * (spacing > 0 ? spacing : 1.0);
  for (size_t i = 0; i + sub.size() <= full.size(); ++i) {
    if (std::abs(full[i] - sub[0]) > tol) continue;
    bool ok = true;
    for (size_t j = 1; j < sub.size() && ok; ++j) ok = std::abs(full[i + j] - sub[j]) <= tol;
    if (ok) return static_cast<int64_t>(i);
  }
  return -1;
}

std::string range(const std::vector<double>& v) {
  if (v.empty()) return "no coordinate";
  std::ostringstream os;
  os << v.front() << ".." << v.back();
  return os.str();
}

}  // namespace

std::pair<std::string, std::string> split_file_var(const std::string& text) {
  const size_t colon = text.rfind(':');
  if (colon == std::string::npos || text.find('/', colon) != std::string::npos) return {text, ""};
  return {text.substr(0, colon), text.substr(colon + 1)};
}

std::vector<float> read_static_latlon(const std::string& file, const std::string& var, const LatLonGrid& grid,
                                      const std::string& grid_source) {
  FieldReader reader(file, var);
  if (reader.grid_kind() == FieldReader::GridKind::kUnstructured)
    throw GridError("'" + file + "' variable '" + var + "' is on an unstructured grid, but the fields of " +
                    grid_source + " are on a lat-lon grid");
  const auto shape = reader.spatial_shape();
  const int64_t ny = static_cast<int64_t>(shape.at(0)), nx = static_cast<int64_t>(shape.at(1));
  std::vector<double> y, x;
  try {
    const OutputGrid g = reader.output_grid();
    y = g.y.values;
    x = g.x.values;
  } catch (const IoError&) {
    // No coordinates: matched by shape alone.
  }
  int64_t oy = -1, ox = -1;
  if (!y.empty() && !x.empty()) {
    oy = find_offset(y, grid.lat);
    ox = find_offset(x, grid.lon);
  } else if (ny == grid.nlat && nx == grid.nlon) {
    oy = ox = 0;
  }
  if (oy < 0 || ox < 0)
    throw GridError("grids do not match: '" + file + "' variable '" + var + "' is " + std::to_string(ny) + " x " +
                    std::to_string(nx) + " (y " + range(y) + ", x " + range(x) + ") but the grid of " + grid_source +
                    " is " + std::to_string(grid.nlat) + " x " + std::to_string(grid.nlon) + " (y " + range(grid.lat) +
                    ", x " + range(grid.lon) + "); a static field must cover that grid with the same coordinates");
  if (reader.n_times() > 1)
    log::warning("'" + file + "' variable '" + var + "' has " + std::to_string(reader.n_times()) +
                 " steps; the first is used as the static field");
  std::vector<float> all(static_cast<size_t>(ny * nx));
  reader.read(0, all.data());
  std::vector<float> out(static_cast<size_t>(grid.nlat * grid.nlon));
  for (int64_t i = 0; i < grid.nlat; ++i)
    for (int64_t j = 0; j < grid.nlon; ++j) out[i * grid.nlon + j] = all[(oy + i) * nx + ox + j];
  if (oy > 0 || ox > 0)
    log::info("static field '" + file + "' variable '" + var + "': the grid of " + grid_source + " starts at row " +
              std::to_string(oy) + ", column " + std::to_string(ox) + " of its " + std::to_string(ny) + " x " +
              std::to_string(nx));
  return out;
}

std::vector<float> read_static_icon(const std::string& file, const std::string& var, const IconGrid& grid) {
  FieldReader reader(file, var);
  if (reader.n_values() != grid.n_cells)
    throw GridError("grids do not match: '" + file + "' variable '" + var + "' has " +
                    std::to_string(reader.n_values()) + " values per step, but the ICON grid file '" + grid.path +
                    "' has " + std::to_string(grid.n_cells) + " cells");
  OutputGrid g;
  try {
    g = reader.output_grid();
  } catch (const IoError&) {
    // No clon/clat: the cell count is all there is to check.
  }
  if (g.clon.size() == static_cast<size_t>(grid.n_cells))
    for (int64_t i = 0; i < grid.n_cells; ++i)
      if (std::abs(std::remainder(g.clon[i] - grid.clon[i], 2 * M_PI)) > 1e-5 ||
          std::abs(g.clat[i] - grid.clat[i]) > 1e-5)
        throw GridError("grids do not match: cell " + std::to_string(i) + " of '" + file + "' variable '" + var +
                        "' lies at clon " + std::to_string(g.clon[i]) + ", clat " + std::to_string(g.clat[i]) +
                        " but in the ICON grid file '" + grid.path + "' at " + std::to_string(grid.clon[i]) + ", " +
                        std::to_string(grid.clat[i]) + " (radians)");
  if (reader.n_times() > 1)
    log::warning("'" + file + "' variable '" + var + "' has " + std::to_string(reader.n_times()) +
                 " steps; the first is used as the static field");
  std::vector<float> out(static_cast<size_t>(grid.n_cells));
  reader.read(0, out.data());
  return out;
}

}  // namespace finecast::coupling
