// SPDX-License-Identifier: BSD-3-Clause
// finecast-export's grid tables (docs/export.md): what a caller needs around the exported module to
// apply an ICON downscaler to a field without finecast. The patch map, the context stencil and its
// position features, the residual base's interpolant, regression coefficients and local-slope
// windows, and the covariates' normalisation, taken from the same conditioning pipeline that builds
// finecast-downscale's patches (the checkpoint's spec, its grid, its prepared patch map).
#pragma once

#include <optional>
#include <string>

#include "coupling/conditioning/conditioning_pipeline.hpp"
#include "coupling/conditioning/conditioning_spec.hpp"
#include "trainer/options.hpp"
#include "trainer/torchscript_export.hpp"

namespace finecast::plugin {

/// The name of the module's submodule that holds the tables (`downscaler.grid_tables` in Python).
inline constexpr const char* kGridTables = "grid_tables";

/// finecast-export's grid flags.
struct GridTableOptions {
  std::string grid;      ///< --grid: the ICON grid file ("" = the checkpoint's grid.file)
  std::string geometry;  ///< --geometry: file | uniform ("" = the checkpoint's grid.geometry)
  bool none = false;     ///< --no-grid: the module alone
};

/// The tables of `grid` (an ICON grid prepared for `spec`: read_conditioning_grid) for a model
/// trained with `spec`, as the submodule kGridTables. Throws CheckpointError when the spec lacks
/// what it needs (the covariates' normalisation, the regression's coefficients), its message
/// ready to follow "checkpoint FILE: ".
trainer::ExportSubmodule icon_grid_tables(const coupling::ConditioningSpec& spec,
                                          const coupling::ConditioningGrid& grid);

/// The grid tables of checkpoint `checkpoint`, whose model has the options `model`: from its
/// conditioning spec and the grid it names (or options.grid, options.geometry), checked against
/// the model's patch and context sizes. None, with `note` saying why, for --no-grid, a checkpoint
/// that records no grid file (and no --grid) and a lat-lon checkpoint (whose patches are blocks
/// of the grid: docs/grids.md). Throws IoError / GridError naming the grid file and the flags to
/// give when it cannot be read or does not fit the model, CheckpointError for a spec that cannot
/// be read. `note` also says what was written.
std::optional<trainer::ExportSubmodule> grid_tables(const std::string& checkpoint, const trainer::ModelOptions& model,
                                                    const GridTableOptions& options, std::string& note);

}  // namespace finecast::plugin
