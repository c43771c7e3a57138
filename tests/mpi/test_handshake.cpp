// SPDX-License-Identifier: BSD-3-Clause
// ComIn's MPI handshake as finecast speaks it (coupling/mpi/handshake.hpp), under mpiexec (1-4
// ranks): processes that name different groups, in different orders, get one communicator per
// group holding exactly the processes that named it, ordered by their rank. Interoperation with
// ComIn's own implementation is tested against comin_replay (tests/plugin/test_real_comin.cpp).
#include <gtest/gtest.h>
#include <mpi.h>

#include <string>
#include <vector>

#include "coupling/error.hpp"
#include "coupling/mpi/handshake.hpp"

namespace finecast::coupling {
namespace {

/// The ranks of `comm` as ranks of MPI_COMM_WORLD, in the order of `comm`.
std::vector<int> world_ranks(MPI_Comm comm) {
  int n = 0;
  MPI_Comm_size(comm, &n);
  MPI_Group group, world;
  MPI_Comm_group(comm, &group);
  MPI_Comm_group(MPI_COMM_WORLD, &world);
  std::vector<int> local(static_cast<size_t>(n)), global(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) local[static_cast<size_t>(i)] = i;
  MPI_Group_translate_ranks(group, n, local.data(), world, global.data());
  MPI_Group_free(&group);
  MPI_Group_free(&world);
  return global;
}

TEST(Handshake, EveryGroupHoldsExactlyTheProcessesThatNamedIt) {
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  // Like a model and its external processes: even ranks are the "model" (and name the plugin
  // group last), odd ranks are external (and name the plugin group first); everyone is "comin".
  const bool model = rank % 2 == 0;
  const std::vector<std::string> groups = model ? std::vector<std::string>{"model", kCominGroup, "plugin"}
                                                : std::vector<std::string>{"plugin", kCominGroup};
  std::vector<MPI_Comm> comms = mpi_handshake(MPI_COMM_WORLD, groups);
  ASSERT_EQ(comms.size(), groups.size());
  std::vector<int> models, all, plugin;
  for (int r = 0; r < size; ++r) {
    all.push_back(r);
    plugin.push_back(r);
    if (r % 2 == 0) models.push_back(r);
  }
  for (size_t i = 0; i < groups.size(); ++i) {
    ASSERT_NE(comms[i], MPI_COMM_NULL) << groups[i];
    const std::vector<int> expected = groups[i] == "model" ? models : groups[i] == "plugin" ? plugin : all;
    EXPECT_EQ(world_ranks(comms[i]), expected) << groups[i];
    MPI_Comm_free(&comms[i]);
  }
}

TEST(Handshake, ProcessesWithoutGroupsTakePartAndGetNone) {
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  // Rank 0 names nothing (ComIn's mpi_handshake_dummy); the others form "rest".
  std::vector<MPI_Comm> comms =
      mpi_handshake(MPI_COMM_WORLD, rank == 0 ? std::vector<std::string>{} : std::vector<std::string>{"rest"});
  if (rank == 0) {
    EXPECT_TRUE(comms.empty());
    return;
  }
  ASSERT_EQ(comms.size(), 1u);
  int n = 0;
  MPI_Comm_size(comms[0], &n);
  EXPECT_EQ(n, size - 1);
  MPI_Comm_free(&comms[0]);
}

TEST(Handshake, ARepeatedOrEmptyNameIsRefusedBeforeAnyCollective) {
  EXPECT_THROW(mpi_handshake(MPI_COMM_WORLD, {"a", "b", "a"}), ConfigError);
  EXPECT_THROW(mpi_handshake(MPI_COMM_WORLD, {""}), ConfigError);
}

}  // namespace
}  // namespace finecast::coupling
