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

/// The index lists of a grid without nests and n entities, in storage order (level min_rl
/// first), as ICON's grid generator writes them for a global domain: the lateral-boundary levels
/// 1..max_rl are empty (start 1, end 0), level 0 holds all (1..n), the nest-overlap and halo
/// levels below 0 are empty after it (start n + 1, end n). ICON's build_patch_start_end takes
/// end_idx(min_rl_int) as the last entity.
inline void icon_global_index_lists(const IconIndexLists& lists, int64_t n, std::vector<int32_t>& start,
                                    std::vector<int32_t>& end) {
  start.clear();
  end.clear();
  for (int rl = lists.min_rl; rl <= lists.max_rl; ++rl) {
    start.push_back(rl >= 0 ? 1 : static_cast<int32_t>(n + 1));
    end.push_back(rl >= 1 ? 0 : static_cast<int32_t>(n));
  }
}

/// ICON's constants for grid_geometry and grid_cell_type (mo_lib_grid_geometry_info).
inline constexpr int kIconSphereGeometry = 1;
inline constexpr int kIconTriangularCell = 3;

}  // namespace finecast::coupling
