// SPDX-License-Identifier: BSD-3-Clause
// libFuzzer target: the grid readers (coupling/grid/icon_grid.hpp read_icon_grid, latlon_grid.hpp
// read_latlon_grid of the file's first lat-lon variable) on the input written to a file. They may
// only throw IoError or GridError; an accepted ICON grid has its cells on the sphere, vertex and
// neighbour ids in range; an accepted lat-lon grid has latitudes in [-90, 90] and finite areas.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "common/error.hpp"
#include "coupling/grid/icon_grid.hpp"
#include "coupling/grid/latlon_grid.hpp"
#include "fuzz/fuzz_util.hpp"

namespace fc = finecast::coupling;

namespace {

[[noreturn]] void fail(const std::string& what) {
  std::fprintf(stderr, "accepted grid is inconsistent: %s\n", what.c_str());
  std::abort();
}

void check_icon(const fc::IconGrid& g) {
  const double half_pi = 1.5707963267948966 * (1 + 1e-12);
  for (int64_t c = 0; c < g.n_cells; ++c) {
    if (!std::isfinite(g.clon[c]) || !(std::fabs(g.clat[c]) <= half_pi)) fail("cell " + std::to_string(c));
    for (int k = 0; k < 3; ++k) {
      if (g.cell_vertices[c][k] < 0 || g.cell_vertices[c][k] >= g.n_vertices) fail("vertex id");
      if (g.cell_neighbours[c][k] < -1 || g.cell_neighbours[c][k] >= g.n_cells) fail("neighbour id");
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static finecast::fuzz::InputFile file(".nc");
  if (!file.write(data, size)) return 0;
  try {
    check_icon(fc::read_icon_grid(file.path()));
  } catch (const finecast::IoError&) {
  } catch (const finecast::GridError&) {
  }
  try {
    const fc::LatLonGrid g = fc::read_latlon_grid(file.path(), fc::find_latlon_variable(file.path()));
    for (double lat : g.lat)
      if (!(std::fabs(lat) <= 90.0)) fail("latitude " + std::to_string(lat));
    for (double a : g.cell_area)
      if (!std::isfinite(a)) fail("cell area");
  } catch (const finecast::IoError&) {
  } catch (const finecast::GridError&) {
  }
  return 0;
}
