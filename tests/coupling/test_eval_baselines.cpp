// SPDX-License-Identifier: BSD-3-Clause
// Interpolation baselines exact on simple inputs; conservative variants restore block means.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "common/error.hpp"
#include "eval/baselines.hpp"
#include "eval/blocks.hpp"
#include "tests/eval_test_util.hpp"

namespace fe = finecast::eval;
using finecast::testing_eval::block_layout;

namespace {

double linear(double i, double j) { return 3.0 + 0.7 * i - 1.3 * j; }

}  // namespace

TEST(EvalBlocks, MeansResidualAndStdOnAHandExample) {
  auto L = block_layout(2, 4, 2);
  L.weight = {1, 1, 1, 1, 3, 3, 3, 3};
  const std::vector<double> f = {0, 0, 4, 4, 4, 4, 4, 8};
  const std::vector<double> m = fe::block_means(L, f.data());
  ASSERT_EQ(m.size(), 2u);
  EXPECT_DOUBLE_EQ(m[0], (0 + 0 + 12 + 12) / 8.0);  // weights 1,1,3,3
  EXPECT_DOUBLE_EQ(m[1], (4 + 4 + 12 + 24) / 8.0);
  const std::vector<double> r = fe::block_residual(L, f.data());
  EXPECT_DOUBLE_EQ(r[0], -3.0);
  EXPECT_DOUBLE_EQ(r[4], 1.0);
  // Block 0: deviations -3 (weight 2) and 1 (weight 6): variance (18 + 6) / 8 = 3.
  EXPECT_DOUBLE_EQ(fe::block_std(L, f.data())[0], std::sqrt(3.0));
}

TEST(EvalBlocks, LatLonWeightsAreCosLatPerRow) {
  const std::vector<double> w = fe::latlon_weights({0.0, 60.0}, 3);
  ASSERT_EQ(w.size(), 6u);
  EXPECT_DOUBLE_EQ(w[2], 1.0);
  EXPECT_NEAR(w[3], 0.5, 1e-15);
}

TEST(EvalBaselines, NearestEqualsTheCoarseValue) {
  const auto L = block_layout(8, 12, 4);
  const std::vector<double> coarse = {1, 2, 3, 4, 5, 6};
  const std::vector<double> f = fe::interpolate(L, coarse, fe::Interp::kNearest);
  for (int i = 0; i < L.ny; ++i)
    for (int j = 0; j < L.nx; ++j) EXPECT_EQ(f[i * L.nx + j], coarse[(i / 4) * 3 + j / 4]);
}

TEST(EvalBaselines, BilinearAndBicubicReproduceALinearFieldInTheInterior) {
  const int k = 4;
  const auto L = block_layout(20, 24, k);
  std::vector<double> fine(L.size());
  for (int i = 0; i < L.ny; ++i)
    for (int j = 0; j < L.nx; ++j) fine[i * L.nx + j] = linear(i, j);
  // With uniform weights the block mean of a linear field is its value at the block centre.
  const std::vector<double> coarse = fe::block_means(L, fine.data());
  const double c0 = 0.5 * (k - 1);
  for (auto interp : {fe::Interp::kBilinear, fe::Interp::kBicubic}) {
    const std::vector<double> f = fe::interpolate(L, coarse, interp);
    // Bicubic needs one more block centre on each side than bilinear.
    const double lo = interp == fe::Interp::kBilinear ? c0 : c0 + k;
    int checked = 0;
    for (int i = 0; i < L.ny; ++i)
      for (int j = 0; j < L.nx; ++j) {
        if (i < lo || i > L.ny - 1 - lo || j < lo || j > L.nx - 1 - lo) continue;
        EXPECT_NEAR(f[i * L.nx + j], linear(i, j), 1e-12) << i << "," << j;
        ++checked;
      }
    EXPECT_GT(checked, 40);
  }
}

TEST(EvalBaselines, BicubicIsExactForQuadraticsSampledAtBlockCentres) {
  const int k = 3;
  const auto L = block_layout(18, 21, k);
  auto q = [](double i, double j) { return 0.02 * i * i - 0.05 * j * j + 0.1 * i * j + i; };
  std::vector<double> coarse(L.n_blocks());
  for (int by = 0; by < L.nby(); ++by)
    for (int bx = 0; bx < L.nbx(); ++bx) coarse[by * L.nbx() + bx] = q(by * k + 1.0, bx * k + 1.0);
  const std::vector<double> f = fe::interpolate(L, coarse, fe::Interp::kBicubic);
  for (int i = k + 1; i <= L.ny - 2 - k; ++i)
    for (int j = k + 1; j <= L.nx - 2 - k; ++j) EXPECT_NEAR(f[i * L.nx + j], q(i, j), 1e-11);
  // Bilinear is not exact for a quadratic: the test above would catch a bilinear kernel.
  const std::vector<double> b = fe::interpolate(L, coarse, fe::Interp::kBilinear);
  EXPECT_GT(std::abs(b[(k + 2) * L.nx + k + 2] - q(k + 2, k + 2)), 1e-3);
}

