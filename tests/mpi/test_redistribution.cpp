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
#include <limits>
#include <numeric>
#include <random>

#include "coupling/grid/context_stencil.hpp"
#include "coupling/grid/icon_grid.hpp"
#include "coupling/grid/icon_hierarchy.hpp"
#include "coupling/grid/patches.hpp"
#include "coupling/mpi/record_gather.hpp"
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
  // Everything that reaches beyond a patch: rings, a covariate, the interpolant, and a regression
  // base with a local-slope term (its slopes fitted over 2 edge steps of the whole map).
  PatchOptions options;
  options.rings = 1;
  options.n_static = 1;
  options.interp_base = true;
  options.target = 1;
  options.local_slopes = {2, 0.1, {0}};
  options.regression = {0.3, -0.2, 0.5};
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
    ASSERT_EQ(shard.local_slopes.size(), static_cast<size_t>(count));
    EXPECT_TRUE(std::equal(shard.local_slopes.begin(), shard.local_slopes.end(), serial.local_slopes.begin() + first));
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

/// Uneven ownership with a rank that owns nothing (the last, from 2 ranks on): rank r owns
/// cells with weight r + 1 of the others', dealt out in a fixed pseudo-random order.
std::vector<int64_t> uneven_owned(int64_t n, int rank, int size) {
  std::vector<int64_t> owned;
  const int owners = size > 1 ? size - 1 : 1;
  const int total = owners * (owners + 1) / 2;
  std::mt19937_64 rng(7);
  for (int64_t g = 0; g < n; ++g) {
    int ticket = static_cast<int>(rng() % static_cast<uint64_t>(total)), owner = 0;
    while (ticket >= owner + 1) ticket -= ++owner;
    if (owner == rank) owned.push_back(g);
  }
  std::shuffle(owned.begin(), owned.end(), std::mt19937_64(31 + rank));
  return owned;
}

/// Values that a conversion or a sum on the way would change: signed zeros, subnormals, large
/// integers beyond a float's 2^24 and a NaN with a payload, different in every field.
float exact_value(int field, int64_t g) {
  switch ((g + field) % 5) {
    case 0:
      return g % 2 ? -0.0f : 0.0f;
    case 1:
      return std::numeric_limits<float>::denorm_min() * static_cast<float>(g % 1000 + 1);
    case 2:
      return static_cast<float>((int64_t{1} << 25) + 2 * g) * (field + 1);
    case 3: {
      const uint32_t bits = 0x7fc00000u | static_cast<uint32_t>(g % 4096 + 1);
      float nan;
      std::memcpy(&nan, &bits, sizeof nan);
      return nan;
    }
    default:
      return std::nextafter(static_cast<float>(g) / 7.0f, 1e30f) - static_cast<float>(field);
  }
}

/// Cells in no slot (every 7th) and slots on every rank but rank 1 (the ranks with slots hold
/// cells g with g % slot_ranks == their index), in reverse cell order.
std::vector<int64_t> uneven_slots(int64_t n, int rank, int size) {
  std::vector<int> with_slots;
  for (int r = 0; r < size; ++r)
    if (r != 1) with_slots.push_back(r);
  const auto mine = std::find(with_slots.begin(), with_slots.end(), rank);
  std::vector<int64_t> slots;
  if (mine == with_slots.end()) return slots;
  const auto k = static_cast<int64_t>(mine - with_slots.begin()), m = static_cast<int64_t>(with_slots.size());
  for (int64_t g = n - 1; g >= 0; --g)
    if (g % 7 != 3 && g % m == k) slots.push_back(g);
  return slots;
}

bool same_bits(float a, float b) { return std::memcmp(&a, &b, sizeof a) == 0; }

