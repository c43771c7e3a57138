// SPDX-License-Identifier: BSD-3-Clause
// The MPI handshake of ComIn and YAC: how the programs of one MPMD job (a model, its plugins'
// external processes, a coupler) find each other. Every process of a communicator names the
// groups it belongs to; each group becomes a communicator of the processes that named it.
//
// finecast's implementation of the protocol (version 1, as ComIn 0.3 speaks it), so that
// finecast-host, finecast-replay and finecast-trainer take part in the same handshakes as ICON,
// ComIn's comin_replay and any other external process:
//   1. MPI_Allreduce(MIN) of the version (1) over the communicator;
//   2. in rounds: the lowest rank with a group not yet created broadcasts that group's name
//      (MPI_Bcast of its length as an int, then of its characters), and every process splits the
//      communicator (colour 0 when it named that group, else MPI_UNDEFINED; key = its rank);
//   3. the rounds end when no process has a group left.
// ICON and comin_replay first split MPI_COMM_WORLD with their own name and "comin"; ComIn then
// splits the "comin" communicator with the plugins' `comm` names and "comin_host_<component>".
#pragma once

#include <mpi.h>

#include <string>
#include <vector>

namespace finecast::coupling {

/// The group ComIn's hosts and their external processes join in MPI_COMM_WORLD.
inline constexpr const char* kCominGroup = "comin";
/// The group ComIn's host ranks form among the "comin" communicator (component "atmo").
inline constexpr const char* kCominHostGroup = "comin_host_atmo";

/// Collective over `comm`: one new communicator per name in `groups` (the processes of `comm`
/// that named it, in the order of their ranks in `comm`), in the order of `groups`. The caller
/// frees them. ConfigError for an empty or repeated name; MpiError when MPI fails.
std::vector<MPI_Comm> mpi_handshake(MPI_Comm comm, const std::vector<std::string>& groups);

}  // namespace finecast::coupling
