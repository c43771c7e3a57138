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
#include "coupling/grid/edge_neighbours.hpp"
#include "coupling/grid/icosahedral_grid.hpp"
#include "coupling/grid/spherical.hpp"

namespace finecast::coupling {
namespace {

using sphere::Vec3;

[[noreturn]] void not_icosahedral(const IconGrid& g, const std::string& why) {
  throw GridError("ICON grid '" + g.path + "': " + why +
                  "; the uniform geometry needs the topology of a recursively bisected icosahedron (an R2B<k> grid)");
}

/// A triangle mesh's topology: corners, the cell across the edge opposite each corner, and the
/// cells around each vertex.
struct Topology {
  const std::vector<std::array<int32_t, 3>>* corners = nullptr;
  std::vector<std::array<int32_t, 3>> across;
  std::vector<int32_t> degree;
  std::vector<int32_t> first_cell;  ///< one cell holding each vertex
};

Topology topology(const IconGrid& g) {
  Topology t;
  t.corners = &g.cell_vertices;
  t.across = edge_neighbours(g.cell_vertices, g.n_vertices, "ICON grid '" + g.path + "'");
  t.degree.assign(static_cast<size_t>(g.n_vertices), 0);
  t.first_cell.assign(static_cast<size_t>(g.n_vertices), -1);
  for (size_t c = 0; c < g.cell_vertices.size(); ++c)
    for (int32_t v : g.cell_vertices[c]) {
      ++t.degree[v];
      if (t.first_cell[v] < 0) t.first_cell[v] = static_cast<int32_t>(c);
    }
  return t;
}

/// The checks that are cheap and name the fault: an R2B<k> cell count, a closed surface, the
/// vertex count of a sphere, twelve vertices of five cells and the rest of six. Returns k.
int check_counts(const IconGrid& g, const Topology& t) {
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

int slot_of(const std::array<int32_t, 3>& cell, int32_t v) {
  for (int k = 0; k < 3; ++k)
    if (cell[k] == v) return k;
  return -1;
}

/// Orientation of a cell's corners in the order (a, b, c) as positioned by `xyz`: +1
/// counter-clockwise seen from outside, -1 clockwise.
int orientation(const Vec3& a, const Vec3& b, const Vec3& c) {
  return sphere::dot(a, sphere::cross(b, c)) >= 0 ? 1 : -1;
}

/// A match of the file's cells and vertices onto the generated grid's.
struct Match {
  std::vector<int32_t> cell, vertex;  ///< file id -> generated id
  double score = 0;                   ///< sum of squared chords between file and generated centres
};

/// Propagates the match fixed by file cell `fc` -> generated cell `gc` with corners
/// fv[k] -> gv[k], breadth-first across shared edges. False when the topologies disagree, or
/// when the score passes `give_up` (a worse match than one already found).
bool propagate(const Topology& file, const Topology& gen, const std::vector<Vec3>& file_centres,
               const std::vector<Vec3>& gen_centres, int32_t fc, int32_t gc, const std::array<int32_t, 3>& fv,
               const std::array<int32_t, 3>& gv, double give_up, Match& m, std::vector<int32_t>& gen_taken,
               std::vector<int32_t>& gen_vertex_taken, std::vector<int32_t>& queue) {
  const size_t n = file.corners->size();
  m.cell.assign(n, -1);
  m.vertex.assign(file.degree.size(), -1);
  std::fill(gen_taken.begin(), gen_taken.end(), -1);
  std::fill(gen_vertex_taken.begin(), gen_vertex_taken.end(), -1);
  m.score = 0;
  auto map_vertex = [&](int32_t f, int32_t g) {
    if (m.vertex[f] >= 0) return m.vertex[f] == g;
    if (gen_vertex_taken[g] >= 0 || file.degree[f] != gen.degree[g]) return false;
    m.vertex[f] = g;
    gen_vertex_taken[g] = f;
    return true;
  };
  auto map_cell = [&](int32_t f, int32_t g) {
    if (m.cell[f] >= 0) return m.cell[f] == g ? 0 : -1;
    if (gen_taken[g] >= 0) return -1;
    m.cell[f] = g;
    gen_taken[g] = f;
    const Vec3& a = file_centres[f];
    const Vec3& b = gen_centres[g];
    m.score += (a[0] - b[0]) * (a[0] - b[0]) + (a[1] - b[1]) * (a[1] - b[1]) + (a[2] - b[2]) * (a[2] - b[2]);
    return 1;
  };
  for (int k = 0; k < 3; ++k)
    if (!map_vertex(fv[k], gv[k])) return false;
  map_cell(fc, gc);
  queue.clear();
  queue.push_back(fc);
  for (size_t head = 0; head < queue.size(); ++head) {
    if (m.score > give_up) return false;
    const int32_t f = queue[head];
    const int32_t g = m.cell[f];
    const auto& fcorners = (*file.corners)[f];
    const auto& gcorners = (*gen.corners)[g];
    for (int k = 0; k < 3; ++k) {
      // The edge opposite corner k of f, and the same edge in g: the corners other than k's image.
      const int32_t gk = slot_of(gcorners, m.vertex[fcorners[k]]);
      if (gk < 0) return false;
      const int32_t fn = file.across[f][k], gn = gen.across[g][gk];
      const int added = map_cell(fn, gn);
      if (added < 0) return false;
      // The third corner of the neighbour, the one off the shared edge, on both sides.
      const auto& fnc = (*file.corners)[fn];
      const auto& gnc = (*gen.corners)[gn];
      int32_t f3 = -1, g3 = -1;
      for (int j = 0; j < 3; ++j) {
        if (slot_of(fcorners, fnc[j]) < 0) f3 = fnc[j];
        if (slot_of(gcorners, gnc[j]) < 0) g3 = gnc[j];
      }
      if (f3 < 0 || g3 < 0 || !map_vertex(f3, g3)) return false;
      if (added > 0) queue.push_back(fn);
    }
  }
  return queue.size() == n;  // a sphere's cells are connected: every one is reached
}

std::vector<Vec3> centres_of(const IconGrid& g) {
  std::vector<Vec3> c(static_cast<size_t>(g.n_cells));
  for (size_t i = 0; i < c.size(); ++i) c[i] = sphere::to_xyz(g.clon[i], g.clat[i]);
  return c;
}

std::vector<Vec3> vertices_of(const IconGrid& g) {
  std::vector<Vec3> v(static_cast<size_t>(g.n_vertices));
  for (size_t i = 0; i < v.size(); ++i) v[i] = sphere::to_xyz(g.vlon[i], g.vlat[i]);
  return v;
}

}  // namespace

UniformGeometryFit set_uniform_geometry(IconGrid& grid) {
  const Topology file = topology(grid);
  const int level = check_counts(grid, file);
  const IconGrid uniform = make_icosahedral_grid(level);
  const Topology gen = topology(uniform);
  const std::vector<Vec3> file_centres = centres_of(grid), gen_centres = centres_of(uniform);
  const std::vector<Vec3> file_xyz = vertices_of(grid), gen_xyz = vertices_of(uniform);

  // The anchor: one cell at one of the file's pentagons, its corners ordered from the pentagon.
  int32_t pentagon = -1;
  for (size_t v = 0; v < file.degree.size() && pentagon < 0; ++v)
    if (file.degree[v] == 5) pentagon = static_cast<int32_t>(v);
  const int32_t fc = file.first_cell[pentagon];
  const auto& fcell = grid.cell_vertices[fc];
  const int fk = slot_of(fcell, pentagon);
  const std::array<int32_t, 3> fv{fcell[fk], fcell[(fk + 1) % 3], fcell[(fk + 2) % 3]};
  const int f_orient = orientation(file_xyz[fv[0]], file_xyz[fv[1]], file_xyz[fv[2]]);

  UniformGeometryFit fit;
  Match best, trial;
  best.score = std::numeric_limits<double>::infinity();
  std::vector<int32_t> gen_taken(static_cast<size_t>(uniform.n_cells)), gen_vertex_taken(gen.degree.size()), queue;
  queue.reserve(static_cast<size_t>(grid.n_cells));
  for (size_t p = 0; p < gen.degree.size(); ++p) {
    if (gen.degree[p] != 5) continue;
    for (size_t gc = 0; gc < uniform.cell_vertices.size(); ++gc) {
      const auto& gcell = uniform.cell_vertices[gc];
      const int gk = slot_of(gcell, static_cast<int32_t>(p));
      if (gk < 0) continue;
      // The corner order that keeps the file cell's orientation (a rotation, not a mirror image).
      std::array<int32_t, 3> gv{gcell[gk], gcell[(gk + 1) % 3], gcell[(gk + 2) % 3]};
      if (orientation(gen_xyz[gv[0]], gen_xyz[gv[1]], gen_xyz[gv[2]]) != f_orient) std::swap(gv[1], gv[2]);
      ++fit.anchors_tried;
      // A trial stops as soon as it is worse than the best match found so far.
      const double give_up = std::isfinite(best.score) ? best.score : std::numeric_limits<double>::max();
      if (propagate(file, gen, file_centres, gen_centres, fc, static_cast<int32_t>(gc), fv, gv, give_up, trial,
                    gen_taken, gen_vertex_taken, queue) &&
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
