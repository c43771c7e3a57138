// SPDX-License-Identifier: BSD-3-Clause
// ICON's connectivity and geometry tables of a triangle mesh (global, or a limited area with a
// lateral boundary): what the grid file writer writes. Internal to coupling/grid.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "coupling/grid/icosahedral_grid.hpp"
#include "coupling/grid/spherical.hpp"

namespace finecast::coupling {

/// ICON's "ne": cells, edges, vertices around a vertex (5 at pentagons).
inline constexpr int kIconRing = 6;
/// No entity (a pentagon's 6th slot, a missing neighbour); written as 0 (ICON's 1-based tables).
inline constexpr int32_t kNoEntity = -1;

/// ICON's connectivity and geometry of a mesh, 0-based (kNoEntity where there is none).
struct IconMeshTables {
  const IcosahedralMesh& mesh;
  int64_t nc = 0, ne = 0, nv = 0;
  std::vector<std::array<int32_t, 2>> edge_cells;  ///< normal points from [0] to [1]
  std::vector<std::array<int32_t, 3>> cell_neighbours;
  std::vector<std::array<int32_t, 3>> cell_orientation;  ///< +1: the edge's normal leaves the cell
  std::vector<std::array<int32_t, kIconRing>> ring_cells, ring_edges, ring_vertices, ring_orientation;
  std::vector<int32_t> system_orientation;
  std::vector<sphere::Vec3> cell_centre, edge_centre, primal_normal, dual_normal, dual_middle;
  std::vector<double> cell_area, dual_area, edge_length, dual_edge_length;
  std::vector<std::array<double, 2>> edge_cell_distance;

  /// Builds every table of `m` (kept by reference: it must outlive this).
  explicit IconMeshTables(const IcosahedralMesh& m);

  int32_t other_cell(int32_t e, int32_t c) const { return edge_cells[e][0] == c ? edge_cells[e][1] : edge_cells[e][0]; }

 private:
  void connect();
  void measure();
  void ring();
};

}  // namespace finecast::coupling
