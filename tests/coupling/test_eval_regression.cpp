// SPDX-License-Identifier: BSD-3-Clause
// regression_cons: on synthetic fields built as "conservative interpolant + known multiples of
// the covariate predictors", the least-squares fit recovers the multiples (lat-lon blocks and
// ICON patches), the prediction keeps every block mean, collinear covariates are refused, the
// JSON round trip keeps the coefficients, and finecast-eval fits, prints, saves and scores it.
// regression_local: coupling::local_slopes on known coarse fields, and a lapse rate that changes
// across the domain, which regression_local carries to blocks it was not fitted on and
// regression_cons cannot.
#include <gtest/gtest.h>
#include <netcdf.h>
#include <sys/wait.h>

#include <algorithm>
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
#include "coupling/grid/local_slopes.hpp"
#include "coupling/io/ensemble_writer.hpp"
#include "eval/cli/icon_levels.hpp"
#include "tests/eval_test_util.hpp"

namespace fc = finecast::coupling;
namespace fe = finecast::eval;
using finecast::testing_eval::kBicubicCons;

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
  fit.interpolant = finecast::coupling::Interpolant::kBspline;
  const fe::RegressionFit back = fe::regression_from_json(fe::regression_to_json(fit), "x.json");
  EXPECT_EQ(back.interpolant, fit.interpolant);
  EXPECT_EQ(back.names, fit.names);
  EXPECT_DOUBLE_EQ(back.coef[0], fit.coef[0]);
  EXPECT_DOUBLE_EQ(back.coef[1], fit.coef[1]);
  EXPECT_EQ(back.n_points, 1234);
  EXPECT_EQ(back.fit_on, "train.nc");
  EXPECT_NE(fe::describe(fit).find("-0.00612346 * HSURF anomaly"), std::string::npos) << fe::describe(fit);
  EXPECT_THROW(fe::regression_from_json("{\"x\": 1}", "bad.json"), finecast::ConfigError);
  EXPECT_THROW(fe::regression_from_json("not json", "bad.json"), finecast::ConfigError);
  try {
    fe::regression_from_json(R"({"baseline": "regression_cons", "interpolant": "cubic", "coefficients": {}})",
                             "i.json");
    ADD_FAILURE() << "an unknown interpolant was read";
  } catch (const finecast::ConfigError& e) {
    EXPECT_NE(
        std::string(e.what()).find("i.json: regression_cons's \"interpolant\" is \"cubic\", expected one of auto"),
        std::string::npos)
        << e.what();
  }
}

