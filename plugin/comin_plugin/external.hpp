// SPDX-License-Identifier: BSD-3-Clause
// train.placement: external. The trainer group runs as a program of its own, finecast-trainer,
// started in the host's MPI job (`mpiexec -n 64 icon : -n 4 finecast-trainer --comm finecast`,
// or a SLURM heterogeneous job), joined to the plugin's communicator through ComIn's MPI
// handshake as ComIn's external processes are. Each finecast-trainer process loads this same
// plugin library and runs the same trainer code as an in-host trainer rank; it owns no host
// cells, and the host's first rank tells the trainers what the host does (a coupling step at a
// model time, its restart, the end of the run), so that they join each step's collectives.
//
// The plugin communicator then holds the host's ranks and the trainers:
//   - setup: every rank says whether it is external (MPI_Allgather); the host's first rank sends
//     the trainers the resolved config itself (its YAML text: a trainer never reads a config
//     file of its own, so it cannot disagree with the host), the host's working directory
//     (relative paths in the config are the host's), and what only ComIn knows (the domain's
//     size, the target field's units and names);
//   - every call of the coupling entry point on the coupled domain, the host's restart and
//     EP_DESTRUCTOR: one event (MPI_Bcast of 68 bytes) from the host's first rank to the trainers.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <string>
#include <vector>

#include "plugin/comin_plugin/plugin_comm.hpp"
#include "plugin/config.hpp"

namespace finecast::plugin {

class PluginState;

/// On a finecast-trainer: the config the host sent, its relative paths (grid.file,
/// sample.output, checkpoint.dir, checkpoint.resume) made absolute from the host's working
/// directory. A copy of the config file the trainer finds itself (the options' path, from its own
/// working directory) is ignored; a warning names every key where it differs from the host's.
Config host_config(const HostFacts& facts);

/// What the host does, as the external trainers learn it.
enum class HostEvent : int32_t { kStep = 1, kRestart = 2, kFinish = 3 };

/// On the host's first rank, when external trainers exist: tells them the host is at `event`
/// (model time `datetime`). No-op everywhere else.
void announce(const PluginState& s, HostEvent event, const std::string& datetime);

/// The whole life of a finecast-trainer process once it has its plugin communicator (a Fortran
/// handle, from the handshake): set-up with the host's ranks, then every host event until the
/// end of the run. Returns 0, or 1 after an error (the MPI job is aborted first when the host's
/// ranks could otherwise wait for this process).
int run_external_trainer(MPI_Comm plugin_comm);

}  // namespace finecast::plugin
