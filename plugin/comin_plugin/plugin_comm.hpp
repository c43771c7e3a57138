// SPDX-License-Identifier: BSD-3-Clause
// The plugin's communicator as every rank joins it (the host's ranks and, with train.placement
// external, the finecast-trainer processes; external.hpp), and the facts about the host that only
// ComIn knows, which the host's first rank shares with the finecast-trainer processes.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <string>
#include <vector>

#include "coupling/io/nc_metadata.hpp"

namespace finecast::plugin {

/// A rank's view of the plugin communicator.
struct PluginComm {
  MPI_Comm comm = MPI_COMM_NULL;    ///< a duplicate; MPI errors come back as codes
  int rank = 0, size = 1;           ///< in comm
  std::vector<int> external_ranks;  ///< ranks of finecast-trainer processes, ascending
  int host_root = 0;                ///< the host's first rank: it speaks for the host
  MPI_Comm events = MPI_COMM_NULL;  ///< host_root (rank 0 here) and the external ranks; none without them
};

/// Collective over `base` (every host rank and every finecast-trainer process of it): duplicates
/// it and learns which ranks are external.
PluginComm join_plugin_comm(MPI_Comm base, bool external);

/// What the host's ranks learn from ComIn and the external trainers need.
struct HostFacts {
  std::string options;               ///< the plugin's options: the config path and overrides
  std::string config;                ///< the config the host's ranks run with, resolved (to_yaml)
  std::string working_dir;           ///< the host's: relative paths of the config start there
  int64_t n_global = 0;              ///< cells of the coupled domain
  int n_dom = 0;                     ///< the host's domains (ComIn's n_dom; the coupled one is coupling.domain)
  coupling::VarAttributes target;    ///< the downscaled field's units and names
  std::string exp_start, run_start;  ///< ComIn's simulation interval: a restarted run starts later
  std::string command;               ///< the host's command line (for the output's history)
};

/// From host_root to the external ranks over `events` (no-op on a plugin communicator without
/// them): `facts` is filled on the trainers.
void share_host_facts(const PluginComm& pc, HostFacts& facts);

}  // namespace finecast::plugin
