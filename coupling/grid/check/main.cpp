// SPDX-License-Identifier: BSD-3-Clause
// finecast-grid: prints a grid's coarse-cell layout and fails when the hierarchy is inconsistent;
// writes the ICON grid file of the uniform R2B<n> grid.
#include <netcdf.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "common/cli.hpp"
#include "common/error.hpp"
#include "coupling/grid/icon_geometry.hpp"
#include "coupling/grid/icon_grid.hpp"
#include "coupling/grid/icon_grid_file_check.hpp"
#include "coupling/grid/icon_grid_file_writer.hpp"
#include "coupling/grid/icon_hierarchy.hpp"
#include "coupling/grid/latlon_grid.hpp"
#include "coupling/grid/patch_map.hpp"

namespace fc = finecast::coupling;

namespace {

constexpr int kInconsistent = 2;  // distinct from 1 (unreadable input, bad arguments)

bool has_variable(const std::string& path, const char* name) {
  int nc = -1, id = -1;
  if (nc_open(path.c_str(), NC_NOWRITE, &nc) != NC_NOERR) return false;
  const bool found = nc_inq_varid(nc, name, &id) == NC_NOERR;
  nc_close(nc);
  return found;
}

/// Every fine cell must lie in at most one patch (exactly one on a global ICON grid).
int report(const fc::PatchMap& pm, bool every_cell_covered) {
  std::vector<int> per_coarse(pm.n_coarse, 0);
  std::vector<int> used(pm.n_fine, 0);
  for (int64_t c = 0; c < pm.n_coarse; ++c)
    for (int s = 0; s < pm.patch_size; ++s) {
      const int64_t f = pm.fine_of_patch[c * pm.patch_size + s];
      ++per_coarse[c];
      if (f >= 0 && f < pm.n_fine) ++used[f];
    }
  const auto [lo, hi] = std::minmax_element(per_coarse.begin(), per_coarse.end());
  const int64_t twice = std::count_if(used.begin(), used.end(), [](int u) { return u > 1; });
  const int64_t outside = std::count(used.begin(), used.end(), 0);
  std::printf("fine cells: %lld\n", static_cast<long long>(pm.n_fine));
  std::printf("coarse cells: %lld\n", static_cast<long long>(pm.n_coarse));
  std::printf("fine cells per coarse cell: min %d, max %d\n", *lo, *hi);
  std::printf("fine cells outside every coarse cell: %lld\n", static_cast<long long>(outside));
  const bool ok = *lo == *hi && twice == 0 && (!every_cell_covered || outside == 0);
  if (twice > 0) std::printf("fine cells in more than one coarse cell: %lld\n", static_cast<long long>(twice));
  std::printf("consistent: %s\n", ok ? "yes" : "no");
  return ok ? 0 : kInconsistent;
}

/// The tables of a complete ICON grid file (those ICON's grid reader reads), when it has them.
int report_icon_tables(const std::string& path) {
  if (!has_variable(path, "edge_of_cell")) return 0;
  const fc::IconGridFileCheck check = fc::check_icon_grid_file(path);
  if (check.ok()) {
    std::printf(
        "ICON grid tables: consistent (%lld edges, %d pentagons; cell areas sum to 4 pi R^2 within %.1e, dual "
        "areas within %.1e)\n",
        static_cast<long long>(check.n_edges), check.pentagons, check.area_error, check.dual_area_error);
    return 0;
  }
  std::printf("ICON grid tables: inconsistent (%lld problems)\n", static_cast<long long>(check.n_problems));
  for (const std::string& p : check.problems) std::fprintf(stderr, "finecast-grid: %s: %s\n", path.c_str(), p.c_str());
  return kInconsistent;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "finecast-grid: checks a grid before a long run. ICON grids: rebuilds the R2B<L> parents "
      "from the topology, and checks the tables of a complete ICON grid file (edges, vertex rings, "
      "orientations, normals, lengths, areas, index lists) as ICON's grid reader uses them; lat-lon "
      "grids: K x K blocks. Prints the number of fine cells, coarse cells and the min/max fine cells "
      "per coarse cell. With --write-icon-grid OUT --level N it first writes the ICON grid file of "
      "the global uniform R2B<N> grid (root 2, N bisections; every variable and global attribute "
      "ICON 2024.10 reads, see docs/grids.md), then checks it. Exit status 0 when consistent, 2 when "
      "inconsistent, 1 when the file cannot be read or written, CLI11's codes for bad usage."};
  std::string grid_path, var, geometry = "file", write_path;
  int coarse_level = 0, block = 16, write_level = -1;
  auto* file_opt = app.add_option("FILE,--grid", grid_path,
                                  "ICON grid file or NetCDF file with a lat-lon field (positional, or --grid FILE)");
  auto* write_opt = app.add_option("--write-icon-grid", write_path,
                                   "write the ICON grid file of the uniform R2B<N> grid (--level N) to this path, "
                                   "then check it (instead of FILE)");
  auto* write_level_opt =
      app.add_option("--level", write_level, "with --write-icon-grid: the bisection level N (0..9; 4: 20,480 cells)")
          ->check(CLI::Range(0, 9));
  write_opt->excludes(file_opt);
  write_level_opt->needs(write_opt);
  write_opt->needs(write_level_opt);
  auto* level_opt = app.add_option("--coarse-level", coarse_level, "ICON: coarse level L (R2B<L> parents; default 0)");
  auto* block_opt = app.add_option("--block", block, "lat-lon: block size K (K x K fine cells; default 16)");
  level_opt->excludes(block_opt);
  write_opt->excludes(block_opt);
  app.add_option("--var", var,
                 "lat-lon: variable whose coordinates define the grid "
                 "(default: the first variable on a lat-lon grid)");
  app.add_option("--geometry", geometry,
                 std::string(fc::kIconGeometryHelp) +
                     " (uniform: checks that the topology is a recursively bisected icosahedron and prints how "
                     "far the cell centres move)")
      ->check(CLI::IsMember({"file", "uniform"}))
      ->capture_default_str();
  finecast::cli::add_version(app, "finecast-grid");
  CLI11_PARSE(app, argc, argv);
  if (file_opt->count() == 0 && write_opt->count() == 0) {
    std::fprintf(stderr, "finecast-grid: give a grid FILE to check, or --write-icon-grid OUT --level N\n");
    return 1;
  }

