// SPDX-License-Identifier: BSD-3-Clause
// Coarsening and patch extraction: conservation, context layout, missing values, no reallocation.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "coupling/grid/icon_hierarchy.hpp"
#include "coupling/grid/icosahedral_grid.hpp"
#include "coupling/grid/latlon_grid.hpp"
#include "coupling/grid/patches.hpp"
#include "coupling/grid/spherical.hpp"

namespace fc = finecast::coupling;
namespace sphere = finecast::coupling::sphere;

namespace {

/// A 6 x 8 regional grid in 2 x 2 blocks (3 x 4 coarse cells) with field value row*100 + col.
struct SmallLatLon {
  fc::LatLonGrid grid;
  fc::PatchMap map;
  std::vector<float> field;
  SmallLatLon(bool global) {
    std::vector<double> lat, lon;
    for (int i = 0; i < 6; ++i) lat.push_back(-25.0 + 10.0 * i);
    const int nlon = 8;
    for (int j = 0; j < nlon; ++j) lon.push_back((global ? 45.0 : 5.0) * j);
    grid = fc::make_latlon_grid(lat, lon);
    map = fc::latlon_patch_map(grid, 2);
    for (int i = 0; i < 6; ++i)
      for (int j = 0; j < nlon; ++j) field.push_back(static_cast<float>(100 * i + j));
  }
};

}  // namespace

TEST(Patches, ContextSizeCountsVariablesNeighboursAndFeatures) {
  fc::PatchMap icon;
  icon.n_neighbours = 3;
  fc::PatchMap blocks;
  blocks.n_neighbours = 4;
  EXPECT_EQ(fc::context_size(icon, 1, {}), 7);  // the reference setup
  EXPECT_EQ(fc::context_size(icon, 2, {true, true}), 2 * 4 + 3 + 1);
  EXPECT_EQ(fc::context_size(blocks, 1, {false, false}), 5);
}

TEST(Patches, CoarseningConservesTheAreaIntegralOnIcon) {
  const fc::IconGrid g = fc::make_icosahedral_grid(3, 11);
  const fc::PatchMap pm = fc::icon_patch_map(g, 1);
  std::mt19937 rng(3);
  std::normal_distribution<float> noise(280.0f, 15.0f);
  std::vector<float> field(g.n_cells);
  for (float& v : field) v = noise(rng);
  std::vector<float> coarse(pm.n_coarse);
  fc::coarsen(pm, field.data(), coarse.data());
  double fine_integral = 0.0, coarse_integral = 0.0;
  for (int64_t c = 0; c < g.n_cells; ++c) fine_integral += g.cell_area[c] * field[c];
  for (int64_t k = 0; k < pm.n_coarse; ++k) {
    double area = 0.0;
    for (int s = 0; s < pm.patch_size; ++s) area += g.cell_area[pm.fine_of_patch[k * pm.patch_size + s]];
    coarse_integral += area * coarse[k];
  }
  EXPECT_NEAR(coarse_integral / fine_integral, 1.0, 1e-7);
  // A constant stays exactly constant (weights sum to 1 in double).
  std::vector<float> constant(g.n_cells, 5.25f);
  fc::coarsen(pm, constant.data(), coarse.data());
  for (float v : coarse) EXPECT_FLOAT_EQ(v, 5.25f);
}

TEST(Patches, LatLonContextLayoutAndEdgeNeighbours) {
  SmallLatLon s(false);
  fc::Patches out;
  fc::extract_patches(s.map, {s.field.data()}, nullptr, {}, out);
  ASSERT_EQ(out.n, 12);
  ASSERT_EQ(out.C, 1 * 5 + 3);
  ASSERT_EQ(out.P, 4);
  auto coarse = [&](int I, int J) { return out.coarse[I * 4 + J]; };
  // Block (1, 2) holds rows 2-3 and columns 4-5; the mean weights rows by their areas.
  const auto& w = s.map.fine_weight;
  const int64_t k = 1 * 4 + 2;
  const double want = w[k * 4 + 0] * 204 + w[k * 4 + 1] * 205 + w[k * 4 + 2] * 304 + w[k * 4 + 3] * 305;
  EXPECT_NEAR(coarse(1, 2), want, 1e-4);
  EXPECT_NEAR(coarse(1, 2), 254.5f, 1e-4) << "rows at -5 and +5 degrees weigh the same";
  EXPECT_LT(coarse(2, 2), 454.4f) << "the row at 25 degrees weighs less than the one at 15";
  const float* ctx = &out.context[k * out.C];
  EXPECT_EQ(ctx[0], coarse(1, 2));
  EXPECT_EQ(ctx[1], coarse(0, 2));  // previous row
  EXPECT_EQ(ctx[2], coarse(2, 2));  // next row
  EXPECT_EQ(ctx[3], coarse(1, 1));  // previous column
  EXPECT_EQ(ctx[4], coarse(1, 3));  // next column
  const double lat = s.map.coarse_lat[k], lon = s.map.coarse_lon[k];
  EXPECT_FLOAT_EQ(ctx[5], static_cast<float>(std::sin(lat)));
  EXPECT_FLOAT_EQ(ctx[6], static_cast<float>(std::cos(lat) * std::cos(lon)));
  EXPECT_FLOAT_EQ(ctx[7], static_cast<float>(std::cos(lat) * std::sin(lon)));
  EXPECT_NEAR(lon / sphere::kDeg, 22.5, 1e-9);  // between columns 4 and 5 (20 and 25 degrees)
  // A regional corner block has no previous row and column: its own value stands in.
  const float* corner = &out.context[0];
  EXPECT_EQ(corner[1], corner[0]);
  EXPECT_EQ(corner[3], corner[0]);
  EXPECT_EQ(corner[2], coarse(1, 0));
  EXPECT_EQ(corner[4], coarse(0, 1));
  // Fine values in row-major block order; weights copied per patch.
  EXPECT_EQ(out.fine[k * 4 + 0], 204.0f);
  EXPECT_EQ(out.fine[k * 4 + 1], 205.0f);
  EXPECT_EQ(out.fine[k * 4 + 2], 304.0f);
  EXPECT_EQ(out.fine[k * 4 + 3], 305.0f);
  EXPECT_FLOAT_EQ(out.weights[k * 4 + 2], static_cast<float>(w[k * 4 + 2]));
  EXPECT_EQ(out.n_invalid, 0);
}

