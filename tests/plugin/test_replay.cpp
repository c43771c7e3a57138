// SPDX-License-Identifier: BSD-3-Clause
// finecast-replay: its run file, lat-lon decompositions, progress text, and a real replay of
// the monthly temperature file through the plugin on 1 and 2 ranks (equal results required).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <limits>
#include <set>
#include <sstream>
#include <vector>

#include "coupling/buffer/rolling_buffer.hpp"
#include "common/error.hpp"
#include "coupling/grid/latlon_grid.hpp"
#include "coupling/grid/patches.hpp"
#include "coupling/io/field_reader.hpp"
#include "host/replay/latlon_domain.hpp"
#include "host/replay/progress.hpp"
#include "host/replay/replay_input.hpp"
#include "host/replay/run_config.hpp"
#include "plugin/config.hpp"
#include "plugin/downscale/downscale.hpp"
#include "trainer/checkpoint.hpp"
#include "tests/plugin/downscale_test_util.hpp"
#include "tests/plugin/replay_test_util.hpp"

namespace fc = finecast::coupling;
namespace fr = finecast::host::replay;
using namespace finecast::testing_replay;

namespace {

std::string config_error(const std::string& text) {
  try {
    fr::parse_replay_run_config(text, "run.yaml");
  } catch (const finecast::ConfigError& e) {
    return e.what();
  }
  return "";
}

const char* kMinimalRun = "input: {files: [a.nc], variables: [tas]}\n";

}  // namespace

TEST(ReplayRunConfig, DefaultsAndBothVariableForms) {
  const fr::ReplayRunConfig c = fr::parse_replay_run_config(
      "input:\n  files: [a.nc, 'b_*.nc']\n  variables: [tas, {var: ta, name: t850, level: 3}]\n"
      "  static: [{file: h.nc, var: HSURF, name: topography_c}]\n"
      "time: {start: 2005-03-01, stop: 7, stride: 2}\n",
      "run.yaml");
  EXPECT_EQ(c.files, (std::vector<std::string>{"a.nc", "b_*.nc"}));
  ASSERT_EQ(c.variables.size(), 2u);
  EXPECT_EQ(c.variables[0].var, "tas");
  EXPECT_EQ(c.variables[0].name, "tas");
  EXPECT_EQ(c.variables[1].var, "ta");
  EXPECT_EQ(c.variables[1].name, "t850");
  EXPECT_EQ(c.variables[1].level, 3);
  ASSERT_EQ(c.static_variables.size(), 1u);
  EXPECT_EQ(c.static_variables[0].variable.name, "topography_c");
  EXPECT_TRUE(c.start.is_date);
  EXPECT_EQ(c.start.date, "2005-03-01T00:00:00");
  EXPECT_FALSE(c.stop.is_date);
  EXPECT_EQ(c.stop.index, 7);
  EXPECT_EQ(c.stride, 2);
  EXPECT_EQ(c.epochs, 1);
  EXPECT_EQ(c.nproma, 32);
  EXPECT_EQ(c.decomposition, "round_robin");
  EXPECT_EQ(c.grid_type, "latlon");
}

TEST(ReplayRunConfig, BadFilesNameTheKeyAndLine) {
  // The same walker and messages as the plugin's config (common/yaml_schema).
  EXPECT_EQ(config_error(std::string(kMinimalRun) + "epoch: 3\n"),
            "run.yaml:2: unknown key epoch (allowed: input, time, grid, epochs, nproma, decomposition, seed, "
            "progress_every, comin_namelist, plugins)");
  EXPECT_EQ(config_error("input: {variables: [tas]}\n").rfind("run.yaml: missing required key input.files (", 0), 0u);
  EXPECT_EQ(config_error("input: {files: a.nc}\n").rfind("run.yaml: missing required key input.variables (", 0), 0u);
  EXPECT_EQ(config_error(std::string(kMinimalRun) + "time: {start: March}\n"),
            "run.yaml:2: time.start must be a 0-based step index or an ISO 8601 date, got \"March\"");
  EXPECT_EQ(config_error(std::string(kMinimalRun) + "time: {stride: 0}\n"),
            "run.yaml:2: time.stride must be an integer in [1, 100000000], got 0");
  EXPECT_EQ(config_error(std::string(kMinimalRun) + "epochs: two\n"),
            "run.yaml:2: epochs must be an integer in [1, 1000000], got \"two\"");
  EXPECT_EQ(config_error(std::string(kMinimalRun) + "grid: {type: icon}\n"),
            "run.yaml: grid.file is required for grid.type icon (the ICON grid file)");
  EXPECT_EQ(config_error(std::string(kMinimalRun) + "decomposition: blocks\n"),
            "run.yaml:2: decomposition must be one of round_robin, lat_bands, random, got \"blocks\"");
  EXPECT_EQ(config_error(std::string(kMinimalRun) + "plugins: [{name: x}]\n")
                .rfind("run.yaml:2: missing required key plugins[0].library (", 0),
            0u);
  EXPECT_NE(config_error("input: {files: a.nc, variables: [tas, tas]}\n").find("'tas' given twice"), std::string::npos);
  EXPECT_EQ(config_error(kMinimalRun), "");
}