TEST(EvalBaselines, ConservativeVariantsRestoreBlockMeansExactly) {
  auto L = block_layout(16, 20, 4);
  std::vector<double> lat(L.ny);
  for (int i = 0; i < L.ny; ++i) lat[i] = -70.0 + 9.0 * i;
  L.weight = fe::latlon_weights(lat, L.nx);
  std::mt19937 rng(9);
  std::normal_distribution<double> nd;
  std::vector<double> truth(L.size());
  for (double& v : truth) v = 10 * nd(rng);
  const std::vector<double> coarse = fe::block_means(L, truth.data());
  for (const fe::Baseline& b : fe::all_baselines()) {
    const std::vector<double> f = fe::run_baseline(L, coarse, b);
    const std::vector<double> m = fe::block_means(L, f.data());
    double worst = 0;
    for (std::size_t i = 0; i < m.size(); ++i) worst = std::max(worst, std::abs(m[i] - coarse[i]));
    if (b.conservative || b.interp == fe::Interp::kNearest)
      EXPECT_LT(worst, 1e-12) << b.name;
    else
      EXPECT_GT(worst, 1e-3) << b.name << " should not be conservative on noise";
  }
}

TEST(EvalBaselines, PeriodicColumnsWrapAroundTheLongitudeCircle) {
  auto L = block_layout(4, 12, 4);
  const std::vector<double> coarse = {1, 2, 7};  // one block row, three columns
  L.periodic_x = true;
  const std::vector<double> p = fe::interpolate(L, coarse, fe::Interp::kBilinear);
  // Column 0 sits 1.5 cells left of block 0's centre, i.e. between block 2 (wrapped) and 0.
  EXPECT_DOUBLE_EQ(p[0], 0.375 * 7 + 0.625 * 1);
  L.periodic_x = false;
  EXPECT_DOUBLE_EQ(fe::interpolate(L, coarse, fe::Interp::kBilinear)[0], 1.0);
}

TEST(EvalBaselines, BsplineInterpolatesTheCentresAndReproducesALinearFieldUpToTheEdges) {
  // A linear field: its block means (uniform weights) are its values at the block centres, and
  // the natural spline through them is the field itself, edges included (Keys is not exact
  // there: it holds the outer values constant).
  const auto L = block_layout(20, 24, 4);
  std::vector<double> fine(L.size());
  for (int i = 0; i < L.ny; ++i)
    for (int j = 0; j < L.nx; ++j) fine[i * L.nx + j] = linear(i, j);
  const std::vector<double> coarse = fe::block_means(L, fine.data());
  const std::vector<double> f = fe::interpolate(L, coarse, fe::Interp::kBspline);
  for (std::size_t i = 0; i < L.size(); ++i) ASSERT_NEAR(f[i], fine[i], 1e-10) << i;
  EXPECT_GT(std::abs(fe::interpolate(L, coarse, fe::Interp::kBicubic)[0] - fine[0]), 0.5);

  // Any block values: the spline passes through them at the block centres (odd k: a centre is a
  // cell), on a closed circle too, where shifting the blocks by one shifts the field by k cells.
  std::mt19937 rng(3);
  std::normal_distribution<double> nd;
  for (bool periodic : {false, true}) {
    auto C = block_layout(15, 21, 3);
    C.periodic_x = periodic;
    std::vector<double> c(C.n_blocks());
    for (double& v : c) v = nd(rng);
    const std::vector<double> g = fe::interpolate(C, c, fe::Interp::kBspline);
    for (int by = 0; by < C.nby(); ++by)
      for (int bx = 0; bx < C.nbx(); ++bx)
        ASSERT_NEAR(g[(by * 3 + 1) * C.nx + bx * 3 + 1], c[by * C.nbx() + bx], 1e-12) << by << "," << bx;
    if (!periodic) continue;
    std::vector<double> shifted(c.size());
    for (int by = 0; by < C.nby(); ++by)
      for (int bx = 0; bx < C.nbx(); ++bx) shifted[by * C.nbx() + (bx + 1) % C.nbx()] = c[by * C.nbx() + bx];
    const std::vector<double> h = fe::interpolate(C, shifted, fe::Interp::kBspline);
    for (int i = 0; i < C.ny; ++i)
      for (int j = 0; j < C.nx; ++j) ASSERT_NEAR(h[i * C.nx + (j + 3) % C.nx], g[i * C.nx + j], 1e-12);
  }
}