  try {
    if (write_opt->count() > 0) {
      const fc::IconGridFileSummary w = fc::write_icon_grid_file(write_path, write_level);
      std::printf("wrote: %s (ICON grid R02B%02d: %lld cells, %lld edges, %lld vertices, uuidOfHGrid %s)\n",
                  write_path.c_str(), w.level, static_cast<long long>(w.n_cells), static_cast<long long>(w.n_edges),
                  static_cast<long long>(w.n_vertices), w.uuid.c_str());
      grid_path = write_path;
    }
    const bool icon = block_opt->count() == 0 && (level_opt->count() > 0 || has_variable(grid_path, "clon"));
    if (icon) {
      fc::IconGrid grid = fc::read_icon_grid(grid_path);
      std::printf("grid: %s\n", grid_path.c_str());
      if (geometry == "uniform") {
        const fc::UniformGeometryFit fit = fc::set_uniform_geometry(grid);
        std::printf("geometry: uniform (cell centres moved by %.3f degrees RMS, at most %.3f)\n", fit.rms_shift_deg,
                    fit.max_shift_deg);
      }
      std::printf("kind: ICON triangular, %lld cells, %lld vertices\n", static_cast<long long>(grid.n_cells),
                  static_cast<long long>(grid.n_vertices));
      const int level = fc::icon_grid_level(grid);
      std::printf("fine level: R2B%d, coarse level: R2B%d\n", level, coarse_level);
      if (coarse_level < 0 || coarse_level > level) {
        std::fprintf(stderr, "finecast-grid: --coarse-level %d out of range for an R2B%d grid, expected 0..%d\n",
                     coarse_level, level, level);
        return 1;
      }
      const int tables = report_icon_tables(grid_path);
      return std::max(tables, report(fc::icon_patch_map(grid, coarse_level), true));
    }
    if (var.empty()) var = fc::find_latlon_variable(grid_path);
    const fc::LatLonGrid grid = fc::read_latlon_grid(grid_path, var);
    std::printf("grid: %s (variable %s)\n", grid_path.c_str(), var.c_str());
    std::printf("kind: %s lat-lon, %lld x %lld (%s x %s)%s\n", grid.rotated ? "rotated-pole" : "regular",
                static_cast<long long>(grid.nlat), static_cast<long long>(grid.nlon), grid.lat_name.c_str(),
                grid.lon_name.c_str(), grid.global_lon ? ", global in longitude" : "");
    std::printf("block: %d x %d\n", block, block);
    return report(fc::latlon_patch_map(grid, block), false);
  } catch (const finecast::GridError& e) {
    std::printf("consistent: no\n");
    std::fprintf(stderr, "finecast-grid: %s\n", e.what());
    return kInconsistent;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "finecast-grid: %s\n", e.what());
    return 1;
  }
}