TEST(ReplayInput, SelectsRangeStrideAndDatesOfTheRealFile) {
  fr::ReplayRunConfig c = fr::parse_replay_run_config(
      "input: {files: [" + kTas + "], variables: [tas]}\ntime: {start: 2005-03-01, stop: 2005-10-31, stride: 3}\n",
      "run.yaml");
  fr::ReplayInput input(c);
  EXPECT_EQ(input.n_steps_total(), 12);
  EXPECT_EQ(input.n_values(), 96 * 192);
  // Monthly means are stamped mid-month: March (index 2) is the first at or after 1 March,
  // October (9) the last at or before 31 October; stride 3 gives months 3, 6, 9.
  ASSERT_EQ(input.n_selected(), 3);
  EXPECT_EQ(input.datetime(0).substr(0, 7), "2005-03");
  EXPECT_EQ(input.datetime(1).substr(0, 7), "2005-06");
  EXPECT_EQ(input.datetime(2).substr(0, 7), "2005-09");
  std::vector<float> a(static_cast<size_t>(input.n_values())), b(a.size());
  input.read(1, 0, a.data());
  fc::FieldReader direct(kTas, "tas");
  direct.read(5, b.data());
  EXPECT_EQ(a, b);

  c.start = {true, false, 20, ""};
  EXPECT_THROW(fr::ReplayInput{c}, finecast::ConfigError);
  c = fr::parse_replay_run_config("input: {files: ['/nonexistent/dir/*.nc'], variables: [tas]}\n", "run.yaml");
  try {
    fr::ReplayInput input2(c);
    ADD_FAILURE() << "no error for a pattern without matches";
  } catch (const finecast::ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("'/nonexistent/dir/*.nc' matches no file"), std::string::npos) << e.what();
  }
}

TEST(ReplayDecomposition, EveryCellOwnedOnceHalosElsewhereAndNotBlockAligned) {
  const fc::LatLonGrid grid = fc::make_latlon_grid({-50, -40, -30, -20, -10, 0, 10, 20},
                                                   {0, 30, 60, 90, 120, 150, 180, 210, 240, 270, 300, 330});
  const int64_t n = grid.nlat * grid.nlon;
  for (const std::string method : {"round_robin", "lat_bands", "random"}) {
    for (int ranks : {1, 3, 5}) {
      std::vector<int> owner(static_cast<size_t>(n), -1);
      for (int r = 0; r < ranks; ++r) {
        const auto cells = fr::decompose_latlon(grid, method, 11, ranks, r);
        for (int c : cells.owned) {
          EXPECT_EQ(owner[c], -1) << method << ": cell " << c << " owned twice";
          owner[c] = r;
        }
        const auto domain = fr::make_latlon_domain(grid, cells, 4, 60.0);
        ASSERT_EQ(domain.glb_index.size(), cells.owned.size() + cells.halo.size());
        for (size_t j = 0; j < domain.glb_index.size(); ++j) {
          EXPECT_EQ(domain.decomp_domain[j], j < cells.owned.size() ? 0 : 1);
          double lon, lat;
          const int c = domain.glb_index[j] - 1;
          fc::latlon_cell_centre(grid, c / grid.nlon, c % grid.nlon, lon, lat);
          EXPECT_DOUBLE_EQ(domain.clon[j], lon);
          EXPECT_DOUBLE_EQ(domain.clat[j], lat);
          EXPECT_NEAR(lat, grid.lat[c / grid.nlon] * M_PI / 180, 1e-12);
        }
      }
      for (int64_t c = 0; c < n; ++c) EXPECT_GE(owner[c], 0) << method << ": cell " << c << " owned by no rank";
      if (ranks == 3) {
        // Halos: neighbours of owned cells owned elsewhere. Round robin on 12 columns gives rank 2
        // the columns 2, 5, 8, 11; column 0 is in its halo only because the grid is global and
        // column 11's east neighbour wraps around to it.
        const auto cells = fr::decompose_latlon(grid, method, 11, ranks, 2);
        std::set<int> owned(cells.owned.begin(), cells.owned.end());
        for (int h : cells.halo) EXPECT_EQ(owned.count(h), 0u);
        if (method == "round_robin") {
          EXPECT_TRUE(std::find(cells.halo.begin(), cells.halo.end(), 0) != cells.halo.end());
          EXPECT_EQ(cells.halo.size() + cells.owned.size(),
                    static_cast<size_t>(n));  // every other column
        }
      }
    }
  }
  // The seeded permutation is reproducible and differs between seeds.
  EXPECT_EQ(fr::decompose_latlon(grid, "random", 5, 2, 0).owned, fr::decompose_latlon(grid, "random", 5, 2, 0).owned);
  EXPECT_NE(fr::decompose_latlon(grid, "random", 5, 2, 0).owned, fr::decompose_latlon(grid, "random", 6, 2, 0).owned);
  EXPECT_THROW(fr::decompose_latlon(grid, "blocks", 1, 2, 0), finecast::ConfigError);
}

TEST(ReplayProgress, StatusLine) {
  EXPECT_EQ(fr::Progress::status(12, 48, 4.0), "12/48 steps, 3.00 steps/s, ETA 0:00:12");
  EXPECT_EQ(fr::Progress::status(0, 48, 0.0), "0/48 steps, 0.00 steps/s, ETA ?");
  EXPECT_EQ(fr::Progress::status(1, 7201, 1.0), "1/7201 steps, 1.00 steps/s, ETA 2:00:00");
  EXPECT_THROW(fr::Progress::parse_mode("fancy"), finecast::ConfigError);
}

