// SPDX-License-Identifier: BSD-3-Clause
// ICON grids: reading the real R2B4 grid, the synthetic generator, and the topological hierarchy.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <random>
#include <set>
#include <utility>

#include "common/error.hpp"
#include "coupling/grid/edge_neighbours.hpp"
#include "coupling/grid/icon_grid.hpp"
#include "coupling/grid/icon_hierarchy.hpp"
#include "coupling/grid/icon_limited_area.hpp"
#include "coupling/grid/icosahedral_grid.hpp"
#include "coupling/grid/spherical.hpp"
#include "tests/coupling/io_test_util.hpp"

namespace fc = finecast::coupling;
namespace fti = finecast::testing_io;
namespace sphere = finecast::coupling::sphere;

namespace {

const fc::IconGrid& real_r2b4() {
  static const fc::IconGrid grid = fc::read_icon_grid(fti::kIconFile);
  return grid;
}

/// Coarse neighbour slots must be symmetric, distinct, and lie across a real fine edge.
void expect_consistent_neighbours(const fc::IconGrid& g, const fc::PatchMap& pm) {
  std::vector<int64_t> patch_of(pm.n_fine);
  for (int64_t i = 0; i < pm.n_coarse * pm.patch_size; ++i) patch_of[pm.fine_of_patch[i]] = i / pm.patch_size;
  for (int64_t c = 0; c < pm.n_coarse; ++c) {
    std::set<int64_t> across;  // coarse cells reached through a fine edge
    for (int s = 0; s < pm.patch_size; ++s)
      for (int32_t nb : g.cell_neighbours[pm.fine_of_patch[c * pm.patch_size + s]])
        if (nb >= 0 && patch_of[nb] != c) across.insert(patch_of[nb]);
    std::set<int64_t> listed;
    for (int k = 0; k < 3; ++k) {
      const int64_t b = pm.neighbours[c * 3 + k];
      ASSERT_GE(b, 0) << "coarse cell " << c << " slot " << k;
      listed.insert(b);
      const int64_t* back = &pm.neighbours[b * 3];
      EXPECT_TRUE(back[0] == c || back[1] == c || back[2] == c) << c << " -> " << b;
    }
    EXPECT_EQ(listed, across) << "coarse cell " << c;
  }
}

}  // namespace

TEST(EdgeNeighbours, SlotKFacesCornerKAndBoundaryEdgesHaveNone) {
  // A square 0-1-2-3 cut along the diagonal 0-2: the triangles meet across that edge only.
  const std::vector<std::array<int32_t, 3>> square = {{0, 1, 2}, {0, 2, 3}};
  const auto nb = fc::edge_neighbours(square, 4, "square");
  // Slot 1 of triangle 0 is the edge opposite vertex 1 (2-0); slot 2 of triangle 1 the edge
  // opposite vertex 3 (0-2).
  EXPECT_EQ(nb[0], (std::array<int32_t, 3>{-1, 1, -1}));
  EXPECT_EQ(nb[1], (std::array<int32_t, 3>{-1, -1, 0}));
  // A third triangle on the same edge is not a surface.
  const std::vector<std::array<int32_t, 3>> fan = {{0, 1, 2}, {0, 2, 3}, {2, 0, 4}};
  try {
    fc::edge_neighbours(fan, 5, "fan");
    FAIL() << "expected GridError";
  } catch (const finecast::GridError& e) {
    EXPECT_NE(std::string(e.what()).find("fan: an edge is shared by 3 triangles"), std::string::npos) << e.what();
  }
}

TEST(IconGrid, ReadsRealR2B4WithDeduplicatedVerticesAndNeighbours) {
  if (!fti::exists(fti::kIconFile)) GTEST_SKIP() << fti::kIconFile << " missing (install libncarg-data)";
  const fc::IconGrid& g = real_r2b4();
  EXPECT_EQ(g.n_cells, 20480);
  EXPECT_EQ(g.n_vertices, 10242);  // 10 * 32^2 + 2 for a global R2B4 grid
  double total = 0.0;
  for (int64_t c = 0; c < g.n_cells; ++c) {
    total += g.cell_area[c];
    for (int k = 0; k < 3; ++k) {
      const int32_t nb = g.cell_neighbours[c][k];
      ASSERT_GE(nb, 0) << "a global grid has three neighbours everywhere (cell " << c << ")";
      const auto& back = g.cell_neighbours[nb];
      EXPECT_TRUE(back[0] == c || back[1] == c || back[2] == c);
    }
  }
  EXPECT_NEAR(total / fti::sphere_area(), 1.0, 1e-9);
  EXPECT_EQ(fc::icon_grid_level(g), 4);
  EXPECT_TRUE(g.parent_cell.empty());
}

