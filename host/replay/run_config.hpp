// SPDX-License-Identifier: BSD-3-Clause
// finecast-replay's run file (YAML): input files and variables, grid, time range, replay epochs,
// decomposition and the plugin list.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "host/comin/host.hpp"

namespace finecast::host::replay {

/// One NetCDF variable replayed into one host variable.
struct ReplayVariable {
  std::string var;     ///< name in the files
  std::string name;    ///< host variable name (what the plugin's `fields` lists); default: var
  int level = 0;       ///< 0-based index of the level dimension when the variable has one
  double max_abs = 0;  ///< values with |value| above it are missing (implausible); 0 = no bound
  /// Overrides the plausibility table for this variable: "LO,HI" or "none" ("" = the table's
  /// range for its units and standard_name; coupling/io/plausibility.hpp).
  std::string plausible;
};

/// A field read once from its own file and held constant (e.g. the surface height).
struct StaticVariable {
  std::string file;
  ReplayVariable variable;
};

/// A time-step bound: a 0-based index into the concatenated steps of the files, or an ISO 8601
/// date matched against the files' time coordinate (the first step at or after it for `start`,
/// the last at or before it for `stop`).
struct StepBound {
  bool given = false;
  bool is_date = false;
  long long index = 0;
  std::string date;
};

/// Every key of the run file, with its default (docs/offline.md has the table).
struct ReplayRunConfig {
  std::string path;                ///< the run file itself
  std::vector<std::string> files;  ///< file names or glob patterns, concatenated in time
  std::vector<ReplayVariable> variables;
  std::vector<StaticVariable> static_variables;
  std::string grid_type = "latlon";  ///< latlon | icon
  std::string grid_file;             ///< icon: the ICON grid file (required)
  StepBound start, stop;             ///< inclusive range; default: every step
  int stride = 1;                    ///< replay every stride-th step of the range
  int epochs = 1;                    ///< passes over the selected steps
  int nproma = 32;
  std::string decomposition = "round_robin";  ///< round_robin | lat_bands | random
  uint64_t seed = 1;                          ///< permutation seed of `random`
  int progress_every = 0;                     ///< steps between plain progress lines; 0 = about 20 per run
  std::vector<comin::PluginSpec> plugins;
  std::string comin_namelist;  ///< ICON &comin_nml file; replaces `plugins` when set
};

/// Loads and checks a run file: unknown keys, wrong types and bad values throw ConfigError
/// naming the file, line and key (and the allowed keys or values).
ReplayRunConfig load_replay_run_config(const std::string& path);

/// Same from YAML text; `path` is only used in messages.
ReplayRunConfig parse_replay_run_config(const std::string& text, const std::string& path);

}  // namespace finecast::host::replay
