// SPDX-License-Identifier: BSD-3-Clause
// Lat-lon partitions (bands, round robin, seeded random), halos and the local ComIn domain.
#include "host/replay/latlon_domain.hpp"

#include <algorithm>
#include <numeric>
#include <random>

#include "common/error.hpp"

namespace finecast::host::replay {

host::LocalCells decompose_latlon(const coupling::LatLonGrid& grid, const std::string& method, unsigned long long seed,
                                  int n_ranks, int rank) {
  if (n_ranks < 1 || rank < 0 || rank >= n_ranks)
    throw InternalError("decompose_latlon: rank " + std::to_string(rank) + " of " + std::to_string(n_ranks));
  const int64_t n = grid.nlat * grid.nlon;
  if (n < n_ranks)
    throw ConfigError(grid.path + ": " + std::to_string(n) + " cells cannot be shared by " + std::to_string(n_ranks) +
                      " ranks");
  std::vector<char> mine(static_cast<size_t>(n), 0);
  const int64_t begin = n * rank / n_ranks, end = n * (rank + 1) / n_ranks;
  if (method == "round_robin") {
    for (int64_t c = rank; c < n; c += n_ranks) mine[c] = 1;
  } else if (method == "lat_bands") {
    for (int64_t c = begin; c < end; ++c) mine[c] = 1;
  } else if (method == "random") {
    std::vector<int64_t> order(static_cast<size_t>(n));
    std::iota(order.begin(), order.end(), 0);
    // Fisher-Yates with our own draws: std::shuffle's use of the engine is implementation-defined,
    // and every rank (and every build) must compute the same partition.
    std::mt19937_64 rng(seed);
    for (int64_t i = n - 1; i > 0; --i) std::swap(order[i], order[rng() % static_cast<uint64_t>(i + 1)]);
    for (int64_t i = begin; i < end; ++i) mine[order[i]] = 1;
  } else {
    throw ConfigError("decomposition must be one of round_robin, lat_bands, random; got '" + method + "'");
  }
  host::LocalCells out;
  std::vector<char> in_halo(static_cast<size_t>(n), 0);
  for (int64_t c = 0; c < n; ++c) {
    if (!mine[c]) continue;
    out.owned.push_back(static_cast<int>(c));
    const int64_t row = c / grid.nlon, col = c % grid.nlon;
    auto add = [&](int64_t r, int64_t k) {
      if (r < 0 || r >= grid.nlat) return;
      if (k < 0 || k >= grid.nlon) {
        if (!grid.global_lon) return;
        k = (k + grid.nlon) % grid.nlon;
      }
      const int64_t nb = r * grid.nlon + k;
      if (!mine[nb]) in_halo[nb] = 1;
    };
    add(row - 1, col);
    add(row + 1, col);
    add(row, col - 1);
    add(row, col + 1);
  }
  for (int64_t c = 0; c < n; ++c)
    if (in_halo[c]) out.halo.push_back(static_cast<int>(c));
  return out;
}

comin::Domain make_latlon_domain(const coupling::LatLonGrid& grid, const host::LocalCells& cells, int nproma,
                                 double dt) {
  comin::Domain d;
  d.nproma = nproma;
  d.n_cells_global = static_cast<int>(grid.nlat * grid.nlon);
  d.dt = dt;
  const std::vector<int> local = cells.all();
  for (size_t j = 0; j < local.size(); ++j) {
    const int c = local[j];
    double lon = 0, lat = 0;
    coupling::latlon_cell_centre(grid, c / grid.nlon, c % grid.nlon, lon, lat);
    d.glb_index.push_back(c + 1);
    d.decomp_domain.push_back(j < cells.owned.size() ? 0 : 1);
    d.clon.push_back(lon);
    d.clat.push_back(lat);
    d.area.push_back(grid.cell_area.empty() ? 0.0 : grid.cell_area[c]);
    d.neighbours.push_back({-1, -1, -1});
  }
  return d;
}

}  // namespace finecast::host::replay