TEST(EvalRegression, RecoversKnownCoefficientsOnIconPatches) {
  const std::string grid_path = "/usr/share/ncarg/data/nug/triangular_grid_ICON.nc";
  if (!std::ifstream(grid_path).good()) GTEST_SKIP() << "libncarg-data is not installed";
  const fc::IconGrid grid = fc::read_icon_grid(grid_path);
  finecast::eval::cli::IconLevels levels(grid);
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

namespace {

/// The 4 edge neighbours of each cell of an ny x nx grid (-1 beyond its edge), the table
/// block_local_terms makes for a window that is not periodic.
std::vector<int64_t> grid_neighbours(int ny, int nx) {
  std::vector<int64_t> t(static_cast<std::size_t>(ny) * nx * 4, -1);
  for (int i = 0; i < ny; ++i)
    for (int j = 0; j < nx; ++j) {
      int64_t* n = t.data() + (static_cast<int64_t>(i) * nx + j) * 4;
      if (i > 0) n[0] = static_cast<int64_t>(i - 1) * nx + j;
      if (j > 0) n[1] = static_cast<int64_t>(i) * nx + j - 1;
      if (j + 1 < nx) n[2] = static_cast<int64_t>(i) * nx + j + 1;
      if (i + 1 < ny) n[3] = static_cast<int64_t>(i + 1) * nx + j;
    }
  return t;
}

/// The least-squares slopes of y on two covariates with an intercept (centred normal equations).
std::pair<double, double> field_slopes(const std::vector<double>& y, const std::vector<double>& x1,
                                       const std::vector<double>& x2) {
  double m = 0, my = 0, m1 = 0, m2 = 0;
  for (std::size_t p = 0; p < y.size(); ++p) {
    if (!std::isfinite(y[p]) || !std::isfinite(x1[p]) || !std::isfinite(x2[p])) continue;
    m += 1;
    my += y[p];
    m1 += x1[p];
    m2 += x2[p];
  }
  my /= m, m1 /= m, m2 /= m;
  double a11 = 0, a12 = 0, a22 = 0, r1 = 0, r2 = 0;
  for (std::size_t p = 0; p < y.size(); ++p) {
    if (!std::isfinite(y[p]) || !std::isfinite(x1[p]) || !std::isfinite(x2[p])) continue;
    const double d1 = x1[p] - m1, d2 = x2[p] - m2, dy = y[p] - my;
    a11 += d1 * d1, a12 += d1 * d2, a22 += d2 * d2, r1 += d1 * dy, r2 += d2 * dy;
  }
  const double det = a11 * a22 - a12 * a12;
  return {(a22 * r1 - a12 * r2) / det, (a11 * r2 - a12 * r1) / det};
}

/// A 12 x 16 coarse grid with two covariates at [s * n + p] (a height with structure, a land fraction).
struct CoarseCase {
  int ny = 12, nx = 16;
  int64_t n = 12 * 16;
  std::vector<int64_t> neighbours = grid_neighbours(12, 16);
  std::vector<double> covariates;
  CoarseCase() {
    const std::vector<double> h = noise(static_cast<std::size_t>(n), 11, 400.0);
    const std::vector<double> l = noise(static_cast<std::size_t>(n), 12, 0.3);
    covariates.resize(static_cast<std::size_t>(2 * n));
    for (int64_t p = 0; p < n; ++p) {
      covariates[p] = 600.0 + 30.0 * static_cast<double>(p % nx) + h[p];
      covariates[n + p] = 0.5 + l[p];
    }
  }
  double h(int64_t p) const { return covariates[p]; }
  double l(int64_t p) const { return covariates[n + p]; }
  /// coupling::local_slopes of `y` on covariates `cov` (default: this case's) for every cell.
  std::vector<double> slopes(const std::vector<double>& y, const fc::LocalSlopeOptions& o,
                             const std::vector<double>* cov = nullptr) const {
    std::vector<double> b;
    fc::local_slopes<double>(neighbours.data(), 4, n, y.data(), (cov ? *cov : covariates).data(), 2, o, 0, n, b);
    return b;
  }
};

}  // namespace

TEST(LocalSlopes, ALinearFieldGivesItsSlopesInEveryWindow) {
  const CoarseCase c;
  std::vector<double> y(static_cast<std::size_t>(c.n));
  for (int64_t p = 0; p < c.n; ++p) y[p] = 285.0 - 0.0065 * c.h(p) + 2.5 * c.l(p);
  fc::LocalSlopeOptions o;
  o.rings = 1;
  o.ridge = 0.0;
  o.terms = {0, 1};
  std::vector<double> b = c.slopes(y, o);
  ASSERT_EQ(b.size(), static_cast<std::size_t>(2 * c.n));
  for (int64_t p = 0; p < c.n; ++p) {
    ASSERT_NEAR(b[p], -0.0065, 1e-10) << "cell " << p;
    ASSERT_NEAR(b[c.n + p], 2.5, 1e-8) << "cell " << p;
  }
  // One term: only that covariate's slopes, still fitted jointly on both.
  o.terms = {1};
  b = c.slopes(y, o);
  ASSERT_EQ(b.size(), static_cast<std::size_t>(c.n));
  for (int64_t p = 0; p < c.n; ++p) ASSERT_NEAR(b[p], 2.5, 1e-8);
}

TEST(LocalSlopes, ALargeRidgeShrinksToZeroAndNoRidgeGivesTheLocalSlope) {
  const CoarseCase c;
  // The lapse rate changes from -0.009 in the west to +0.003 in the east.
  auto rate = [&](int64_t p) { return -0.009 + 0.012 * static_cast<double>(p % c.nx) / (c.nx - 1); };
  std::vector<double> y(static_cast<std::size_t>(c.n));
  for (int64_t p = 0; p < c.n; ++p) y[p] = 280.0 + rate(p) * (c.h(p) - 600.0) + 1.0 * c.l(p);
  const auto [b0, l0] = field_slopes(y, {c.covariates.begin(), c.covariates.begin() + c.n},
                                     {c.covariates.begin() + c.n, c.covariates.end()});
  fc::LocalSlopeOptions o;
  o.rings = 2;
  o.ridge = 1e7;
  o.terms = {0, 1};
  std::vector<double> b = c.slopes(y, o);
  for (int64_t p = 0; p < c.n; ++p) {
    ASSERT_NEAR(b[p], 0.0, 1e-6 * std::abs(rate(p)) + 1e-9) << "cell " << p;
    ASSERT_NEAR(b[c.n + p], 0.0, 1e-5) << "cell " << p;
  }
  // A window that covers the whole field gives the field's slopes.
  o.rings = c.nx + c.ny;
  o.ridge = 0.0;
  b = c.slopes(y, o);
  for (int64_t p = 0; p < c.n; ++p) {
    ASSERT_NEAR(b[p], b0, 1e-9 * std::abs(b0) + 1e-12) << "cell " << p;
    ASSERT_NEAR(b[c.n + p], l0, 1e-8 * (1 + std::abs(l0))) << "cell " << p;
  }
  o.rings = 2;
  // Without the ridge each window follows its own lapse rate: the far west and east differ by
  // nearly the 0.012 the field changes by, and neither is the field's slope.
  o.ridge = 0.0;
  b = c.slopes(y, o);
  double west = 0, east = 0;
  for (int i = 0; i < c.ny; ++i) {
    west += b[static_cast<int64_t>(i) * c.nx + 1] / c.ny;
    east += b[static_cast<int64_t>(i) * c.nx + c.nx - 2] / c.ny;
  }
  EXPECT_NEAR(west, rate(1), 0.002);
  EXPECT_NEAR(east, rate(c.nx - 2), 0.002);
  EXPECT_GT(std::abs(west - b0), 0.003);
  EXPECT_GT(std::abs(east - b0), 0.003);
}

TEST(LocalSlopes, CellsWithNaNAreLeftOut) {
  const CoarseCase c;
  std::vector<double> y(static_cast<std::size_t>(c.n)), cov = c.covariates;
  for (int64_t p = 0; p < c.n; ++p) y[p] = 285.0 - 0.0065 * c.h(p) + 2.5 * c.l(p);
  y[37] = std::nan("");
  cov[c.n + 90] = std::nan("");  // a land fraction missing
  fc::LocalSlopeOptions o;
  o.rings = 1;
  o.ridge = 0.0;
  o.terms = {0, 1};
  std::vector<double> b = c.slopes(y, o, &cov);
  for (int64_t p = 0; p < c.n; ++p) {
    ASSERT_NEAR(b[p], -0.0065, 1e-10) << "cell " << p;
    ASSERT_NEAR(b[c.n + p], 2.5, 1e-8) << "cell " << p;
  }
  // A wild value in a cell whose covariate is missing changes nothing either; with a window over
  // the whole field the slopes are those of the valid cells only.
  for (int64_t p = 0; p < c.n; ++p) y[p] = 280.0 + 0.001 * static_cast<double>(p % 7) * c.h(p) + c.l(p) * (p % 3);
  y[37] = std::nan("");
  y[90] = 1e6;
  o.rings = c.nx + c.ny;
  b = c.slopes(y, o, &cov);
  std::vector<double> yv = y;
  yv[90] = std::nan("");
  const auto [b0, l0] = field_slopes(yv, {cov.begin(), cov.begin() + c.n}, {cov.begin() + c.n, cov.end()});
  for (int64_t p = 0; p < c.n; ++p) {
    ASSERT_TRUE(std::isfinite(b[p])) << "cell " << p;
    ASSERT_NEAR(b[p], b0, 1e-8 * std::abs(b0) + 1e-11) << "cell " << p;
    ASSERT_NEAR(b[c.n + p], l0, 1e-7 * (1 + std::abs(l0))) << "cell " << p;
  }
}

TEST(LocalSlopes, RangesGiveTheSameSlopesAsTheWhole) {
  const CoarseCase c;
  std::vector<double> y(static_cast<std::size_t>(c.n));
  const std::vector<double> wiggle = noise(static_cast<std::size_t>(c.n), 13, 1.5);
  for (int64_t p = 0; p < c.n; ++p)
    y[p] = 280.0 + (-0.008 + 0.0007 * static_cast<double>(p % c.nx)) * c.h(p) + 1.3 * c.l(p) + wiggle[p];
  fc::LocalSlopeOptions o;
  o.rings = 3;
  o.ridge = 0.1;
  o.terms = {0, 1};
  const std::vector<double> all = c.slopes(y, o);
  std::vector<double> first, second;
  const int64_t split = 77;
  fc::local_slopes<double>(c.neighbours.data(), 4, c.n, y.data(), c.covariates.data(), 2, o, 0, split, first);
  fc::local_slopes<double>(c.neighbours.data(), 4, c.n, y.data(), c.covariates.data(), 2, o, split, c.n - split,
                           second);
  for (int t = 0; t < 2; ++t) {
    for (int64_t i = 0; i < split; ++i) ASSERT_EQ(first[t * split + i], all[t * c.n + i]) << t << " " << i;
    for (int64_t i = 0; i < c.n - split; ++i)
      ASSERT_EQ(second[t * (c.n - split) + i], all[t * c.n + split + i]) << t << " " << i;
  }
  // The slopes do vary (the test would pass trivially on a constant).
  double lo = 1e9, hi = -1e9;
  for (int64_t p = 0; p < c.n; ++p) lo = std::min(lo, all[p]), hi = std::max(hi, all[p]);
  EXPECT_GT(hi - lo, 0.003);
}

TEST(EvalRegression, LocalTermsCarryALapseRateThatChangesAcrossTheDomain) {
  // 64 x 96 cells in 8 x 8 blocks (8 x 12 blocks). The lapse rate b changes smoothly from -0.008
  // in the west to +0.002 in the east (an inversion, as over a cold winter continent). The coarse
  // truth follows the block heights with the same b, so its local slope is b; the fine truth is
  // the conservative interpolant plus b(block) x the height's deviation from its own
  // conservative interpolant.
  fe::BlockLayout L;
  L.ny = 64;
  L.nx = 96;
  L.k = 8;
  std::vector<double> lat(64);
  for (int i = 0; i < 64; ++i) lat[i] = 40.0 + 0.25 * i;
  L.weight = fe::latlon_weights(lat, 96);
  const int nbx = L.nbx();
  auto rate = [&](std::size_t block) { return -0.008 + 0.010 * static_cast<double>(block % nbx) / (nbx - 1); };
  std::vector<double> hsurf = noise(L.size(), 21, 250.0), land = noise(L.size(), 22, 0.3);
  for (int i = 0; i < L.ny; ++i)
    for (int j = 0; j < L.nx; ++j) {
      const std::size_t c = static_cast<std::size_t>(i) * L.nx + j;
      hsurf[c] += 700.0 + 400.0 * std::sin(0.11 * i) * std::cos(0.07 * j);
      land[c] += 0.5;
    }
  const std::vector<std::string> names = {"HSURF", "FR_LAND"};
  const std::vector<const double*> cov = {hsurf.data(), land.data()};
  const fe::Predictors p = fe::block_predictors(L, names, cov);
  const std::vector<double> hmean = fe::block_means(L, hsurf.data());
  std::vector<double> coarse(L.n_blocks());
  for (std::size_t b = 0; b < coarse.size(); ++b) coarse[b] = 275.0 + rate(b) * (hmean[b] - 700.0);
  std::vector<double> truth = fe::run_baseline(L, coarse, kBicubicCons);
  for (int i = 0; i < L.ny; ++i)
    for (int j = 0; j < L.nx; ++j) {
      const std::size_t c = static_cast<std::size_t>(i) * L.nx + j;
      truth[c] += rate(static_cast<std::size_t>(i / 8) * nbx + j / 8) * p.values[1][c];  // HSURF deviation
    }

  fc::LocalSlopeOptions o;
  o.rings = 2;
  o.ridge = 0.1;
  o.terms = {0};
  const fe::LocalTerms terms = fe::block_local_terms(L, names, cov, o);
  EXPECT_EQ(terms.names(), std::vector<std::string>{"HSURF local"});
  // The slopes follow b (the ridge pulls them a little toward 0).
  const std::vector<double> slopes = terms.slopes(fe::block_means(L, truth.data()));
  for (std::size_t b = 0; b < coarse.size(); ++b) EXPECT_NEAR(slopes[b], rate(b), 0.0025) << "block " << b;

  // Fitted on the western half, scored on the eastern half.
  std::vector<char> west(L.size()), east_blocks(L.n_blocks());
  for (std::size_t c = 0; c < L.size(); ++c) west[c] = static_cast<int>(c % L.nx) < L.nx / 2;
  for (std::size_t b = 0; b < east_blocks.size(); ++b) east_blocks[b] = static_cast<int>(b % nbx) >= nbx / 2;
  const std::vector<double> means = fe::block_means(L, truth.data());
  const std::vector<double> base = fe::run_baseline(L, means, kBicubicCons);
  std::vector<double> residual(L.size());
  for (std::size_t i = 0; i < L.size(); ++i) residual[i] = truth[i] - base[i];
  const fe::Predictors pl = terms.extend(p, means);
  ASSERT_EQ(pl.names.size(), 5u);
  EXPECT_EQ(pl.names.back(), "HSURF local");
  // The local predictor is the deviation times the block's slope: zero block mean.
  const std::vector<double> local_means = fe::block_means(L, pl.values.back().data());
  for (double m : local_means) ASSERT_NEAR(m, 0.0, 1e-9);
  fe::RegressionFitter cons_fitter(p.names), local_fitter(pl.names, "regression_local");
  cons_fitter.add(p, residual, L.weight, west);
  local_fitter.add(pl, residual, L.weight, west);
  const fe::RegressionFit cons = cons_fitter.solve("west");
  fe::RegressionFit local = local_fitter.solve("west");
  EXPECT_EQ(local.baseline, "regression_local");
  local.local_rings = o.rings;
  local.local_ridge = o.ridge;
  EXPECT_NEAR(local.coef.back(), 1.0, 0.15);  // the truth is one times the local term, nearly

  fe::Evaluator ev(L);
  ev.set_regression(cons, p);
  ev.set_local_regression(local, terms);
  ev.add(truth.data(), {base.data()}, east_blocks);
  const fe::EvalReport rep = ev.report();
  ASSERT_EQ(rep.rows.size(), 11u);
  ASSERT_EQ(rep.rows[9].name, "regression_cons");
  ASSERT_EQ(rep.rows[10].name, "regression_local");
  const double rmse_cons = rep.rows[9].scores.rmse, rmse_local = rep.rows[10].scores.rmse;
  EXPECT_GT(rmse_cons, 0.2);
  EXPECT_LT(rmse_local, 0.25 * rmse_cons) << "regression_local " << rmse_local << ", regression_cons " << rmse_cons;
  // Conservative: the field's block means are the coarse truth, to rounding.
  const auto& last = ev.last_baselines();
  ASSERT_EQ(last.back().first, "regression_local");
  const std::vector<double> kept = fe::block_means(L, last.back().second.data());
  for (std::size_t b = 0; b < kept.size(); ++b) ASSERT_NEAR(kept[b], coarse[b], 1e-9) << "block " << b;
  // It takes part in the choice of the noise reference's base.
  EXPECT_EQ(fe::best_deterministic(rep).first, "regression_local");
  EXPECT_NE(fe::describe(local).find("regression_local (local slopes within 2 edge steps, ridge 0.1): residual ="),
            std::string::npos)
      << fe::describe(local);
}

TEST(EvalRegression, BothFitsRoundTripAndOldSingleFitFilesStillRead) {
  fe::RegressionFits fits;
  fits.cons.names = {"HSURF anomaly", "HSURF deviation"};
  fits.cons.coef = {-0.006, 0.002};
  fits.cons.fit_on = "west";
  fe::RegressionFit local;
  local.baseline = "regression_local";
  local.names = {"HSURF anomaly", "HSURF deviation", "HSURF local"};
  local.coef = {-0.005, 0.001, 0.87654321};
  local.local_rings = 4;
  local.local_ridge = 0.1;
  local.fitted_rms = 0.5;
  fits.local = local;
  const std::string text = fe::regressions_to_json(fits);
  EXPECT_NE(text.find("\"regression_local\""), std::string::npos) << text;
  const fe::RegressionFits back = fe::regressions_from_json(text, "both.json");
  EXPECT_EQ(back.cons.names, fits.cons.names);
  EXPECT_EQ(back.cons.baseline, "regression_cons");
  ASSERT_TRUE(back.local.has_value());
  EXPECT_EQ(back.local->baseline, "regression_local");
  EXPECT_EQ(back.local->names, local.names);
  EXPECT_DOUBLE_EQ(back.local->coef[2], 0.87654321);
  EXPECT_EQ(back.local->local_rings, 4);
  EXPECT_DOUBLE_EQ(back.local->local_ridge, 0.1);
  EXPECT_DOUBLE_EQ(back.local->fitted_rms, 0.5);

  // Without a local fit the file is the single fit of before (what committed scripts read), and
  // such a file, as written before regression_local existed, reads as regression_cons alone.
  fits.local.reset();
  EXPECT_EQ(fe::regressions_to_json(fits), fe::regression_to_json(fits.cons));
  const std::string old = R"json({
  "baseline": "regression_cons",
  "fit_on": "the blocks of data.nc not held out (--hold-out -90,90,-5.52,20)",
  "n_points": 86016,
  "residual_rms": 0.91,
  "fitted_rms": 0.61,
  "coefficients": {
    "HSURF anomaly": -0.0041,
    "HSURF deviation": -0.0012
  }
})json";
  const fe::RegressionFits read = fe::regressions_from_json(old, "old.json");
  EXPECT_FALSE(read.local.has_value());
  EXPECT_EQ(read.cons.names, (std::vector<std::string>{"HSURF anomaly", "HSURF deviation"}));
  EXPECT_DOUBLE_EQ(read.cons.coef[0], -0.0041);
  EXPECT_EQ(read.cons.n_points, 86016);
  try {
    fe::regressions_from_json(R"({"regression_cons": {"x": 1}})", "broken.json");
    FAIL() << "a broken fit was accepted";
  } catch (const finecast::ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("broken.json"), std::string::npos) << e.what();
  }
  EXPECT_THROW(fe::regressions_from_json("[1, 2]", "bad.json"), finecast::ConfigError);
}
