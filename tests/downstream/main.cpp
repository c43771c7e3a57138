// SPDX-License-Identifier: BSD-3-Clause
// A downstream use of finecast's coupling layer, through the installed headers and library: an
// R2B3 grid, its R2B1 patches, and the coarse field of a fine one. Exits 0 when the results are
// what the grid's geometry says they must be.
#include <finecast/coupling/grid/icon_hierarchy.hpp>
#include <finecast/coupling/grid/icosahedral_grid.hpp>
#include <finecast/coupling/grid/patch_map.hpp>

#include <cmath>
#include <cstdio>
#include <vector>

int main() {
  namespace fc = finecast::coupling;
  const fc::IconGrid grid = fc::make_icosahedral_grid(3);
  const fc::PatchMap map = fc::icon_patch_map(grid, 1);
  // R2B1 has 320 cells, each the parent of 4^2 = 16 R2B3 cells.
  if (grid.n_cells != 5120 || map.n_coarse != 320 || map.patch_size != 16) {
    std::fprintf(stderr, "unexpected sizes: %lld cells, %lld patches of %d\n", static_cast<long long>(grid.n_cells),
                 static_cast<long long>(map.n_coarse), map.patch_size);
    return 1;
  }
  // A fine field of z = sin(lat); each patch's area-weighted mean must lie between its own
  // cells' minimum and maximum, and the patches must cover every fine cell once.
  std::vector<int> covered(static_cast<size_t>(grid.n_cells), 0);
  for (int64_t c = 0; c < map.n_coarse; ++c) {
    double mean = 0, weights = 0, lo = 2, hi = -2;
    for (int k = 0; k < map.patch_size; ++k) {
      const size_t i = static_cast<size_t>(c * map.patch_size + k);
      const int64_t cell = map.fine_of_patch[i];
      const double z = std::sin(grid.clat[static_cast<size_t>(cell)]);
      mean += map.fine_weight[i] * z;
      weights += map.fine_weight[i];
      lo = std::fmin(lo, z);
      hi = std::fmax(hi, z);
      ++covered[static_cast<size_t>(cell)];
    }
    if (std::fabs(weights - 1) > 1e-9 || mean < lo - 1e-12 || mean > hi + 1e-12) {
      std::fprintf(stderr, "patch %lld: weights sum to %.12f, mean %.6f outside [%.6f, %.6f]\n",
                   static_cast<long long>(c), weights, mean, lo, hi);
      return 1;
    }
  }
  for (int n : covered)
    if (n != 1) {
      std::fprintf(stderr, "a fine cell is in %d patches\n", n);
      return 1;
    }
  std::printf("downstream: R2B3 (%lld cells) in %lld R2B1 patches of %d cells\n", static_cast<long long>(grid.n_cells),
              static_cast<long long>(map.n_coarse), map.patch_size);
  return 0;
}