TEST(IconHierarchy, RealR2B4ParentsEqualTheFilesHierarchicalNumbering) {
  if (!fti::exists(fti::kIconFile)) GTEST_SKIP() << fti::kIconFile << " missing (install libncarg-data)";
  const fc::IconGrid& g = real_r2b4();
  // The file numbers cells hierarchically (parent k holds cells k*P .. k*P+P-1): an oracle that
  // the topology never sees.
  for (int level : {0, 1, 2}) {
    const fc::PatchMap pm = fc::icon_patch_map(g, level);
    const int64_t P = int64_t(1) << (2 * (4 - level));
    ASSERT_EQ(pm.n_coarse, 80 << (2 * level));
    ASSERT_EQ(pm.patch_size, P);
    for (int64_t k = 0; k < pm.n_coarse; ++k) {
      std::vector<int64_t> cells(pm.fine_of_patch.begin() + k * P, pm.fine_of_patch.begin() + (k + 1) * P);
      std::sort(cells.begin(), cells.end());
      for (int64_t s = 0; s < P; ++s) ASSERT_EQ(cells[s], k * P + s) << "level " << level << " patch " << k;
      double w = 0.0;
      for (int64_t s = 0; s < P; ++s) w += pm.fine_weight[k * P + s];
      EXPECT_NEAR(w, 1.0, 1e-12);
    }
    expect_consistent_neighbours(g, pm);
  }
}

TEST(IconHierarchy, SyntheticUnshuffledGridGivesHierarchicalPatchesAndMatchesParents) {
  const fc::IconGrid g = fc::make_icosahedral_grid(3, 0);
  ASSERT_EQ(g.n_cells, 5120);
  EXPECT_EQ(g.n_vertices, 2562);
  double total = 0.0;
  for (double a : g.cell_area) total += a;
  EXPECT_NEAR(total / fti::sphere_area(), 1.0, 1e-9);
  for (int level = 0; level <= 3; ++level) {
    const fc::PatchMap pm = fc::icon_patch_map(g, level);  // level 2 cross-checks parent_cell
    const int64_t P = pm.patch_size;
    ASSERT_EQ(P, int64_t(1) << (2 * (3 - level)));
    for (int64_t k = 0; k < pm.n_coarse; ++k) {
      const auto first = pm.fine_of_patch.begin() + k * P;
      ASSERT_EQ(*std::min_element(first, first + P), k * P);
      ASSERT_EQ(*std::max_element(first, first + P), k * P + P - 1);
    }
    expect_consistent_neighbours(g, pm);
  }
}

TEST(IconHierarchy, ShuffledNumberingGivesTheSamePatchesInTheSameOrder) {
  const fc::IconGrid plain = fc::make_icosahedral_grid(3, 0);
  const fc::IconGrid shuffled = fc::make_icosahedral_grid(3, 20240611);
  // Cells of the two grids correspond by position (both generators compute identical centres).
  std::map<std::pair<double, double>, int64_t> plain_index;
  for (int64_t c = 0; c < plain.n_cells; ++c) plain_index[{plain.clon[c], plain.clat[c]}] = c;
  std::vector<int64_t> to_plain(shuffled.n_cells);
  int64_t moved = 0;
  for (int64_t c = 0; c < shuffled.n_cells; ++c) {
    to_plain[c] = plain_index.at({shuffled.clon[c], shuffled.clat[c]});
    moved += to_plain[c] != c;
  }
  ASSERT_GT(moved, shuffled.n_cells / 2) << "the shuffle must really renumber the cells";

  const fc::PatchMap a = fc::icon_patch_map(plain, 0);
  const fc::PatchMap b = fc::icon_patch_map(shuffled, 0);
  ASSERT_EQ(a.n_coarse, b.n_coarse);
  const int64_t P = a.patch_size;
  std::map<int64_t, int64_t> a_patch_of_first;  // plain cell in slot 0 -> plain patch
  for (int64_t k = 0; k < a.n_coarse; ++k) a_patch_of_first[a.fine_of_patch[k * P]] = k;
  for (int64_t k = 0; k < b.n_coarse; ++k) {
    const int64_t ka = a_patch_of_first.at(to_plain[b.fine_of_patch[k * P]]);
    for (int64_t s = 0; s < P; ++s)
      ASSERT_EQ(to_plain[b.fine_of_patch[k * P + s]], a.fine_of_patch[ka * P + s]) << "patch " << k << " slot " << s;
    EXPECT_DOUBLE_EQ(b.coarse_lat[k], a.coarse_lat[ka]);
  }
}

