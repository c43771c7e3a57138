// SPDX-License-Identifier: BSD-3-Clause
// ICON offline, end to end on one tiny finecast-host run with an orography context
// (patch.orography: topography_c, the host's surface height from etopo20): finecast-eval scores
// the plugin's own ICON output, and finecast-downscale, given the orography that
// `finecast-host --write-orography` writes, reproduces the plugin's samples from its checkpoint
// (and refuses clearly when the orography is missing, on another grid, or not wanted).
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "coupling/io/field_reader.hpp"
#include "plugin/downscale/downscale.hpp"
#include "tests/plugin/downscale_test_util.hpp"
#include "tests/plugin/replay_test_util.hpp"
#include "trainer/checkpoint.hpp"
#include "trainer/downscaler.hpp"
#include "tests/eval_test_util.hpp"

namespace fc = finecast::coupling;
namespace fp = finecast::plugin;
namespace ft = finecast::trainer;
namespace ftr = finecast::testing_replay;

using finecast::testing_downscale::downscale_error;
using finecast::testing_downscale::max_abs_difference;
using finecast::testing_downscale::read_step;

namespace fte = finecast::testing_eval;
using fte::kMembers;
using fte::kPoints;
using fte::kRmse;
using fte::kSpread;
using fte::kStdRatio;
using fte::read_csv;

namespace {

/// One finecast-host run (2 ranks, 4 steps of the R2B4 model) with the plugin learning ts in
/// R2B0 patches with the orography in its context: one training session at step 4, the final
/// weights sampled at the end (3 members, DDIM 3 steps, seed 11), checkpoints at the end.
class IconOffline : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (!ftr::exists(ftr::kIconGrid) || !ftr::exists(ftr::kEtopo20)) return;
    dir_ = new ftr::ScratchDir("icon_offline");
    const std::string d = dir_->path();
    ftr::write_text(d + "/plugin.yaml",
                    "fields: [ts]\nseed: 11\ndevice: cpu\n"
                    "grid: {type: icon, file: " +
                        ftr::kIconGrid +
                        ", coarse_level: 0}\n"
                        "patch: {orography: topography_c}\n"
                        "buffer: {capacity: 4}\n"
                        "model: {hidden: 32, depth: 2, time_embedding: 16, diffusion_steps: 10}\n"
                        "train: {async: false, every: 4, min_steps: 4, epochs: 2, batch_size: 32, "
                        "warmup_steps: 1, threads: 1}\n"
                        "sample: {every: 0, members: 3, sampler: ddim, steps: 3, eta: 0.0, "
                        "output: out.nc}\n"
                        "checkpoint: {dir: ckpt, every: 0}\n");
    ftr::write_text(d + "/host.yaml", "grid: " + ftr::kIconGrid + "\norography: " + ftr::kEtopo20 +
                                          "\norography_variable: ROSE\n"
                                          "start: 1979-01-01T00:00:00\ndt: 1800\nsteps: 4\n"
                                          "nproma: 24\nnlev: 2\nprogress_every: 0\n"
                                          "plugins:\n  - {name: finecast, library: " +
                                          ftr::plugin_library() + ", options: plugin.yaml}\n");
    host_ = new ftr::CommandResult(ftr::run_command("cd '" + d + "' && mpiexec -n 2 --oversubscribe " +
                                                    ftr::binary("finecast-host") + " host.yaml"));
  }
  static void TearDownTestSuite() {
    delete host_;
    delete dir_;
    host_ = nullptr;
    dir_ = nullptr;
  }
  void SetUp() override {
    if (!ftr::exists(ftr::kIconGrid) || !ftr::exists(ftr::kEtopo20))
      GTEST_SKIP() << "needs " << ftr::kIconGrid << " (libncarg-data) and " << ftr::kEtopo20 << " (ferret-datasets)";
    ASSERT_EQ(host_->rc, 0) << host_->output;
  }
  static std::string file(const std::string& name) { return dir_->file(name); }

  static ftr::ScratchDir* dir_;
  static ftr::CommandResult* host_;
};
ftr::ScratchDir* IconOffline::dir_ = nullptr;
ftr::CommandResult* IconOffline::host_ = nullptr;

}  // namespace

