// SPDX-License-Identifier: BSD-3-Clause
// The uniform icosahedral geometry for an ICON grid file's topology: a cell-to-cell and
// vertex-to-vertex match with the generated grid, propagated across shared edges.
#include "coupling/grid/icon_geometry.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "common/error.hpp"
#include "common/log.hpp"
#include "coupling/grid/icosahedral_grid.hpp"
#include "coupling/grid/spherical.hpp"
#include "coupling/grid/topology_match.hpp"

namespace finecast::coupling {
namespace {

using sphere::Vec3;

[[noreturn]] void not_icosahedral(const IconGrid& g, const std::string& why) {
  throw GridError("ICON grid '" + g.path + "': " + why +
                  "; the uniform geometry needs the topology of a recursively bisected icosahedron (an R2B<k> grid)");
}

/// The checks that are cheap and name the fault: an R2B<k> cell count, a closed surface, the
/// vertex count of a sphere, twelve vertices of five cells and the rest of six. Returns k.
int check_counts(const IconGrid& g, const MeshTopology& t) {
  int level = -1;
  for (int64_t k = 0, cells = 80; k <= 12; ++k, cells *= 4)  // 64 bits: the step after k = 12 overflows an int
    if (cells == g.n_cells) level = static_cast<int>(k);
  if (level < 0)
    not_icosahedral(g,
                    std::to_string(g.n_cells) + " cells is no R2B<k> size (80 * 4^k: 80, 320, 1280, 5120, 20480, ...)");
  for (size_t c = 0; c < t.across.size(); ++c)
    for (int32_t n : t.across[c])
      if (n < 0) not_icosahedral(g, "cell " + std::to_string(c) + " has an edge on the boundary (a regional grid)");
  if (g.n_vertices != 2 + g.n_cells / 2)
    not_icosahedral(g, std::to_string(g.n_vertices) + " distinct vertices for " + std::to_string(g.n_cells) +
                           " cells, expected " + std::to_string(2 + g.n_cells / 2));
  int64_t pentagons = 0;
  for (size_t v = 0; v < t.degree.size(); ++v) {
    if (t.degree[v] != 5 && t.degree[v] != 6)
      not_icosahedral(g, "vertex " + std::to_string(v) + " is a corner of " + std::to_string(t.degree[v]) +
                             " cells, expected 5 or 6");
    pentagons += t.degree[v] == 5 ? 1 : 0;
  }
  if (pentagons != 12) not_icosahedral(g, std::to_string(pentagons) + " vertices of 5 cells, expected 12");
  return level;
}

}  // namespace

UniformGeometryFit set_uniform_geometry(IconGrid& grid) {
  const MeshTopology file = mesh_topology(grid);
  const int level = check_counts(grid, file);
  const IconGrid uniform = make_icosahedral_grid(level);
  const MeshTopology gen = mesh_topology(uniform);
  const std::vector<Vec3> file_centres = cell_centres(grid), gen_centres = cell_centres(uniform);
  const std::vector<Vec3> file_xyz = vertex_positions(grid), gen_xyz = vertex_positions(uniform);

  // The anchor: one cell at one of the file's pentagons, its corners ordered from the pentagon.
  int32_t pentagon = -1;
  for (size_t v = 0; v < file.degree.size() && pentagon < 0; ++v)
    if (file.degree[v] == 5) pentagon = static_cast<int32_t>(v);
  const int32_t fc = file.first_cell[pentagon];
  const auto& fcell = grid.cell_vertices[fc];
  const int fk = corner_slot(fcell, pentagon);
  const std::array<int32_t, 3> fv{fcell[fk], fcell[(fk + 1) % 3], fcell[(fk + 2) % 3]};
  const int f_orient = corner_orientation(file_xyz[fv[0]], file_xyz[fv[1]], file_xyz[fv[2]]);

  UniformGeometryFit fit;
  MeshMatch best, trial;
  best.score = std::numeric_limits<double>::infinity();
  MatchScratch scratch;
  for (size_t p = 0; p < gen.degree.size(); ++p) {
    if (gen.degree[p] != 5) continue;
    for (size_t gc = 0; gc < uniform.cell_vertices.size(); ++gc) {
      const auto& gcell = uniform.cell_vertices[gc];
      const int gk = corner_slot(gcell, static_cast<int32_t>(p));
      if (gk < 0) continue;
      // The corner order that keeps the file cell's orientation (a rotation, not a mirror image).
      std::array<int32_t, 3> gv{gcell[gk], gcell[(gk + 1) % 3], gcell[(gk + 2) % 3]};
      if (corner_orientation(gen_xyz[gv[0]], gen_xyz[gv[1]], gen_xyz[gv[2]]) != f_orient) std::swap(gv[1], gv[2]);
      ++fit.anchors_tried;
      // A trial stops as soon as it is worse than the best match found so far.
      const double give_up = std::isfinite(best.score) ? best.score : std::numeric_limits<double>::max();
      if (match_from(file, gen, file_centres, gen_centres, fc, static_cast<int32_t>(gc), fv, gv, give_up, trial,
                     scratch) &&
          trial.score < best.score)
        std::swap(best, trial);
    }
  }
  if (!std::isfinite(best.score))
    not_icosahedral(grid, "no cell-by-cell match with the R2B" + std::to_string(level) +
                              " icosahedral grid (its cells are joined otherwise)");

  std::vector<double> old_lon = grid.clon, old_lat = grid.clat;
  for (size_t v = 0; v < best.vertex.size(); ++v) {
    grid.vlon[v] = uniform.vlon[best.vertex[v]];
    grid.vlat[v] = uniform.vlat[best.vertex[v]];
  }
  double sum_sq = 0;
  for (size_t c = 0; c < best.cell.size(); ++c) {
    grid.clon[c] = uniform.clon[best.cell[c]];
    grid.clat[c] = uniform.clat[best.cell[c]];
    const double d = std::acos(std::clamp(
        sphere::dot(sphere::to_xyz(old_lon[c], old_lat[c]), sphere::to_xyz(grid.clon[c], grid.clat[c])), -1.0, 1.0));
    sum_sq += d * d;
    fit.max_shift_deg = std::max(fit.max_shift_deg, d / sphere::kDeg);
  }
  fit.rms_shift_deg = std::sqrt(sum_sq / static_cast<double>(best.cell.size())) / sphere::kDeg;
  grid.cell_area.clear();  // the file's areas are its own geometry's
  complete_icon_grid(grid);
  return fit;
}

IconGrid read_icon_grid(const std::string& path, IconGeometry geometry) {
  IconGrid grid = read_icon_grid(path);
  if (geometry == IconGeometry::kFile) return grid;
  const UniformGeometryFit fit = set_uniform_geometry(grid);
  log::info(
      fmt::format("ICON grid {}: the uniform icosahedral geometry for its {} cells (matched by topology, best of {} "
                  "anchors); the cell centres moved by {:.2f} degrees RMS, at most {:.2f}",
                  path, grid.n_cells, fit.anchors_tried, fit.rms_shift_deg, fit.max_shift_deg));
  return grid;
}

IconGeometry parse_icon_geometry(const std::string& text, const std::string& what) {
  if (text.empty()) return IconGeometry::kFile;
  for (const auto& [value, name] : names(IconGeometry{}))
    if (text == name) return value;
  throw ConfigError(what + ": \"" + text + "\", expected file or uniform");
}

}  // namespace finecast::coupling