TEST(IconHierarchy, CanonicalOrderFollowsBarycentricCoordinatesFromTheNorthernmostCorner) {
  const fc::IconGrid g = fc::make_icosahedral_grid(3, 7);
  const int level = 1;
  const fc::PatchMap pm = fc::icon_patch_map(g, level);
  const int64_t r = 4, P = r * r;
  ASSERT_EQ(pm.patch_size, P);
  auto centre = [&](int64_t c) { return sphere::to_xyz(g.clon[c], g.clat[c]); };
  auto vertex = [&](int32_t v) { return sphere::to_xyz(g.vlon[v], g.vlat[v]); };
  // The corner cells of the lattice order: slot 0 (strip 0, first) holds corner A, slot P-1
  // (the last strip's only cell) holds B, slot 2(r-1) (strip 0, last) holds C.
  const int64_t corner_slot[3] = {0, P - 1, 2 * (r - 1)};
  for (int64_t k = 0; k < pm.n_coarse; ++k) {
    const sphere::Vec3 mid = sphere::to_xyz(pm.coarse_lon[k], pm.coarse_lat[k]);
    sphere::Vec3 corner[3];
    for (int q = 0; q < 3; ++q) {
      const int64_t cell = pm.fine_of_patch[k * P + corner_slot[q]];
      double best = 2.0;
      for (int32_t v : g.cell_vertices[cell]) {
        const double cosang = sphere::dot(vertex(v), mid);
        if (cosang < best) best = cosang, corner[q] = vertex(v);  // farthest from the centre
      }
    }
    const sphere::Vec3 &A = corner[0], &B = corner[1], &C = corner[2];
    EXPECT_GE(A[2], B[2]) << "corner A is the northernmost (patch " << k << ")";
    EXPECT_GE(A[2], C[2]) << "corner A is the northernmost (patch " << k << ")";
    EXPECT_GT(sphere::dot(A, sphere::cross(B, C)), 0.0) << "A, B, C counter-clockwise";
    // Slot (i, j, up/down) sits at barycentric (r - beta - gamma, beta, gamma) of A, B, C.
    for (int64_t i = 0, s = 0; i < r; ++i)
      for (int64_t j = 0; j < 2 * (r - i) - 1; ++j, ++s) {
        const bool down = j % 2 == 1;
        const double beta = i + (down ? 2.0 : 1.0) / 3.0;
        const double gamma = static_cast<double>(j / 2) + (down ? 2.0 : 1.0) / 3.0;
        const double alpha = static_cast<double>(r) - beta - gamma;
        const sphere::Vec3 want =
            sphere::normalised({alpha * A[0] + beta * B[0] + gamma * C[0], alpha * A[1] + beta * B[1] + gamma * C[1],
                                alpha * A[2] + beta * B[2] + gamma * C[2]});
        int64_t nearest = -1;
        double best = -2.0;
        for (int64_t t = 0; t < P; ++t) {
          const double cosang = sphere::dot(centre(pm.fine_of_patch[k * P + t]), want);
          if (cosang > best) best = cosang, nearest = t;
        }
        EXPECT_EQ(nearest, s) << "patch " << k << ": slot " << s << " is not at (" << beta << ", " << gamma << ")";
      }
  }
}

