// SPDX-License-Identifier: BSD-3-Clause
// The spec's grid and patch map, the sampling seed, and drawn residuals to fine values.
#include "coupling/conditioning/conditioning_pipeline.hpp"

#include <algorithm>
#include <cmath>

#include "common/error.hpp"
#include "common/region.hpp"
#include "coupling/grid/context_stencil.hpp"
#include "coupling/grid/hold_out_mask.hpp"
#include "coupling/grid/icon_geometry.hpp"
#include "coupling/grid/icon_hierarchy.hpp"
#include "coupling/grid/patch_regression.hpp"
#include "coupling/io/static_field.hpp"

namespace finecast::coupling {
namespace {

/// k with k*k == n, or 0.
int exact_sqrt(int64_t n) {
  const int64_t k = static_cast<int64_t>(std::llround(std::sqrt(static_cast<double>(n))));
  return k * k == n ? static_cast<int>(k) : 0;
}

/// k with 4^k == n, or -1.
int exact_log4(int64_t n) {
  int k = 0;
  while (n > 1 && n % 4 == 0) {
    n /= 4;
    ++k;
  }
  return n == 1 ? k : -1;
}

void read_icon(const ConditioningSpec& spec, const std::string& source, bool with_output, ConditioningGrid& g) {
  const IconGrid& grid = g.icon.emplace(read_icon_grid(spec.grid.file, spec.grid.geometry));
  const IconGridSize size = icon_grid_size(grid);
  const int fine_level = size.level;
  int level = spec.grid.coarse_level;
  if (level < 0) {
    const int k = exact_log4(spec.patch_size);
    if (k < 0 || k > fine_level)
      throw GridError(source + " has patches of " + std::to_string(spec.patch_size) +
                      " fine cells, which is no ICON refinement of " + spec.grid.file + " (" +
                      icon_grid_name(size.root, fine_level) +
                      ": 4^k cells per coarse cell, k <= " + std::to_string(fine_level) + ")");
    level = fine_level - k;
  }
  LimitedAreaRules rules;
  rules.boundary_rows = spec.grid.boundary_rows;
  g.map = icon_patch_map(grid, level, rules);
  if (with_output) g.output = OutputGrid::of(grid);
  g.text = spec.grid.file + " (" + icon_grid_name(size.root, fine_level) + " -> " + icon_grid_name(size.root, level) +
           (size.limited_area ? ", limited area" : "") +
           (spec.grid.geometry == IconGeometry::kUniform ? ", uniform geometry)" : ")");
}

void read_latlon(const ConditioningSpec& spec, const std::string& source, bool with_output, ConditioningGrid& g) {
  g.variable = !spec.grid.variable.empty() ? spec.grid.variable
               : !spec.fields.empty()      ? spec.fields.front()
                                           : find_latlon_variable(spec.grid.file);
  const LatLonGrid& grid = g.latlon.emplace(read_latlon_grid(spec.grid.file, g.variable));
  int block = spec.grid.block;
  if (block <= 0) {
    block = exact_sqrt(spec.patch_size);
    if (block == 0)
      throw GridError(source + " has patches of " + std::to_string(spec.patch_size) +
                      " fine cells, not a square block; give the block size");
  }
  g.map = latlon_patch_map(grid, block);
  if (with_output) {
    g.output = OutputGrid::of(grid, g.variable);
    if (g.output.n_cells() != g.map.n_fine)
      throw GridError(spec.grid.file + ": " + g.variable + " has " + std::to_string(g.output.n_cells()) +
                      " cells, its coordinates give " + std::to_string(g.map.n_fine));
  }
  g.row_cells = grid.nlon;
  g.text = spec.grid.file + " (" + std::to_string(grid.nlat) + " x " + std::to_string(grid.nlon) + ", blocks of " +
           std::to_string(block) + " x " + std::to_string(block) + ")";
}

}  // namespace

void ConditioningGrid::cell_lat_lon(int64_t i, double& lat, double& lon) const {
  if (icon) {
    lat = icon->clat[static_cast<size_t>(i)] * 180.0 / M_PI;
    lon = icon->clon[static_cast<size_t>(i)] * 180.0 / M_PI;
  } else {
    lat = latlon->lat[static_cast<size_t>(i / latlon->nlon)];
    lon = latlon->lon[static_cast<size_t>(i % latlon->nlon)];
  }
}

ConditioningGrid read_conditioning_grid(const ConditioningSpec& spec, const std::string& source, bool with_output) {
  ConditioningGrid g;
  if (spec.grid.type == GridType::kIcon)
    read_icon(spec, source, with_output, g);
  else
    read_latlon(spec, source, with_output, g);
  prepare_for(spec, g.map);
  return g;
}

std::vector<char> patches_inside(const ConditioningGrid& grid, const Region& region) {
  const PatchMap& map = grid.map;
  std::vector<char> inside(static_cast<size_t>(map.n_coarse), 0);
  for (int64_t c = 0; c < map.n_coarse; ++c) {
    bool in = true;
    for (int k = 0; k < map.patch_size && in; ++k) {
      double lat = 0, lon = 0;
      grid.cell_lat_lon(map.fine_of_patch[c * map.patch_size + k], lat, lon);
      in = region.contains_lat(lat) && region.contains_lon(lon);
    }
    inside[static_cast<size_t>(c)] = in ? 1 : 0;
  }
  return inside;
}

std::vector<char> held_out_patches(const ConditioningGrid& grid, const std::string& text, const std::string& key) {
  const bool box = is_regions_text(text);
  std::vector<char> held;
  if (box) {
    held = union_of_boxes(parse_regions(text, key), [&](const Region& r) { return patches_inside(grid, r); });
  } else {
    const auto [file, var] = split_file_var(text);
    if (file.empty() || var.empty())
      throw ConfigError(
          key + " " + text +
          ": expected lat0,lat1,lon0,lon1 in degrees (several boxes joined by ';') or FILE:VAR (a NetCDF mask "
          "on the fine grid)");
    std::vector<float> mask;
    try {
      mask = grid.icon ? read_static_icon(file, var, *grid.icon)
                       : read_static_latlon(file, var, *grid.latlon, "the grid " + grid.text);
    } catch (const Error& e) {
      throw ConfigError(key + " " + text + ": " + e.what() + "; expected variable '" + var + "' of '" + file +
                        "' on the fine grid " + grid.text + " (non-zero cells mark the held-out patches)");
    }
    held = patches_held_out(grid.map, mask.data());
  }
  if (std::find(held.begin(), held.end(), 1) == held.end())
    throw ConfigError(key + " " + text + ": " +
                      (box ? "no patch lies wholly inside a box" : "the mask flags no cell of any patch") + " (" +
                      grid.text + ")");
  return held;
}

void select_patches(const Patches& all, const std::vector<int64_t>& rows, Patches& out) {
  const auto n = static_cast<int64_t>(rows.size());
  out.n = n;
  out.C = all.C;
  out.P = all.P;
  out.n_invalid = 0;
  // Per patch `width` values of `from`, the rows' in order (an empty array stays empty).
  auto take = [&](const auto& from, auto& to, int64_t width) {
    to.resize(from.empty() ? 0 : static_cast<size_t>(n * width));
    if (from.empty()) return;
    for (int64_t j = 0; j < n; ++j)
      std::copy_n(from.begin() + rows[static_cast<size_t>(j)] * width, width, to.begin() + j * width);
  };
  take(all.context, out.context, all.C);
  take(all.fine, out.fine, all.P);
  take(all.coarse, out.coarse, 1);
  take(all.base, out.base, all.P);
  take(all.residual, out.residual, all.P);
  take(all.global_interp, out.global_interp, all.P);
  take(all.weights, out.weights, all.P);
  take(all.valid, out.valid, 1);
  // The local slopes are term-major (terms x n): each term's rows.
  const size_t terms = all.n > 0 ? all.local_slopes.size() / static_cast<size_t>(all.n) : 0;
  out.local_slopes.resize(terms * static_cast<size_t>(n));
  for (size_t t = 0; t < terms; ++t)
    for (int64_t j = 0; j < n; ++j)
      out.local_slopes[t * n + j] = all.local_slopes[t * all.n + rows[static_cast<size_t>(j)]];
  for (uint8_t v : out.valid) out.n_invalid += v ? 0 : 1;
}

void prepare_for(const ConditioningSpec& spec, PatchMap& map) {
  prepare_patch_map(map, spec.patch.context_rings,
                    spec.patch.residual != Residual::kMean || !spec.patch.statics.empty(), spec.patch.interpolant,
                    spec.patch.residual == Residual::kRegression ? spec.patch.global_interpolant : Interpolant::kAuto);
}

uint64_t sampling_seed(uint64_t seed, long long sampling, int trainer) {
  return seed + 7919 * static_cast<uint64_t>(sampling) + 1000003ULL * static_cast<uint64_t>(trainer);
}

void sample_fine(Patches& patches, int64_t members, uint64_t seed, float* out, const DrawFn& draw,
                 const PatchMap& global, int n_vars, const PatchOptions& options) {
  // With a residual base the model draws the residual from the base (its coarse value is then
  // 0), and the base is added after.
  draw(patches.context.data(), sampler_coarse(patches), patches.weights.data(), patches.n, seed, out);
  add_patch_base(patches, members, out);
  blend_toward_global(global, n_vars, options, patches, members, out);
  spread_by_regression(global, n_vars, options, patches, members, out);
}

}  // namespace finecast::coupling
