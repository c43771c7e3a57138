// SPDX-License-Identifier: BSD-3-Clause
// Patch-parallel redistribution under mpiexec (1-4 ranks): every trainer rank receives exactly
// the fine cells of its own patches, builds from them (and the allgathered coarse means) the same
// patches as the serial path, bitwise - context rings, a static covariate and the interpolated
// residual base included, which all reach into other trainers' patches; the reverse exchange brings every slot's value
// back to the rank that owns the cell. Trainer groups of 1, 2 and all ranks, several decompositions.
#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <random>

#include "coupling/grid/context_stencil.hpp"
#include "coupling/grid/icon_grid.hpp"
#include "coupling/grid/icon_hierarchy.hpp"
#include "coupling/grid/patches.hpp"
#include "coupling/mpi/redistribution.hpp"

namespace finecast::coupling {
namespace {

const char* kGrid = "/usr/share/ncarg/data/nug/triangular_grid_ICON.nc";

int world(int (*f)(MPI_Comm, int*)) {
  int v = 0;
  f(MPI_COMM_WORLD, &v);
  return v;
}

float value(int field, int64_t g) {
  return static_cast<float>(std::cos(0.0007 * static_cast<double>(g) * (field + 1)) * 40.0 + 250.0 + 1e-4 * g);
}

/// Contiguous, balanced patch ranges per trainer: trainer t owns [first(t), first(t+1)).
int64_t first_patch(int64_t n, int trainers, int t) { return n * t / trainers; }

struct Layout {
  int trainers;
  bool shuffled;  ///< owned cells in a random order on each rank, with a random owner per cell
};

class Redistribute : public ::testing::TestWithParam<Layout> {};

TEST_P(Redistribute, ShardPatchesEqualTheSerialPatchesBitwise) {
  const Layout setup = GetParam();
  const int rank = world(MPI_Comm_rank), size = world(MPI_Comm_size);
  const int trainers = std::min(setup.trainers, size);
  const IconGrid grid = read_icon_grid(kGrid);
  PatchMap map = icon_patch_map(grid, 1);  // 320 patches of 64 cells
  prepare_patch_map(map, 1, true);         // rings reach across shards, so does the interpolant
  const int64_t n = grid.n_cells;

  // Owners: contiguous or random (fixed seed, the same on every rank); local order shuffled.
  std::mt19937_64 rng(12345);
  std::vector<int64_t> owned;
  for (int64_t g = 0; g < n; ++g) {
    const int owner = setup.shuffled ? static_cast<int>(rng() % size) : static_cast<int>(g * size / n);
    if (owner == rank) owned.push_back(g);
  }
  if (setup.shuffled) std::shuffle(owned.begin(), owned.end(), std::mt19937_64(99 + rank));
  // Trainers spread over the ranks: rank r is trainer t when r == t * size / trainers.
  int trainer = -1;
  for (int t = 0; t < trainers; ++t)
    if (rank == t * size / trainers) trainer = t;
  std::vector<int64_t> slot_cells;
  int64_t first = 0, count = 0;
  if (trainer >= 0) {
    first = first_patch(map.n_coarse, trainers, trainer);
    count = first_patch(map.n_coarse, trainers, trainer + 1) - first;
    slot_cells.assign(map.fine_of_patch.begin() + first * map.patch_size,
                      map.fine_of_patch.begin() + (first + count) * map.patch_size);
  }
  Redistribution redist(MPI_COMM_WORLD, owned, slot_cells, n);
  ASSERT_EQ(redist.n_slots(), count * map.patch_size);
  // Messages (for the scaling benchmark): each has a sender and a receiver; one trainer with
  // contiguous owners receives one from every other rank, and each of them sends it one.
  int ends[2] = {redist.messages_sent(), redist.messages_received()};
  MPI_Allreduce(MPI_IN_PLACE, ends, 2, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  EXPECT_EQ(ends[0], ends[1]);
  if (trainers == 1 && !setup.shuffled) {
    EXPECT_EQ(redist.messages_sent(), trainer >= 0 ? 0 : 1);
    EXPECT_EQ(redist.messages_received(), trainer >= 0 ? size - 1 : 0);
  }

  // Two fields and a static covariate, packed [field][owned] as the plugin packs them.
  std::vector<float> local(3 * owned.size());
  for (int f = 0; f < 3; ++f)
    for (size_t i = 0; i < owned.size(); ++i) local[f * owned.size() + i] = value(f, owned[i]);
  std::vector<float> slots(static_cast<size_t>(3 * redist.n_slots()));
  redist.forward(3, local.data(), trainer >= 0 ? slots.data() : nullptr);
  const float* static_slots = slots.data() + 2 * redist.n_slots();

  // Coarse means of every patch, gathered from the trainers' shards (rank order = patch order).
  Patches shard;
  const PatchMap local_map = shard_map(map, first, count);
  PatchOptions options;  // everything that reaches beyond a patch: rings, a covariate, the interpolant
  options.rings = 1;
  options.n_static = 1;
  options.interp_base = true;
  options.target = 1;
  std::vector<float> mine, mine_static(static_cast<size_t>(count));
  if (trainer >= 0) {
    coarsen_patches(local_map, {slots.data(), slots.data() + redist.n_slots()}, nullptr, options, shard);
    mine = shard.coarse_vars;  // [2][count]
    coarsen(local_map, static_slots, mine_static.data());
  }
  // Every trainer needs every coarse value: per field, an Allgatherv of the shards.
  std::vector<float> all(static_cast<size_t>(2 * map.n_coarse));
  std::vector<int> counts(static_cast<size_t>(size), 0), displs(static_cast<size_t>(size), 0);
  for (int t = 0; t < trainers; ++t) {
    counts[static_cast<size_t>(t * size / trainers)] =
        static_cast<int>(first_patch(map.n_coarse, trainers, t + 1) - first_patch(map.n_coarse, trainers, t));
    displs[static_cast<size_t>(t * size / trainers)] = static_cast<int>(first_patch(map.n_coarse, trainers, t));
  }
  for (int f = 0; f < 2; ++f) {
    std::vector<float> part(mine.begin() + f * count, mine.begin() + (f + 1) * count);
    MPI_Allgatherv(part.data(), static_cast<int>(count), MPI_FLOAT, all.data() + f * map.n_coarse, counts.data(),
                   displs.data(), MPI_FLOAT, MPI_COMM_WORLD);
  }
  std::vector<float> all_static(static_cast<size_t>(map.n_coarse));
  MPI_Allgatherv(mine_static.data(), static_cast<int>(count), MPI_FLOAT, all_static.data(), counts.data(),
                 displs.data(), MPI_FLOAT, MPI_COMM_WORLD);

  // The serial reference from the whole fields.
  std::vector<float> f0(static_cast<size_t>(n)), f1(static_cast<size_t>(n)), f2(static_cast<size_t>(n));
  for (int64_t g = 0; g < n; ++g) f0[g] = value(0, g), f1[g] = value(1, g), f2[g] = value(2, g);
  Patches serial;
  extract_patches(map, {f0.data(), f1.data()}, nullptr, {f2.data()}, options, serial);
  EXPECT_EQ(0, std::memcmp(all.data(), serial.coarse_vars.data(), all.size() * sizeof(float)));
  if (trainer >= 0) {
    fill_contexts(map, first, local_map, all.data(), 2, all_static.data(), {static_slots}, options, shard);
    const int C = serial.C, P = serial.P;
    ASSERT_EQ(shard.C, C);
    EXPECT_EQ(0, std::memcmp(shard.context.data(), serial.context.data() + first * C, count * C * sizeof(float)));
    EXPECT_EQ(0, std::memcmp(shard.fine.data(), serial.fine.data() + first * P, count * P * sizeof(float)));
    EXPECT_EQ(0, std::memcmp(shard.weights.data(), serial.weights.data() + first * P, count * P * sizeof(float)));
    EXPECT_EQ(0, std::memcmp(shard.base.data(), serial.base.data() + first * P, count * P * sizeof(float)));
    EXPECT_EQ(0, std::memcmp(shard.residual.data(), serial.residual.data() + first * P, count * P * sizeof(float)));
    EXPECT_TRUE(std::equal(shard.valid.begin(), shard.valid.end(), serial.valid.begin() + first));
  }

  // Reverse: each slot's value (a function of its cell) comes back to the cell's owner.
  std::vector<float> back(static_cast<size_t>(redist.n_slots()));
  for (int64_t s = 0; s < redist.n_slots(); ++s) back[s] = value(5, slot_cells[s]);
  std::vector<float> received(owned.size());
  redist.reverse(trainer >= 0 ? back.data() : nullptr, received.data());
  for (size_t i = 0; i < owned.size(); ++i) ASSERT_EQ(received[i], value(5, owned[i])) << "cell " << owned[i];
}

INSTANTIATE_TEST_SUITE_P(Trainers, Redistribute,
                         ::testing::Values(Layout{1, false}, Layout{2, false}, Layout{2, true}, Layout{4, true}));

TEST(Redistribution, ACellOwnedTwiceFailsOnEveryRank) {
  const int rank = world(MPI_Comm_rank), size = world(MPI_Comm_size);
  const int64_t n = 100;
  std::vector<int64_t> owned;
  for (int64_t g = 0; g < n; ++g)
    if (g % size == rank) owned.push_back(g);
  if (rank == size - 1) owned.push_back(0);  // also owned by rank 0
  std::vector<int64_t> slots;
  if (rank == 0) slots = {1, 2, 3};
  EXPECT_THROW(Redistribution(MPI_COMM_WORLD, owned, slots, n), std::exception);
}

}  // namespace
}  // namespace finecast::coupling