TEST_F(IconOffline, CheckpointRecordsItsContextAndDownscaleReproducesThePlugin) {
  EXPECT_NE(host_->output.find("context of 8 values"), std::string::npos) << host_->output;
  const std::string ckpt = ftr::newest_checkpoint(file("ckpt"));
  ASSERT_FALSE(ckpt.empty()) << host_->output;
  // The conditioning spec, typed in /conditioning (before spec_version 2: text in /metadata).
  const fc::StoredSpec recorded = fp::read_checkpoint_spec(ckpt);
  EXPECT_EQ(recorded.spec.patch.orography, "topography_c");
  EXPECT_TRUE(recorded.has("patch.static_features"));
  EXPECT_TRUE(recorded.spec.patch.static_features);
  EXPECT_EQ(recorded.spec.fields, std::vector<std::string>{"ts"});
  EXPECT_EQ(recorded.version, 2);
  EXPECT_EQ(recorded.spec.target_units, "K");
  EXPECT_FALSE(ft::read_checkpoint_metadata(ckpt).count("fields"));  // not twice

  // The host's surface fields, as the run handed them to the plugin.
  const ftr::CommandResult w = ftr::run_command("cd '" + dir_->path() + "' && mpiexec -n 1 " +
                                                ftr::binary("finecast-host") + " host.yaml --write-orography oro.nc");
  ASSERT_EQ(w.rc, 0) << w.output;
  EXPECT_NE(w.output.find("wrote topography_c and fr_land of the 20480 cells"), std::string::npos) << w.output;
  const auto oro = read_step(file("oro.nc"), "topography_c", 0);
  ASSERT_EQ(oro.size(), 20480u);
  float highest = 0;
  for (float h : oro) highest = std::max(highest, h);
  EXPECT_GT(highest, 3000.0f) << "etopo20's mountains are missing";
  EXPECT_EQ(fc::FieldReader(file("oro.nc"), "topography_c").attributes().units, "m");

  // Without the orography the checkpoint is refused, naming the option.
  fp::DownscaleOptions o;
  o.checkpoint = file("ckpt");
  o.input = file("out.nc");
  o.vars = {"ts_host"};  // the fine field the plugin coarsened at its sampling
  o.grid = ftr::kIconGrid;
  o.output = file("offline.nc");
  o.members = 3;
  o.device = "cpu";
  o.sample.sampler = "ddim";
  o.sample.steps = 3;
  o.seed = 11;
  o.threads = 1;
  const std::string missing = downscale_error(o);
  EXPECT_NE(missing.find("was trained with an orography context (patch.orography: topography_c): "
                         "give the surface height on the fine grid with --orography FILE:VAR"),
            std::string::npos)
      << missing;
  EXPECT_NE(missing.find(ckpt), std::string::npos) << missing;
  EXPECT_FALSE(ftr::exists(o.output));

  // An orography on another grid is refused, naming both files.
  const std::string tas = ftr::kTas;
  o.orography = tas + ":tas";
  const std::string wrong = downscale_error(o);
  EXPECT_NE(wrong.find("--orography " + tas + ": tas has 18432 values, but the fine grid " + ftr::kIconGrid),
            std::string::npos)
      << wrong;

  // With it (the variable named by the checkpoint), the plugin's own ensemble comes back.
  o.orography = file("oro.nc");
  const fp::DownscaleResult res = fp::run_downscale(o);
  EXPECT_TRUE(res.orography);
  EXPECT_TRUE(res.static_features);
  EXPECT_EQ(res.n_coarse, 80);
  EXPECT_EQ(res.checkpoint, ckpt);
  for (int m = 0; m < 3; ++m) {
    const auto plugin = read_step(file("out.nc"), "ts", 0, m), offline = read_step(o.output, "ts_host", 0, m);
    ASSERT_EQ(plugin.size(), offline.size());
    const double worst = max_abs_difference(plugin, offline);
    EXPECT_LT(worst, 1e-4) << "member " << m << " differs from the plugin's sample";
  }
  // The orography matters: a flat one gives other samples (the test above cannot pass by chance).
  {
    const std::string flat = file("flat.nc");
    ASSERT_EQ(ftr::run_command("cd '" + dir_->path() +
                               "' && /usr/bin/python3 -c \"import netCDF4; f = netCDF4.Dataset("
                               "'oro.nc'); g = netCDF4.Dataset('flat.nc', 'w'); "
                               "g.createDimension('ncells', 20480); "
                               "v = g.createVariable('h', 'f8', ('ncells',)); v[:] = 0.0; "
                               "g.close()\"")
                  .rc,
              0);
    fp::DownscaleOptions f = o;
    f.orography = flat + ":h";
    f.output = file("flat_out.nc");
    fp::run_downscale(f);
    const auto plugin = read_step(file("out.nc"), "ts", 0, 0), offline = read_step(f.output, "ts_host", 0, 0);
    const double worst = max_abs_difference(plugin, offline);
    EXPECT_GT(worst, 1e-3);
  }

  // A checkpoint without orography does not take one.
  ft::ModelOptions mo;
  mo.context_size = 7;
  mo.patch_size = 256;
  mo.hidden = 8;
  mo.depth = 1;
  mo.time_embedding = 8;
  mo.diffusion_steps = 10;
  const std::string plain = file("plain.h5");
  ft::Downscaler(mo, ft::TrainOptions{}, "cpu").save_checkpoint(plain, {{"patch.orography", ""}});
  fp::DownscaleOptions p = o;
  p.checkpoint = plain;
  p.output = file("plain_out.nc");
  EXPECT_NE(downscale_error(p).find("--orography " + file("oro.nc") + " given, but checkpoint " + plain +
                                    " was trained without an orography context"),
            std::string::npos)
      << downscale_error(p);

  // The command line: --orography FILE:VAR.
  const ftr::CommandResult cli = ftr::run_command(
      ftr::binary("finecast-downscale") + " --checkpoint " + ckpt + " --input " + file("out.nc") +
      " --var ts_host --grid " + ftr::kIconGrid + " --orography " + file("oro.nc") + ":topography_c --output " +
      file("cli.nc") + " --members 3 --device cpu --steps 3 --seed 11 --threads 1");
  ASSERT_EQ(cli.rc, 0) << cli.output;
  const auto cli_m0 = read_step(file("cli.nc"), "ts_host", 0, 0);
  const auto plugin_m0 = read_step(file("out.nc"), "ts", 0, 0);
  double worst = 0;
  for (size_t i = 0; i < cli_m0.size(); ++i) worst = std::max(worst, std::fabs(double(plugin_m0[i]) - cli_m0[i]));
  EXPECT_LT(worst, 1e-4);
}

