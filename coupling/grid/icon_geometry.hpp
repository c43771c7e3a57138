// SPDX-License-Identifier: BSD-3-Clause
// The geometry an ICON grid's cells are given: the grid file's own coordinates, or the standard
// uniform icosahedral ones rebuilt from the file's topology (issue 26: a data file may share a
// grid file's topology and cell order but not its coordinates, e.g. libncarg-data's
// atm_phy_mag0004_1985.nc on the stretched ocean grid triangular_grid_ICON.nc).
#pragma once

#include <string>

#include "common/schema.hpp"
#include "coupling/grid/icon_grid.hpp"

namespace finecast::coupling {

/// file: the grid file's coordinates as they are; uniform: the standard uniform R2B<k>
/// coordinates (make_icosahedral_grid's) for the file's cells, in the file's cell order.
enum class IconGeometry { kFile, kUniform };

// Inline: the config library (plugin/config.*) names these without linking the coupling library.
inline const schema::Names<IconGeometry>& names(IconGeometry) {
  static const schema::Names<IconGeometry> n{{IconGeometry::kFile, "file"}, {IconGeometry::kUniform, "uniform"}};
  return n;
}

/// How far the uniform geometry moved the cell centres from the file's.
struct UniformGeometryFit {
  double rms_shift_deg = 0;  ///< RMS great-circle distance between a cell's old and new centre
  double max_shift_deg = 0;
  int anchors_tried = 0;  ///< correspondences tried (12 pentagons x 5 rotations)
};

/// Gives `grid` the standard uniform icosahedral geometry of its size (make_icosahedral_grid):
/// the file's cells are matched to the generated ones through the topology alone (a triangulated
/// sphere's graph is rigid once one cell and its vertex correspondence are fixed, so the match
/// is propagated across shared edges from an anchor cell at a pentagon; of the 60 anchors that
/// map a pentagon of the file onto one of the generated grid's 12 with one of 5 rotations,
/// keeping the orientation, the one whose centres lie closest to the file's is kept). Replaces
/// vlon/vlat, clon/clat (circumcentres) and cell_area (spherical); keeps the cell and vertex
/// order, the neighbours, the parents and the identity. Throws GridError naming grid.path when
/// the topology is not a recursively bisected icosahedron.
UniformGeometryFit set_uniform_geometry(IconGrid& grid);

/// read_icon_grid, then the geometry asked for; the uniform one logs how far it moved the cells.
IconGrid read_icon_grid(const std::string& path, IconGeometry geometry);

/// "file" (or "", an option not given) or "uniform" as the enum; throws ConfigError naming `what`
/// otherwise.
IconGeometry parse_icon_geometry(const std::string& text, const std::string& what);

/// A command-line option's help text for --geometry, the same in every tool.
inline constexpr const char* kIconGeometryHelp =
    "ICON: the cells' coordinates: file (the grid file's) or uniform (the standard uniform R2B<k> geometry "
    "rebuilt from the file's topology, for data that shares the file's cells but not its coordinates)";

}  // namespace finecast::coupling