TEST(IconHierarchy, SyntheticR2B6SizeHasTheBenchmarkCellCount) {
  const fc::IconGrid g = fc::make_icosahedral_grid(6, 99);
  EXPECT_EQ(g.n_cells, 327680);
  EXPECT_EQ(fc::icon_grid_level(g), 6);
  const fc::PatchMap pm = fc::icon_patch_map(g, 2);
  EXPECT_EQ(pm.n_coarse, 1280);
  EXPECT_EQ(pm.patch_size, 256);
}

TEST(IconHierarchy, WrongParentIndexIsReported) {
  fc::IconGrid g = fc::make_icosahedral_grid(2, 5);
  std::swap(g.parent_cell[0], *std::find_if(g.parent_cell.begin(), g.parent_cell.end(),
                                            [&](int32_t p) { return p != g.parent_cell[0]; }));
  try {
    fc::icon_patch_map(g, 1);
    FAIL() << "expected GridError";
  } catch (const finecast::GridError& e) {
    EXPECT_NE(std::string(e.what()).find("parent_cell_index"), std::string::npos) << e.what();
  }
  EXPECT_NO_THROW(fc::icon_patch_map(g, 0));  // the file's parents are one level up only
}

TEST(IconHierarchy, BrokenTopologyAndOddSizesAreGridErrors) {
  fc::IconGrid g = fc::make_icosahedral_grid(2, 5);
  EXPECT_THROW(fc::icon_patch_map(g, 3), finecast::GridError);  // coarser than fine only
  EXPECT_THROW(fc::icon_patch_map(g, -1), finecast::GridError);
  fc::IconGrid broken = g;
  broken.cell_vertices[10][0] = broken.cell_vertices[500][1];  // a cell torn out of place
  EXPECT_THROW(fc::icon_patch_map(broken, 0), finecast::GridError);
  fc::IconGrid odd = g;
  odd.n_cells = 1000;
  EXPECT_THROW(fc::icon_grid_level(odd), finecast::GridError);
}

TEST(IconGrid, MissingAndWrongFilesNameTheFile) {
  try {
    fc::read_icon_grid("/nonexistent/grid.nc");
    FAIL() << "expected IoError";
  } catch (const finecast::IoError& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/grid.nc"), std::string::npos);
  }
  const char* latlon = "/usr/share/ncarg/data/nug/tas_rectilinear_grid_2D.nc";
  if (!fti::exists(latlon)) GTEST_SKIP();
  try {
    fc::read_icon_grid(latlon);
    FAIL() << "expected IoError";
  } catch (const finecast::IoError& e) {
    EXPECT_NE(std::string(e.what()).find("clon"), std::string::npos) << e.what();
  }
}

// ---- R<n>B<k> grids (root division n, then bisections) ----

// R3B0: the icosahedron's 30 edges trisected at equal great-circle angles, each face's middle
// point its centre; 9 cells per face, numbered face by face.
TEST(IcosahedralMesh, RootThreeTrisectsTheIcosahedronsEdges) {
  const fc::IcosahedralMesh ico = fc::make_icosahedral_mesh(-1);
  const fc::IcosahedralMesh r3 = fc::make_icosahedral_mesh(0, 3);
  ASSERT_EQ(r3.cells.size(), 180u);
  ASSERT_EQ(r3.vertices.size(), 92u);  // 12 corners, 2 per edge, 1 per face
  EXPECT_EQ(r3.root, 3);
  for (size_t e = 0; e < ico.edges.size(); ++e) {
    const sphere::Vec3 &a = ico.vertices[ico.edges[e][0]], &b = ico.vertices[ico.edges[e][1]];
    const double theta = sphere::arc_length(a, b);
    for (int t = 1; t <= 2; ++t) {
      const sphere::Vec3& p = r3.vertices[12 + 2 * e + t - 1];
      EXPECT_NEAR(sphere::arc_length(a, p), t * theta / 3, 1e-12) << "edge " << e;
      EXPECT_NEAR(sphere::arc_length(p, b), (3 - t) * theta / 3, 1e-12) << "edge " << e;
    }
  }
  for (size_t f = 0; f < ico.cells.size(); ++f) {
    const auto& c = ico.cells[f];
    const sphere::Vec3 centre =
        sphere::normalised({ico.vertices[c[0]][0] + ico.vertices[c[1]][0] + ico.vertices[c[2]][0],
                            ico.vertices[c[0]][1] + ico.vertices[c[1]][1] + ico.vertices[c[2]][1],
                            ico.vertices[c[0]][2] + ico.vertices[c[1]][2] + ico.vertices[c[2]][2]});
    EXPECT_LT(sphere::arc_length(r3.vertices[72 + f], centre), 1e-12) << "face " << f;
    // The face's 9 cells lie inside it: their centres are nearer its centre than any corner is.
    for (size_t k = 0; k < 9; ++k) {
      const auto& v = r3.cells[9 * f + k];
      const sphere::Vec3 m = sphere::circumcentre(r3.vertices[v[0]], r3.vertices[v[1]], r3.vertices[v[2]]);
      EXPECT_LT(sphere::arc_length(m, centre), sphere::arc_length(ico.vertices[c[0]], centre)) << f << "/" << k;
    }
  }
}

