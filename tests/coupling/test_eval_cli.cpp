// SPDX-License-Identifier: BSD-3-Clause
// finecast-eval end to end on small files: a correct run, cropped and regional windows, and
// clear errors for bad arguments and mismatched grids.
#include <gtest/gtest.h>
#include <netcdf.h>
#include <sys/wait.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "coupling/io/ensemble_writer.hpp"
#include "coupling/io/nc_metadata.hpp"
#include "tests/eval_test_util.hpp"

namespace fc = finecast::coupling;

using namespace finecast::testing_eval;

namespace {

std::vector<double> axis(double first, double step, int n) {
  std::vector<double> v(n);
  for (int i = 0; i < n; ++i) v[i] = first + step * i;
  return v;
}

double field(double lat, double lon) {
  return 280.0 + 10 * std::sin(lat * 0.21) * std::cos(lon * 0.37) + 0.5 * std::sin(lon * 2.3);
}

/// A (lat, lon) field `var` with CF coordinates and the values of `f`.
template <class F>
void write_field(const std::string& path, const std::string& var, const std::vector<double>& lat,
                 const std::vector<double>& lon, F f) {
  int nc, dy, dx, vy, vx, v;
  ASSERT_EQ(nc_create(path.c_str(), NC_CLOBBER, &nc), NC_NOERR);
  nc_def_dim(nc, "lat", lat.size(), &dy);
  nc_def_dim(nc, "lon", lon.size(), &dx);
  nc_def_var(nc, "lat", NC_DOUBLE, 1, &dy, &vy);
  nc_def_var(nc, "lon", NC_DOUBLE, 1, &dx, &vx);
  nc_put_att_text(nc, vy, "units", 13, "degrees_north");
  nc_put_att_text(nc, vx, "units", 12, "degrees_east");
  const int dims[2] = {dy, dx};
  nc_def_var(nc, var.c_str(), NC_FLOAT, 2, dims, &v);
  nc_enddef(nc);
  nc_put_var_double(nc, vy, lat.data());
  nc_put_var_double(nc, vx, lon.data());
  std::vector<float> values;
  for (double a : lat)
    for (double o : lon) values.push_back(static_cast<float>(f(a, o)));
  nc_put_var_float(nc, v, values.data());
  ASSERT_EQ(nc_close(nc), NC_NOERR);
}

/// A (lat, lon) truth with CF coordinates.
void write_truth(const std::string& path, const std::vector<double>& lat, const std::vector<double>& lon) {
  write_field(path, "ts", lat, lon, field);
}

/// Two members truth -+ d: the ensemble mean is exact, the spread is d.
void write_pred(const std::string& path, const std::vector<double>& lat, const std::vector<double>& lon, double d,
                const std::map<std::string, std::string>& attrs = {}) {
  fc::EnsembleWriter w(path, fc::OutputGrid::latlon(lat, lon), "ts", fc::VarAttributes{"K", "", ""}, 2, attrs);
  std::vector<float> m;
  for (double s : {-d, d})
    for (double a : lat)
      for (double o : lon) m.push_back(static_cast<float>(field(a, o) + s));
  w.write("2000-01-01T00:00:00", m.data());
  w.close();
}

class EvalCli : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ::testing::TempDir() + "finecast_eval_cli_" +
           ::testing::UnitTest::GetInstance()->current_test_info()->name() + "/";
    ASSERT_EQ(std::system(("mkdir -p " + dir_).c_str()), 0);
    lat_ = axis(-39.0, 2.0, 36);  // 36 rows
    lon_ = axis(0.5, 1.5, 50);    // 50 columns
    truth_ = dir_ + "truth.nc";
    write_truth(truth_, lat_, lon_);
  }
  std::string dir_, truth_;
  std::vector<double> lat_, lon_;
};

// CSV columns after the name: members,n_points,rmse,bias,mae,crps,crps_fair,spread,std_ratio,...

}  // namespace