TEST(ReplayCli, BadArgumentsGiveClearErrors) {
  ScratchDir dir;
  auto r = run_command(binary("finecast-replay"));
  EXPECT_NE(r.rc, 0);
  EXPECT_NE(r.output.find("a run/config file (FILE or --config FILE) is required"), std::string::npos) << r.output;
  r = run_command(binary("finecast-replay") + " --config " + dir.file("missing.yaml"));
  EXPECT_NE(r.rc, 0);
  EXPECT_NE(r.output.find(dir.file("missing.yaml") + ": cannot open the replay run file"), std::string::npos)
      << r.output;
  write_text(dir.file("plugin.yaml"), tiny_plugin_config(dir.path()));
  write_text(dir.file("run.yaml"), tiny_run_file(dir.file("plugin.yaml"), "random"));
  r = run_command(binary("finecast-replay") + " --config " + dir.file("run.yaml") + " --set device");
  EXPECT_NE(r.rc, 0);
  EXPECT_NE(r.output.find("--set: expected KEY=VALUE (e.g. --set device=cpu), got 'device'"), std::string::npos)
      << r.output;
  r = run_command(binary("finecast-replay") + " --config " + dir.file("run.yaml") + " --set other:device=cpu");
  EXPECT_NE(r.rc, 0);
  EXPECT_NE(r.output.find("no plugin is called 'other'"), std::string::npos) << r.output;
  // A plugin config override reaches the plugin: an unknown key is its error, naming the key.
  r = run_command(binary("finecast-replay") + " --config " + dir.file("run.yaml") + " --set train.epoch=3");
  EXPECT_NE(r.rc, 0);
  EXPECT_NE(r.output.find("train.epoch"), std::string::npos) << r.output;
  // A grid file that does not fit the data.
  write_text(dir.file("icon.yaml"), "input: {files: [" + kTas +
                                        "], variables: [tas]}\ngrid: {type: icon, file: "
                                        "/usr/share/ncarg/data/nug/triangular_grid_ICON.nc}\n");
  r = run_command(binary("finecast-replay") + " --config " + dir.file("icon.yaml"));
  EXPECT_NE(r.rc, 0);
  EXPECT_NE(r.output.find("has 20480 cells, but " + kTas + ": tas has 18432 values per step"), std::string::npos)
      << r.output;
}

// The plugin gathers by global index, so how the host splits the field must not change a bit
// of what it buffers, trains and samples (synchronous training on one thread, fixed seeds).
TEST(ReplayEndToEnd, TwoRanksGiveTheSameResultsAsOne) {
  ScratchDir one("replay1"), two("replay2");
  const CommandResult r1 = run_tiny_replay(one.path(), 1, "round_robin");
  ASSERT_EQ(r1.rc, 0) << r1.output;
  const CommandResult r2 = run_tiny_replay(two.path(), 2, "random");
  ASSERT_EQ(r2.rc, 0) << r2.output;
  EXPECT_NE(r2.output.find("replay: 6/6 steps"), std::string::npos) << r2.output;
  EXPECT_NE(r2.output.find("2 training sessions"), std::string::npos) << r2.output;

  // The rolling buffers hold the same samples.
  const fc::RollingBuffer b1 =
      fc::RollingBuffer::load_h5(newest_buffer_snapshot(one.file("checkpoints")), 4, 288, 8, 64);
  const fc::RollingBuffer b2 =
      fc::RollingBuffer::load_h5(newest_buffer_snapshot(two.file("checkpoints")), 4, 288, 8, 64);
  ASSERT_EQ(b1.steps(), 4);
  std::vector<float> c1, f1, w1, c2, f2, w2;
  b1.snapshot(c1, f1, w1);
  b2.snapshot(c2, f2, w2);
  EXPECT_EQ(c1, c2);
  EXPECT_EQ(f1, f2);

  // The sampled ensembles are bitwise equal, and their coarse field is the area-weighted block
  // mean of the last replayed month (June) of the file.
  fc::FieldReader truth(kTas, "tas");
  std::vector<float> june(static_cast<size_t>(truth.n_values()));
  truth.read(5, june.data());
  const fc::PatchMap map = fc::latlon_patch_map(fc::read_latlon_grid(kTas, "tas"), 8);
  std::vector<float> coarse(static_cast<size_t>(map.n_coarse));
  fc::coarsen(map, june.data(), coarse.data());
  fc::FieldReader coarse1(one.file("out.nc"), "tas_coarse"), coarse2(two.file("out.nc"), "tas_coarse");
  std::vector<float> k1(june.size()), k2(june.size());
  coarse1.read(0, k1.data());
  coarse2.read(0, k2.data());
  EXPECT_EQ(k1, k2);
  for (int64_t c = 0; c < map.n_coarse; ++c)
    for (int p = 0; p < map.patch_size; ++p) ASSERT_NEAR(k1[map.fine_of_patch[c * 64 + p]], coarse[c], 1e-3);
  for (int m = 0; m < 2; ++m) {
    fc::FieldReader m1(one.file("out.nc"), "tas", m), m2(two.file("out.nc"), "tas", m);
    ASSERT_EQ(m1.n_times(), 1);
    std::vector<float> v1(june.size()), v2(june.size());
    m1.read(0, v1.data());
    m2.read(0, v2.data());
    EXPECT_EQ(v1, v2) << "member " << m;
    // Conservative sampling: each patch's weighted mean is its coarse value.
    for (int64_t c = 0; c < map.n_coarse; ++c) {
      double mean = 0;
      for (int p = 0; p < 64; ++p) mean += map.fine_weight[c * 64 + p] * v1[map.fine_of_patch[c * 64 + p]];
      ASSERT_NEAR(mean, coarse[c], 2e-3) << "member " << m << ", patch " << c;
    }
  }
}

