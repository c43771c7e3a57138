// SPDX-License-Identifier: BSD-3-Clause
// finecast-host's model on 1-4 ranks: every cell owned once, halos are the missing neighbours,
// and the fields (owned and halo cells) are bit-identical to a one-rank run.
#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "coupling/grid/icosahedral_grid.hpp"
#include "host/model/host_model.hpp"

namespace fc = finecast::coupling;
namespace fh = finecast::host;

namespace {

struct Fields {
  std::vector<double> ts, ps, topo;
};

Fields evaluate(const fh::HostModel& m, double seconds) {
  const size_t n = m.surface().size();
  const int np = m.nproma();
  const size_t padded = static_cast<size_t>(np) * ((n + np - 1) / np);
  Fields blocked{std::vector<double>(padded), std::vector<double>(padded), std::vector<double>(padded)};
  m.compute(seconds, {blocked.ts.data(), blocked.ps.data()});
  m.write_topography(blocked.topo.data());
  Fields out;
  for (size_t j = 0; j < n; ++j) {  // 2-D: cell j sits at j % np + np * (j / np) = j
    out.ts.push_back(blocked.ts[j]);
    out.ps.push_back(blocked.ps[j]);
    out.topo.push_back(blocked.topo[j]);
  }
  return out;
}

void check_decomposition_and_fields(fh::Decomposition method) {
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const fc::IconGrid grid = fc::make_icosahedral_grid(3, 7);  // 1,280 shuffled cells
  fh::HostModelSetup setup;
  setup.orography = "/usr/share/ferret-vis/data/etopo20.cdf";  // 20' relief: a quick test
  setup.orography_variable = "ROSE";
  setup.decomposition = method;
  setup.nproma = 7;  // does not divide the local cell counts: partial last blocks
  setup.start_utc_hours = 6.0;
  const fh::HostModel mine(grid, setup, size, rank);
  const fh::HostModel all(grid, setup, 1, 0);
  const double seconds = 3.5 * 3600.0;
  const Fields f = evaluate(mine, seconds), ref = evaluate(all, seconds);

  // Each cell is owned by exactly one rank.
  std::vector<int> owned_count(grid.n_cells, 0), total(grid.n_cells, 0);
  for (int c : mine.cells().owned) owned_count[c] = 1;
  MPI_Allreduce(owned_count.data(), total.data(), static_cast<int>(grid.n_cells), MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  EXPECT_TRUE(std::all_of(total.begin(), total.end(), [](int t) { return t == 1; }));

  // The halo is exactly the set of neighbours of owned cells that this rank does not own.
  std::vector<int> expected_halo;
  for (int c : mine.cells().owned)
    for (int nb : grid.cell_neighbours[c])
      if (!owned_count[nb]) expected_halo.push_back(nb);
  std::sort(expected_halo.begin(), expected_halo.end());
  expected_halo.erase(std::unique(expected_halo.begin(), expected_halo.end()), expected_halo.end());
  EXPECT_EQ(mine.cells().halo, expected_halo);
  if (size > 1) {
    EXPECT_FALSE(mine.cells().halo.empty());
  }

  // Fields of every local cell equal the one-rank values bit for bit.
  const std::vector<int> local = mine.cells().all();
  ASSERT_EQ(local.size(), f.ts.size());
  int mismatches = 0;
  for (size_t j = 0; j < local.size(); ++j) {
    const int c = local[j];  // the one-rank model's local order is the global order
    mismatches += f.ts[j] != ref.ts[c] || f.ps[j] != ref.ps[c] || f.topo[j] != ref.topo[c];
  }
  EXPECT_EQ(mismatches, 0) << "rank " << rank << " of " << size;

  // The descriptive data says the same: glb_index, decomp_domain, local neighbours.
  const auto& d = mine.domain();
  for (size_t j = 0; j < local.size(); ++j) {
    EXPECT_EQ(d.glb_index[j], local[j] + 1);
    EXPECT_EQ(d.decomp_domain[j], j < mine.cells().owned.size() ? 0 : 1);
  }
  for (size_t j = 0; j < mine.cells().owned.size(); ++j)
    for (int k = 0; k < 3; ++k) {
      ASSERT_GE(d.neighbours[j][k], 0) << "owned cells have all neighbours locally";
      EXPECT_EQ(local[d.neighbours[j][k]], grid.cell_neighbours[local[j]][k]);
    }
}

}  // namespace

TEST(HostModelMpi, LatBandsGiveTheSameFieldsOnAnyNumberOfRanks) {
  check_decomposition_and_fields(fh::Decomposition::kLatBands);
}

TEST(HostModelMpi, RoundRobinGivesTheSameFieldsOnAnyNumberOfRanks) {
  check_decomposition_and_fields(fh::Decomposition::kRoundRobin);
}
