// SPDX-License-Identifier: BSD-3-Clause
// An ICON unstructured triangular grid as read from an ICON grid file.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace finecast::coupling {

/// The cells of an ICON grid file, all indices 0-based. Vertices are de-duplicated (grid files
/// may list a geometric vertex more than once), so cell_vertices refer to unique vertices.
struct IconGrid {
  std::string path;
  int64_t n_cells = 0;
  std::vector<double> clon, clat;                       ///< cell centres, radians
  std::vector<double> cell_area;                        ///< m^2 (file's cell_area, else spherical area)
  std::vector<std::array<int32_t, 3>> cell_vertices;    ///< unique vertex ids of each cell
  std::vector<std::array<int32_t, 3>> cell_neighbours;  ///< edge neighbours; -1 = none
  int64_t n_vertices = 0;
  std::vector<double> vlon, vlat;    ///< unique vertices, radians
  std::vector<int32_t> parent_cell;  ///< from parent_cell_index; empty when absent
  /// refin_c_ctrl: on a limited-area grid the cell row counted from the lateral boundary (1 = the
  /// outermost row, up to the file's boundary_depth_index), 0 inside; empty when absent.
  std::vector<int32_t> refin_c_ctrl;
  int grid_root = -1;            ///< the file's global grid_root (R<root>B<level>); -1 when absent
  int grid_level = -1;           ///< the file's global grid_level; -1 when absent
  std::string uuid_of_hgrid;     ///< the file's global uuidOfHGrid ("" when absent)
  int number_of_grid_used = -1;  ///< the file's global number_of_grid_used (-1 when absent)
};

/// Reads an ICON grid file; throws IoError naming the file and the missing/odd variable.
/// Vertices come from vertex_of_cell + vlon/vlat, or else from clon_vertices/clat_vertices
/// (de-duplicated by position); edge neighbours from neighbor_cell_index or else from shared
/// edges; cell_area from the file or else computed as spherical triangle areas; parents,
/// refin_c_ctrl, grid_root and grid_level when the file has them.
IconGrid read_icon_grid(const std::string& path);

/// Fills what a grid can derive from its cells and vertices: cell_neighbours (from shared edges)
/// when empty and cell_area (spherical, Earth radius) when empty. Used by the reader and by
/// make_icosahedral_grid; throws GridError when an edge is shared by more than two cells.
void complete_icon_grid(IconGrid& grid);

}  // namespace finecast::coupling
