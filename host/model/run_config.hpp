// SPDX-License-Identifier: BSD-3-Clause
// finecast-host's run file (YAML): grid, time stepping, decomposition and the plugin list.
#pragma once

#include <string>
#include <vector>

#include "host/comin/host.hpp"
#include "host/model/decomposition.hpp"

namespace finecast::host {

/// One child domain of the run (ICON's nest, parent domain 1): a limited-area grid file inside
/// domain 1's grid, decomposed and computed like domain 1 (host/model/nests.hpp).
struct NestSpec {
  std::string grid;  ///< its ICON grid file (finecast-grid --write-icon-grid --region writes one)
};

/// Every key of the run file, with its default (docs/host.md has the table).
struct HostRunConfig {
  std::string path;  ///< the run file itself
  std::string grid = "/usr/share/ncarg/data/nug/triangular_grid_ICON.nc";
  std::string orography = "/usr/share/ferret-vis/data/etopo5.cdf";
  std::string orography_variable = "ROSE";
  std::string start = "1979-01-01T00:00:00";
  /// The experiment's start, when this run is one chunk of it (a restart); "" = `start`. The
  /// fields depend on the time since the experiment's start.
  std::string experiment_start;
  std::string experiment_stop;  ///< the experiment's end ("" = the end of this run)
  double dt = 1800.0;           ///< seconds per step
  int steps = 200;
  int output_every = 1;  ///< steps between EP_ATM_WRITE_OUTPUT_BEFORE/AFTER
  /// Steps between the host's restarts (EP_ATM_CHECKPOINT_BEFORE/AFTER, as ICON's restart
  /// files); 0 = at the end of the run only. The last step always writes one.
  int restart_every = 0;
  bool restart_run = false;  ///< this run continues an earlier one (ComIn's lrestartrun)
  int nproma = 32;
  int nlev = 10;  ///< full levels of the 3-D fields (temp, pres)
  Decomposition decomposition = Decomposition::kLatBands;
  int progress_every = 0;  ///< steps between progress lines; 0 = about ten lines per run
  /// Minimum wall time of one step. The toy model computes a step in ~1 ms, a production
  /// model in seconds; a pause up to this length gives the demo a realistic ratio of model
  /// time to training time (the pause sleeps, so it leaves the cores to the trainer, as a
  /// GPU-resident model would). 0 = as fast as possible.
  double step_seconds = 0.0;
  /// CPU work of one step on every rank: the integration spins until its thread has used this
  /// much CPU time, so that a step takes longer when something else holds its core (a plugin's
  /// training thread, e.g.); what step_seconds's sleep cannot show. 0 = none.
  double step_work_seconds = 0.0;
  /// Keep a device copy of every field, as ICON built for GPUs does (a CUDA build only): plugins
  /// may then read them with COMIN_FLAG_DEVICE, and ComIn copies those they read without it.
  bool device_fields = false;
  std::vector<comin::PluginSpec> plugins;
  /// Domains 2, 3, ... in ICON's order, each a child of domain 1; empty: domain 1 alone.
  std::vector<NestSpec> nests;
  std::string comin_namelist;  ///< ICON &comin_nml file; replaces `plugins` when set
};

/// Loads and checks a run file: unknown keys, wrong types and bad values throw ConfigError
/// naming the file, line and key (and the allowed keys).
HostRunConfig load_host_run_config(const std::string& path);

/// Same from YAML text; `path` is only used in messages.
HostRunConfig parse_host_run_config(const std::string& text, const std::string& path);

}  // namespace finecast::host
