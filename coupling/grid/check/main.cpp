// SPDX-License-Identifier: BSD-3-Clause
// finecast-grid: prints a grid's coarse-cell layout and fails when the hierarchy is inconsistent;
// writes the ICON grid file of the uniform R<n>B<k> grid, or of a limited area cut from it.
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
#include "coupling/grid/icosahedral_grid.hpp"
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
  if (check.ok() && check.limited_area) {
    std::printf(
        "ICON grid tables: consistent (limited area: %lld edges, %d pentagons inside; the cells cover "
        "%.4f%% of the sphere)\n",
        static_cast<long long>(check.n_edges), check.pentagons, 100 * check.area_fraction);
    return 0;
  }
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
      "finecast-grid: checks a grid before a long run. ICON grids (global R<n>B<k>, or limited areas "
      "cut from one): rebuilds the R<n>B<L> parents from the topology, and checks the tables of a "
      "complete ICON grid file (edges, vertex rings, orientations, normals, lengths, areas, index "
      "lists) as ICON's grid reader uses them; lat-lon grids: K x K blocks. Prints the number of fine "
      "cells, coarse cells and the min/max fine cells per coarse cell, and on a limited area the "
      "coarse cells left out at its edge and in its lateral boundary zone. With --write-icon-grid OUT "
      "--level N it first writes the ICON grid file of the global uniform R<root>B<N> grid (--root, "
      "default 2; every variable and global attribute ICON 2024.10 reads, see docs/grids.md), or with "
      "--region of the limited area cut from it, then checks it. Exit status 0 when consistent, 2 when "
      "inconsistent, 1 when the file cannot be read or written, CLI11's codes for bad usage."};
  std::string grid_path, var, geometry = "file", write_path, region;
  int coarse_level = 0, block = 16, write_level = -1, write_root = 2, boundary_depth = 14, boundary_rows = 4;
  auto* file_opt = app.add_option("FILE,--grid", grid_path,
                                  "ICON grid file or NetCDF file with a lat-lon field (positional, or --grid FILE)");
  auto* write_opt = app.add_option("--write-icon-grid", write_path,
                                   "write the ICON grid file of the uniform R<root>B<N> grid (--level N) to this path, "
                                   "then check it (instead of FILE)");
  auto* write_level_opt =
      app.add_option("--level", write_level, "with --write-icon-grid: the bisection level N (0..9; 4: 20,480 cells)")
          ->check(CLI::Range(0, 9));
  auto* root_opt = app.add_option("--root", write_root,
                                  "with --write-icon-grid: the root division n of the icosahedron's edges (R<n>B<N>; "
                                  "default 2, ICON's other registered roots are odd: 3, 5, 13, 19, ...)")
                       ->check(CLI::Range(2, fc::kMaxIconRoot));
  auto* region_opt = app.add_option("--region", region,
                                    "with --write-icon-grid: a limited-area grid, the cells whose centres lie in "
                                    "lat0,lat1,lon0,lon1 (degrees; lon1 < lon0 crosses the date line)");
  auto* depth_opt = app.add_option("--boundary-depth", boundary_depth,
                                   "with --region: the cell rows from the lateral boundary that get refin_c_ctrl "
                                   "1..D (the file's boundary_depth_index; default 14)")
                        ->check(CLI::Range(1, 64));
  write_opt->excludes(file_opt);
  write_level_opt->needs(write_opt);
  write_opt->needs(write_level_opt);
  root_opt->needs(write_opt);
  region_opt->needs(write_opt);
  depth_opt->needs(region_opt);
  auto* level_opt =
      app.add_option("--coarse-level", coarse_level, "ICON: coarse level L (R<n>B<L> parents; default 0)");
  app.add_option("--boundary-rows", boundary_rows,
                 "ICON limited area: coarse cells reaching into refin_c_ctrl rows 1..R are left out (the plugin's "
                 "grid.boundary_rows; default 4, ICON's lateral boundary zone)")
      ->check(CLI::Range(0, 64));
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
      fc::IconGridFileRequest request;
      request.root = write_root;
      request.level = write_level;
      request.boundary_depth = boundary_depth;
      if (region_opt->count() > 0) request.region = fc::parse_latlon_box(region, "--region");
      const fc::IconGridFileSummary w = fc::write_icon_grid_file(write_path, request);
      std::printf("wrote: %s (ICON grid R%02dB%02d%s: %lld cells, %lld edges, %lld vertices, uuidOfHGrid %s)\n",
                  write_path.c_str(), w.root, w.level, w.limited_area ? ", limited area" : "",
                  static_cast<long long>(w.n_cells), static_cast<long long>(w.n_edges),
                  static_cast<long long>(w.n_vertices), w.uuid.c_str());
      if (w.limited_area) {
        std::string rows;
        for (size_t i = 0; i < w.cells_per_row.size(); ++i)
          rows += (i ? ", " : "") + std::to_string(w.cells_per_row[i]);
        std::printf("refin_c_ctrl rows 1..%zu from the lateral boundary: %s cells\n", w.cells_per_row.size(),
                    rows.c_str());
      }
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
      const fc::IconGridSize size = fc::icon_grid_size(grid);
      const int level = size.level;
      std::printf("fine level: %s, coarse level: %s%s\n", fc::icon_grid_name(size.root, level).c_str(),
                  fc::icon_grid_name(size.root, coarse_level).c_str(), size.limited_area ? " (limited area)" : "");
      if (coarse_level < 0 || coarse_level > level) {
        std::fprintf(stderr, "finecast-grid: --coarse-level %d out of range for an %s grid, expected 0..%d\n",
                     coarse_level, fc::icon_grid_name(size.root, level).c_str(), level);
        return 1;
      }
      const int tables = report_icon_tables(grid_path);
      fc::LimitedAreaRules rules;
      rules.boundary_rows = boundary_rows;
      const fc::PatchMap map = fc::icon_patch_map(grid, coarse_level, rules);
      if (map.limited_area.on) std::printf("%s\n", fc::limited_area_text(map).c_str());
      return std::max(tables, report(map, !size.limited_area));
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
