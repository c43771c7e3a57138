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
#include "coupling/conditioning/conditioning_settings.hpp"
#include "coupling/grid/icon_geometry.hpp"
#include "coupling/grid/patches.hpp"
#include "coupling/grid/static_covariates.hpp"

namespace finecast::coupling {

/// The version of the record this build writes. Version 2 is the checkpoint group /conditioning of
/// typed attributes (spec_record). Version 1 was text in the string attributes of /metadata, with
/// spec_version "1"; version 0 the string map written before spec_version existed: the same keys,
/// less some (read_spec reads all three).
inline constexpr int kConditioningSpecVersion = 2;
/// The checkpoint group that holds the spec (version 2 on).
inline constexpr const char* kConditioningGroup = "conditioning";

/// The conditioning of a model: its settings (conditioning_settings.hpp: the grid and the patch
/// geometry, the fields and the target, the context and the residual base, as the run's config
/// set them, with the target named and the interpolant resolved: never auto in a checkpoint, one
/// written before patch.interpolant existed reads back as bicubic or idw, what it used) and what
/// a run derives and learns. Its table's keys are the config's where the config has the setting.
struct ConditioningSpec : ConditioningSettings {
  int spec_version = kConditioningSpecVersion;
  int64_t patch_size = 0;                ///< fine cells per patch (0 = not known yet)
  std::string target_units;              ///< the target's units ("" = unknown)
  std::vector<StaticNorm> static_norms;  ///< the static covariates' normalisation (empty until the first step)
  std::vector<double> regression;        ///< patch.residual regression's coefficients (empty until fitted)
  /// The global regression's coefficients (2 per static covariate: the base's fit without local
  /// slopes, which patch.global_blend moves the ensemble mean toward; empty until fitted, and in
  /// checkpoints written before it existed).
  std::vector<double> global_regression;
};

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
/// what was expected for a value of the wrong type or one the table refuses, for local-slope
/// settings that local_slope_problem refuses, and for a version newer than this build's.
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