TEST_F(EvalCli, ScoresACroppedPredictionAgainstTheTruth) {
  // The prediction covers rows 2..33 and columns 1..48 (whole 8 x 8 blocks) of the truth.
  const std::string pred = dir_ + "pred.nc";
  write_pred(pred, {lat_.begin() + 2, lat_.begin() + 34}, {lon_.begin() + 1, lon_.begin() + 49}, 0.25,
             {{"finecast_block", "8"}});
  const std::string csv = dir_ + "e.csv", json = dir_ + "e.json";
  const Result r = run_eval("--truth " + truth_ + " --pred " + pred + " --var ts --csv " + csv + " --json " + json);
  ASSERT_EQ(r.rc, 0) << r.out;
  EXPECT_NE(r.out.find("block 8"), std::string::npos) << r.out;
  auto rows = read_csv(csv);
  ASSERT_EQ(rows.size(), 11u);  // model, eight baselines, noise_white, noise_spectral
  const auto& m = rows["model"];
  EXPECT_EQ(m[kMembers], 2);
  EXPECT_EQ(m[kPoints], 32 * 48);
  EXPECT_LT(m[kRmse], 1e-4);  // members stored as float
  EXPECT_NEAR(m[kMae], 0.0, 1e-4);
  EXPECT_NEAR(m[kCrps], 0.25 - 0.5 * 0.25, 1e-4);  // E|X-y| = d, E|X-X'| = 2d * 2/4
  EXPECT_NEAR(m[kSpread], 0.25 * std::sqrt(2.0), 1e-4);
  EXPECT_NEAR(m[kStdRatio], 1.0, 1e-4);
  EXPECT_GT(rows["bilinear"][kRmse], 0.1);
  EXPECT_NEAR(rows["nearest"][kStdRatio], 0.0, 1e-9);
  std::ifstream j(json);
  const std::string text((std::istreambuf_iterator<char>(j)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("\"truth_y0\": \"2\""), std::string::npos);
  EXPECT_NE(text.find("\"truth_x0\": \"1\""), std::string::npos);
  EXPECT_NE(text.find("\"truth_spectrum\""), std::string::npos);
}

TEST_F(EvalCli, RegionSelectsTheWholeBlocksInside) {
  const std::string pred = dir_ + "pred.nc";
  write_pred(pred, {lat_.begin(), lat_.begin() + 32}, {lon_.begin(), lon_.begin() + 48}, 0.0);
  const std::string csv = dir_ + "r.csv";
  // Rows with lat in [-30, 10] are 5..24; whole 4-row blocks inside: rows 8..23 (4 blocks).
  // Columns with lon in [10, 40] are 7..26; whole blocks: 8..23.
  const Result r =
      run_eval("--truth " + truth_ + " --pred " + pred + " --var ts --block 4 --region=-30,10,10,40 --csv " + csv);
  ASSERT_EQ(r.rc, 0) << r.out;
  EXPECT_EQ(read_csv(csv)["model"][kPoints], 16 * 16);
}

TEST_F(EvalCli, MismatchedGridsNameBothFiles) {
  const std::string pred = dir_ + "shifted.nc";
  write_pred(pred, axis(-39.0, 2.0, 32), axis(100.0, 1.5, 48), 0.1);
  const Result r = run_eval("--truth " + truth_ + " --pred " + pred + " --var ts --block 8");
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(r.out.find("grids do not match"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(truth_), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(pred), std::string::npos) << r.out;
}

TEST_F(EvalCli, BadArgumentsGiveClearErrors) {
  const std::string pred = dir_ + "pred.nc";
  write_pred(pred, {lat_.begin(), lat_.begin() + 32}, {lon_.begin(), lon_.begin() + 48}, 0.1,
             {{"finecast_block", "8"}});
  const std::string base = "--truth " + truth_ + " --pred " + pred + " --var ts ";

  Result r = run_eval("--pred " + pred + " --var ts");
  EXPECT_NE(r.rc, 0);
  EXPECT_NE(r.out.find("--truth"), std::string::npos) << r.out;

  r = run_eval("--truth " + dir_ + "nope.nc --pred " + pred + " --var ts");
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(r.out.find(dir_ + "nope.nc"), std::string::npos) << r.out;

  r = run_eval(base + "--truth-var tas");
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(r.out.find("tas"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("truth"), std::string::npos) << r.out;

  r = run_eval(base + "--block 16");  // the file says 8
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(r.out.find("recorded"), std::string::npos) << r.out;

  r = run_eval(base + "--region 10,20,30");
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(r.out.find("expected 4 numbers"), std::string::npos) << r.out;

  r = run_eval(base + "--region 60,70,0,10");  // north of the grid
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(r.out.find("no whole block"), std::string::npos) << r.out;

  r = run_eval(base + "--time 3");
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(r.out.find("--time 3"), std::string::npos) << r.out;

  // The truth given as the prediction: no member dimension is fine, but 36 rows are not whole
  // 8-row blocks.
  r = run_eval("--truth " + truth_ + " --pred " + truth_ + " --var ts --block 8");
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(r.out.find("does not tile"), std::string::npos) << r.out;
}

// A truth of NaN only: finecast-eval said nothing but "no baseline with a finite RMSE". It names
// the truth's file and variable and says that it has no finite value; a truth with a NaN in every
// block likewise, that no block is whole.
TEST_F(EvalCli, ATruthWithoutAFiniteBlockIsNamed) {
  const std::string pred = dir_ + "pred.nc", nan = dir_ + "nan.nc", holes = dir_ + "holes.nc";
  write_pred(pred, lat_, {lon_.begin(), lon_.begin() + 48}, 0.1, {{"finecast_block", "4"}});
  write_field(nan, "ts", lat_, lon_, [](double, double) { return std::nan(""); });
  Result r = run_eval("--truth " + nan + " --pred " + pred + " --var ts");
  EXPECT_EQ(r.rc, 1) << r.out;
  EXPECT_NE(r.out.find("the truth " + nan +
                       ", variable 'ts' has no finite value at the 1 scored time step(s) (0): "
                       "every value is NaN, a fill value or outside its plausible range; nothing to score"),
            std::string::npos)
      << r.out;
  write_field(holes, "ts", lat_, lon_, [](double lat, double lon) {
    return std::fmod(lat + 39.0, 8.0) == 0.0 && std::fmod(lon - 0.5, 6.0) == 0.0 ? std::nan("") : field(lat, lon);
  });
  r = run_eval("--truth " + holes + " --pred " + pred + " --var ts");
  EXPECT_EQ(r.rc, 1) << r.out;
  EXPECT_NE(r.out.find("the truth " + holes +
                       ", variable 'ts' has finite values, but no block (patch) of the scored "
                       "window has a finite truth in all its cells"),
            std::string::npos)
      << r.out;
}

namespace {

/// A "surface height" with structure at every scale.
double height(double lat, double lon) {
  return 800.0 + 600.0 * std::sin(lat * 1.7) * std::cos(lon * 2.9) + 300.0 * std::cos(lon * 0.4);
}

std::string slurp(const std::string& path) {
  std::ifstream f(path);
  return std::string((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
}

/// The regression tests' case: the truth `ts` is a smooth field minus a lapse rate of 0.0065 K/m
/// on the height, on lat x lon; the prediction is the smooth field on the first 32 x 48 cells
/// (whole 8 x 8 blocks).
void write_lapse_case(const std::string& truth, const std::string& pred, const std::vector<double>& lat,
                      const std::vector<double>& lon) {
  auto smooth = [](double a, double o) { return 280.0 + 0.1 * a + 0.02 * o; };
  write_field(truth, "ts", lat, lon, [&](double a, double o) { return smooth(a, o) - 0.0065 * height(a, o); });
  fc::EnsembleWriter w(pred, fc::OutputGrid::latlon({lat.begin(), lat.begin() + 32}, {lon.begin(), lon.begin() + 48}),
                       "ts", fc::VarAttributes{"K", "", ""}, 1, {{"finecast_block", "8"}});
  std::vector<float> m;
  for (int i = 0; i < 32; ++i)
    for (int j = 0; j < 48; ++j) m.push_back(static_cast<float>(smooth(lat[i], lon[j])));
  w.write("2000-01-01T00:00:00", m.data());
  w.close();
}

/// write_lapse_case in `dir` (t.nc, pred.nc) with the height as the covariate HSURF (hsurf.nc) on
/// the truth's grid: the arguments of a run whose regression is fitted outside lat 0..40.
std::string lapse_case_args(const std::string& dir, const std::vector<double>& lat, const std::vector<double>& lon) {
  write_lapse_case(dir + "t.nc", dir + "pred.nc", lat, lon);
  write_field(dir + "hsurf.nc", "HSURF", lat, lon, height);
  return "--truth " + dir + "t.nc --pred " + dir + "pred.nc --var ts --static " + dir + "hsurf.nc:HSURF " +
         "--hold-out=0,40,0,80 ";
}

}  // namespace

// One prediction value of 1e30 without a _FillValue gave an RMSE of 3e27, rc 0. The plugin's
// output has a _FillValue of 1e20, so here 5000 K (below it) stands for the implausible value:
// the reader makes it missing as implausible for K, and the point is counted, not scored silently.
TEST_F(EvalCli, AnImplausiblePredictionIsCountedNotScored) {
  const std::string pred = dir_ + "pred.nc", csv = dir_ + "p.csv";
  fc::EnsembleWriter w(pred,
                       fc::OutputGrid::latlon({lat_.begin(), lat_.begin() + 32}, {lon_.begin(), lon_.begin() + 48}),
                       "ts", fc::VarAttributes{"K", "", ""}, 1, {{"finecast_block", "8"}});
  std::vector<float> m;
  for (int i = 0; i < 32; ++i)
    for (int j = 0; j < 48; ++j) m.push_back(static_cast<float>(field(lat_[i], lon_[j])));
  m[5] = 5000.0f;
  w.write("2000-01-01T00:00:00", m.data());
  w.close();
  const Result r = run_eval("--truth " + truth_ + " --pred " + pred + " --var ts --csv " + csv);
  ASSERT_EQ(r.rc, 0) << r.out;
  auto rows = read_csv(csv);
  EXPECT_EQ(rows["model"][kNonFinite], 1);
  EXPECT_EQ(rows["model"][kPoints], 32 * 48 - 1);
  EXPECT_LT(rows["model"][kRmse], 1e-4);
  EXPECT_NE(r.out.find("model: 1 point(s) of scored blocks not scored"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(pred + ", variable 'ts': 1 value(s) outside the valid or plausible range"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("plausible range [-100, 400] (units K"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("index 5: 5000"), std::string::npos) << r.out;
}

TEST_F(EvalCli, RegressionBaselineIsFittedOnTheTrainingRegionPrintedSavedAndScored) {
  // Truth: a smooth field minus a lapse rate on the height; the covariate covers a larger grid
  // (2 more rows and columns on each side), found by its coordinates.
  const std::string truth = dir_ + "t.nc", cov = dir_ + "hsurf.nc", pred = dir_ + "pred.nc";
  write_lapse_case(truth, pred, lat_, lon_);
  write_field(cov, "HSURF", axis(-43.0, 2.0, 40), axis(-2.5, 1.5, 54), height);

  const std::string csv = dir_ + "r.csv", coef = dir_ + "coef.json", json = dir_ + "r.json";
  const std::string base = "--truth " + truth + " --pred " + pred + " --var ts --static " + cov + ":HSURF ";
  Result r = run_eval(base + "--fit-on=-40,0,0,80 --hold-out=0,40,0,80 --csv " + csv + " --json " + json +
                      " --regression-out " + coef);
  ASSERT_EQ(r.rc, 0) << r.out;
  EXPECT_NE(r.out.find("regression_cons: residual ="), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("HSURF anomaly"), std::string::npos) << r.out;
  auto rows = read_csv(csv);
  ASSERT_EQ(rows.count("regression_cons"), 1u);
  // Held-out blocks: rows with lat in [0, 40] are 20..35, whole 8-row blocks of the 32-row
  // prediction inside: rows 24..31 (1 block row of 6 blocks).
  EXPECT_EQ(rows["model"][kPoints], 8 * 48);
  EXPECT_EQ(rows["regression_cons"][kPoints], 8 * 48);
  // The lapse rate is what bicubic_cons cannot know.
  EXPECT_LT(rows["regression_cons"][kRmse], 0.5 * rows["bicubic_cons"][kRmse]);
  const std::string saved = slurp(coef);
  EXPECT_NE(saved.find("\"coefficients\""), std::string::npos) << saved;
  EXPECT_NE(slurp(json).find("regression_coef HSURF anomaly"), std::string::npos);

  // The saved coefficients give the same scores.
  const std::string csv2 = dir_ + "r2.csv";
  r = run_eval(base + "--hold-out=0,40,0,80 --regression-in " + coef + " --csv " + csv2);
  ASSERT_EQ(r.rc, 0) << r.out;
  EXPECT_DOUBLE_EQ(read_csv(csv2)["regression_cons"][kRmse], rows["regression_cons"][kRmse]);

  // Without a training split, or with a covariate on another grid: errors naming what to fix.
  r = run_eval(base);
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(r.out.find("--fit-on"), std::string::npos) << r.out;
  const std::string shifted = dir_ + "shifted.nc";
  write_field(shifted, "HSURF", axis(20.0, 2.0, 40), axis(-2.5, 1.5, 54), height);
  r = run_eval("--truth " + truth + " --pred " + pred + " --var ts --static " + shifted + ":HSURF --fit-on=-40,0,0,80");
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(r.out.find("grids do not match"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(shifted), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(pred), std::string::npos) << r.out;
  r = run_eval("--truth " + truth + " --pred " + pred + " --var ts --fit-on=-40,0,0,80");
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(r.out.find("--static"), std::string::npos) << r.out;
}

TEST_F(EvalCli, LocalSlopesAddRegressionLocalSavedWithRegressionConsAndTheirOptionsAreChecked) {
  // The truth of the regression test above: a smooth field minus a lapse rate on the height.
  const std::string truth = dir_ + "t.nc", pred = dir_ + "pred.nc", base = lapse_case_args(dir_, lat_, lon_);
  const std::string csv = dir_ + "l.csv", json = dir_ + "l.json", both = dir_ + "both.json";

  Result r = run_eval(base + "--local-slopes 2 --csv " + csv + " --json " + json + " --regression-out " + both);
  ASSERT_EQ(r.rc, 0) << r.out;
  EXPECT_NE(r.out.find("regression_local (local slopes within 2 edge steps, ridge 0.1): residual ="), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("HSURF local"), std::string::npos) << r.out;
  auto rows = read_csv(csv);
  ASSERT_EQ(rows.count("regression_local"), 1u);
  EXPECT_EQ(rows["regression_local"][kPoints], 8 * 48);
  EXPECT_LT(rows["regression_local"][kRmse], 0.5 * rows["bicubic_cons"][kRmse]);
  const std::string report = slurp(json);
  EXPECT_NE(report.find("\"regression_local_rings\": \"2\""), std::string::npos) << report;
  EXPECT_NE(report.find("\"regression_local_static\": \"HSURF\""), std::string::npos) << report;
  EXPECT_NE(report.find("regression_local_coef HSURF local"), std::string::npos) << report;
  const std::string saved = slurp(both);
  EXPECT_NE(saved.find("\"regression_cons\": {"), std::string::npos) << saved;
  EXPECT_NE(saved.find("\"regression_local\": {"), std::string::npos) << saved;

  // Both fits read back give the same scores; without --local-slopes the file serves regression_cons.
  const std::string csv2 = dir_ + "l2.csv";
  r = run_eval(base + "--local-slopes 2 --regression-in " + both + " --csv " + csv2);
  ASSERT_EQ(r.rc, 0) << r.out;
  auto rows2 = read_csv(csv2);
  EXPECT_DOUBLE_EQ(rows2["regression_local"][kRmse], rows["regression_local"][kRmse]);
  EXPECT_DOUBLE_EQ(rows2["regression_cons"][kRmse], rows["regression_cons"][kRmse]);
  r = run_eval(base + "--regression-in " + both + " --csv " + csv2);
  ASSERT_EQ(r.rc, 0) << r.out;
  EXPECT_EQ(read_csv(csv2).count("regression_local"), 0u);
  EXPECT_DOUBLE_EQ(read_csv(csv2)["regression_cons"][kRmse], rows["regression_cons"][kRmse]);
  r = run_eval(base + "--local-slopes 3 --regression-in " + both);
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(r.out.find("--local-slopes 2"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(both), std::string::npos) << r.out;

  // A single-fit file as finecast-eval wrote it before regression_local still reads as
  // regression_cons; asked for regression_local too, it is an error naming the file.
  const std::string old = dir_ + "old.json";
  std::ofstream(old) << R"json({
  "baseline": "regression_cons",
  "fit_on": "region -40,0,0,80 of t.nc (12 blocks)",
  "n_points": 768,
  "residual_rms": 2.1,
  "fitted_rms": 0.05,
  "coefficients": {
    "HSURF anomaly": -0.0065,
    "HSURF deviation": -0.0065
  }
})json";
  r = run_eval(base + "--regression-in " + old + " --csv " + csv2);
  ASSERT_EQ(r.rc, 0) << r.out;
  EXPECT_NE(r.out.find("regression_cons: residual = -0.0065 * HSURF anomaly"), std::string::npos) << r.out;
  EXPECT_EQ(read_csv(csv2).count("regression_cons"), 1u);
  r = run_eval(base + "--local-slopes 2 --regression-in " + old);
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(r.out.find(old), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("no regression_local fit"), std::string::npos) << r.out;
  // It records no interpolant: it was fitted on the default's (bicubic_cons).
  r = run_eval(base + "--regression-in " + old + " --regression-interpolant bspline");
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(r.out.find("fitted on interpolant bicubic (bicubic_cons; the file records none: auto)"), std::string::npos)
      << r.out;

  // Bad values: errors naming the option, the value and what was expected.
  r = run_eval(base + "--local-slopes 2 --local-slope-static HSURF,NOPE");
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(r.out.find("--local-slope-static"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\"NOPE\" is not one of the --static covariates"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("known: HSURF"), std::string::npos) << r.out;
  r = run_eval(base + "--local-slopes -1");
  EXPECT_NE(r.rc, 0);
  EXPECT_NE(r.out.find("--local-slopes"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(">= 0"), std::string::npos) << r.out;
  r = run_eval(base + "--local-slopes two");
  EXPECT_NE(r.rc, 0);
  EXPECT_NE(r.out.find("--local-slopes"), std::string::npos) << r.out;
  r = run_eval(base + "--local-slopes 2 --local-slope-ridge -0.5");
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(r.out.find("--local-slope-ridge -0.5: expected a finite real >= 0"), std::string::npos) << r.out;
  r = run_eval(base + "--local-slope-static HSURF");
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(r.out.find("--local-slopes RINGS"), std::string::npos) << r.out;
  r = run_eval("--truth " + truth + " --pred " + pred + " --var ts --local-slopes 2");
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(r.out.find("--static"), std::string::npos) << r.out;
}

// --regression-interpolant: the regression baselines on the plugin's patch.interpolant bspline sit
// on bspline_cons (another regression_cons row than the default's bicubic_cons), the choice is in
// the report and the saved fit, a name of the other grid type is refused, and so is a saved fit
// of another interpolant.
TEST_F(EvalCli, RegressionInterpolantChoosesTheBaseRecordsItAndRefusesAnother) {
  const std::string base = lapse_case_args(dir_, lat_, lon_);
  const std::string csv = dir_ + "a.csv", csv2 = dir_ + "b.csv", json = dir_ + "b.json";
  const std::string fit_auto = dir_ + "auto.json", fit_bspline = dir_ + "bspline.json";
  Result r = run_eval(base + "--csv " + csv + " --regression-out " + fit_auto);
  ASSERT_EQ(r.rc, 0) << r.out;
  r = run_eval(base + "--regression-interpolant bspline --csv " + csv2 + " --json " + json + " --regression-out " +
               fit_bspline);
  ASSERT_EQ(r.rc, 0) << r.out;
  EXPECT_NE(r.out.find("interpolant bspline, fitted on"), std::string::npos) << r.out;
  auto bicubic = read_csv(csv), bspline = read_csv(csv2);
  EXPECT_NE(bspline["regression_cons"][kRmse], bicubic["regression_cons"][kRmse]);
  EXPECT_LT(bspline["regression_cons"][kRmse], 0.5 * bspline["bspline_cons"][kRmse]);
  EXPECT_NE(slurp(json).find("\"regression_interpolant\": \"bspline\""), std::string::npos) << slurp(json);
  EXPECT_NE(slurp(fit_bspline).find("\"interpolant\": \"bspline\""), std::string::npos) << slurp(fit_bspline);
  EXPECT_NE(slurp(fit_auto).find("\"interpolant\": \"bicubic\""), std::string::npos) << slurp(fit_auto);

  // The saved bspline fit scores the same with the same interpolant, and is refused with another.
  r = run_eval(base + "--regression-interpolant bspline --regression-in " + fit_bspline + " --csv " + csv2);
  ASSERT_EQ(r.rc, 0) << r.out;
  EXPECT_DOUBLE_EQ(read_csv(csv2)["regression_cons"][kRmse], bspline["regression_cons"][kRmse]);
  r = run_eval(base + "--regression-in " + fit_bspline);
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(r.out.find("--regression-in " + fit_bspline + " holds regression_cons fitted on interpolant bspline"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("asks for --regression-interpolant bicubic"), std::string::npos) << r.out;

  // An interpolant of ICON cells on a lat-lon field, and a name that is none.
  r = run_eval(base + "--regression-interpolant idw");
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(r.out.find("--regression-interpolant idw interpolates ICON cells, but the prediction's grid is latlon"),
            std::string::npos)
      << r.out;
  r = run_eval(base + "--regression-interpolant cubic");
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(
      r.out.find("--regression-interpolant cubic: expected one of auto, bicubic, bspline, idw, linear, idw_linear"),
      std::string::npos)
      << r.out;
}

namespace {

/// The (time, lat, lon) values of `var` in a --baselines-out file, and its `step_var` along time.
std::vector<double> read_steps(const std::string& path, const std::string& var, std::vector<long long>* steps = nullptr,
                               const std::string& step_var = "truth_step") {
  int nc = -1, v = -1, nd = 0, dims[NC_MAX_VAR_DIMS];
  EXPECT_EQ(nc_open(path.c_str(), NC_NOWRITE, &nc), NC_NOERR) << path;
  EXPECT_EQ(nc_inq_varid(nc, var.c_str(), &v), NC_NOERR) << var;
  nc_inq_varndims(nc, v, &nd);
  nc_inq_vardimid(nc, v, dims);
  std::size_t n = 1;
  for (int d = 0; d < nd; ++d) {
    std::size_t len = 0;
    nc_inq_dimlen(nc, dims[d], &len);
    n *= len;
  }
  char name[NC_MAX_NAME + 1] = "";
  nc_inq_dimname(nc, dims[0], name);
  EXPECT_STREQ(name, "time") << var << " in " << path;
  std::vector<double> values(n);
  nc_get_var_double(nc, v, values.data());
  if (steps) {
    std::size_t len = 0;
    nc_inq_dimlen(nc, dims[0], &len);
    steps->assign(len, -1);
    EXPECT_EQ(nc_inq_varid(nc, step_var.c_str(), &v), NC_NOERR) << step_var;
    nc_get_var_longlong(nc, v, steps->data());
  }
  nc_close(nc);
  return values;
}

}  // namespace

// --baselines-out writes every scored step along time (truth_step, pred_step), each step's
// baselines those that a run scoring that step alone (--time T) writes; a run that fails after
// some steps were scored leaves an earlier file of the same name as it was, and no temporary file.
TEST_F(EvalCli, BaselinesOutHoldsEveryScoredStepAndIsWrittenWholeOrNotAtAll) {
  const std::vector<double> lat(lat_.begin(), lat_.begin() + 32), lon(lon_.begin(), lon_.begin() + 48);
  const std::string pred = dir_ + "pred3.nc", out = dir_ + "baselines.nc";
  {
    fc::EnsembleWriter w(pred, fc::OutputGrid::latlon(lat, lon), "ts", fc::VarAttributes{"K", "", ""}, 2,
                         {{"finecast_block", "8"}});
    for (int t = 0; t < 3; ++t) {
      std::vector<float> members, host;
      for (double s : {-0.1, 0.1})
        for (double a : lat)
          for (double o : lon) members.push_back(static_cast<float>(field(a, o + 3 * t) + s));
      for (double a : lat)
        for (double o : lon) host.push_back(static_cast<float>(field(a, o + 3 * t)));
      w.write("2000-01-0" + std::to_string(t + 1) + "T00:00:00", members.data(), nullptr, host.data());
    }
    w.close();
  }
  Result r = run_eval("--pred " + pred + " --var ts --noise-members 0 --baselines-out " + out);
  ASSERT_EQ(r.rc, 0) << r.out;
  EXPECT_NE(r.out.find("baselines of the 3 scored step(s) written to " + out), std::string::npos) << r.out;
  std::vector<long long> truth_steps, pred_steps;
  const std::vector<double> all = read_steps(out, "bspline_cons", &truth_steps);
  read_steps(out, "bspline_cons", &pred_steps, "pred_step");
  EXPECT_EQ(truth_steps, (std::vector<long long>{0, 1, 2}));
  EXPECT_EQ(pred_steps, (std::vector<long long>{0, 1, 2}));
  const std::size_t n = lat.size() * lon.size();
  ASSERT_EQ(all.size(), 3 * n);
  for (int t : {0, 2}) {
    const std::string one = dir_ + "t" + std::to_string(t) + ".nc";
    r = run_eval("--pred " + pred + " --var ts --noise-members 0 --time " + std::to_string(t) + " --baselines-out " +
                 one);
    ASSERT_EQ(r.rc, 0) << r.out;
    std::vector<long long> steps;
    const std::vector<double> alone = read_steps(one, "bspline_cons", &steps);
    EXPECT_EQ(steps, (std::vector<long long>{t}));
    ASSERT_EQ(alone.size(), n);
    double worst = 0;
    for (std::size_t i = 0; i < n; ++i) worst = std::max(worst, std::abs(alone[i] - all[t * n + i]));
    EXPECT_EQ(worst, 0.0) << "step " << t;
  }
  // The steps differ (the field moves), so a file of one step repeated would fail above.
  EXPECT_GT(std::abs(all[0] - all[2 * n]) + std::abs(all[n / 2] - all[2 * n + n / 2]), 1e-3);

  // A truth of NaN only fails after the scoring loop: the earlier file stays whole.
  const std::string nan = dir_ + "nan.nc", one_step = dir_ + "pred1.nc", before = slurp(out);
  write_field(nan, "ts", lat, lon, [](double, double) { return std::nan(""); });
  write_pred(one_step, lat, lon, 0.1, {{"finecast_block", "8"}});
  r = run_eval("--truth " + nan + " --pred " + one_step + " --var ts --noise-members 0 --baselines-out " + out);
  EXPECT_EQ(r.rc, 1) << r.out;
  EXPECT_NE(r.out.find("has no finite value at the 1 scored time step(s)"), std::string::npos) << r.out;
  EXPECT_EQ(slurp(out), before);
  EXPECT_NE(std::system(("ls " + dir_ + " | grep -q tmp").c_str()), 0) << "a temporary file was left behind";
}
