// SPDX-License-Identifier: BSD-3-Clause
// The plugin's whole state. ComIn callbacks take no arguments, so it lives in exactly one
// PluginContext, reached through plugin_context().
#pragma once

#include <mpi.h>

#include <memory>
#include <string>
#include <vector>

#include "comin.h"
#include "coupling/buffer/rolling_buffer.hpp"
#include "coupling/grid/patch_map.hpp"
#include "coupling/grid/patches.hpp"
#include "coupling/mpi/gatherer.hpp"
#include "coupling/mpi/owned_cells.hpp"
#include "plugin/comin_plugin/output.hpp"
#include "plugin/comin_plugin/training_session.hpp"
#include "plugin/config.hpp"
#include "trainer/downscaler.hpp"

namespace finecast::plugin {

/// Wall-clock seconds spent per activity, for the summary at EP_DESTRUCTOR.
struct Timers {
  double gather = 0;      ///< pack + collective gather (every rank)
  double patches = 0;     ///< coarsening, patch extraction, buffer insert (trainer rank)
  double train_wait = 0;  ///< time the host waited for training (sync mode, or final join)
  double sample = 0;      ///< sampling + output + write-back
  double checkpoint = 0;
};

/// One host variable the plugin reads or writes, and where this rank's owned cells sit in it.
struct HostField {
  std::string name;
  int level = 0;  ///< 1-based level of a 3-D variable (1 = model top); 0 = a 2-D variable
  int datatype = COMIN_VAR_DATATYPE_DOUBLE;
  t_comin_var_handle* handle = nullptr;
  coupling::OwnedCells owned;
};

struct PluginContext {
  // ---- set in comin_main (every rank) ----
  Config config;
  int plugin_id = 0;    ///< ComIn's id of this plugin instance (0 = comin_main not called yet)
  int coupling_ep = 0;  ///< ComIn id of config.coupling.entry_point
  int host_rank = 0;

  // ---- set in the secondary constructor (every rank) ----
  MPI_Comm comm = MPI_COMM_NULL;  ///< duplicate of the host or plugin communicator
  int rank = 0, size = 1;
  bool is_trainer = false;
  std::vector<HostField> fields;  ///< config.fields, then patch.orography when set
  HostField write_back;           ///< sample.write_back (handle null when unused)
  std::unique_ptr<coupling::Gatherer> gatherer;
  std::vector<float> local_values;  ///< [n_fields][n_owned] packed per step

  // ---- trainer rank only ----
  coupling::PatchMap map;
  coupling::PatchOptions patch_options;
  std::vector<float> global_values;  ///< [n_inputs][n_fine]: fields gathered per step, orography once
  std::vector<const float*> field_pointers;  ///< into global_values, one per config field
  coupling::Patches patches;         ///< the latest step's patches (also what sampling uses)
  std::unique_ptr<coupling::RollingBuffer> buffer;
  std::unique_ptr<trainer::Downscaler> model;
  TrainingSession session;
  bool model_ready = false;  ///< a trained (or resumed) model has been published for sampling
  coupling::OutputGrid output_grid;     ///< the fine grid, for the NetCDF output
  coupling::VarAttributes output_attrs;  ///< units/long_name of the downscaled field
  std::string resumed_from;              ///< checkpoint the run started from ("" = fresh)
  std::unique_ptr<Output> output;         ///< opened at the first sampling
  std::vector<float> samples;             ///< [n_coarse][members][P] scratch
  std::vector<float> ensemble_mean;       ///< [n_fine] scratch
  bool training_due = false;              ///< a session is due but one was still in flight
  bool unsampled_weights = false;         ///< a session finished after the latest sampling

  // ---- progress (every rank) ----
  long long calls = 0;  ///< calls of the coupling entry point
  long long steps = 0;  ///< coupling steps done (every `coupling.every`-th call)
  long long sessions = 0;
  long long samplings = 0;
  std::string datetime;  ///< model time of the latest coupling step
  bool checkpoint_due = false;
  Timers timers;

  /// This rank caught an error under on_error: disable (set by guard()).
  bool failed = false;
  /// Every rank has agreed to stop working (no more collectives).
  bool stopped = false;

  /// The number of host variables read per step (fields, plus orography when configured).
  int n_inputs() const { return static_cast<int>(fields.size()); }
};

/// The single plugin state of this process.
PluginContext& plugin_context();

}  // namespace finecast::plugin
