// SPDX-License-Identifier: BSD-3-Clause
// Writes a complete ICON horizontal grid file (every variable, dimension and global attribute
// that ICON's grid reader reads) for the global uniform R2B<n> grid.
#pragma once

#include <cstdint>
#include <string>

namespace finecast::coupling {

/// What write_icon_grid_file wrote.
struct IconGridFileSummary {
  int level = 0;
  int64_t n_cells = 0, n_edges = 0, n_vertices = 0;
  std::string uuid;  ///< the file's uuidOfHGrid
};

/// Writes the ICON grid file of the global R2B<level> grid (root 2, `level` bisections, level
/// 0..9) on the uniform icosahedral geometry of make_icosahedral_mesh, in its hierarchical
/// numbering (parents in R2B<level-1>, children in R2B<level+1> as this function numbers them).
/// Lengths in m and areas in m^2 on ICON's Earth radius 6,371,229 m, Cartesian positions and
/// normals on the unit sphere, index tables 1-based in ICON's Fortran (slot, entity) layout,
/// unused pentagon slots 0; cells, vertex rings and bounds counter-clockwise seen from outside.
/// docs/grids.md lists the variables and the ICON sources they were checked against. The file
/// appears atomically (written beside `path`, then renamed); throws ConfigError for a level out
/// of range, IoError when the file cannot be written.
IconGridFileSummary write_icon_grid_file(const std::string& path, int level);

/// The uuidOfHGrid write_icon_grid_file gives R2B<level>: a fixed function of the level (the
/// geometry is a fixed function of it), formatted as an RFC 9562 version-8 UUID, so files written
/// twice agree and files of different levels differ.
std::string uniform_icon_grid_uuid(int level);

}  // namespace finecast::coupling
