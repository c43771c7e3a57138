// SPDX-License-Identifier: BSD-3-Clause
#include "coupling/mpi/handshake.hpp"

#include <algorithm>
#include <climits>

#include "coupling/error.hpp"
#include "coupling/mpi/broadcast.hpp"

namespace finecast::coupling {
namespace {

constexpr int kProtocolVersion = 1;

/// The first group of this process without a communicator yet; groups.size() when none.
size_t next_open(const std::vector<MPI_Comm>& comms) {
  return static_cast<size_t>(std::find(comms.begin(), comms.end(), MPI_COMM_NULL) - comms.begin());
}

}  // namespace

std::vector<MPI_Comm> mpi_handshake(MPI_Comm comm, const std::vector<std::string>& groups) {
  for (size_t i = 0; i < groups.size(); ++i) {
    if (groups[i].empty() || groups[i].size() > static_cast<size_t>(INT_MAX))
      throw ConfigError("MPI handshake: group name " + std::to_string(i + 1) + " is empty");
    if (std::find(groups.begin(), groups.begin() + static_cast<std::ptrdiff_t>(i), groups[i]) !=
        groups.begin() + static_cast<std::ptrdiff_t>(i))
      throw ConfigError("MPI handshake: group \"" + groups[i] + "\" is named twice");
  }
  int is_inter = 0;
  CHECK_MPI(MPI_Comm_test_inter(comm, &is_inter));
  if (is_inter) throw ConfigError("MPI handshake: an inter-communicator cannot be split into groups");

  int version = kProtocolVersion;
  CHECK_MPI(MPI_Allreduce(MPI_IN_PLACE, &version, 1, MPI_INT, MPI_MIN, comm));
  if (version != kProtocolVersion)
    throw ConfigError("MPI handshake: another process speaks protocol version " + std::to_string(version) +
                      ", finecast speaks version " + std::to_string(kProtocolVersion));

  int rank = 0, size = 1;
  CHECK_MPI(MPI_Comm_rank(comm, &rank));
  CHECK_MPI(MPI_Comm_size(comm, &size));
  std::vector<MPI_Comm> comms(groups.size(), MPI_COMM_NULL);
  for (;;) {
    const size_t open = next_open(comms);
    int root = open < groups.size() ? rank : size;
    CHECK_MPI(MPI_Allreduce(MPI_IN_PLACE, &root, 1, MPI_INT, MPI_MIN, comm));
    if (root == size) break;  // every process has all its groups
    // The name root broadcasts: its next open group.
    std::string name = root == rank ? groups[open] : std::string();
    broadcast_string(name, root, comm);
    const auto it = std::find(groups.begin(), groups.end(), name);
    const bool member = it != groups.end();
    const size_t index = static_cast<size_t>(it - groups.begin());
    if (member && comms[index] != MPI_COMM_NULL)
      throw InternalError("MPI handshake: group \"" + name + "\" was announced twice");
    MPI_Comm group = MPI_COMM_NULL;
    CHECK_MPI(MPI_Comm_split(comm, member ? 0 : MPI_UNDEFINED, rank, &group));
    if (member) comms[index] = group;
  }
  return comms;
}

}  // namespace finecast::coupling