TEST(Redistribution, ForwardThenReverseGivesEveryRankItsValuesExactly) {
  const int rank = world(MPI_Comm_rank), size = world(MPI_Comm_size);
  const int64_t n = 997;
  const std::vector<int64_t> owned = uneven_owned(n, rank, size), slot_cells = uneven_slots(n, rank, size);
  if (size > 1 && rank == size - 1) {
    ASSERT_TRUE(owned.empty());
  }
  Redistribution redist(MPI_COMM_WORLD, owned, slot_cells, n);
  const int fields = 3;
  const size_t n_owned = owned.size(), n_slots = slot_cells.size();
  std::vector<float> local(fields * n_owned);
  for (int f = 0; f < fields; ++f)
    for (size_t i = 0; i < n_owned; ++i) local[f * n_owned + i] = exact_value(f, owned[i]);
  std::vector<float> slots(fields * n_slots);
  redist.forward(fields, local.data(), slots.data());
  for (int f = 0; f < fields; ++f)
    for (size_t s = 0; s < n_slots; ++s)
      ASSERT_TRUE(same_bits(slots[f * n_slots + s], exact_value(f, slot_cells[s]))) << "field " << f << " slot " << s;

  std::vector<float> back(fields * n_owned, 1.0f);
  redist.reverse(fields, slots.data(), back.data());
  for (int f = 0; f < fields; ++f)
    for (size_t i = 0; i < n_owned; ++i) {
      const float got = back[f * n_owned + i];
      if (owned[i] % 7 == 3)
        EXPECT_TRUE(std::isnan(got)) << "cell " << owned[i] << " is in no slot";
      else
        ASSERT_TRUE(same_bits(got, local[f * n_owned + i])) << "field " << f << " cell " << owned[i];
    }
}

TEST(RecordGather, RankZeroReceivesEveryPieceInCellOrderExactly) {
  const int rank = world(MPI_Comm_rank), size = world(MPI_Comm_size);
  const int64_t n = 997, piece = 128;  // 8 pieces, the last one short
  const std::vector<int64_t> slot_cells = uneven_slots(n, rank, size);
  RecordGather gather(MPI_COMM_WORLD, slot_cells, n, piece);
  EXPECT_EQ(gather.pieces(), 8);
  const int fields = 2;
  std::vector<int64_t> firsts;
  std::vector<float> record(fields * n, 0.0f);
  // A slot's values are a function of its cell: each one reached its cell, in its field.
  gather.gather(
      fields,
      [&](const std::vector<int64_t>& slots, float* values) {
        for (size_t i = 0; i < slots.size(); ++i) {
          values[i] = exact_value(0, slot_cells[slots[i]]);
          values[slots.size() + i] = exact_value(1, slot_cells[slots[i]]);
        }
      },
      [&](int64_t first, int64_t count, const float* values) {
        firsts.push_back(first);
        EXPECT_EQ(count, std::min(piece, n - first));
        for (int f = 0; f < fields; ++f)
          std::copy(values + f * count, values + (f + 1) * count, record.begin() + f * n + first);
      });
  if (rank != 0) {
    EXPECT_TRUE(firsts.empty());
    return;
  }
  EXPECT_EQ(firsts, (std::vector<int64_t>{0, 128, 256, 384, 512, 640, 768, 896}));
  for (int f = 0; f < fields; ++f)
    for (int64_t g = 0; g < n; ++g) {
      if (g % 7 == 3)
        EXPECT_TRUE(std::isnan(record[f * n + g])) << "cell " << g << " is in no slot";
      else
        ASSERT_TRUE(same_bits(record[f * n + g], exact_value(f, g))) << "field " << f << " cell " << g;
    }
}

TEST(RecordGather, ACellInTwoSlotsFailsOnEveryRank) {
  const int rank = world(MPI_Comm_rank);
  std::vector<int64_t> slots;
  if (rank == 0) slots = {1, 2, 300};
  if (rank == world(MPI_Comm_size) - 1) slots.push_back(300);  // also rank 0's (or twice on one rank)
  EXPECT_THROW(RecordGather(MPI_COMM_WORLD, slots, 997, 128), std::exception);
}

}  // namespace
}  // namespace finecast::coupling
