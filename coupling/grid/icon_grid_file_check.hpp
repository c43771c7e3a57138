// SPDX-License-Identifier: BSD-3-Clause
// Checks the tables of a complete ICON grid file (edges, vertex rings, orientations, normals,
// lengths, areas, index lists) against ICON's reading code and against each other.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace finecast::coupling {

/// One variable ICON 2024.10 reads from a grid file, with its NetCDF dimensions (ICON's Fortran
/// order reversed: the entity dimension last for connectivity tables, first for CF bounds).
struct IconGridVariable {
  const char* name;
  std::vector<const char*> dims;
};

/// Every variable ICON reads from a grid file without nests: mo_model_domimp_patches.f90
/// (read_pre_patch, read_remaining_patch, read_cartesian_positions) and
/// mo_name_list_output_gridinfo.f90 (copy_grid_info, the output's coordinates and bounds).
const std::vector<IconGridVariable>& icon_grid_file_variables();

/// What check_icon_grid_file found.
struct IconGridFileCheck {
  int64_t n_cells = 0, n_edges = 0, n_vertices = 0;
  bool limited_area = false;          ///< some edge has one adjacent cell (a lateral boundary)
  int pentagons = 0;                  ///< vertices of 5 cells (not on a lateral boundary)
  double area_fraction = 0;           ///< sum of cell_area / (4 pi R^2)
  double area_error = 0;              ///< |sum of cell_area / (4 pi R^2) - 1|
  double dual_area_error = 0;         ///< the same for dual_area
  std::vector<std::string> problems;  ///< the first ones found, each naming the variable and index
  int64_t n_problems = 0;             ///< all found (problems keeps at most 20)
  bool ok() const { return n_problems == 0; }
};

/// Checks an ICON grid file as ICON's grid reader will use it: the variables of
/// icon_grid_file_variables() with their dimensions, the global attributes grid_root and
/// grid_level (and a well-formed uuidOfHGrid), 1-based indices in range, V - E + F = 2, each edge
/// in exactly its two adjacent cells with the neighbour across it (a limited-area grid, one whose
/// edges may have a second adjacent cell of 0: V - E + F = 1, fewer cells than the whole sphere,
/// the lateral-boundary edges in their one cell, open vertex rings there, no area sums), edge k of a cell joining its
/// vertices k and k+1, orientation_of_normal +1 exactly for adjacent cell 1, the normal pointing
/// from cell 1's centre to cell 2's, the dual normal the primal one turned clockwise,
/// edge_system_orientation the sign of ((v2 - v1) x (c2 - c1)) . centre, vertex rings closed and
/// counter-clockwise with edge i between cells i and i+1, edge_orientation +1 where the normal
/// turns counter-clockwise about the vertex (0 in unused slots, which come last), cells
/// counter-clockwise with circumcentres, lengths and distances on the sphere_radius attribute
/// (else 6,371,229 m), areas summing to 4 pi R^2 to 1e-10, Cartesian positions and normals equal
/// to the longitude/latitude ones, and, unless refin_*_ctrl flags are negative (nests), the
/// entities sorted by refinement row with the index lists spanning the rows. Throws IoError only when the file cannot
/// be opened.
IconGridFileCheck check_icon_grid_file(const std::string& path);

}  // namespace finecast::coupling
