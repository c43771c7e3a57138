// SPDX-License-Identifier: BSD-3-Clause
// The coarse cells of a limited-area ICON grid: grouped by the file's parent_cell_index, or by
// the uniform grid the domain was cut from (matched through the topology); partial coarse cells at
// the edge and those in the lateral boundary zone are left out.
#include "coupling/grid/icon_limited_area.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <string>

#include "common/error.hpp"
#include "coupling/grid/edge_neighbours.hpp"
#include "coupling/grid/icon_patch_assembly.hpp"
#include "coupling/grid/icosahedral_grid.hpp"
#include "coupling/grid/spherical.hpp"
#include "coupling/grid/topology_match.hpp"

namespace finecast::coupling {
namespace {

using sphere::Vec3;

[[noreturn]] void fail(const IconGrid& g, const std::string& what) {
  throw GridError("ICON grid '" + g.path + "' (limited area): " + what);
}

/// The coarse cell of every fine cell (-1: none) and each coarse cell's corners (fine-grid
/// vertex ids; -1 where the corner lies outside the domain).
struct Groups {
  std::vector<int64_t> of_cell;
  std::vector<std::array<int32_t, 3>> corners;
  std::string source;  ///< where the hierarchy came from
};

/// Level F - 1 from parent_cell_index: the children of one parent form a coarse cell; a complete
/// one's corners are the vertices that only one of its four children has.
Groups groups_from_parents(const IconGrid& g) {
  Groups out;
  out.source = "parent_cell_index";
  std::map<int32_t, int64_t> id_of;
  std::vector<int32_t> parent_of;
  out.of_cell.resize(static_cast<size_t>(g.n_cells));
  for (int64_t c = 0; c < g.n_cells; ++c) {
    const auto [it, fresh] = id_of.emplace(g.parent_cell[c], static_cast<int64_t>(id_of.size()));
    if (fresh) parent_of.push_back(g.parent_cell[c]);
    out.of_cell[c] = it->second;
  }
  std::vector<std::vector<int32_t>> corner_count(id_of.size());
  for (int64_t c = 0; c < g.n_cells; ++c)
    for (int32_t v : g.cell_vertices[c]) corner_count[out.of_cell[c]].push_back(v);
  out.corners.assign(id_of.size(), {-1, -1, -1});
  for (size_t id = 0; id < id_of.size(); ++id) {
    auto& vs = corner_count[id];
    if (vs.size() != 12) continue;  // not 4 children: a partial coarse cell
    std::sort(vs.begin(), vs.end());
    std::array<int32_t, 3> corners{-1, -1, -1};
    int n_corners = 0;
    for (size_t i = 0; i < vs.size();) {
      size_t j = i;
      while (j < vs.size() && vs[j] == vs[i]) ++j;
      if (j - i == 1) {
        if (n_corners == 3) n_corners = 4;  // marks "not a bisected triangle"
        if (n_corners < 3) corners[n_corners++] = vs[i];
      }
      i = j;
    }
    if (n_corners != 3)
      fail(g, "the four cells with parent_cell_index " + std::to_string(parent_of[id] + 1) +
                  " do not bisect a triangle (" + std::to_string(n_corners) + " vertices of one child, expected 3)");
    out.corners[id] = corners;
  }
  return out;
}

/// The uniform R<n>B<F> cells over the domain that the file's cells are (matched through the
/// topology from the cell nearest the domain's centre, best of the three nearest generated cells
/// in each of three rotations), grouped by their R<n>B<L> ancestor.
Groups groups_from_uniform(const IconGrid& g, const IconGridSize& size, int coarse_level) {
  const std::vector<Vec3> file_centres = cell_centres(g), file_xyz = vertex_positions(g);
  Vec3 sum{0, 0, 0};
  for (const Vec3& x : file_centres)
    for (int d = 0; d < 3; ++d) sum[d] += x[d];
  const double norm = std::sqrt(sphere::dot(sum, sum));
  const Vec3 centre = norm > 1e-9 * static_cast<double>(file_centres.size()) ? sphere::normalised(sum) : Vec3{0, 0, 1};
  double radius = 0, cell_radius = 0;
  for (int64_t c = 0; c < g.n_cells; ++c)
    for (int32_t v : g.cell_vertices[c]) {
      radius = std::max(radius, sphere::arc_length(centre, file_xyz[v]));
      cell_radius = std::max(cell_radius, sphere::arc_length(file_centres[c], file_xyz[v]));
    }
  // A margin of a few cells, for geometries that differ a little from the uniform one.
  const double cap = std::min(sphere::kPi, radius + 4 * cell_radius);
  const std::string name = icon_grid_name(size.root, size.level);
  const IcosahedralMesh mesh = make_icosahedral_region(size.level, size.root, coarse_level, centre, cap);
  const IconGrid uniform = icon_grid_of_mesh(mesh, "uniform " + name);
  const MeshTopology file = mesh_topology(g), gen = mesh_topology(uniform);
  const std::vector<Vec3> gen_centres = cell_centres(uniform), gen_xyz = vertex_positions(uniform);

  int32_t fc = 0;
  for (int64_t c = 1; c < g.n_cells; ++c)
    if (sphere::dot(file_centres[c], centre) > sphere::dot(file_centres[fc], centre)) fc = static_cast<int32_t>(c);
  std::vector<std::pair<double, int32_t>> nearest;
  for (size_t c = 0; c < gen_centres.size(); ++c)
    nearest.push_back({sphere::arc_length(gen_centres[c], file_centres[fc]), static_cast<int32_t>(c)});
  const size_t n_candidates = std::min<size_t>(3, nearest.size());
  std::partial_sort(nearest.begin(), nearest.begin() + n_candidates, nearest.end());
  const auto& fcell = g.cell_vertices[fc];
  const int f_orient = corner_orientation(file_xyz[fcell[0]], file_xyz[fcell[1]], file_xyz[fcell[2]]);
  MeshMatch best, trial;
  best.score = std::numeric_limits<double>::infinity();
  MatchScratch scratch;
  for (size_t i = 0; i < n_candidates; ++i) {
    const int32_t gc = nearest[i].second;
    const auto& gcell = uniform.cell_vertices[gc];
    for (int rot = 0; rot < 3; ++rot) {
      std::array<int32_t, 3> gv{gcell[rot], gcell[(rot + 1) % 3], gcell[(rot + 2) % 3]};
      if (corner_orientation(gen_xyz[gv[0]], gen_xyz[gv[1]], gen_xyz[gv[2]]) != f_orient) std::swap(gv[1], gv[2]);
      const double give_up = std::isfinite(best.score) ? best.score : std::numeric_limits<double>::max();
      if (match_from(file, gen, file_centres, gen_centres, fc, gc, fcell, gv, give_up, trial, scratch) &&
          trial.score < best.score)
        std::swap(best, trial);
    }
  }
  if (!std::isfinite(best.score))
    fail(g, "its cells match no part of the uniform " + name +
                " grid (grid_root and grid_level name the grid it was cut from; its cells must be edge-connected "
                "and joined as that grid's are)");

  Groups out;
  out.source = "the uniform " + name + " grid over the domain";
  const int shift = 2 * (size.level - coarse_level);
  const int64_t per = int64_t{1} << shift;
  std::vector<int32_t> file_vertex(uniform.cell_vertices.empty() ? 0 : static_cast<size_t>(uniform.n_vertices), -1);
  for (size_t v = 0; v < best.vertex.size(); ++v)
    if (best.vertex[v] >= 0) file_vertex[best.vertex[v]] = static_cast<int32_t>(v);
  std::map<int64_t, int64_t> id_of;  // generated coarse cell -> group
  out.of_cell.resize(static_cast<size_t>(g.n_cells));
  for (int64_t c = 0; c < g.n_cells; ++c) {
    const int64_t coarse = int64_t{best.cell[c]} >> shift;
    const auto [it, fresh] = id_of.emplace(coarse, static_cast<int64_t>(id_of.size()));
    out.of_cell[c] = it->second;
    if (fresh) {
      // Coarse corner j is corner j of its descendant that is child j of child j ... (k times).
      std::array<int32_t, 3> corners{};
      for (int j = 0; j < 3; ++j) corners[j] = file_vertex[mesh.cells[coarse * per + j * (per - 1) / 3][j]];
      out.corners.push_back(corners);
    }
  }
  // The file's own parents, where it has them, must group the cells as the uniform grid does.
  if (!g.parent_cell.empty() && size.level > coarse_level) {
    out.source += ", checked against parent_cell_index";
    std::map<int64_t, int32_t> parent_of;
    std::map<int32_t, int64_t> ancestor_of;
    for (int64_t c = 0; c < g.n_cells; ++c) {
      const int32_t parent = g.parent_cell[c];
      if (parent < 0) continue;
      const int64_t ancestor = int64_t{best.cell[c]} >> 2;
      const auto a = parent_of.emplace(ancestor, parent);
      const auto b = ancestor_of.emplace(parent, ancestor);
      if (a.first->second != parent || b.first->second != ancestor)
        fail(g, "parent_cell_index disagrees with the topology at cell " + std::to_string(c + 1) + " (parent " +
                    std::to_string(parent + 1) + "): the cells that share a parent in the uniform " + name +
                    " grid have different parents in the file, or the other way round");
    }
  }
  return out;
}

}  // namespace

std::vector<int32_t> boundary_distance(const std::vector<std::array<int32_t, 3>>& cells, int64_t n_vertices) {
  const auto across = edge_neighbours(cells, n_vertices, "boundary rows");
  std::vector<std::vector<int32_t>> adj(static_cast<size_t>(n_vertices));
  std::vector<int32_t> dist(static_cast<size_t>(n_vertices), -1), queue;
  for (size_t c = 0; c < cells.size(); ++c)
    for (int k = 0; k < 3; ++k) {
      const int32_t a = cells[c][(k + 1) % 3], b = cells[c][(k + 2) % 3];
      adj[a].push_back(b);
      adj[b].push_back(a);
      if (across[c][k] < 0)
        for (int32_t v : {a, b})
          if (dist[v] < 0) {
            dist[v] = 0;
            queue.push_back(v);
          }
    }
  for (size_t head = 0; head < queue.size(); ++head)
    for (int32_t w : adj[queue[head]])
      if (dist[w] < 0) {
        dist[w] = dist[queue[head]] + 1;
        queue.push_back(w);
      }
  return dist;
}

PatchMap limited_area_patch_map(const IconGrid& g, const IconGridSize& size, int coarse_level,
                                const LimitedAreaRules& rules) {
  const int k = size.level - coarse_level;
  // Beyond 4^10 (about a million) fine cells per patch the uniform grid over the domain alone
  // could outgrow memory, and no model takes patches that large.
  if (k > 10)
    fail(g, "patches of 4^" + std::to_string(k) + " fine cells (" + icon_grid_name(size.root, size.level) + " -> " +
                icon_grid_name(size.root, coarse_level) + "), expected at most 4^10; choose a finer coarse level");
  const int64_t r = int64_t{1} << k, P = r * r;
  const bool parents_complete = !g.parent_cell.empty() && std::all_of(g.parent_cell.begin(), g.parent_cell.end(),
                                                                      [](int32_t p) { return p >= 0; });
  Groups groups;
  if (k == 0) {
    groups.source = "the grid's own cells";
    groups.of_cell.resize(static_cast<size_t>(g.n_cells));
    for (int64_t c = 0; c < g.n_cells; ++c) groups.of_cell[c] = c;
    groups.corners = g.cell_vertices;
  } else if (k == 1 && parents_complete) {
    groups = groups_from_parents(g);
  } else {
    groups = groups_from_uniform(g, size, coarse_level);
  }
  const auto n_groups = static_cast<int64_t>(groups.corners.size());

  // The lateral boundary zone: the file's rows, else rows counted from the boundary.
  LimitedAreaSummary summary;
  summary.on = true;
  summary.hierarchy = groups.source;
  summary.boundary_rows = std::max(0, rules.boundary_rows);
  summary.coarse_total = n_groups;
  std::vector<int32_t> rows = g.refin_c_ctrl;
  if (rows.empty()) {
    summary.rows_from_topology = true;
    const std::vector<int32_t> distance = boundary_distance(g.cell_vertices, g.n_vertices);
    rows.resize(static_cast<size_t>(g.n_cells));
    for (int64_t c = 0; c < g.n_cells; ++c) {
      const auto& v = g.cell_vertices[c];
      rows[c] = boundary_row(std::min({distance[v[0]], distance[v[1]], distance[v[2]]}), summary.boundary_rows);
    }
  }

  std::vector<std::vector<int64_t>> members(static_cast<size_t>(n_groups));
  std::vector<char> in_zone(static_cast<size_t>(n_groups), 0);
  for (int64_t c = 0; c < g.n_cells; ++c) {
    const int64_t id = groups.of_cell[c];
    members[id].push_back(c);
    if (rows[c] >= 1 && rows[c] <= summary.boundary_rows) in_zone[id] = 1;
  }
  std::vector<std::array<int32_t, 3>> corners;
  std::vector<int64_t> slot_cell, slots;
  for (int64_t id = 0; id < n_groups; ++id) {
    const auto& cells = members[id];
    const auto& K = groups.corners[id];
    if (static_cast<int64_t>(cells.size()) > P)
      fail(g, std::to_string(cells.size()) + " fine cells in one " + icon_grid_name(size.root, coarse_level) +
                  " cell (" + groups.source + "), expected at most " + std::to_string(P));
    if (static_cast<int64_t>(cells.size()) < P || K[0] < 0 || K[1] < 0 || K[2] < 0) {
      ++summary.left_out_partial;
      continue;
    }
    if (in_zone[id]) {
      ++summary.left_out_boundary;
      continue;
    }
    std::array<int8_t, 3> from{};
    const std::array<int32_t, 3> canon = canonical_corners(g, K, from);
    if (!canonical_slots(g, cells, canon, r, slots))
      fail(g, "the fine cells of one " + icon_grid_name(size.root, coarse_level) + " cell (" + groups.source +
                  ", holding cell " + std::to_string(cells.front() + 1) + ") do not refine it regularly");
    const size_t base = slot_cell.size();
    slot_cell.resize(base + static_cast<size_t>(P));
    for (size_t i = 0; i < cells.size(); ++i) slot_cell[base + slots[i]] = cells[i];
    corners.push_back(canon);
  }
  const auto n_kept = static_cast<int64_t>(corners.size());
  if (n_kept == 0)
    fail(g, "none of its " + std::to_string(n_groups) + " " + icon_grid_name(size.root, coarse_level) +
                " cells lies wholly in the domain and outside the lateral boundary zone (refin_c_ctrl 1.." +
                std::to_string(summary.boundary_rows) + "): " + std::to_string(summary.left_out_partial) +
                " are cut by the domain's edge, " + std::to_string(summary.left_out_boundary) +
                " reach into the zone; choose a finer coarse level");
  PatchMap pm = assemble_icon_patch_map(g, n_kept, P, corners, slot_cell, false);
  pm.limited_area = summary;
  return pm;
}

}  // namespace finecast::coupling