// R3B2 (2,880 cells) coarsened to R3B1 and R3B0: the patches are the hierarchical blocks of
// cells, with the size read from the global attributes or, without them, from the cell count.
TEST(IconHierarchy, R3BGridsCoarsenToEveryLevel) {
  fc::IconGrid g = fc::make_icosahedral_grid(2, 0, 3);
  ASSERT_EQ(g.n_cells, 2880);
  EXPECT_EQ(g.n_vertices, 1442);
  double total = 0.0;
  for (double a : g.cell_area) total += a;
  EXPECT_NEAR(total / fti::sphere_area(), 1.0, 1e-9);
  fc::IconGridSize size = fc::icon_grid_size(g);
  EXPECT_EQ(size.root, 3);
  EXPECT_EQ(size.level, 2);
  EXPECT_FALSE(size.limited_area);
  g.grid_root = g.grid_level = -1;  // as a file without the attributes
  size = fc::icon_grid_size(g);
  EXPECT_EQ(size.root, 3);
  EXPECT_EQ(size.level, 2);
  for (int level = 0; level <= 2; ++level) {
    const fc::PatchMap pm = fc::icon_patch_map(g, level);  // level 1 cross-checks parent_cell
    const int64_t P = pm.patch_size;
    ASSERT_EQ(pm.n_coarse, 180 << (2 * level));
    ASSERT_EQ(P, int64_t(1) << (2 * (2 - level)));
    for (int64_t k = 0; k < pm.n_coarse; ++k) {
      const auto first = pm.fine_of_patch.begin() + k * P;
      ASSERT_EQ(*std::min_element(first, first + P), k * P);
      ASSERT_EQ(*std::max_element(first, first + P), k * P + P - 1);
    }
    expect_consistent_neighbours(g, pm);
  }
  // Renumbered cells give the same patches (the hierarchy comes from the topology).
  const fc::IconGrid shuffled = fc::make_icosahedral_grid(2, 77, 3);
  std::map<std::pair<double, double>, int64_t> plain_index;
  for (int64_t c = 0; c < g.n_cells; ++c) plain_index[{g.clon[c], g.clat[c]}] = c;
  const fc::PatchMap a = fc::icon_patch_map(g, 0), b = fc::icon_patch_map(shuffled, 0);
  std::set<std::vector<int64_t>> want, got;
  for (int64_t k = 0; k < a.n_coarse; ++k) {
    want.insert({a.fine_of_patch.begin() + k * 16, a.fine_of_patch.begin() + k * 16 + 16});
    std::vector<int64_t> cells;
    for (int s = 0; s < 16; ++s) {
      const int64_t c = b.fine_of_patch[k * 16 + s];
      cells.push_back(plain_index.at({shuffled.clon[c], shuffled.clat[c]}));
    }
    got.insert(cells);
  }
  EXPECT_EQ(got, want);
  // A count that is 20 n^2 4^k for no n the generator knows, and attributes that disagree.
  fc::IconGrid wrong = g;
  wrong.grid_root = 2;
  wrong.grid_level = 3;
  EXPECT_THROW(fc::icon_grid_size(wrong), finecast::GridError);
}

// ---- Limited-area grids ----

