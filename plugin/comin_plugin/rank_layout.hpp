// SPDX-License-Identifier: BSD-3-Clause
// Where finecast's work runs: the trainer ranks among the plugin communicator's ranks, the node's
// cores and ranks, and the placement report.
#pragma once

#include <mpi.h>

#include <vector>

#include "plugin/comin_plugin/plugin_comm.hpp"
#include "plugin/comin_plugin/plugin_state.hpp"

namespace finecast::plugin {

/// This node's share of the plugin's communicator, as this rank sees it.
struct NodeLayout {
  int ranks = 1;  ///< ranks of the communicator on this node
  /// With `async_trainer`: the CPUs of this node that no rank of the communicator may run on
  /// (the launcher bound them elsewhere), this trainer's share (free_cpus.hpp); else empty.
  std::vector<int> free_cpus;
};

/// The ranks of `comm` on this node and the CPUs each may run on (the union over its threads'
/// affinities). Collective: every rank must call it.
NodeLayout node_layout(MPI_Comm comm, bool async_trainer);

/// This node's cores (at least 1).
int node_cores();

/// The trainer ranks: the first at coupling.trainer_rank, the others spread evenly over the
/// communicator (across nodes) or packed after it; with train.placement external the
/// finecast-trainer processes. The configuration errors of the layout name the keys.
void choose_trainers(const Config& cfg, const PluginComm& pc, CouplingState& c);

/// Collective over the plugin's communicator, after the trainers built their models: every rank
/// sends its placement to the lead trainer, which logs placement_report.
void report_placement(const PluginState& s);

}  // namespace finecast::plugin