TEST(EvalBaselines, ConservativeBsplineBeatsKeysOnASmoothFieldAndAMissingBlockStaysLocal) {
  auto L = block_layout(96, 128, 8);
  std::vector<double> lat(L.ny);
  for (int i = 0; i < L.ny; ++i) lat[i] = -60.0 + 1.25 * i;
  L.weight = fe::latlon_weights(lat, L.nx);
  std::vector<double> truth(L.size());
  for (int i = 0; i < L.ny; ++i)
    for (int j = 0; j < L.nx; ++j)
      truth[i * L.nx + j] =
          std::sin(2 * M_PI * i / 53.0) * std::cos(2 * M_PI * j / 71.0) + 0.3 * std::sin(0.11 * i + 0.07 * j);
  const std::vector<double> coarse = fe::block_means(L, truth.data());
  auto rmse = [&](const std::vector<double>& f) {
    double s = 0, sw = 0;
    for (std::size_t i = 0; i < L.size(); ++i) {
      s += L.w(i) * (f[i] - truth[i]) * (f[i] - truth[i]);
      sw += L.w(i);
    }
    return std::sqrt(s / sw);
  };
  const double keys = rmse(fe::run_baseline(L, coarse, {"bicubic_cons", fe::Interp::kBicubic, true}));
  const double spline = rmse(fe::run_baseline(L, coarse, {"bspline_cons", fe::Interp::kBspline, true}));
  std::printf("smooth field, 8 x 8 blocks: rmse bicubic_cons %.3e, bspline_cons %.3e\n", keys, spline);
  EXPECT_LT(spline, 0.7 * keys);

  std::vector<double> holed = coarse;
  holed[5 * L.nbx() + 7] = std::nan("");
  const std::vector<double> f = fe::interpolate(L, holed, fe::Interp::kBspline);
  int64_t nan_cells = 0;
  for (double v : f) nan_cells += std::isnan(v) ? 1 : 0;
  EXPECT_EQ(nan_cells, 64) << "only the missing block's own cells";
}

// One list of baselines for both grids: each grid's baselines are the rows that run there, in the
// list's order (the report order of each, as before the list: lat-lon nearest .. bspline_cons,
// ICON nearest .. linear_cons, then idw_linear_cons), every name once; regression_cons's base is one of them.
TEST(Baselines, BothGridsTakeTheirBaselinesFromTheOneList) {
  std::vector<std::string> blocks, cells, all;
  for (const auto& b : fe::all_baselines()) blocks.push_back(b.name);
  for (const auto& b : fe::cell_baselines()) cells.push_back(b.name);
  for (const auto& row : fe::baseline_list()) {
    all.push_back(row.name);
    EXPECT_TRUE(row.blocks || row.cells) << row.name << " runs on no grid";
  }
  EXPECT_EQ(blocks, (std::vector<std::string>{"nearest", "bilinear", "bicubic", "bspline", "nearest_cons",
                                              "bilinear_cons", "bicubic_cons", "bspline_cons"}));
  EXPECT_EQ(cells,
            (std::vector<std::string>{"nearest", "idw", "nearest_cons", "idw_cons", "linear_cons", "idw_linear_cons"}));
  std::vector<std::string> sorted = all;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_EQ(std::adjacent_find(sorted.begin(), sorted.end()), sorted.end()) << "a name twice";
  EXPECT_EQ(fe::block_baseline("bicubic_cons").interp, fe::Interp::kBicubic);
  // The regression's base for each of the plugin's patch.interpolant names: <name>_cons.
  using finecast::coupling::Interpolant;
  EXPECT_EQ(fe::block_regression_base(Interpolant::kAuto).name, "bicubic_cons");
  EXPECT_EQ(fe::block_regression_base(Interpolant::kBspline).name, "bspline_cons");
  EXPECT_TRUE(fe::block_regression_base(Interpolant::kBspline).conservative);
  EXPECT_EQ(fe::cell_regression_base(Interpolant::kAuto).interp, fe::CellInterp::kIdw);
  EXPECT_EQ(fe::cell_regression_base(Interpolant::kLinear).name, "linear_cons");
  EXPECT_EQ(fe::cell_regression_base(Interpolant::kIdwLinear).name, "idw_linear_cons");
  EXPECT_THROW(fe::block_regression_base(Interpolant::kIdw), finecast::ConfigError);
  EXPECT_THROW(fe::cell_regression_base(Interpolant::kBicubic), finecast::ConfigError);
  EXPECT_THROW(fe::block_baseline("idw"), finecast::InternalError);
  EXPECT_THROW(fe::cell_baseline("bicubic"), finecast::InternalError);
}