namespace {

/// The cells of `g` with keep[c] as a limited-area grid of their own: cells and vertices
/// renumbered at random (seed), neighbours and areas rebuilt, parents, grid_root and grid_level
/// kept. to_global[c] is cell c's cell in g.
fc::IconGrid cut(const fc::IconGrid& g, const std::vector<char>& keep, uint64_t seed, std::vector<int64_t>& to_global) {
  to_global.clear();
  for (int64_t c = 0; c < g.n_cells; ++c)
    if (keep[c]) to_global.push_back(c);
  std::mt19937_64 rng(seed);
  std::shuffle(to_global.begin(), to_global.end(), rng);
  std::vector<int32_t> vertex(static_cast<size_t>(g.n_vertices), -1);
  std::vector<int32_t> used;
  for (int64_t c : to_global)
    for (int32_t v : g.cell_vertices[c])
      if (vertex[v] < 0) {
        vertex[v] = 0;
        used.push_back(v);
      }
  std::shuffle(used.begin(), used.end(), rng);
  fc::IconGrid out;
  out.path = "cut of " + g.path;
  out.grid_root = g.grid_root;
  out.grid_level = g.grid_level;
  out.n_vertices = static_cast<int64_t>(used.size());
  for (size_t i = 0; i < used.size(); ++i) {
    vertex[used[i]] = static_cast<int32_t>(i);
    out.vlon.push_back(g.vlon[used[i]]);
    out.vlat.push_back(g.vlat[used[i]]);
  }
  out.n_cells = static_cast<int64_t>(to_global.size());
  for (int64_t c : to_global) {
    out.clon.push_back(g.clon[c]);
    out.clat.push_back(g.clat[c]);
    out.cell_vertices.push_back(
        {vertex[g.cell_vertices[c][0]], vertex[g.cell_vertices[c][1]], vertex[g.cell_vertices[c][2]]});
    if (!g.parent_cell.empty()) out.parent_cell.push_back(g.parent_cell[c]);
  }
  fc::complete_icon_grid(out);
  return out;
}

/// The cells within `radius` degrees of (lat, lon).
std::vector<char> cap(const fc::IconGrid& g, double lat, double lon, double radius) {
  const sphere::Vec3 centre = sphere::to_xyz(lon * sphere::kDeg, lat * sphere::kDeg);
  std::vector<char> keep(static_cast<size_t>(g.n_cells));
  for (int64_t c = 0; c < g.n_cells; ++c)
    keep[c] = sphere::arc_length(centre, sphere::to_xyz(g.clon[c], g.clat[c])) <= radius * sphere::kDeg;
  return keep;
}

}  // namespace