// The tiny replay on 2 ranks with the host's tas offered twice, the second time as tas_now (a
// covariate that is the target under another name), and `patch` (a YAML mapping) as the plugin's
// patch section.
static CommandResult replay_with_tas_now(const ScratchDir& dir, const std::string& patch,
                                         const std::string& input = kTas) {
  write_text(dir.file("plugin.yaml"), tiny_plugin_config(dir.path()) + "patch: " + patch + "\n");
  std::string run = tiny_run_file(dir.file("plugin.yaml"), "round_robin");
  const std::string vars = "variables: [tas]", files = "files: [" + kTas + "]";
  if (run.find(vars) == std::string::npos) return {1, "tiny_run_file has no '" + vars + "' line"};
  if (run.find(files) == std::string::npos) return {1, "tiny_run_file has no '" + files + "' line"};
  run.replace(run.find(vars), vars.size(), "variables: [tas, {var: tas, name: tas_now}]");
  run.replace(run.find(files), files.size(), "files: [" + input + "]");
  write_text(dir.file("run.yaml"), run);
  return run_command("mpiexec -n 2 --oversubscribe " + binary("finecast-replay") + " --config " + dir.file("run.yaml") +
                     " --progress lines");
}

// finecast-downscale of the newest checkpoint in `dir`, step 6 (time 5) of the months, with the
// first month as tas_now (dir/first.nc), 2 members drawn with the plugin's first sampling seed:
// the file written.
static std::string downscale_step6(const ScratchDir& dir) {
  finecast::plugin::DownscaleOptions o;
  o.checkpoint = newest_checkpoint(dir.file("checkpoints"));
  o.input = kTas;
  o.vars = {"tas"};
  o.times = {"5"};
  o.statics = {dir.file("first.nc") + ":tas_now"};
  o.output = dir.file("offline.nc");
  o.members = 2;
  o.device = "cpu";
  o.seed = 7;  // tiny_plugin_config's seed: its first sampling
  o.threads = 1;
  finecast::plugin::run_downscale(o);
  return o.output;
}

// Times [from, to) of the months' tas into `output` (scripts/eval_crop.py, `extra` its further
// arguments): the exit status.
static int crop_tas(const std::string& output, int from, int to, const std::string& extra = "") {
  return run_command("/usr/bin/python3 " + std::string(FINECAST_SOURCE_DIR) + "/scripts/eval_crop.py --input " + kTas +
                     " --var tas --output " + output + " --time " + std::to_string(from) + " " + std::to_string(to) +
                     extra)
      .rc;
}

// The first month as tas_now, the covariate of replay_with_tas_now (dir/first.nc).
static void crop_first_month(const ScratchDir& dir) {
  ASSERT_EQ(crop_tas(dir.file("first.nc"), 0, 1, " --time-mean tas_now"), 0);
}

// Where a replay's debug log says the regression base was refitted, in order.
static std::vector<size_t> refit_lines(const std::string& output) {
  std::vector<size_t> at;
  for (auto k = output.find("regression refitted at "); k != std::string::npos;
       k = output.find("regression refitted at ", k + 1))
    at.push_back(k);
  return at;
}

// patch.static_refresh: a covariate the host changes is gathered at every step. The covariate
// here is the target itself under another name, so the regression base fitted on the first step
// explains that step's fine deviation exactly (coefficient 1): with the refresh every buffered
// step's residual is that near-zero misfit; gathered once, the later months keep the first
// month's covariate and their residuals are the months' differences (kelvins).
TEST(ReplayEndToEnd, StaticRefreshGathersTheCovariateAtEveryStep) {
  double rms[2] = {0, 0};
  for (const bool refresh : {false, true}) {
    ScratchDir dir(refresh ? "refresh" : "once");
    const CommandResult r =
        replay_with_tas_now(dir, std::string("{residual: regression, interpolant: bspline, ") +
                                     "static: [tas_now], static_refresh: " + (refresh ? "true" : "false") + "}");
    ASSERT_EQ(r.rc, 0) << r.output;
    if (refresh) {
      EXPECT_NE(r.output.find("patch.static_refresh"), std::string::npos) << r.output;
    }
    const fc::RollingBuffer b = fc::RollingBuffer::load_h5(newest_buffer_snapshot(dir.file("checkpoints")));
    ASSERT_EQ(b.steps(), 4);  // months 3..6: none of them the month the base was fitted on
    std::vector<float> context, fine, weights;
    b.snapshot(context, fine, weights);
    double sum = 0;
    for (float x : fine) sum += static_cast<double>(x) * x;
    rms[refresh ? 1 : 0] = std::sqrt(sum / static_cast<double>(fine.size()));
  }
  EXPECT_LT(rms[1], 0.01) << "refreshed: the residuals of every step are the fit's rounding";
  EXPECT_GT(rms[0], 0.5) << "gathered once: later months differ from the first";
}

