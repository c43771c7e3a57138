// SPDX-License-Identifier: BSD-3-Clause
// regression_cons: on synthetic fields built as "conservative interpolant + known multiples of
// the covariate predictors", the least-squares fit recovers the multiples (lat-lon blocks and
// ICON patches), the prediction keeps every block mean, collinear covariates are refused, the
// JSON round trip keeps the coefficients, and finecast-eval fits, prints, saves and scores it.
#include <gtest/gtest.h>
#include <netcdf.h>
#include <sys/wait.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "common/error.hpp"
#include "eval/baselines.hpp"
#include "eval/cell_baselines.hpp"
#include "eval/evaluation.hpp"
#include "eval/regression.hpp"
#include "coupling/grid/icon_grid.hpp"
#include "coupling/io/ensemble_writer.hpp"
#include "eval/cli/icon_levels.hpp"

namespace fc = finecast::coupling;
namespace fe = finecast::coupling::eval;

namespace {

std::vector<double> noise(std::size_t n, unsigned seed, double scale) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> d(0.0, scale);
  std::vector<double> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

fe::BlockLayout layout_32x48() {
  fe::BlockLayout L;
  L.ny = 32;
  L.nx = 48;
  L.k = 8;
  std::vector<double> lat(32);
  for (int i = 0; i < 32; ++i) lat[i] = -40.0 + 2.5 * i;
  L.weight = fe::latlon_weights(lat, 48);
  return L;
}

const fe::Baseline kBicubicCons{"bicubic_cons", fe::Interp::kBicubic, true};

}  // namespace

TEST(EvalRegression, RecoversKnownCoefficientsOnLatLonBlocks) {
  const fe::BlockLayout L = layout_32x48();
  // A coarse field, its conservative bicubic, two covariates (a smooth ramp plus noise, and noise).
  std::vector<double> coarse = noise(L.n_blocks(), 1, 3.0);
  for (auto& c : coarse) c += 280.0;
  const std::vector<double> smooth = fe::run_baseline(L, coarse, kBicubicCons);
  std::vector<double> x1 = noise(L.size(), 2, 200.0), x2 = noise(L.size(), 3, 0.3);
  for (std::size_t i = 0; i < L.size(); ++i) x1[i] += 10.0 * static_cast<double>(i % 48) + 500.0;
  const fe::Predictors p = fe::block_predictors(L, {"HSURF", "FR_LAND"}, {x1.data(), x2.data()});
  ASSERT_EQ(p.names,
            (std::vector<std::string>{"HSURF anomaly", "HSURF deviation", "FR_LAND anomaly", "FR_LAND deviation"}));
  const std::vector<double> coef = {-0.0065, 0.002, 1.5, -0.8};
  std::vector<double> truth = smooth;
  for (std::size_t j = 0; j < coef.size(); ++j)
    for (std::size_t i = 0; i < L.size(); ++i) truth[i] += coef[j] * p.values[j][i];
  // Every predictor has zero block mean, so the truth's block means are still `coarse`.
  const std::vector<double> means = fe::block_means(L, truth.data());
  for (std::size_t b = 0; b < means.size(); ++b) ASSERT_NEAR(means[b], coarse[b], 1e-9);

  fe::RegressionFitter fitter(p.names);
  std::vector<double> residual(L.size());
  const std::vector<double> base = fe::run_baseline(L, means, kBicubicCons);
  for (std::size_t i = 0; i < L.size(); ++i) residual[i] = truth[i] - base[i];
  fitter.add(p, residual, L.weight, {});
  const fe::RegressionFit fit = fitter.solve("synthetic");
  ASSERT_EQ(fit.coef.size(), coef.size());
  for (std::size_t j = 0; j < coef.size(); ++j) EXPECT_NEAR(fit.coef[j], coef[j], 1e-9 * (1 + std::abs(coef[j])));
  EXPECT_EQ(fit.n_points, static_cast<int64_t>(L.size()));
  EXPECT_LT(fit.fitted_rms, 1e-9);
  EXPECT_GT(fit.residual_rms, 0.1);

  // The prediction is the truth, and conservative.
  const std::vector<double> pred = fe::apply_regression(fit, p, base);
  for (std::size_t i = 0; i < L.size(); ++i) ASSERT_NEAR(pred[i], truth[i], 1e-8);

  // Scored through the Evaluator, regression_cons comes after the eight interpolation rows and is exact.
  fe::Evaluator ev(L);
  ev.set_regression(fit, p);
  ev.add(truth.data(), {smooth.data()});
  const fe::EvalReport rep = ev.report();
  ASSERT_EQ(rep.rows.size(), 10u);
  EXPECT_EQ(rep.rows.back().name, "regression_cons");
  EXPECT_LT(rep.rows.back().scores.rmse, 1e-8);
  ASSERT_EQ(rep.rows[7].name, "bicubic_cons");
  EXPECT_GT(rep.rows[7].scores.rmse, 0.1);  // bicubic_cons misses the covariate terms
}

