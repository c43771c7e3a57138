// SPDX-License-Identifier: BSD-3-Clause
// MPI gathering under mpiexec (1-4 ranks): any decomposition reassembles bitwise to the serial
// field; halo cells are ignored; rank 0 need not own anything; scatter is the inverse.
#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <random>

#include "comin.h"
#include "common/error.hpp"
#include "coupling/mpi/gatherer.hpp"
#include "coupling/mpi/owned_cells.hpp"

namespace finecast::coupling {
namespace {

int world_rank() {
  int r = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  return r;
}
int world_size() {
  int s = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &s);
  return s;
}

// The serial field: distinct, non-trivial float bit patterns per (field, cell).
float value(int field, int64_t g) {
  return static_cast<float>(std::sin(0.001 * static_cast<double>(g) + field) * 300.0 + 1e-3 * static_cast<double>(g));
}

enum class Layout { kContiguous, kRoundRobin, kRandom, kRandomRootEmpty };

// owner[g] for every global cell; identical on every rank (fixed seed).
std::vector<int> owners(int64_t n_global, int size, Layout layout, uint64_t seed) {
  std::vector<int> owner(static_cast<size_t>(n_global));
  std::mt19937_64 rng(seed);
  for (int64_t g = 0; g < n_global; ++g) {
    switch (layout) {
      case Layout::kContiguous:
        owner[g] = static_cast<int>(g * size / n_global);
        break;
      case Layout::kRoundRobin:
        owner[g] = static_cast<int>(g % size);
        break;
      case Layout::kRandom:
        owner[g] = static_cast<int>(rng() % size);
        break;
      case Layout::kRandomRootEmpty:
        owner[g] = size == 1 ? 0 : 1 + static_cast<int>(rng() % (size - 1));
        break;
    }
  }
  return owner;
}

// One rank's host view: its owned cells in a shuffled local order, with halo cells (owned by
// others) interleaved, stored in a blocked (nproma, nlev, nblks) array as ICON does.
struct HostRank {
  static constexpr int kNproma = 7, kLevels = 2;
  std::vector<int> decomp, glb;  // per local cell
  std::vector<double> field;     // kNproma x kLevels x nblks, Fortran order
  int n_local = 0, nblks = 0;
  int shape[5] = {kNproma, kLevels, 0, 1, 1};
  int sem[5] = {COMIN_DIM_SEMANTICS_NPROMA, COMIN_DIM_SEMANTICS_LEVEL, COMIN_DIM_SEMANTICS_BLOCK,
                COMIN_DIM_SEMANTICS_UNUSED, COMIN_DIM_SEMANTICS_UNUSED};

