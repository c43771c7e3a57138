// SPDX-License-Identifier: BSD-3-Clause
// The grid tables of an ICON checkpoint: its patch map and context stencil as finecast-downscale
// builds them, flattened into the exported module's submodule grid_tables.
#include "plugin/export/grid_tables.hpp"

#include <algorithm>
#include <utility>
#include <vector>

#include "common/error.hpp"
#include "coupling/grid/context_stencil.hpp"
#include "coupling/grid/patch_regression.hpp"
#include "coupling/grid/patches.hpp"
#include "plugin/downscale/downscale.hpp"

namespace finecast::plugin {
namespace {

using trainer::ExportTable;

ExportTable table(std::vector<int64_t> shape, std::vector<int64_t> values) { return {std::move(shape), values}; }
ExportTable table(std::vector<int64_t> shape, std::vector<double> values) { return {std::move(shape), values}; }
ExportTable table(std::vector<int64_t> shape, std::vector<float> values) { return {std::move(shape), values}; }

/// Per patch, the patch itself and then the cells of its context, in context order: its edge
/// neighbours (patch.context_rings 0) or its ring cells; -1 = none.
std::vector<int64_t> context_cells(const coupling::PatchMap& map, int rings) {
  const int R = coupling::ring_count(map, rings);
  const std::vector<int64_t>& ring = rings > 0 ? map.ring_cells : map.neighbours;
  std::vector<int64_t> cells;
  cells.reserve(static_cast<size_t>(map.n_coarse * (1 + R)));
  for (int64_t c = 0; c < map.n_coarse; ++c) {
    cells.push_back(c);
    cells.insert(cells.end(), ring.begin() + c * R, ring.begin() + (c + 1) * R);
  }
  return cells;
}

/// The local-slope window of every coarse cell (the cell first, then those within `rings` edge
/// steps, as local_slopes visits them), padded with -1 to the widest; its width in `width`.
std::vector<int64_t> slope_windows(const coupling::PatchMap& map, int rings, int64_t& width) {
  std::vector<std::vector<int64_t>> windows(static_cast<size_t>(map.n_coarse));
  std::vector<int64_t> seen(static_cast<size_t>(map.n_coarse), -1);
  width = 0;
  for (int64_t c = 0; c < map.n_coarse; ++c) {
    coupling::cells_within(map.neighbours.data(), map.n_neighbours, c, rings, windows[c], seen);
    width = std::max<int64_t>(width, static_cast<int64_t>(windows[c].size()));
  }
  std::vector<int64_t> out(static_cast<size_t>(map.n_coarse * width), -1);
  for (int64_t c = 0; c < map.n_coarse; ++c) std::copy(windows[c].begin(), windows[c].end(), &out[c * width]);
  return out;
}

}  // namespace

trainer::ExportSubmodule icon_grid_tables(const coupling::ConditioningSpec& spec,
                                          const coupling::ConditioningGrid& grid) {
  const coupling::PatchMap& map = grid.map;
  if (!grid.icon || map.kind != coupling::PatchMap::Kind::kIconTriangles)
    throw InternalError("icon_grid_tables: not an ICON patch map");
  const coupling::PatchOptions po = coupling::patch_options(spec);
  const int64_t N = map.n_coarse, P = map.patch_size;
  const auto S = static_cast<int64_t>(spec.patch.statics.size());
  if (spec.static_norms.size() != spec.patch.statics.size())
    throw CheckpointError("records " + std::to_string(S) + " static covariate(s) but the normalisation of " +
                          std::to_string(spec.static_norms.size()) +
                          " (patch.static_norm; written before its first coupling step?)");
  if (spec.patch.residual == coupling::Residual::kRegression &&
      static_cast<int>(spec.regression.size()) != coupling::regression_predictors(po))
    throw CheckpointError("trained with patch.residual: regression, but records " +
                          std::to_string(spec.regression.size()) + " coefficient(s) for its " +
                          std::to_string(coupling::regression_predictors(po)) +
                          " predictors (patch.regression; written before its first coupling step?)");

  trainer::ExportSubmodule out;
  out.name = kGridTables;
  auto& t = out.tables;
  t.emplace_back("fine_of_patch", table({N, P}, map.fine_of_patch));
  t.emplace_back("fine_weight", table({N, P}, map.fine_weight));
  const int R = coupling::ring_count(map, po.rings);
  t.emplace_back("context_cells", table({N, 1 + R}, context_cells(map, po.rings)));
  std::vector<float> features(static_cast<size_t>(N * 3));
  for (int64_t c = 0; c < N; ++c) coupling::position_features(map, c, &features[c * 3]);
  t.emplace_back("position_features", table({N, 3}, features));
  // The interpolant of the residual base and of the covariates' deviations, per patch and slot.
  const int W = map.base.width;
  if (W > 0) {
    std::vector<int64_t> cells(static_cast<size_t>(N * P * W));
    std::vector<double> weights(cells.size());
    for (int64_t i = 0; i < N * P; ++i) {
      const int64_t f = map.fine_of_patch[i];
      std::copy_n(&map.base.cell[f * W], W, &cells[i * W]);
      std::copy_n(&map.base.cell_w[f * W], W, &weights[i * W]);
    }
    t.emplace_back("interp_cells", table({N, P, W}, cells));
    t.emplace_back("interp_weights", table({N, P, W}, weights));
  }
  std::vector<double> mean, scale;
  for (const auto& norm : spec.static_norms) {
    mean.push_back(norm.mean);
    scale.push_back(norm.scale);
  }
  t.emplace_back("static_mean", table({S}, mean));
  t.emplace_back("static_scale", table({S}, scale));
  const std::vector<double>& coef = po.regression;
  t.emplace_back("regression", table({static_cast<int64_t>(coef.size())}, coef));
  const bool slopes = po.interp_base && po.local_slopes.enabled() && S > 0;
  std::vector<int64_t> terms;
  if (slopes) {
    int64_t width = 0;
    std::vector<int64_t> windows = slope_windows(map, po.local_slopes.rings, width);
    t.emplace_back("slope_window", table({N, width}, std::move(windows)));
    terms.assign(po.local_slopes.terms.begin(), po.local_slopes.terms.end());
  }

  auto& a = out.attributes;
  a.emplace_back("type", std::string("icon"));
  a.emplace_back("file", grid.icon->path);
  a.emplace_back("geometry", schema::name_of(spec.grid.geometry));
  a.emplace_back("description", grid.text);
  a.emplace_back("n_fine", map.n_fine);
  a.emplace_back("context_rings", int64_t{po.rings});
  a.emplace_back("relative_context", po.relative);
  a.emplace_back("static_features", po.static_features);
  a.emplace_back("orography", spec.patch.orography);
  a.emplace_back("interpolant", W > 0 ? schema::name_of(map.base.kind) : std::string());
  a.emplace_back("slope_terms", terms);
  a.emplace_back("slope_ridge", slopes ? po.local_slopes.ridge : 0.0);
  return out;
}

std::optional<trainer::ExportSubmodule> grid_tables(const std::string& checkpoint, const trainer::ModelOptions& model,
                                                    const GridTableOptions& options, std::string& note) {
  if (options.none) {
    note = "No grid tables (--no-grid): the module alone";
    return std::nullopt;
  }
  const coupling::StoredSpec stored = read_checkpoint_spec(checkpoint);
  coupling::ConditioningSpec spec = stored.spec;
  if (stored.has("grid.type") && spec.grid.type == coupling::GridType::kLatLon) {
    note = "No grid tables: " + checkpoint +
           " was trained on a lat-lon grid, whose patches are blocks of the grid (docs/grids.md, docs/export.md)";
    return std::nullopt;
  }
  if (!options.grid.empty()) spec.grid.file = options.grid;
  if (spec.grid.file.empty()) {
    note = "No grid tables: " + checkpoint + " records no grid file (grid.file); give the ICON grid with --grid FILE";
    return std::nullopt;
  }
  spec.grid.type = coupling::GridType::kIcon;
  spec.patch_size = model.patch_size;
  if (!options.geometry.empty()) spec.grid.geometry = coupling::parse_icon_geometry(options.geometry, "--geometry");
  const std::string hint = "give the fine ICON grid with --grid FILE, or --no-grid to export the module alone";
  coupling::ConditioningGrid grid;
  try {
    grid = coupling::read_conditioning_grid(spec, "checkpoint " + checkpoint, /*with_output=*/false);
  } catch (const IoError& e) {
    throw IoError(std::string(e.what()) + " (the grid of checkpoint " + checkpoint + "): " + hint);
  }
  const coupling::PatchOptions po = coupling::patch_options(spec);
  const int n_vars = static_cast<int>(spec.fields.size());
  const int context = coupling::context_size(grid.map, n_vars, po);
  if (grid.map.patch_size != model.patch_size || context != model.context_size)
    throw GridError("checkpoint " + checkpoint + " expects patches of " + std::to_string(model.patch_size) +
                    " fine cells and a context of " + std::to_string(model.context_size) + " values, but " + grid.text +
                    " with its conditioning spec gives " + std::to_string(grid.map.patch_size) + " and " +
                    std::to_string(context) + ": " + hint);
  trainer::ExportSubmodule tables;
  try {
    tables = icon_grid_tables(spec, grid);
  } catch (const CheckpointError& e) {
    throw CheckpointError("checkpoint " + checkpoint + ": " + e.what());
  }
  note = "Grid tables of " + grid.text + " in " + kGridTables + ": " + std::to_string(grid.map.n_coarse) +
         " patches of " + std::to_string(grid.map.patch_size) + " cells, a context of " + std::to_string(context) +
         " values" + (grid.map.base.width > 0 ? ", the " + schema::name_of(grid.map.base.kind) + " interpolant" : "") +
         (spec.patch.residual == coupling::Residual::kRegression ? ", the regression's coefficients" : "");
  return tables;
}

}  // namespace finecast::plugin
