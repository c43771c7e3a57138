// SPDX-License-Identifier: BSD-3-Clause
// Facts of ICON's grid-file layout shared by the writer and the checker of ICON grid files.
#pragma once

#include <cstdint>
#include <vector>

namespace finecast::coupling {

/// One of ICON's refinement-control index lists (start_idx_X / end_idx_X over refinement levels
/// min_rl..max_rl, mo_impl_constants: min_rlcell = -8, min_rlcell_int = -4, max_rlcell = 5;
/// min_rledge = -13, min_rledge_int = -8, max_rledge = 10; min_rlvert = -7, min_rlvert_int = -4,
/// max_rlvert = 5). read_pre_patch reads max_rl - min_rl + 1 values of each.
struct IconIndexLists {
  const char* suffix;    ///< "c", "e", "v": start_idx_c, refin_c_ctrl, ...
  const char* entity;    ///< the entity dimension: "cell", "edge", "vertex"
  const char* list_dim;  ///< "cell_grf", "edge_grf", "vert_grf"
  int min_rl, min_rl_int, max_rl;
  int size() const { return max_rl - min_rl + 1; }
};
inline constexpr IconIndexLists kIconCellLists{"c", "cell", "cell_grf", -8, -4, 5};
inline constexpr IconIndexLists kIconEdgeLists{"e", "edge", "edge_grf", -13, -8, 10};
inline constexpr IconIndexLists kIconVertLists{"v", "vertex", "vert_grf", -7, -4, 5};

/// The sort key of an entity with refinement flag f in ICON's index lists: the lateral-boundary
/// levels 1..max_rl first, in order, then everything else (level 0: the interior, and rows beyond
/// max_rl).
inline int icon_index_key(const IconIndexLists& lists, int32_t f) {
  return f >= 1 && f <= lists.max_rl ? f : lists.max_rl + 1;
}

/// The index lists of entities with refinement flags `flags` (storage order, sorted by
/// icon_index_key; false when they are not), as ICON's grid generator writes them for a domain
/// without nests: level rl = 1..max_rl spans the entities with flag rl (start = the previous
/// level's end + 1, end = start - 1 when there are none), level 0 the rest up to the last
/// entity, the nest-overlap and halo levels below 0 are empty after it (start n + 1, end n).
/// ICON's build_patch_start_end takes end_idx(min_rl_int) as the last entity. Storage order:
/// level min_rl first.
inline bool icon_index_lists(const IconIndexLists& lists, const std::vector<int32_t>& flags,
                             std::vector<int32_t>& start, std::vector<int32_t>& end) {
  const auto n = static_cast<int32_t>(flags.size());
  std::vector<int32_t> count(static_cast<size_t>(lists.max_rl) + 2, 0);
  int previous = 1;
  bool sorted = true;
  for (int32_t f : flags) {
    const int key = icon_index_key(lists, f);
    sorted = sorted && key >= previous;
    previous = key;
    ++count[key];
  }
  start.clear();
  end.clear();
  int32_t last = 0;  // the end of the boundary levels
  for (int rl = 1; rl <= lists.max_rl; ++rl) last += count[rl];
  for (int rl = lists.min_rl; rl <= lists.max_rl; ++rl) {
    if (rl < 0) {
      start.push_back(n + 1);
      end.push_back(n);
    } else if (rl == 0) {
      start.push_back(last + 1);
      end.push_back(n);
    } else {
      int32_t before = 0;
      for (int q = 1; q < rl; ++q) before += count[q];
      start.push_back(before + 1);
      end.push_back(before + count[rl]);
    }
  }
  return sorted;
}

/// The index lists of a grid without nests or lateral boundary and n entities: levels 1..max_rl
/// empty (start 1, end 0), level 0 all (1..n).
inline void icon_global_index_lists(const IconIndexLists& lists, int64_t n, std::vector<int32_t>& start,
                                    std::vector<int32_t>& end) {
  icon_index_lists(lists, std::vector<int32_t>(static_cast<size_t>(n), 0), start, end);
}

/// ICON's constants for grid_geometry and grid_cell_type (mo_lib_grid_geometry_info).
inline constexpr int kIconSphereGeometry = 1;
inline constexpr int kIconTriangularCell = 3;

}  // namespace finecast::coupling