// A cap of the R2B4 grid holding a pentagon point, renumbered at random: its patches are
// exactly the global grid's coarse cells that lie wholly inside it, with the same fine cells in
// the same slots; a neighbour outside is -1; the coarse cells cut by the edge are counted. At
// R2B3 (one level up) from parent_cell_index, and from the uniform grid when it has none.
TEST(LimitedArea, KeptPatchesAreTheGlobalCoarseCellsWhollyInside) {
  const fc::IconGrid g = fc::make_icosahedral_grid(4, 0);
  std::vector<int64_t> to_global;
  const fc::IconGrid lam = cut(g, cap(g, 40, 10, 30), 11, to_global);  // (26.57N, 0E) is a pentagon
  ASSERT_TRUE(fc::icon_grid_size(lam).limited_area);
  fc::IconGrid no_parents = lam;
  no_parents.parent_cell.clear();
  fc::LimitedAreaRules keep_zone;
  keep_zone.boundary_rows = 0;
  for (int level : {2, 3}) {
    const fc::PatchMap global = fc::icon_patch_map(g, level);
    const int64_t P = global.patch_size;
    std::vector<int> inside(static_cast<size_t>(global.n_coarse), 0);
    std::vector<int64_t> coarse_of(static_cast<size_t>(g.n_cells));
    for (int64_t i = 0; i < global.n_coarse * P; ++i) coarse_of[global.fine_of_patch[i]] = i / P;
    for (int64_t c : to_global) ++inside[coarse_of[c]];
    std::map<int64_t, int64_t> expected;  // global patch -> its rank among the kept
    int64_t touched = 0;
    for (int64_t k = 0; k < global.n_coarse; ++k) {
      touched += inside[k] > 0;
      if (inside[k] == P) expected.emplace(k, 0);
    }
    const fc::PatchMap m = fc::icon_patch_map(lam, level, keep_zone);
    ASSERT_TRUE(m.limited_area.on);
    EXPECT_EQ(m.limited_area.hierarchy.find(level == 3 ? "parent_cell_index" : "the uniform R2B4 grid"), 0u)
        << m.limited_area.hierarchy;
    ASSERT_EQ(m.n_coarse, static_cast<int64_t>(expected.size())) << "level " << level;
    EXPECT_EQ(m.limited_area.coarse_total, touched);
    EXPECT_EQ(m.limited_area.left_out_partial, touched - m.n_coarse);
    EXPECT_EQ(m.limited_area.left_out_boundary, 0);
    std::vector<int64_t> global_of(static_cast<size_t>(m.n_coarse));
    for (int64_t k = 0; k < m.n_coarse; ++k) {
      global_of[k] = coarse_of[to_global[m.fine_of_patch[k * P]]];
      ASSERT_EQ(expected.count(global_of[k]), 1u) << "patch " << k << " is no coarse cell wholly inside";
      for (int64_t s = 0; s < P; ++s)
        ASSERT_EQ(to_global[m.fine_of_patch[k * P + s]], global.fine_of_patch[global_of[k] * P + s])
            << "level " << level << ", patch " << k << ", slot " << s;
    }
    for (int64_t k = 0; k < m.n_coarse; ++k)
      for (int s = 0; s < 3; ++s) {
        const int64_t nb = m.neighbours[k * 3 + s], want = global.neighbours[global_of[k] * 3 + s];
        if (expected.count(want)) {
          ASSERT_GE(nb, 0) << "level " << level << ", patch " << k << ", slot " << s;
          EXPECT_EQ(global_of[nb], want) << "level " << level << ", patch " << k << ", slot " << s;
        } else {
          EXPECT_EQ(nb, -1) << "level " << level << ", patch " << k << ", slot " << s;
        }
      }
    // The other source of the hierarchy gives the same map.
    const fc::PatchMap other = fc::icon_patch_map(no_parents, level, keep_zone);
    EXPECT_EQ(other.fine_of_patch, m.fine_of_patch);
    EXPECT_EQ(other.neighbours, m.neighbours);
  }
}