TEST(EvalRegression, FitsOnlyTheCellsItIsToldToUse) {
  const fe::BlockLayout L = layout_32x48();
  const std::vector<double> x = noise(L.size(), 4, 100.0);
  const fe::Predictors p = fe::block_predictors(L, {"z"}, {x.data()});
  // The residual follows 0.5 * anomaly in the left half and -3 * anomaly in the right half.
  std::vector<double> r(L.size());
  std::vector<char> left(L.size());
  for (std::size_t i = 0; i < L.size(); ++i) {
    left[i] = (i % 48) < 24;
    r[i] = (left[i] ? 0.5 : -3.0) * p.values[0][i] + (left[i] ? 0.1 : 2.0) * p.values[1][i];
  }
  fe::RegressionFitter fitter(p.names);
  fitter.add(p, r, L.weight, left);
  const fe::RegressionFit fit = fitter.solve("left half");
  EXPECT_NEAR(fit.coef[0], 0.5, 1e-9);
  EXPECT_NEAR(fit.coef[1], 0.1, 1e-9);
  EXPECT_EQ(fit.n_points, static_cast<int64_t>(L.size() / 2));
}

TEST(EvalRegression, CollinearOrMissingDataIsRefusedWithTheReason) {
  const fe::BlockLayout L = layout_32x48();
  // A covariate constant in every block has no within-block anomaly.
  std::vector<double> blocky(L.size());
  for (int i = 0; i < L.ny; ++i)
    for (int j = 0; j < L.nx; ++j) blocky[static_cast<std::size_t>(i) * L.nx + j] = (i / 8) * 7.0 + (j / 8);
  const fe::Predictors p = fe::block_predictors(L, {"blocky"}, {blocky.data()});
  fe::RegressionFitter fitter(p.names);
  fitter.add(p, noise(L.size(), 5, 1.0), L.weight, {});
  try {
    fitter.solve("test data");
    FAIL() << "collinear predictors were accepted";
  } catch (const finecast::ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("collinear"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("blocky anomaly"), std::string::npos) << e.what();
  }
  fe::RegressionFitter empty(p.names);
  EXPECT_THROW(empty.solve("nothing"), finecast::ConfigError);
}

TEST(EvalRegression, JsonRoundTripKeepsTheFit) {
  fe::RegressionFit fit;
  fit.names = {"HSURF anomaly", "HSURF deviation"};
  fit.coef = {-0.00612345678901, 0.00123};
  fit.n_points = 1234;
  fit.residual_rms = 1.3;
  fit.fitted_rms = 0.8;
  fit.fit_on = "train.nc";
  const fe::RegressionFit back = fe::regression_from_json(fe::regression_to_json(fit), "x.json");
  EXPECT_EQ(back.names, fit.names);
  EXPECT_DOUBLE_EQ(back.coef[0], fit.coef[0]);
  EXPECT_DOUBLE_EQ(back.coef[1], fit.coef[1]);
  EXPECT_EQ(back.n_points, 1234);
  EXPECT_EQ(back.fit_on, "train.nc");
  EXPECT_NE(fe::describe(fit).find("-0.00612346 * HSURF anomaly"), std::string::npos) << fe::describe(fit);
  EXPECT_THROW(fe::regression_from_json("{\"x\": 1}", "bad.json"), finecast::ConfigError);
  EXPECT_THROW(fe::regression_from_json("not json", "bad.json"), finecast::ConfigError);
}

TEST(EvalRegression, RecoversKnownCoefficientsOnIconPatches) {
  const std::string grid_path = "/usr/share/ncarg/data/nug/triangular_grid_ICON.nc";
  if (!std::ifstream(grid_path).good()) GTEST_SKIP() << "libncarg-data is not installed";
  const fc::IconGrid grid = fc::read_icon_grid(grid_path);
  finecast::tools::IconLevels levels(grid);
  const fe::CellLayout L(levels.layout_spec(0));
  const fe::CellInterpolator interp(L);
  const fe::CellBaseline idw_cons{"idw_cons", fe::CellInterp::kIdw, true};
  std::vector<double> coarse = noise(static_cast<std::size_t>(L.n_patches()), 6, 5.0);
  for (auto& c : coarse) c += 285.0;
  const std::vector<double> smooth = interp.run(coarse, idw_cons);
  const std::vector<double> oro = noise(static_cast<std::size_t>(L.size()), 7, 800.0);
  const fe::Predictors p = fe::cell_predictors(interp, {"topography_c"}, {oro.data()});
  std::vector<double> truth = smooth;
  for (int64_t i = 0; i < L.size(); ++i) truth[i] += -0.0065 * p.values[0][i] + 0.003 * p.values[1][i];
  const std::vector<double> means = fe::patch_means(L, truth.data());
  for (int64_t q = 0; q < L.n_patches(); ++q) ASSERT_NEAR(means[q], coarse[q], 1e-9);
  std::vector<double> residual(truth.size()), w(truth.size());
  const std::vector<double> base = interp.run(means, idw_cons);
  for (std::size_t i = 0; i < truth.size(); ++i) {
    residual[i] = truth[i] - base[i];
    w[i] = L.w(static_cast<int64_t>(i));
  }
  fe::RegressionFitter fitter(p.names);
  fitter.add(p, residual, w, {});
  const fe::RegressionFit fit = fitter.solve("R2B4");
  EXPECT_NEAR(fit.coef[0], -0.0065, 1e-10);
  EXPECT_NEAR(fit.coef[1], 0.003, 1e-10);
}