TEST_F(IconOffline, EvalScoresThePluginsIconOutput) {
  // The plugin's output as it is: ts members, ts_host the truth, ts_coarse the coarse level,
  // grid_file_uri the grid.
  const std::string csv = file("eval.csv"), json = file("eval.json");
  const ftr::CommandResult r = ftr::run_command(ftr::binary("finecast-eval") + " --pred " + file("out.nc") +
                                                " --var ts --csv " + csv + " --json " + json);
  ASSERT_EQ(r.rc, 0) << r.output;
  EXPECT_NE(r.output.find("R2B4 (20480 cells) in R2B0 patches of 256 (coarse level from "
                          "ts_coarse), 80 of 80 patches scored per step, 1 time step(s), 3 "
                          "member(s)"),
            std::string::npos)
      << r.output;
  const auto rows = read_csv(csv);
  ASSERT_EQ(rows.size(), 9u) << r.output;
  for (const char* name : {"model", "nearest", "idw", "nearest_cons", "idw_cons", "linear_cons", "idw_linear_cons",
                           "noise_white", "noise_spectral"}) {
    ASSERT_EQ(rows.count(name), 1u) << name;
    EXPECT_EQ(rows.at(name)[kPoints], 20480) << name;
    EXPECT_TRUE(std::isfinite(rows.at(name)[kRmse])) << name;
  }
  EXPECT_EQ(rows.at("model")[kMembers], 3);
  EXPECT_GT(rows.at("model")[kSpread], 0.0);
  // The host's ts is smooth at R2B0 scales (a large-scale pattern plus the lapse rate over the
  // relief): interpolation beats the piecewise-constant coarse field.
  EXPECT_LT(rows.at("idw_cons")[kRmse], rows.at("nearest")[kRmse]) << r.output;
  EXPECT_NEAR(rows.at("nearest")[kStdRatio], 0.0, 1e-9);
  std::printf("%s", r.output.c_str());

  // finecast-downscale's output scored against a separate truth file (the plugin's output,
  // variable ts_host), as one would score a model against ICON's own fine output.
  const ftr::CommandResult d =
      ftr::run_command("cd '" + dir_->path() + "' && mpiexec -n 1 " + ftr::binary("finecast-host") +
                       " host.yaml --write-orography oro2.nc && " + ftr::binary("finecast-downscale") +
                       " --checkpoint ckpt --input out.nc --var ts_host --grid " + ftr::kIconGrid +
                       " --orography oro2.nc --output down.nc --members 3 --device cpu --steps 3 --seed 11 "
                       "--threads 1");
  ASSERT_EQ(d.rc, 0) << d.output;
  const ftr::CommandResult e =
      ftr::run_command(ftr::binary("finecast-eval") + " --truth " + file("out.nc") + " --truth-var ts_host --pred " +
                       file("down.nc") + " --var ts_host --grid " + ftr::kIconGrid + " --csv " + file("down.csv"));
  ASSERT_EQ(e.rc, 0) << e.output;
  const auto down = read_csv(file("down.csv"));
  EXPECT_NEAR(down.at("model")[kRmse], rows.at("model")[kRmse], 1e-4);
  EXPECT_NEAR(down.at("idw")[kRmse], rows.at("idw")[kRmse], 1e-9);
}