// patch.regression_refit: the regression base is fitted anew on every step. The covariate is the
// first month (gathered once), so a fit on the first month alone explains it exactly (coefficient
// 1 on its deviation) and leaves the later months their differences from it. Refitted, the
// checkpoint records the last month's fit, which finecast-eval's regression_cons fitted on that
// month alone reproduces (per unit of the covariate: the plugin's normalised coefficients over
// its scale), and the buffer holds the last month's residual from that fit: the truth minus
// finecast-eval's regression_cons field, cell by cell.
TEST(ReplayEndToEnd, RegressionRefitFitsTheBaseOnEveryStep) {
  std::vector<double> coef[2];
  double rms[2] = {0, 0};
  double scale = 0;
  for (const bool refit : {false, true}) {
    ScratchDir dir(refit ? "refit" : "fit_once");
    const CommandResult r = replay_with_tas_now(
        dir, std::string("{residual: regression, interpolant: bspline, ") +
                 "static: [tas_now], regression_refit: " + (refit ? "true" : "false") + "}\nlog: {level: debug}");
    ASSERT_EQ(r.rc, 0) << r.output;
    EXPECT_EQ(r.output.find("refitted at every coupling step") != std::string::npos, refit) << r.output;
    const fc::StoredSpec spec = finecast::plugin::read_checkpoint_spec(newest_checkpoint(dir.file("checkpoints")));
    coef[refit ? 1 : 0] = spec.spec.regression;
    ASSERT_EQ(coef[refit ? 1 : 0].size(), 2u);
    ASSERT_EQ(spec.spec.static_norms.size(), 1u);
    scale = spec.spec.static_norms[0].scale;
    // finecast-eval's fit of the last month (step 5) on the first month as the covariate.
    ASSERT_NO_FATAL_FAILURE(crop_first_month(dir));
    ASSERT_EQ(crop_tas(dir.file("last.nc"), 5, 6), 0);
    const CommandResult e = run_command(
        binary("finecast-eval") + " --truth " + kTas + " --time 5 --pred " + dir.file("out.nc") +
        " --var tas --block 8 --static " + dir.file("first.nc") + ":tas_now --fit-on " + dir.file("last.nc") +
        " --regression-interpolant bspline --noise-members 0 --baselines-out " + dir.file("baselines.nc"));
    ASSERT_EQ(e.rc, 0) << e.output;
    double anomaly = 0, deviation = 0;
    const auto at = e.output.find("regression_cons: residual = ");
    ASSERT_NE(at, std::string::npos) << e.output;
    ASSERT_EQ(std::sscanf(e.output.c_str() + at, "regression_cons: residual = %lf * tas_now anomaly + %lf", &anomaly,
                          &deviation),
              2)
        << e.output.substr(at, 200);
    const double tolerance = 1e-3 * (std::abs(anomaly) + std::abs(deviation));
    if (refit) {
      EXPECT_NEAR(coef[1][0] / scale, anomaly, tolerance);
      EXPECT_NEAR(coef[1][1] / scale, deviation, tolerance);
    }
    // The buffer's newest step, patches in order: truth minus that fit.
    const fc::PatchMap map = fc::latlon_patch_map(fc::read_latlon_grid(kTas, "tas"), 8);
    fc::FieldReader truth(kTas, "tas"), fit(dir.file("baselines.nc"), "regression_cons");
    std::vector<float> y(static_cast<size_t>(truth.n_values())), base(y.size());
    truth.read(5, y.data());
    fit.read(0, base.data());
    const fc::RollingBuffer b = fc::RollingBuffer::load_h5(newest_buffer_snapshot(dir.file("checkpoints")));
    std::vector<float> context, fine, weights;
    b.snapshot(context, fine, weights);
    const int64_t P = map.patch_size, newest = static_cast<int64_t>(fine.size()) / P - map.n_coarse;
    ASSERT_EQ(static_cast<int64_t>(fine.size()), 4 * map.n_coarse * P);  // months 3..6, every patch valid
    double worst = 0, ss = 0;
    for (int64_t c = 0; c < map.n_coarse; ++c)
      for (int64_t p = 0; p < P; ++p) {
        const auto cell = static_cast<size_t>(map.fine_of_patch[c * P + p]);
        const double d = fine[static_cast<size_t>((newest + c) * P + p)] - (y[cell] - base[cell]);
        worst = std::max(worst, std::abs(d));
        ss += d * d;
      }
    rms[refit ? 1 : 0] = std::sqrt(ss / static_cast<double>(map.n_coarse * P));
    if (!refit) continue;
    EXPECT_LT(worst, 0.05) << "the newest buffered step is the residual of its own fit (K)";

    // The sampling at the end (step 6) takes the fit of step 5, the second-newest refit in the
    // debug log; the checkpoint holds step 6's. finecast-downscale of the checkpoint draws the
    // same residuals (the same weights and seed), so the plugin's members minus its members are
    // the two bases' difference, which finecast-eval computes from step 5's coefficients.
    std::vector<size_t> refits = refit_lines(r.output);
    for (size_t& k : refits) k = r.output.find("regression_cons: residual = ", k);
    ASSERT_EQ(refits.size(), 5u) << r.output;  // steps 2..6
    double step5[2] = {0, 0};
    ASSERT_EQ(std::sscanf(r.output.c_str() + refits[3], "regression_cons: residual = %lf * tas_now anomaly + %lf",
                          &step5[0], &step5[1]),
              2);
    write_text(dir.file("step5.json"),
               "{\"baseline\": \"regression_cons\", \"interpolant\": \"bspline\", \"coefficients\": "
               "{\"tas_now anomaly\": " +
                   std::to_string(step5[0]) + ", \"tas_now deviation\": " + std::to_string(step5[1]) + "}}\n");
    const CommandResult e5 = run_command(
        binary("finecast-eval") + " --truth " + kTas + " --time 5 --pred " + dir.file("out.nc") +
        " --var tas --block 8 --static " + dir.file("first.nc") + ":tas_now --regression-in " + dir.file("step5.json") +
        " --regression-interpolant bspline --noise-members 0 --baselines-out " + dir.file("baselines5.nc"));
    ASSERT_EQ(e5.rc, 0) << e5.output;
    std::vector<float> base5(y.size());
    fc::FieldReader(dir.file("baselines5.nc"), "regression_cons").read(0, base5.data());
    const std::string offline = downscale_step6(dir);
    double worst_shift = 0, shift_ss = 0;
    for (int m = 0; m < 2; ++m) {
      const auto plugin = finecast::testing_downscale::read_step(dir.file("out.nc"), "tas", 0, m),
                 offline_member = finecast::testing_downscale::read_step(offline, "tas", 0, m);
      ASSERT_EQ(plugin.size(), y.size());
      ASSERT_EQ(offline_member.size(), y.size());
      for (size_t i = 0; i < y.size(); ++i) {
        const double want = static_cast<double>(base5[i]) - base[i];
        worst_shift = std::max(worst_shift, std::abs(static_cast<double>(plugin[i]) - offline_member[i] - want));
        shift_ss += want * want;
      }
    }
    EXPECT_LT(worst_shift, 0.05) << "the plugin sampled step 6 on step 5's fit (K)";
    EXPECT_GT(std::sqrt(shift_ss / static_cast<double>(2 * y.size())), 0.1) << "the two fits differ (K)";
  }
  // Measured: 0.0024 K (the float and double interpolants) against 1.09 K fitted once.
  EXPECT_LT(rms[1], 0.01) << "refitted: the newest step's residual is from that step's fit";
  EXPECT_GT(rms[0], 0.5) << "fitted once: the newest step's residual is from the first month's fit";
  EXPECT_NEAR(coef[0][1] / scale, 1.0, 1e-3) << "fitted once: on the first month, its own covariate";
  EXPECT_GT(std::abs(coef[1][1] - coef[0][1]) / scale, 0.01) << "refitted: the last month's fit";
}

