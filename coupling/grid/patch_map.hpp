// SPDX-License-Identifier: BSD-3-Clause
// The map from coarse cells (patches) to fine cells that every later stage shares.
#pragma once

#include <cstdint>
#include <vector>

namespace finecast::coupling {

/// One patch per coarse cell: P fine cells in a canonical order that is the same for every
/// patch, their normalised area weights, the coarse cell's edge neighbours and its centre.
struct PatchMap {
  enum class Kind { kIconTriangles, kLatLonBlocks };
  Kind kind = Kind::kIconTriangles;
  int64_t n_fine = 0;                          ///< cells of the fine field (global)
  int64_t n_coarse = 0;                        ///< patches
  int patch_size = 0;                          ///< P
  std::vector<int64_t> fine_of_patch;          ///< n_coarse*P global fine indices, canonical order
  std::vector<double> fine_weight;             ///< n_coarse*P area weights, each patch sums to 1
  int n_neighbours = 0;                        ///< 3 (triangles) or 4 (blocks)
  std::vector<int64_t> neighbours;             ///< n_coarse*n_neighbours coarse indices; -1 = none
  std::vector<double> coarse_lon, coarse_lat;  ///< coarse cell centres, radians
};

}  // namespace finecast::coupling
