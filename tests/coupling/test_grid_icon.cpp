// SPDX-License-Identifier: BSD-3-Clause
// ICON grids: reading the real R2B4 grid, the synthetic generator, and the topological hierarchy.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <set>
#include <utility>

#include "common/error.hpp"
#include "coupling/grid/edge_neighbours.hpp"
#include "coupling/grid/icon_grid.hpp"
#include "coupling/grid/icon_hierarchy.hpp"
#include "coupling/grid/icosahedral_grid.hpp"
#include "coupling/grid/spherical.hpp"

namespace fc = finecast::coupling;
namespace sphere = finecast::coupling::sphere;

namespace {

const char* kR2B4 = "/usr/share/ncarg/data/nug/triangular_grid_ICON.nc";

bool have(const char* path) { return std::ifstream(path).good(); }

const fc::IconGrid& real_r2b4() {
  static const fc::IconGrid grid = fc::read_icon_grid(kR2B4);
  return grid;
}

double sphere_area() { return 4.0 * sphere::kPi * sphere::kEarthRadius * sphere::kEarthRadius; }

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
  if (!have(kR2B4)) GTEST_SKIP() << kR2B4 << " missing (install libncarg-data)";
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
  EXPECT_NEAR(total / sphere_area(), 1.0, 1e-9);
  EXPECT_EQ(fc::icon_grid_level(g), 4);
  EXPECT_TRUE(g.parent_cell.empty());
}

TEST(IconHierarchy, RealR2B4ParentsEqualTheFilesHierarchicalNumbering) {
  if (!have(kR2B4)) GTEST_SKIP() << kR2B4 << " missing (install libncarg-data)";
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
  EXPECT_NEAR(total / sphere_area(), 1.0, 1e-9);
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
  if (!have(latlon)) GTEST_SKIP();
  try {
    fc::read_icon_grid(latlon);
    FAIL() << "expected IoError";
  } catch (const finecast::IoError& e) {
    EXPECT_NE(std::string(e.what()).find("clon"), std::string::npos) << e.what();
  }
}
