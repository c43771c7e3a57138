// SPDX-License-Identifier: BSD-3-Clause
// Start-up: the primary constructor (comin_main) and the secondary constructor.
#pragma once

#include <string>

#include "comin.h"
#include "plugin/comin_plugin/plugin_comm.hpp"
#include "plugin/config.hpp"

namespace finecast::plugin {

class PluginState;

/// comin_main: reads the options string ("CONFIG.yaml [key.path=value ...]"), validates the
/// config, creates the plugin state, requests the write-back variable. A second instance of the
/// plugin in one process is a ConfigError. Returns the coupling entry point.
t_comin_entry_point primary_constructor();

/// EP_SECONDARY_CONSTRUCTOR: communicator, host fields (checked against the host's variable
/// list, levels and types), the redistribution; on the trainer rank the grid, the model (fresh or
/// resumed), the buffer. Errors stop the run (start-up errors always do).
void secondary_constructor();

/// The part of the secondary constructor that the host's ranks and finecast-trainer processes
/// share (`pc` from join_plugin_comm, `facts` shared by share_host_facts): the trainer ranks, the
/// host fields (none on a finecast-trainer), on trainers the grid, model and
/// buffer, the redistribution. Collective over the plugin communicator. `earlier_failure` (""
/// = none) is this rank's failure before (the host ranks' own checks): start-up failures are
/// agreed on by all ranks and reported once (agree_or_stop).
void setup_coupling(PluginState& s, PluginComm pc, const HostFacts& facts, const std::string& earlier_failure = "");

/// MPI must allow what finecast does with threads: train.async with a group of trainer ranks in
/// this process (train.ranks > 1; the host's processes, or with `external_process` those of
/// finecast-trainer) needs MPI_THREAD_MULTIPLE; one trainer rank trains asynchronously at any
/// thread level. ConfigError naming the keys otherwise.
void check_mpi_thread_level(const Config& cfg, bool external_process);

}  // namespace finecast::plugin
