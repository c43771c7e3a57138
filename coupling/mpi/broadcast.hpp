// SPDX-License-Identifier: BSD-3-Clause
// MPI_Bcast of a string: its length (an int), then its characters. ComIn's handshake sends its
// group names exactly so (coupling/mpi/handshake.hpp).
#pragma once

#include <mpi.h>

#include <string>

#include "coupling/error.hpp"

namespace finecast::coupling {

/// Collective over `comm`: every rank ends with `root`'s `text`.
inline void broadcast_string(std::string& text, int root, MPI_Comm comm) {
  int rank = 0;
  CHECK_MPI(MPI_Comm_rank(comm, &rank));
  int length = rank == root ? static_cast<int>(text.size()) : 0;
  CHECK_MPI(MPI_Bcast(&length, 1, MPI_INT, root, comm));
  text.resize(static_cast<size_t>(length));
  CHECK_MPI(MPI_Bcast(text.data(), length, MPI_CHAR, root, comm));
}

}  // namespace finecast::coupling