// finecast-eval's regression_cons of step 6 (time 5) on the first month as tas_now
// (dir/first.nc), fitted on time `fit` alone, as a field (dir/cons<fit>.nc).
static std::vector<float> regression_cons_of_step6(const ScratchDir& dir, int fit) {
  const std::string month = dir.file("month" + std::to_string(fit) + ".nc"),
                    out = dir.file("cons" + std::to_string(fit) + ".nc");
  EXPECT_EQ(crop_tas(month, fit, fit + 1), 0);
  const CommandResult e =
      run_command(binary("finecast-eval") + " --truth " + kTas + " --time 5 --pred " + dir.file("out.nc") +
                  " --var tas --block 8 --static " + dir.file("first.nc") + ":tas_now --fit-on " + month +
                  " --regression-interpolant bspline --noise-members 0 --baselines-out " + out);
  EXPECT_EQ(e.rc, 0) << e.output;
  fc::FieldReader reader(out, "regression_cons");
  std::vector<float> field(static_cast<size_t>(reader.n_values()));
  reader.read(0, field.data());
  return field;
}

// The mean of the two members of a sampling file's first time.
static std::vector<double> two_member_mean(const std::string& file) {
  std::vector<double> mean;
  for (int m = 0; m < 2; ++m) {
    const auto member = finecast::testing_downscale::read_step(file, "tas", 0, m);
    mean.resize(member.size(), 0.0);
    for (size_t i = 0; i < member.size(); ++i) mean[i] += 0.5 * member[i];
  }
  return mean;
}

// The RMS difference of a mean from a field.
static double rms_difference(const std::vector<double>& a, const std::vector<float>& b) {
  if (a.size() != b.size()) return std::numeric_limits<double>::infinity();
  double ss = 0;
  for (size_t i = 0; i < b.size(); ++i) ss += (a[i] - b[i]) * (a[i] - b[i]);
  return std::sqrt(ss / static_cast<double>(b.size()));
}

// patch.global_blend with patch.regression_refit: the global regression (the base's fit without
// its local-slope terms) is refitted with the base at every step, and a sampling blends toward
// the step before's, as its base is the step before's fit. Blended fully (W = 0), the members'
// mean is that regression: the plugin's last sampling (step 6) is finecast-eval's regression_cons
// fitted on step 5, and finecast-downscale's of the checkpoint (which records step 6's fits) is
// regression_cons fitted on step 6. Fitted once instead, both would be the first step's fit.
TEST(ReplayEndToEnd, GlobalBlendFollowsTheRefits) {
  ScratchDir dir("refit_blend");
  const CommandResult r = replay_with_tas_now(dir,
                                              "{residual: regression, interpolant: bspline, static: [tas_now], "
                                              "regression_refit: true, local_slopes: 1, global_blend: 0}");
  ASSERT_EQ(r.rc, 0) << r.output;
  ASSERT_NO_FATAL_FAILURE(crop_first_month(dir));
  const std::vector<float> fit5 = regression_cons_of_step6(dir, 4), fit6 = regression_cons_of_step6(dir, 5);
  const std::vector<double> plugin = two_member_mean(dir.file("out.nc"));
  ASSERT_EQ(plugin.size(), fit5.size());
  EXPECT_GT(rms_difference(std::vector<double>(fit6.begin(), fit6.end()), fit5), 0.1) << "the two fits differ (K)";
  EXPECT_LT(rms_difference(plugin, fit5), 0.01) << "the plugin's sampling blends toward step 5's global fit (K)";

  EXPECT_LT(rms_difference(two_member_mean(downscale_step6(dir)), fit6), 0.01)
      << "the checkpoint blends toward step 6's global fit (K)";
}

