// SPDX-License-Identifier: BSD-3-Clause
// Held-out patches from a mask field (FILE:VAR): the one rule that finecast-eval's --hold-out and
// the plugin's train.hold_out (finecast-replay's --hold-out) share, so that the patches a run
// never trains on are exactly those finecast-eval scores as held out.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "coupling/grid/patch_map.hpp"

namespace finecast::coupling {

/// Whether a mask value flags its cell: finite and non-zero (missing values flag nothing).
inline bool holds_out(double value) { return std::isfinite(value) && value != 0.0; }

/// The patches a mask holds out: those with any flagged fine cell. `patch_of(i)` is fine cell
/// i's patch (0..n_patches-1), or a negative number for a cell outside every patch.
template <class T, class PatchOf>
std::vector<char> patches_held_out(const T* mask, int64_t n_cells, int64_t n_patches, PatchOf patch_of) {
  std::vector<char> held(static_cast<std::size_t>(n_patches), 0);
  for (int64_t i = 0; i < n_cells; ++i) {
    if (!holds_out(static_cast<double>(mask[i]))) continue;
    const int64_t p = patch_of(i);
    if (p >= 0) held[static_cast<std::size_t>(p)] = 1;
  }
  return held;
}

/// The same for a PatchMap's patches: `mask` holds one value per fine cell of the grid (global
/// index, map.n_fine of them).
template <class T>
std::vector<char> patches_held_out(const PatchMap& map, const T* mask) {
  std::vector<int64_t> patch(static_cast<std::size_t>(map.n_fine), -1);
  for (int64_t c = 0; c < map.n_coarse; ++c)
    for (int k = 0; k < map.patch_size; ++k)
      patch[static_cast<std::size_t>(map.fine_of_patch[c * map.patch_size + k])] = c;
  return patches_held_out(mask, map.n_fine, map.n_coarse,
                          [&](int64_t i) { return patch[static_cast<std::size_t>(i)]; });
}

}  // namespace finecast::coupling