// The lateral boundary zone: cell rows counted from the boundary (row 1 touches it with an edge
// or a corner; each row borders the one before), and every coarse cell holding a cell of rows
// 1..boundary_rows left out, whether the rows come from refin_c_ctrl or from the topology.
TEST(LimitedArea, CoarseCellsInTheBoundaryZoneAreLeftOut) {
  const fc::IconGrid g = fc::make_icosahedral_grid(5, 0);
  std::vector<int64_t> to_global;
  fc::IconGrid lam = cut(g, cap(g, 50, 10, 25), 5, to_global);
  const std::vector<int32_t> distance = fc::boundary_distance(lam.cell_vertices, lam.n_vertices);
  std::vector<char> on_boundary(static_cast<size_t>(lam.n_vertices), 0);
  for (int64_t c = 0; c < lam.n_cells; ++c)
    for (int k = 0; k < 3; ++k)
      if (lam.cell_neighbours[c][k] < 0)  // rebuilt neighbours: slot k lies across from corner k
        on_boundary[lam.cell_vertices[c][(k + 1) % 3]] = on_boundary[lam.cell_vertices[c][(k + 2) % 3]] = 1;
  lam.refin_c_ctrl.resize(static_cast<size_t>(lam.n_cells));
  for (int64_t c = 0; c < lam.n_cells; ++c) {
    const auto& v = lam.cell_vertices[c];
    lam.refin_c_ctrl[c] = fc::boundary_row(std::min({distance[v[0]], distance[v[1]], distance[v[2]]}), 14);
    const bool touches = on_boundary[v[0]] || on_boundary[v[1]] || on_boundary[v[2]];
    ASSERT_EQ(lam.refin_c_ctrl[c] == 1, touches) << "cell " << c;
  }
  // Each row > 1 borders (shares a corner with) the row before it.
  for (int64_t c = 0; c < lam.n_cells; ++c) {
    const int32_t row = lam.refin_c_ctrl[c];
    if (row <= 1) continue;
    bool borders = false;
    for (int64_t d = 0; d < lam.n_cells && !borders; ++d)
      if (lam.refin_c_ctrl[d] == row - 1)
        for (int32_t a : lam.cell_vertices[c])
          for (int32_t b : lam.cell_vertices[d]) borders = borders || a == b;
    ASSERT_TRUE(borders) << "cell " << c << " of row " << row;
  }
  for (int rows : {0, 4, 8}) {
    fc::LimitedAreaRules rules;
    rules.boundary_rows = rows;
    const fc::PatchMap m = fc::icon_patch_map(lam, 3, rules);
    fc::LimitedAreaRules none;
    none.boundary_rows = 0;
    const fc::PatchMap all = fc::icon_patch_map(lam, 3, none);
    const int64_t P = m.patch_size;
    int64_t in_zone = 0;
    std::set<int64_t> kept;
    for (int64_t k = 0; k < m.n_coarse; ++k) kept.insert(m.fine_of_patch[k * P]);
    for (int64_t k = 0; k < all.n_coarse; ++k) {
      bool zone = false;
      for (int64_t s = 0; s < P; ++s) {
        const int32_t row = lam.refin_c_ctrl[all.fine_of_patch[k * P + s]];
        zone = zone || (row >= 1 && row <= rows);
      }
      in_zone += zone;
      EXPECT_EQ(kept.count(all.fine_of_patch[k * P]) == 0, zone) << rows << " rows, complete coarse cell " << k;
    }
    EXPECT_GT(in_zone, rows > 0 ? 0 : -1);
    EXPECT_EQ(m.limited_area.left_out_boundary, in_zone);
    EXPECT_EQ(m.n_coarse, all.n_coarse - in_zone);
    EXPECT_FALSE(m.limited_area.rows_from_topology);
    // Without refin_c_ctrl the rows are counted from the topology, with the same result.
    fc::IconGrid bare = lam;
    bare.refin_c_ctrl.clear();
    const fc::PatchMap counted = fc::icon_patch_map(bare, 3, rules);
    EXPECT_TRUE(counted.limited_area.rows_from_topology);
    EXPECT_EQ(counted.fine_of_patch, m.fine_of_patch);
  }
  EXPECT_NE(fc::limited_area_text(fc::icon_patch_map(lam, 3)).find("lateral boundary zone (refin_c_ctrl 1..4)"),
            std::string::npos);
}

// A limited area without grid_root/grid_level cannot say what it was cut from; one that is no
// part of the grid it names, or whose coarse cells all reach the boundary, is refused by name.
TEST(LimitedArea, UnknownOrWrongSizesAndNoCompleteCoarseCellAreGridErrors) {
  const fc::IconGrid g = fc::make_icosahedral_grid(4, 0);
  std::vector<int64_t> to_global;
  fc::IconGrid lam = cut(g, cap(g, -20, 100, 20), 3, to_global);
  fc::IconGrid bare = lam;
  bare.grid_root = bare.grid_level = -1;
  try {
    fc::icon_patch_map(bare, 2);
    FAIL() << "a limited area without grid_root/grid_level was accepted";
  } catch (const finecast::GridError& e) {
    EXPECT_NE(std::string(e.what()).find("grid_root and grid_level"), std::string::npos) << e.what();
  }
  fc::IconGrid wrong = lam;
  wrong.parent_cell.clear();
  wrong.grid_root = 3;  // an R2B4 cut named R3B4
  try {
    fc::icon_patch_map(wrong, 2);
    FAIL() << "a cut of R2B4 matched R3B4";
  } catch (const finecast::GridError& e) {
    EXPECT_NE(std::string(e.what()).find("match no part of the uniform R3B4 grid"), std::string::npos) << e.what();
  }
  try {
    fc::icon_patch_map(lam, 0);  // R2B0 cells are bigger than the cap
    FAIL() << "a map without patches was accepted";
  } catch (const finecast::GridError& e) {
    EXPECT_NE(std::string(e.what()).find("choose a finer coarse level"), std::string::npos) << e.what();
  }
}