// A refit that fails keeps the step before's fits, the base's and the global regression's, with a
// warning. Here the host's field of month 5 is NaN everywhere: its patches are left out, and a fit
// on no patches fails. Step 6 is refitted, and its sampling takes the kept fit as its base, so
// that, blended fully as above, the plugin's members' mean is regression_cons fitted on month 4
// (time 3). Had the failed refit left no fit, step 6 would have been fitted as a run's first step
// is and sampled on its own fit (time 5).
TEST(ReplayEndToEnd, AFailedRefitKeepsTheFitsOfTheStepBefore) {
  ScratchDir dir("refit_gap");
  const std::string gap = dir.file("gap.nc");
  ASSERT_EQ(run_command("/usr/bin/python3 -c \"import shutil, netCDF4; shutil.copy('" + kTas + "', '" + gap +
                        "'); d = netCDF4.Dataset('" + gap + "', 'a'); d['tas'][4] = float('nan'); d.close()\"")
                .rc,
            0);
  const CommandResult r = replay_with_tas_now(dir,
                                              "{residual: regression, interpolant: bspline, static: [tas_now], "
                                              "regression_refit: true, local_slopes: 1, global_blend: 0}\n"
                                              "log: {level: debug}",
                                              gap);
  ASSERT_EQ(r.rc, 0) << r.output;
  EXPECT_NE(r.output.find("this step keeps the coefficients of the step before"), std::string::npos) << r.output;
  // Steps 2, 3, 4 and 6 refitted; step 6 as a refit, not as a first fit.
  EXPECT_EQ(refit_lines(r.output).size(), 4u) << r.output;
  ASSERT_NO_FATAL_FAILURE(crop_first_month(dir));
  const std::vector<float> fit4 = regression_cons_of_step6(dir, 3), fit6 = regression_cons_of_step6(dir, 5);
  const std::vector<double> plugin = two_member_mean(dir.file("out.nc"));
  ASSERT_EQ(plugin.size(), fit4.size());
  EXPECT_GT(rms_difference(std::vector<double>(fit6.begin(), fit6.end()), fit4), 0.1) << "the two fits differ (K)";
  EXPECT_LT(rms_difference(plugin, fit4), 0.01) << "step 6 sampled on the fit of step 4, the last that succeeded (K)";
}