  HostRank(const std::vector<int>& owner, int rank, int field_id, uint64_t seed) {
    std::mt19937_64 rng(seed * 31 + static_cast<uint64_t>(rank));
    std::vector<int64_t> cells;
    for (size_t g = 0; g < owner.size(); ++g)
      if (owner[g] == rank || rng() % 10 == 0) cells.push_back(static_cast<int64_t>(g));  // ~10% halo
    std::shuffle(cells.begin(), cells.end(), rng);
    n_local = static_cast<int>(cells.size());
    nblks = std::max(1, (n_local + kNproma - 1) / kNproma);
    shape[2] = nblks;
    field.assign(static_cast<size_t>(kNproma) * kLevels * nblks, -7777.0);
    for (int j = 0; j < n_local; ++j) {
      const int64_t g = cells[j];
      decomp.push_back(owner[g] == rank ? 0 : 1);
      glb.push_back(static_cast<int>(g + 1));
      // Level 1 holds the field; a halo cell holds garbage that must not reach the result.
      const size_t off = static_cast<size_t>(j % kNproma + kNproma * (1 + kLevels * (j / kNproma)));
      field[off] = owner[g] == rank ? value(field_id, g) : 1e30;
      field[off - kNproma] = -1e30;  // level 0: must not be read either
    }
  }
  OwnedCells owned() const { return owned_cells(shape, sem, kNproma, n_local, decomp.data(), glb.data(), 1); }
};

struct Case {
  Layout layout;
  uint64_t seed;
  int root;  // -1 = last rank
};

class GatherTest : public ::testing::TestWithParam<Case> {};

TEST_P(GatherTest, BitwiseEqualToSerialField) {
  const Case c = GetParam();
  const int rank = world_rank(), size = world_size();
  const int root = c.root < 0 ? size - 1 : c.root;
  const int64_t n_global = 1237;  // not a multiple of any rank count or nproma
  const auto owner = owners(n_global, size, c.layout, c.seed);
  if (c.layout == Layout::kRandomRootEmpty && size > 1) {
    ASSERT_EQ(std::count(owner.begin(), owner.end(), 0), 0);
  }

  // Three fields, gathered one at a time and all together.
  std::vector<HostRank> hosts;
  for (int f = 0; f < 3; ++f) hosts.emplace_back(owner, rank, f, c.seed);
  const OwnedCells cells = hosts[0].owned();
  for (int f = 1; f < 3; ++f) ASSERT_EQ(hosts[f].owned().global_index, cells.global_index);
  const int64_t n_owned = cells.size();
  EXPECT_EQ(n_owned, std::count(owner.begin(), owner.end(), rank));

  Gatherer gatherer(MPI_COMM_WORLD, root, cells.global_index, n_global);
  EXPECT_EQ(gatherer.is_root(), rank == root);
  std::vector<float> local(3 * n_owned);
  for (int f = 0; f < 3; ++f) pack(hosts[f].field.data(), cells, local.data() + f * n_owned);

  std::vector<float> serial(3 * n_global);
  for (int f = 0; f < 3; ++f)
    for (int64_t g = 0; g < n_global; ++g) serial[f * n_global + g] = value(f, g);

  std::vector<float> one(gatherer.is_root() ? n_global : 0, -1.0f);
  gatherer.gather(local.data() + n_owned,
                  gatherer.is_root() ? one.data() : nullptr);  // field 1 alone
  std::vector<float> all(gatherer.is_root() ? 3 * n_global : 0, -1.0f);
  gatherer.gather(3, local.data(), gatherer.is_root() ? all.data() : nullptr);
  if (gatherer.is_root()) {
    EXPECT_EQ(std::memcmp(one.data(), serial.data() + n_global, sizeof(float) * n_global), 0);
    EXPECT_EQ(std::memcmp(all.data(), serial.data(), sizeof(float) * 3 * n_global), 0);
  }
  // A second step with the same gatherer (buffers reused).
  for (auto& v : local) v += 1.0f;
  gatherer.gather(3, local.data(), gatherer.is_root() ? all.data() : nullptr);
  if (gatherer.is_root()) {
    for (int64_t i = 0; i < 3 * n_global; ++i) ASSERT_EQ(all[i], serial[i] + 1.0f) << i;
  }
}

INSTANTIATE_TEST_SUITE_P(Decompositions, GatherTest,
                         ::testing::Values(Case{Layout::kContiguous, 1, 0}, Case{Layout::kRoundRobin, 2, 0},
                                           Case{Layout::kRandom, 3, 0}, Case{Layout::kRandom, 4, -1},
                                           Case{Layout::kRandom, 5, 0}, Case{Layout::kRandomRootEmpty, 6, 0}));

TEST(Gatherer, ScatterIsTheInverseAndWriteBackSkipsHalos) {
  const int rank = world_rank(), size = world_size();
  const int64_t n_global = 999;
  const auto owner = owners(n_global, size, Layout::kRandomRootEmpty, 11);
  HostRank host(owner, rank, 0, 11);
  const OwnedCells cells = host.owned();
  Gatherer gatherer(MPI_COMM_WORLD, 0, cells.global_index, n_global);

  std::vector<float> global;
  if (gatherer.is_root()) {
    global.resize(2 * n_global);
    for (int64_t g = 0; g < 2 * n_global; ++g) global[g] = value(5, g);
  }
  std::vector<float> local(2 * cells.size(), -1.0f);
  gatherer.scatter(2, gatherer.is_root() ? global.data() : nullptr, local.data());
  for (int64_t i = 0; i < cells.size(); ++i) {
    ASSERT_EQ(local[i], value(5, cells.global_index[i]));
    ASSERT_EQ(local[cells.size() + i], value(5, n_global + cells.global_index[i]));
  }
  // Write back into the host array: owned level-1 values change, halo and level 0 do not.
  std::vector<double> before = host.field;
  unpack(local.data(), cells, host.field.data());
  size_t changed = 0;
  for (size_t i = 0; i < before.size(); ++i) changed += before[i] != host.field[i];
  EXPECT_LE(changed, static_cast<size_t>(cells.size()));
  for (int j = 0; j < host.n_local; ++j) {
    const size_t off =
        static_cast<size_t>(j % HostRank::kNproma + HostRank::kNproma * (1 + 2 * (j / HostRank::kNproma)));
    if (host.decomp[j] != 0)
      EXPECT_EQ(host.field[off], 1e30);
    else
      EXPECT_EQ(host.field[off], static_cast<double>(value(5, host.glb[j] - 1)));
  }
  // Round trip: gather what was scattered.
  std::vector<float> back(gatherer.is_root() ? n_global : 0);
  gatherer.gather(local.data(), gatherer.is_root() ? back.data() : nullptr);
  if (gatherer.is_root()) {
    EXPECT_EQ(std::memcmp(back.data(), global.data(), sizeof(float) * n_global), 0);
  }
}

TEST(Gatherer, InconsistentDecompositionFailsOnEveryRank) {
  const int rank = world_rank(), size = world_size();
  const int64_t n_global = 100;
  // Every rank claims cell 0 as well as its round-robin share: more cells than the field has.
  std::vector<int64_t> mine;
  for (int64_t g = 0; g < n_global; ++g)
    if (g % size == rank) mine.push_back(g);
  mine.push_back(0);
  try {
    Gatherer g(MPI_COMM_WORLD, 0, mine, n_global);
    ADD_FAILURE() << "accepted a decomposition with a cell owned twice";
  } catch (const MpiError& e) {
    EXPECT_NE(std::string(e.what()).find("inconsistent decomposition"), std::string::npos) << e.what();
  }
  // Right count, but one index duplicated and one missing (only possible with several ranks).
  std::vector<int64_t> dup;
  for (int64_t g = 0; g < n_global; ++g)
    if (g % size == rank) dup.push_back(g == n_global - 1 && size > 1 ? 0 : g);
  if (size == 1) dup.back() = n_global;  // out of range instead
  try {
    Gatherer g(MPI_COMM_WORLD, 0, dup, n_global);
    ADD_FAILURE() << "accepted an inconsistent decomposition";
  } catch (const MpiError& e) {
    const std::string what = e.what();
    EXPECT_TRUE(what.find("is owned by rank") != std::string::npos || what.find("outside 0..99") != std::string::npos)
        << what;
  }
  // The communicator is still usable afterwards: no rank was left inside a collective.
  int one = 1, total = 0;
  MPI_Allreduce(&one, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  EXPECT_EQ(total, size);
}

}  // namespace
}  // namespace finecast::coupling