TEST(Patches, GlobalLatLonNeighboursWrapInLongitude) {
  SmallLatLon s(true);  // 8 columns of 45 degrees
  fc::Patches out;
  fc::extract_patches(s.map, {s.field.data()}, nullptr, {false, false}, out);
  ASSERT_EQ(out.C, 5);
  EXPECT_EQ(out.context[0 * 5 + 3], out.coarse[3]);  // west of column 0 is column 3
  EXPECT_EQ(out.context[3 * 5 + 4], out.coarse[0]);  // east of column 3 is column 0
}

TEST(Patches, MissingValuesInvalidatePatchesAndNeverLeakIntoNeighbours) {
  SmallLatLon s(false);
  s.field[3 * 8 + 5] = std::numeric_limits<float>::quiet_NaN();  // in block (1, 2)
  std::vector<float> second(s.field.size(), 1.0f);
  second[0] = std::numeric_limits<float>::infinity();  // in block (0, 0), second variable
  fc::Patches out;
  fc::extract_patches(s.map, {s.field.data(), second.data()}, nullptr, {}, out);
  ASSERT_EQ(out.C, 2 * 5 + 3);
  EXPECT_EQ(out.n_invalid, 2);
  for (int64_t k = 0; k < out.n; ++k) EXPECT_EQ(out.valid[k], (k == 6 || k == 0) ? 0 : 1) << k;
  // Block (1, 1)'s next-column neighbour is the NaN block: its own value stands in.
  const float* ctx = &out.context[5 * out.C];
  EXPECT_EQ(ctx[4], ctx[0]);
  for (int64_t i = 0; i < out.n * out.C; ++i) {
    if (out.valid[i / out.C]) {
      EXPECT_TRUE(std::isfinite(out.context[i])) << i;
    }
  }
}

TEST(Patches, OrographyIsTheLastContextValue) {
  SmallLatLon s(false);
  std::vector<float> oro(s.field.size());
  for (size_t i = 0; i < oro.size(); ++i) oro[i] = 10.0f * static_cast<float>(i % 7);
  fc::Patches out;
  fc::extract_patches(s.map, {s.field.data()}, oro.data(), {true, true}, out);
  std::vector<float> coarse_oro(s.map.n_coarse);
  fc::coarsen(s.map, oro.data(), coarse_oro.data());
  ASSERT_EQ(out.C, 9);
  for (int64_t k = 0; k < out.n; ++k) EXPECT_EQ(out.context[k * 9 + 8], coarse_oro[k]);
}

TEST(Patches, IconPatchesFollowTheMapAndReuseStorage) {
  const fc::IconGrid g = fc::make_icosahedral_grid(2, 4);
  const fc::PatchMap pm = fc::icon_patch_map(g, 0);
  std::vector<float> field(g.n_cells);
  for (int64_t c = 0; c < g.n_cells; ++c) field[c] = static_cast<float>(c);
  fc::Patches out;
  fc::extract_patches(pm, {field.data()}, nullptr, {}, out);
  ASSERT_EQ(out.C, 7);
  ASSERT_EQ(out.P, 16);
  for (int64_t i = 0; i < out.n * out.P; ++i) ASSERT_EQ(out.fine[i], static_cast<float>(pm.fine_of_patch[i]));
  for (int64_t k = 0; k < out.n; ++k)
    for (int j = 0; j < 3; ++j) EXPECT_EQ(out.context[k * 7 + 1 + j], out.coarse[pm.neighbours[k * 3 + j]]);
  const float* context = out.context.data();
  const float* fine = out.fine.data();
  for (float& v : field) v += 1.0f;
  fc::extract_patches(pm, {field.data()}, nullptr, {}, out);
  EXPECT_EQ(out.context.data(), context) << "a second step must reuse the buffers";
  EXPECT_EQ(out.fine.data(), fine);
  EXPECT_EQ(out.fine[0], static_cast<float>(pm.fine_of_patch[0]) + 1.0f);
}

TEST(Patches, ScatterInvertsExtractionAndLeavesCroppedCellsAlone) {
  std::vector<double> lat, lon;
  for (int i = 0; i < 5; ++i) lat.push_back(10.0 * i);
  for (int j = 0; j < 7; ++j) lon.push_back(10.0 * j);
  const fc::LatLonGrid g = fc::make_latlon_grid(lat, lon);
  const fc::PatchMap pm = fc::latlon_patch_map(g, 2);  // 2 x 3 blocks, row 4 and column 6 cropped
  std::vector<float> field(35);
  for (int i = 0; i < 35; ++i) field[i] = static_cast<float>(i);
  fc::Patches out;
  fc::extract_patches(pm, {field.data()}, nullptr, {}, out);
  std::vector<float> back(35, -1.0f);
  fc::scatter_patches(pm, out.fine.data(), back.data());
  for (int i = 0; i < 35; ++i) {
    const bool cropped = i / 7 == 4 || i % 7 == 6;
    EXPECT_EQ(back[i], cropped ? -1.0f : field[i]) << i;
  }
}
