// SPDX-License-Identifier: BSD-3-Clause
// Writes a complete ICON horizontal grid file (every variable, dimension and global attribute
// that ICON's grid reader reads): the global uniform R<n>B<k> grid, or a limited area cut from it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace finecast::coupling {

/// A latitude-longitude box in degrees: lat0 <= lat <= lat1, longitudes from lon0 eastwards to
/// lon1 (lon1 < lon0 crosses the date line; lon0 = -180, lon1 = 180 is every longitude).
struct LatLonBox {
  double lat0 = 0, lat1 = 0, lon0 = 0, lon1 = 0;
  bool contains(double lat_deg, double lon_deg) const;
};

/// "lat0,lat1,lon0,lon1" (degrees) as a box; throws ConfigError naming `what` otherwise.
LatLonBox parse_latlon_box(const std::string& text, const std::string& what);

/// What write_icon_grid_file writes.
struct IconGridFileRequest {
  int root = 2;   ///< root division of the icosahedron's edges (2, 3, 5, ...)
  int level = 0;  ///< bisections after it
  /// A limited-area grid: the cells of the global grid whose centres lie in the box (the largest
  /// edge-connected part, cells that would hang by one edge or a corner left out); none = global.
  std::optional<LatLonBox> region;
  /// Limited area: the cell rows counted from the lateral boundary that get refin_c_ctrl 1..depth
  /// (the file's boundary_depth_index; ICON reads rows 1..4 as the boundary zone it prescribes and
  /// rows 5..4 + nudge_zone_width as the nudging zone).
  int boundary_depth = 14;
};

/// What write_icon_grid_file wrote.
struct IconGridFileSummary {
  int root = 2;
  int level = 0;
  bool limited_area = false;
  int64_t n_cells = 0, n_edges = 0, n_vertices = 0;
  std::string uuid;                    ///< the file's uuidOfHGrid
  std::vector<int64_t> cells_per_row;  ///< limited area: cells with refin_c_ctrl 1, 2, ..., depth
};

/// Writes the ICON grid file of the global uniform R<root>B<level> grid on the geometry of
/// make_icosahedral_mesh, in its hierarchical numbering (parents in R<root>B<level-1>, the
/// icosahedron at level 0; children in R<root>B<level+1> as this function numbers them), or of
/// a limited area cut from it (request.region). Lengths in m and areas in m^2 on ICON's Earth
/// radius 6,371,229 m, Cartesian positions and normals on the unit sphere, index tables 1-based
/// in ICON's Fortran (slot, entity) layout, unused slots 0; cells, vertex rings and bounds
/// counter-clockwise seen from outside.
///
/// A limited-area file numbers its cells, edges and vertices anew (each sorted by refinement row,
/// as ICON's index lists need, then in the global grid's order); a reference to a cell outside the
/// domain is 0 (neighbor_cell_index, adjacent_cell_of_edge 2, the rings of boundary vertices);
/// parent_cell_index and parent_edge_index name the global R<root>B<level-1> entities, the child
/// indices are 0 (no nest); refin_c_ctrl counts cell rows from the lateral boundary (1 at the
/// outermost, up to boundary_depth, 0 inside), refin_v_ctrl and refin_e_ctrl the vertex and edge
/// rows between them (docs/grids.md). docs/grids.md lists the variables and the ICON sources they
/// were checked against. The file appears atomically (written beside `path`, then renamed);
/// throws ConfigError for a size out of range or a region that holds no cell, IoError when the
/// file cannot be written.
IconGridFileSummary write_icon_grid_file(const std::string& path, const IconGridFileRequest& request);

/// The global R2B<level> grid (level 0..9).
IconGridFileSummary write_icon_grid_file(const std::string& path, int level);

/// The uuidOfHGrid write_icon_grid_file gives the global R<root>B<level>: a fixed function of the
/// size (the geometry is a fixed function of it), formatted as an RFC 9562 version-8 UUID, so files
/// written twice agree and files of different sizes differ.
std::string uniform_icon_grid_uuid(int level, int root = 2);

}  // namespace finecast::coupling
