// SPDX-License-Identifier: BSD-3-Clause
// Where finecast's work runs: the trainer ranks among the plugin communicator's ranks, the node's
// cores and ranks, and the placement report.
#pragma once

#include <mpi.h>

#include "plugin/comin_plugin/plugin_comm.hpp"
#include "plugin/comin_plugin/plugin_state.hpp"

namespace finecast::plugin {

/// Ranks of `comm` on this node. Collective: every rank must call it.
int ranks_on_this_node(MPI_Comm comm);

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