// sample.calibration prequential: each sampling's inflation is sqrt(sum e2 / sum s2) over the
// samplings before it that the model had not trained on, each sum weighted down by
// sample.calibration_decay (0.5) at every later scored sampling. Two runs of the same 12 months,
// one calibrated and one not: the same weights and seeds draw the same raw members, so the
// calibrated members' deviations from their mean are the plain ones times that sampling's
// inflation, which the test computes from the plain run's members and the file's fine fields.
// The samplings at a session's step (synchronous: the model trained on it) are drawn but not
// scored. Held to the training range without a margin (sample.clip_margin 0), the months after a
// session's have patches beyond it (the northern summer is warmer than the months trained on),
// and each such sampling's log line says how many.
TEST(ReplayEndToEnd, PrequentialCalibrationInflatesByThePastSamplingsErrors) {
  constexpr int kMembers = 4, kSteps = 12;
  constexpr double kDecay = 0.5;
  ScratchDir plain("plain"), calibrated("calibrated");
  for (const ScratchDir* dir : {&plain, &calibrated}) {
    std::string config = tiny_plugin_config(dir->path());
    const std::string from = "sample: {every: 0, members: 2,", train = "every: 2, min_steps: 4";
    ASSERT_NE(config.find(from), std::string::npos);
    ASSERT_NE(config.find(train), std::string::npos);
    config.replace(config.find(from), from.size(),
                   std::string("sample: {every: 1, members: ") + std::to_string(kMembers) +
                       ", calibration: " + (dir == &calibrated ? "prequential" : "none") +
                       ", calibration_decay: " + std::to_string(kDecay) + ", clip_margin: 0,");
    config.replace(config.find(train), train.size(), "every: 4, min_steps: 4");
    write_text(dir->file("plugin.yaml"), config);
    std::string run = tiny_run_file(dir->file("plugin.yaml"), "round_robin");
    const std::string stop = "stop: 5";
    ASSERT_NE(run.find(stop), std::string::npos);
    run.replace(run.find(stop), stop.size(), "stop: " + std::to_string(kSteps - 1));
    write_text(dir->file("run.yaml"), run);
    const CommandResult r = run_command("mpiexec -n 2 --oversubscribe " + binary("finecast-replay") + " --config " +
                                        dir->file("run.yaml") + " --progress lines");
    ASSERT_EQ(r.rc, 0) << r.output;
    if (dir == &calibrated) {
      EXPECT_NE(r.output.find("Calibration (sample.calibration prequential): the sampling at"), std::string::npos)
          << r.output;
      EXPECT_NE(r.output.find("not scored (the model trained on this step)"), std::string::npos) << r.output;
    }
    EXPECT_NE(r.output.find(" of 288 patches have a context feature beyond the training range widened by 0 of its "
                            "width: the network's input is held at those bounds there (sample.clip_context)"),
              std::string::npos)
        << r.output;
  }
  // Samplings at steps 4..12; sessions at 4, 8 and 12 (synchronous) trained on their own step.
  const fc::PatchMap map = fc::latlon_patch_map(fc::read_latlon_grid(kTas, "tas"), 8);
  fc::FieldReader truth(kTas, "tas");
  std::vector<float> y(static_cast<size_t>(truth.n_values()));
  std::vector<std::vector<float>> a(kMembers, y), b(kMembers, y);
  double e2_sum = 0, s2_sum = 0;
  int checked = 0;
  for (int step = 4; step <= kSteps; ++step) {
    const int record = step - 4;
    truth.read(step - 1, y.data());
    for (int m = 0; m < kMembers; ++m) {
      fc::FieldReader fa(calibrated.file("out.nc"), "tas", m), fb(plain.file("out.nc"), "tas", m);
      ASSERT_EQ(fb.n_times(), kSteps - 3);
      fa.read(record, a[static_cast<size_t>(m)].data());
      fb.read(record, b[static_cast<size_t>(m)].data());
    }
    const double f = s2_sum > 0 ? std::sqrt(e2_sum / s2_sum) : 1.0;  // this sampling's inflation
    double dev_a = 0, dev_b = 0, e2 = 0, s2 = 0;
    for (int64_t c = 0; c < map.n_coarse; ++c)
      for (int p = 0; p < map.patch_size; ++p) {
        const int64_t cell = map.fine_of_patch[c * map.patch_size + p];
        const double w = map.fine_weight[c * map.patch_size + p];
        double mean = 0, sq = 0;
        for (const auto& member : b) mean += member[static_cast<size_t>(cell)];
        mean /= kMembers;
        for (int m = 0; m < kMembers; ++m) {
          const double db = b[static_cast<size_t>(m)][static_cast<size_t>(cell)] - mean;
          sq += db * db;
          dev_b += std::abs(db);
          dev_a += std::abs(a[static_cast<size_t>(m)][static_cast<size_t>(cell)] - mean);
        }
        e2 += w * (mean - y[static_cast<size_t>(cell)]) * (mean - y[static_cast<size_t>(cell)]);
        s2 += w * sq / (kMembers - 1);
      }
    EXPECT_NEAR(dev_a / dev_b, f, 2e-3 * f) << "sampling at step " << step;
    if (f != 1.0) ++checked;
    if (step % 4 != 0) {  // scored: the weights had not seen this step
      e2_sum = kDecay * e2_sum + e2;
      s2_sum = kDecay * s2_sum + s2;
    }
  }
  EXPECT_EQ(checked, kSteps - 4 - 1) << "every sampling after the first scored one is inflated";
  // The checkpoint records the inflation a sampling after the run would use, for finecast-downscale.
  const auto sampling = finecast::trainer::read_checkpoint_sampling(newest_checkpoint(calibrated.file("checkpoints")));
  ASSERT_TRUE(sampling.has_value());
  EXPECT_NEAR(sampling->inflation, std::sqrt(e2_sum / s2_sum), 1e-3);
  EXPECT_GT(std::sqrt(e2_sum / s2_sum), 1.05) << "a small model's members are under-dispersed";
}

// The shipped replay configs parse, and configs/replay_tas.yaml (which documents every key)
// still sets every top-level and nested key the parser knows.
TEST(ReplayConfigs, ShippedRunFilesAndTheirPluginConfigsParse) {
  const std::string dir = std::string(FINECAST_SOURCE_DIR) + "/configs/";
  for (const std::string name : {"replay_tas", "replay_etopo"}) {
    const fr::ReplayRunConfig c = fr::load_replay_run_config(dir + name + ".yaml");
    ASSERT_EQ(c.plugins.size(), 1u) << name;
    EXPECT_EQ(c.plugins[0].library, "build/lib/libfinecast_comin.so");
    EXPECT_EQ(c.plugins[0].options, "configs/" + name + "_plugin.yaml");
    const finecast::plugin::Config pc = finecast::plugin::load_config(dir + name + "_plugin.yaml");
    EXPECT_EQ(pc.fields.front(), c.variables.front().name) << name;
    EXPECT_EQ(finecast::schema::name_of(pc.grid.type), c.grid_type) << name;
    EXPECT_FALSE(pc.train.async) << name << ": offline the replay outruns asynchronous training";
  }
  const fr::ReplayRunConfig tas = fr::load_replay_run_config(dir + "replay_tas.yaml");
  EXPECT_EQ(tas.epochs, 10);
  EXPECT_EQ(tas.stop.index, 11);
  EXPECT_EQ(tas.decomposition, "random");
  const std::string text = [&] {
    std::ifstream in(dir + "replay_tas.yaml");
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }();
  for (const char* key :
       {"input:", "files:",          "variables:", "static:", "grid:",    "type:",    "file:",
        "time:",  "start:",          "stop:",      "stride:", "epochs:",  "nproma:",  "decomposition:",
        "seed:",  "progress_every:", "plugins:",   "name:",   "library:", "options:", "comm:"})
    EXPECT_NE(text.find(std::string(key)), std::string::npos) << "configs/replay_tas.yaml lacks " << key;
}
