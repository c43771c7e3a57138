// SPDX-License-Identifier: BSD-3-Clause
// What a model is conditioned on, in one typed record: the grid and its hierarchy, the patch
// geometry, the context (rings, relative values, position features, orography, static covariates
// and their normalisation), the residual base and its regression fit, the target and the
// predictors. The plugin builds it from its config, checkpoints store it through its option table
// as typed attributes of their /conditioning group (versioned by spec_version; the trainer writes
// the group without knowing what it means), and finecast-downscale reads it back, so that both
// build the same patches (conditioning_pipeline.hpp) from one description. No torch, no MPI.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "common/schema.hpp"
#include "coupling/grid/icon_geometry.hpp"
#include "coupling/grid/patches.hpp"
#include "coupling/grid/static_covariates.hpp"

namespace finecast::coupling {

enum class GridType { kIcon, kLatLon };
/// What the model's residual is taken from: each patch's coarse value (mean), the
/// conservative interpolant of the coarse neighbourhood (interp), or that interpolant plus a
/// least-squares fit on the static covariates (regression: a two-stage model; docs/training.md).
enum class Residual { kMean, kInterp, kRegression };

// Inline: the config library (plugin/config.*) names these without linking the coupling library.
inline const schema::Names<GridType>& names(GridType) {
  static const schema::Names<GridType> n{{GridType::kIcon, "icon"}, {GridType::kLatLon, "latlon"}};
  return n;
}
inline const schema::Names<Residual>& names(Residual) {
  static const schema::Names<Residual> n{
      {Residual::kMean, "mean"}, {Residual::kInterp, "interp"}, {Residual::kRegression, "regression"}};
  return n;
}

/// The version of the record this build writes. Version 2 is the checkpoint group /conditioning of
/// typed attributes (spec_record). Version 1 was text in the string attributes of /metadata, with
/// spec_version "1"; version 0 the string map written before spec_version existed: the same keys,
/// less some (read_spec reads all three).
inline constexpr int kConditioningSpecVersion = 2;
/// The checkpoint group that holds the spec (version 2 on).
inline constexpr const char* kConditioningGroup = "conditioning";

/// The conditioning of a model. The keys of its table (conditioning_spec_table) are the config's
/// where the config has the setting (grid.*, fields, target, patch.*).
struct ConditioningSpec {
  int spec_version = kConditioningSpecVersion;
  // The grid and its hierarchy; the patch geometry.
  GridType grid_type = GridType::kIcon;
  std::string grid_file;
  IconGeometry grid_geometry = IconGeometry::kFile;  ///< icon: the file's coordinates or the uniform ones
  std::string grid_variable;  ///< latlon: the variable whose coordinates define the grid ("" = the first field)
  int coarse_level = 0;       ///< icon: patches are the cells of R<n>B<coarse_level>; -1 = from patch_size
  int boundary_rows = 4;      ///< icon limited area: patches reaching into refin_c_ctrl 1..N are left out
  int block = 16;             ///< latlon: patches are block x block cells; 0 = from patch_size
  int64_t patch_size = 0;     ///< fine cells per patch (0 = not known yet)
  // The target and the predictors.
  std::vector<std::string> fields;  ///< every field is a coarse predictor in the context
  std::string target;               ///< the downscaled field, one of fields
  std::string target_units;         ///< the target's units ("" = unknown)
  // The context.
  bool static_features = true;
  std::string orography;  ///< the field whose coarse means are in the context ("" = none)
  int context_rings = 0;
  bool relative_context = false;
  std::vector<std::string> statics;      ///< fine static covariates, in context order
  std::vector<StaticNorm> static_norms;  ///< their normalisation (empty until the first step)
  // What the model learns.
  Residual residual = Residual::kMean;
  /// The residual base's interpolant, resolved for the grid (never kAuto in a checkpoint: one
  /// written before patch.interpolant existed reads back as bicubic or idw, what it used).
  Interpolant interpolant = Interpolant::kAuto;
  /// patch.local_slopes: the window (edge steps) of the regression's local-slope terms, 0 = none;
  /// their ridge, and the covariates that get one (empty = every one of statics).
  int local_slopes = 0;
  double local_slope_ridge = 0.1;
  std::vector<std::string> local_slope_static;
  std::vector<double> regression;  ///< patch.residual regression's coefficients (empty until fitted)
};

/// The local-slope options of a spec (patch.local_slopes with patch.residual regression; off
/// otherwise). Throws ConfigError naming patch.local_slope_static for a name not in patch.static.
LocalSlopeOptions local_slope_options(const ConditioningSpec& spec);

/// Every key of the spec, in the order a checkpoint lists them.
const schema::Table<ConditioningSpec>& conditioning_spec_table();

/// The patch options of a spec (target index, covariates, residual base, regression).
PatchOptions patch_options(const ConditioningSpec& spec);

/// The spec as the typed attributes of a checkpoint's /conditioning group, one per row of its
/// table: integers (patch.size, grid.coarse_level, ...) as integers, booleans as 0 or 1, names
/// as strings, lists as arrays (fields and patch.static of strings, patch.regression of reals,
/// patch.static_norm of (mean, scale) pairs of reals).
schema::Record spec_record(const ConditioningSpec& spec);

/// A spec read back from a checkpoint, with what it recorded: checkpoints of older versions lack
/// keys, which keep their defaults here (and may have to be inferred: finecast-downscale).
struct StoredSpec {
  ConditioningSpec spec;
  int version = 0;             ///< spec_version; 0 = written before it existed
  std::set<std::string> keys;  ///< the keys the checkpoint holds
  bool has(const std::string& key) const { return keys.count(key) > 0; }
};

/// Reads the spec a checkpoint recorded: from its /conditioning group (`group`, the typed
/// attributes; version 2) when it has one, else from the string attributes of its /metadata
/// (version 1: the table's text; version 0, before spec_version: `context_fields` held the
/// fields and `fields` only the target). Throws CheckpointError naming `source`, the attribute and
/// what was expected for a value of the wrong type or one the table refuses, and for a version
/// newer than this build's.
StoredSpec read_spec(const std::optional<schema::Record>& group, const std::map<std::string, std::string>& metadata,
                     const std::string& source);
/// A checkpoint without the group: versions 0 and 1.
StoredSpec read_spec(const std::map<std::string, std::string>& metadata, const std::string& source);

/// What differs between the conditioning a checkpoint recorded and the one a run is configured
/// with, where a resumed model would be wrong: the fields, the target and its units (when both
/// know them), the grid type and patch geometry, and the context's settings. Learned parts
/// (normalisation, regression) and file names are not compared, nor keys the checkpoint lacks.
/// "" when they agree, else "key: the checkpoint has X, <configured> has Y; ...".
std::string resume_differences(const StoredSpec& recorded, const ConditioningSpec& configured,
                               const std::string& configured_name);

}  // namespace finecast::coupling
