// SPDX-License-Identifier: BSD-3-Clause
// Issue 15 end to end: the residual formulation (a model with nothing to add reproduces the
// conservative interpolant), an ICON replay with context rings, a static covariate, the
// interpolant base, the graph denoiser and a held-out region that buffers the same samples on
// 1, 2 and 4 ranks, and finecast-downscale, which reproduces the plugin's sample from its
// checkpoint and refuses to run without the covariates the model was trained with.
#include <gtest/gtest.h>
#include <netcdf.h>

#include <cctype>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "coupling/buffer/rolling_buffer.hpp"
#include "coupling/grid/context_stencil.hpp"
#include "coupling/grid/latlon_grid.hpp"
#include "coupling/grid/patch_regression.hpp"
#include "coupling/grid/patches.hpp"
#include "coupling/io/field_reader.hpp"
#include "plugin/downscale/downscale.hpp"
#include "tests/plugin/downscale_test_util.hpp"
#include "tests/plugin/replay_test_util.hpp"
#include "trainer/downscaler.hpp"

namespace fc = finecast::coupling;
namespace fp = finecast::plugin;
namespace ft = finecast::trainer;
using namespace finecast::testing_replay;

using finecast::testing_downscale::downscale_error;
using finecast::testing_downscale::max_abs_difference;
using finecast::testing_downscale::read_step;

// The fine field is the conservative interpolant of its own coarse field: there is nothing for
// a model to add. Learning the residual from the interpolant, an untrained model (normalisation
// statistics only) returns the interpolant to float precision; learning it from the coarse value
// (patch.residual: mean), the same untrained model returns noise of the field's own sub-block size.
TEST(ResidualFormulation, AModelWithNothingToAddReproducesTheInterpolant) {
  std::vector<double> lat, lon;
  for (int i = 0; i < 32; ++i) lat.push_back(30.0 + 0.5 * i);
  for (int j = 0; j < 48; ++j) lon.push_back(0.5 * j);
  const fc::LatLonGrid grid = fc::make_latlon_grid(lat, lon);
  fc::PatchMap map = fc::latlon_patch_map(grid, 8);
  fc::prepare_patch_map(map, 0, true);
  std::mt19937 rng(1);
  std::normal_distribution<float> normal;
  std::vector<float> coarse(static_cast<size_t>(map.n_coarse)), base(static_cast<size_t>(map.n_coarse * 64));
  for (auto& c : coarse) c = 280.0f + 5.0f * normal(rng);
  fc::interpolate_patches(map, coarse.data(), base.data());
  std::vector<float> field(static_cast<size_t>(map.n_fine));
  fc::scatter_patches(map, base.data(), field.data());

  fc::PatchOptions o;
  o.interp_base = true;
  fc::Patches p;
  fc::extract_patches(map, {field.data()}, nullptr, o, p);
  ft::ModelOptions mo;
  mo.context_size = p.C;
  mo.patch_size = p.P;
  mo.hidden = 64;
  mo.depth = 2;
  mo.time_embedding = 16;
  mo.diffusion_steps = 20;
  ft::SampleOptions so;
  so.members = 2;
  so.steps = 5;
  std::vector<float> out(static_cast<size_t>(p.n * 2 * p.P));
  auto worst_vs_field = [&] {
    double worst = 0;
    for (int64_t c = 0; c < p.n; ++c)
      for (int m = 0; m < 2; ++m)
        for (int64_t k = 0; k < p.P; ++k)
          worst = std::max(worst, std::fabs(double(out[(c * 2 + m) * p.P + k]) - p.fine[c * p.P + k]));
    return worst;
  };
  {
    ft::Downscaler model(mo, ft::TrainOptions{}, "cpu");
    model.update_normalisation({p.context.data(), p.residual.data(), p.weights.data(), p.n});
    model.publish();
    const std::vector<float> zeros(static_cast<size_t>(p.n), 0.0f);
    model.sample(p.context.data(), zeros.data(), p.weights.data(), p.n, so, 3, out.data());
    for (int64_t c = 0; c < p.n; ++c)
      for (int m = 0; m < 2; ++m)
        for (int64_t k = 0; k < p.P; ++k) out[(c * 2 + m) * p.P + k] += p.base[c * p.P + k];
    EXPECT_LT(worst_vs_field(), 1e-3) << "residual from the interpolant";
  }
  {
    ft::Downscaler model(mo, ft::TrainOptions{}, "cpu");
    model.update_normalisation({p.context.data(), p.fine.data(), p.weights.data(), p.n});
    model.publish();
    model.sample(p.context.data(), p.coarse.data(), p.weights.data(), p.n, so, 3, out.data());
    EXPECT_GT(worst_vs_field(), 0.5) << "residual from the coarse value";
  }
}

namespace {

const std::string kIconData = "/usr/share/ncarg/data/nug/atm_phy_mag0004_1985.nc";

/// Replays the real R2B4 ts with rings, a covariate (sea-ice fraction, as a stand-in for a
/// static field), the interpolant base (or `residual`), the graph denoiser and a held-out box on `ranks` ranks.
CommandResult icon_skill_replay(const ScratchDir& dir, int ranks, const std::string& residual = "interp",
                                bool relative_context = false, const std::string& hold_out = "'0,90,0,180'",
                                const std::string& replay_options = "") {
  write_text(dir.file("plugin.yaml"),
             "fields: [ts, tsw]\ntarget: ts\ndevice: cpu\nseed: 5\n"
             "grid: {type: icon, file: " +
                 kIconGrid +
                 ", coarse_level: 0}\n"
                 "patch: {context_rings: 2, residual: " +
                 residual + ", static: [sic], relative_context: " + (relative_context ? "true" : "false") +
                 "}\n"
                 "buffer: {capacity: 1}\n"
                 "model: {arch: graph, unet_channels: 4, time_embedding: 8, diffusion_steps: 6}\n"
                 "train: {async: false, every: 1, min_steps: 1, epochs: 1, batch_size: 16, threads: 1, "
                 "hold_out: " +
                 hold_out +
                 "}\n"
                 "sample: {every: 0, members: 1, steps: 2, output: " +
                 dir.file("out.nc") +
                 "}\n"
                 "checkpoint: {dir: " +
                 dir.file("checkpoints") + "}\n");
  write_text(dir.file("run.yaml"), "input: {files: " + kIconData +
                                       ", variables: [ts, {var: ts_wtr, name: tsw}], static: [{file: " + kIconData +
                                       ", var: sic, name: sic}]}\n"
                                       "grid: {type: icon, file: " +
                                       kIconGrid +
                                       "}\n"
                                       "nproma: 16\ndecomposition: " +
                                       (ranks == 4 ? "round_robin" : "lat_bands") +
                                       "\nplugins:\n  - {name: finecast, library: " + plugin_library() +
                                       ", options: " + dir.file("plugin.yaml") + "}\n");
  return run_command("mpiexec -n " + std::to_string(ranks) + " --oversubscribe " + binary("finecast-replay") +
                     " --config " + dir.file("run.yaml") + " --progress lines" + replay_options);
}

/// finecast-downscale of the replay's checkpoint on the same data, as the plugin sampled it (one
/// member, seed 5; no covariate given).
fp::DownscaleOptions icon_skill_downscale(const ScratchDir& dir) {
  fp::DownscaleOptions o;
  o.checkpoint = dir.file("checkpoints");
  o.input = kIconData;
  o.vars = {"ts", "ts_wtr"};
  o.grid = kIconGrid;
  o.output = dir.file("offline.nc");
  o.members = 1;
  o.device = "cpu";
  o.sample.steps = 2;
  o.seed = 5;
  o.threads = 1;
  return o;
}

}  // namespace

TEST(SkillReplay, IconRingsCovariatesAndHoldOutBufferTheSameOnOneTwoAndFourRanks) {
  if (!exists(kIconData) || !exists(kIconGrid)) GTEST_SKIP() << "libncarg-data is not installed";
  ScratchDir one("skill1"), two("skill2"), four("skill4");
  const CommandResult r1 = icon_skill_replay(one, 1);
  ASSERT_EQ(r1.rc, 0) << r1.output;
  EXPECT_NE(r1.output.find("context of"), std::string::npos) << r1.output;
  EXPECT_NE(r1.output.find("patches are never trained on"), std::string::npos) << r1.output;
  const CommandResult r2 = icon_skill_replay(two, 2);
  ASSERT_EQ(r2.rc, 0) << r2.output;
  const CommandResult r4 = icon_skill_replay(four, 4);
  ASSERT_EQ(r4.rc, 0) << r4.output;

  // 2 fields x (1 + 9 ring cells) + 3 position features + the covariate's mean, 256 anomalies
  // and 256 deviations from its own interpolant.
  const int C = 2 * 10 + 3 + 1 + 2 * 256, P = 256;
  const auto b1 = fc::RollingBuffer::load_h5(newest_buffer_snapshot(one.file("checkpoints")), 1, 80, C, P);
  const auto b2 = fc::RollingBuffer::load_h5(newest_buffer_snapshot(two.file("checkpoints")), 1, 80, C, P);
  const auto b4 = fc::RollingBuffer::load_h5(newest_buffer_snapshot(four.file("checkpoints")), 1, 80, C, P);
  // The held-out patches (the quarter of the globe in the box) are not buffered.
  EXPECT_GT(b1.samples(), 40);
  EXPECT_LT(b1.samples(), 80);
  std::vector<float> c1, f1, w1, c2, f2, w2, c4, f4, w4;
  b1.snapshot(c1, f1, w1);
  b2.snapshot(c2, f2, w2);
  b4.snapshot(c4, f4, w4);
  EXPECT_EQ(c1, c2);
  EXPECT_EQ(c1, c4);
  EXPECT_EQ(f1, f2);
  EXPECT_EQ(f1, f4);
  // What is buffered is fine minus the interpolant: small against the field (ts ~ 200..310 K).
  double rms = 0;
  for (float v : f1) rms += double(v) * v;
  EXPECT_LT(std::sqrt(rms / static_cast<double>(f1.size())), 20.0);

  // finecast-downscale reproduces the plugin's sample from its checkpoint, given the covariate.
  fp::DownscaleOptions o = icon_skill_downscale(one);
  const std::string missing = downscale_error(o);
  EXPECT_NE(missing.find("--static FILE:VAR"), std::string::npos) << missing;
  EXPECT_NE(missing.find("sic"), std::string::npos) << missing;
  o.statics = {kIconData + ":sic"};
  const fp::DownscaleResult res = fp::run_downscale(o);
  EXPECT_EQ(res.context_rings, 2);
  EXPECT_TRUE(res.interp_base);
  EXPECT_EQ(res.n_static, 1);
  const auto plugin = read_step(one.file("out.nc"), "ts", 0), offline = read_step(o.output, "ts", 0);
  ASSERT_EQ(plugin.size(), 20480u);
  const double worst = max_abs_difference(plugin, offline);
  EXPECT_LT(worst, 1e-3);
  // A covariate on another grid is refused, naming both files.
  o.statics = {kTas + ":tas"};
  const std::string wrong = downscale_error(o);
  EXPECT_NE(wrong.find(kTas), std::string::npos) << wrong;
  EXPECT_NE(wrong.find(kIconGrid), std::string::npos) << wrong;
}

namespace {

/// The number just before the first `after` in `text`, -1 when there is none.
long number_before(const std::string& text, const std::string& after) {
  const size_t end = text.find(after);
  if (end == std::string::npos) return -1;
  size_t begin = end;
  while (begin > 0 && std::isdigit(static_cast<unsigned char>(text[begin - 1]))) --begin;
  return begin == end ? -1 : std::stol(text.substr(begin, end - begin));
}

}  // namespace

// finecast-replay --hold-out FILE:VAR (issue 26): a mask on the fine ICON cells holds out every
// patch with a flagged cell, exactly the patches finecast-eval --hold-out FILE:VAR scores; they
// are not buffered. A mask that cannot be read onto the grid stops the replay before it starts,
// naming the file and the variable.
TEST(SkillReplay, AHoldOutMaskHoldsOutThePatchesFinecastEvalScores) {
  if (!exists(kIconData) || !exists(kIconGrid)) GTEST_SKIP() << "libncarg-data is not installed";
  ScratchDir dir("holdmask");
  // Scattered single cells (no patch is wholly flagged), a negative value, and missing values
  // that flag nothing.
  std::vector<float> mask(20480, 0.0f);
  for (size_t i = 7; i < mask.size(); i += 1531) mask[i] = 1.0f;
  mask[100] = -2.0f;
  for (size_t i = 3; i < mask.size(); i += 997) mask[i] = std::nanf("");
  const std::string file = dir.file("mask.nc");
  {
    int nc = -1, dim = -1, var = -1;
    ASSERT_EQ(nc_create(file.c_str(), NC_CLOBBER, &nc), NC_NOERR);
    ASSERT_EQ(nc_def_dim(nc, "ncells", mask.size(), &dim), NC_NOERR);
    ASSERT_EQ(nc_def_var(nc, "held", NC_FLOAT, 1, &dim, &var), NC_NOERR);
    ASSERT_EQ(nc_enddef(nc), NC_NOERR);
    ASSERT_EQ(nc_put_var_float(nc, var, mask.data()), NC_NOERR);
    ASSERT_EQ(nc_close(nc), NC_NOERR);
  }
  const CommandResult r = icon_skill_replay(dir, 1, "interp", false, "''", " --hold-out " + file + ":held");
  ASSERT_EQ(r.rc, 0) << r.output;
  const long held = number_before(r.output, " of 80 patches are never trained on");
  ASSERT_GT(held, 1) << r.output;
  ASSERT_LT(held, 80) << r.output;
  const CommandResult e =
      run_command(binary("finecast-eval") + " --truth " + kIconData + " --pred " + kIconData + " --var ts --grid " +
                  kIconGrid + " --coarse-level 0 --hold-out " + file + ":held --noise-members 0");
  ASSERT_EQ(e.rc, 0) << e.output;
  EXPECT_EQ(number_before(e.output, " of 80 patches scored per step"), held) << e.output;
  // Only the other patches are buffered (one step, capacity 1).
  const int C = 2 * 10 + 3 + 1 + 2 * 256, P = 256;
  const auto b = fc::RollingBuffer::load_h5(newest_buffer_snapshot(dir.file("checkpoints")), 1, 80, C, P);
  EXPECT_EQ(b.samples(), 80 - held);

  // A variable the file does not have, a file that does not exist, a mask of another grid.
  for (const std::string& bad : {file + ":nosuch", dir.file("none.nc") + ":held", kTas + ":tas"}) {
    const CommandResult f = icon_skill_replay(dir, 1, "interp", false, "''", " --hold-out " + bad);
    EXPECT_NE(f.rc, 0) << f.output;
    const auto colon = bad.rfind(':');
    EXPECT_NE(f.output.find(bad.substr(0, colon)), std::string::npos) << f.output;
    EXPECT_NE(f.output.find("'" + bad.substr(colon + 1) + "'"), std::string::npos) << f.output;
    EXPECT_EQ(f.output.find("Training session"), std::string::npos) << f.output;
  }
}

// Two boxes joined by ';' (issue 43's ICON folds: a fold's quadrant and the test quadrant): the
// plugin never trains on the patches wholly inside either, finecast-eval scores the same patches,
// and they are the two boxes' patches together (the quadrants share none).
TEST(SkillReplay, TwoHoldOutBoxesHoldOutThePatchesOfBoth) {
  if (!exists(kIconData) || !exists(kIconGrid)) GTEST_SKIP() << "libncarg-data is not installed";
  ScratchDir dir("holdboxes");
  const std::string a = "0,90,-180,0", b = "-90,0,0,180";
  const CommandResult r = icon_skill_replay(dir, 1, "interp", false, "'" + a + ";" + b + "'");
  ASSERT_EQ(r.rc, 0) << r.output;
  const long held = number_before(r.output, " of 80 patches are never trained on");
  auto scored = [&](const std::string& hold_out) {
    const CommandResult e =
        run_command(binary("finecast-eval") + " --truth " + kIconData + " --pred " + kIconData + " --var ts --grid " +
                    kIconGrid + " --coarse-level 0 --hold-out '" + hold_out + "' --noise-members 0");
    EXPECT_EQ(e.rc, 0) << e.output;
    return number_before(e.output, " of 80 patches scored per step");
  };
  const long in_a = scored(a), in_b = scored(b);
  EXPECT_GT(in_a, 0);
  EXPECT_GT(in_b, 0);
  EXPECT_EQ(held, in_a + in_b) << r.output;
  EXPECT_EQ(scored(a + ";" + b), held);
  const int C = 2 * 10 + 3 + 1 + 2 * 256, P = 256;
  const auto buffered = fc::RollingBuffer::load_h5(newest_buffer_snapshot(dir.file("checkpoints")), 1, 80, C, P);
  EXPECT_EQ(buffered.samples(), 80 - held);
  // Boxes that hold out every patch (the second one is empty) are refused as boxes, not as a mask.
  const CommandResult all = icon_skill_replay(dir, 1, "interp", false, "'-90,90,-180,180;0,1,0,1'");
  EXPECT_NE(all.rc, 0) << all.output;
  EXPECT_NE(all.output.find("every patch lies inside a box"), std::string::npos) << all.output;
  // A malformed second box is neither boxes nor FILE:VAR: the replay stops before training.
  const CommandResult bad = icon_skill_replay(dir, 1, "interp", false, "'" + a + ";-90,0,0'");
  EXPECT_NE(bad.rc, 0) << bad.output;
  EXPECT_NE(bad.output.find("train.hold_out"), std::string::npos) << bad.output;
  EXPECT_EQ(bad.output.find("Training session"), std::string::npos) << bad.output;
}

// patch.residual: regression on the same replay: the plugin fits the regression on the training
// patches of the first step, records it in the checkpoint, and buffers what it leaves, which
// has a smaller (area-weighted) sum of squares than what the interpolant leaves (least squares
// on the same cells); finecast-downscale applies the recorded fit and reproduces the plugin's
// sample, and a resumed run keeps the recorded fit. The regression run also takes the coarse context relative to each
// patch's own value (patch.relative_context), which finecast-downscale must read from the checkpoint too.
TEST(SkillReplay, RegressionBaseIsFittedInSituRecordedAndAppliedOffline) {
  if (!exists(kIconData) || !exists(kIconGrid)) GTEST_SKIP() << "libncarg-data is not installed";
  ScratchDir interp("skill_interp"), regression("skill_regression");
  const CommandResult ri = icon_skill_replay(interp, 1);
  ASSERT_EQ(ri.rc, 0) << ri.output;
  const CommandResult rr = icon_skill_replay(regression, 2, "regression", true);
  ASSERT_EQ(rr.rc, 0) << rr.output;
  // finecast-eval's text of a fit (coupling::describe), per unit of the covariate.
  EXPECT_NE(rr.output.find("patch.residual regression: regression_cons: residual ="), std::string::npos) << rr.output;
  EXPECT_NE(rr.output.find("* sic anomaly"), std::string::npos) << rr.output;
  EXPECT_NE(rr.output.find("(fitted on the first step's training patches:"), std::string::npos) << rr.output;

  const fc::StoredSpec recorded = fp::read_checkpoint_spec(newest_checkpoint(regression.file("checkpoints")));
  ASSERT_TRUE(recorded.has("patch.regression"));
  const std::vector<double> coef = recorded.spec.regression;
  ASSERT_EQ(coef.size(), 2u);
  EXPECT_NE(coef[0], 0.0);
  const fc::StoredSpec interp_spec = fp::read_checkpoint_spec(newest_checkpoint(interp.file("checkpoints")));
  EXPECT_TRUE(interp_spec.has("patch.regression"));
  EXPECT_TRUE(interp_spec.spec.regression.empty());
  // Without local slopes the global regression (patch.global_blend's) is the base's own.
  EXPECT_EQ(recorded.spec.global_regression, coef);
  // A model without a regression has none to blend toward.
  fp::DownscaleOptions blend = icon_skill_downscale(interp);
  blend.global_blend = 0.5;
  const std::string refused = downscale_error(blend);
  EXPECT_NE(refused.find("--global-blend 0.5"), std::string::npos) << refused;
  EXPECT_NE(refused.find("patch.residual: interp"), std::string::npos) << refused;

  const int C = 2 * 10 + 3 + 1 + 2 * 256, P = 256;
  const auto bi = fc::RollingBuffer::load_h5(newest_buffer_snapshot(interp.file("checkpoints")), 1, 80, C, P);
  const auto br = fc::RollingBuffer::load_h5(newest_buffer_snapshot(regression.file("checkpoints")), 1, 80, C, P);
  std::vector<float> ci, fi, wi, cr, fr, wr;
  bi.snapshot(ci, fi, wi);
  br.snapshot(cr, fr, wr);
  ASSERT_EQ(wi, wr);  // the same samples
  // The contexts differ only in the coarse values (2 fields x 10 cells), by each field's own value.
  ASSERT_EQ(ci.size(), cr.size());
  for (size_t r = 0; r < ci.size() / C; ++r)
    for (int k = 0; k < C; ++k) {
      const int field = k / 10;
      const float want = k < 20 ? ci[r * C + k] - ci[r * C + field * 10] : ci[r * C + k];
      ASSERT_NEAR(cr[r * C + k], want, 1e-3) << "sample " << r << " value " << k;
    }
  double ss_interp = 0, ss_regression = 0;
  for (size_t i = 0; i < fi.size(); ++i) {
    ss_interp += double(wi[i]) * fi[i] * fi[i];
    ss_regression += double(wr[i]) * fr[i] * fr[i];
  }
  EXPECT_LT(ss_regression, ss_interp * (1 - 1e-4));

  fp::DownscaleOptions o = icon_skill_downscale(regression);
  o.statics = {kIconData + ":sic"};
  const fp::DownscaleResult res = fp::run_downscale(o);
  EXPECT_TRUE(res.interp_base);
  const auto plugin = read_step(regression.file("out.nc"), "ts", 0), offline = read_step(o.output, "ts", 0);
  ASSERT_EQ(plugin.size(), 20480u);
  const double worst = max_abs_difference(plugin, offline);
  EXPECT_LT(worst, 1e-3);

  // A resumed run keeps the checkpoint's regression instead of fitting a new one.
  const CommandResult resumed =
      run_command("mpiexec -n 1 " + binary("finecast-replay") + " --config " + regression.file("run.yaml") +
                  " --set checkpoint.resume=" + regression.file("checkpoints") + " --set checkpoint.dir=" +
                  regression.file("resumed") + " --set sample.output=" + regression.file("resumed.nc"));
  ASSERT_EQ(resumed.rc, 0) << resumed.output;
  EXPECT_NE(resumed.output.find("Resumed from"), std::string::npos) << resumed.output;
  EXPECT_EQ(resumed.output.find("patch.residual regression: regression_cons"), std::string::npos) << resumed.output;
  EXPECT_EQ(fp::read_checkpoint_spec(newest_checkpoint(regression.file("resumed"))).spec.regression, coef);
}

// patch.local_slopes on the same replay: the plugin logs the local-slope term's coefficient and
// records the key and 3 coefficients (sic's anomaly, deviation, local slope); finecast-downscale
// rebuilds the slopes from the coarse field and reproduces the plugin's sample; resuming with
// another window is refused, naming the key. The run also blends (patch.global_blend 0.5) toward
// a global regression on an interpolant of its own (patch.global_interpolant linear beside the
// idw base): it records it (2 coefficients, fitted without the local term) and its interpolant, and
// finecast-downscale reproduces the blended sample; sampled offline with --global-blend 0, the
// members' mean is the global regression, whatever the sampling seed, each member keeping its
// deviation from the mean of the same members unblended.
TEST(SkillReplay, LocalSlopeTermsAreRecordedAppliedOfflineAndPinnedOnResume) {
  if (!exists(kIconData) || !exists(kIconGrid)) GTEST_SKIP() << "libncarg-data is not installed";
  ScratchDir dir("skill_local_slopes");
  const CommandResult r = icon_skill_replay(dir, 2, "regression", false, "'0,90,0,180'",
                                            " --set patch.local_slopes=1 --set patch.global_blend=0.5 "
                                            "--set patch.global_interpolant=linear");
  ASSERT_EQ(r.rc, 0) << r.output;
  EXPECT_NE(r.output.find("patch.residual regression: regression_local (local slopes within 1 edge steps"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("* sic local"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("patch.global_blend 0.5: each sampling's ensemble mean moves to the global regression + 0.5 "
                          "x (mean - it), the members' deviations kept; the global regression (on "
                          "patch.global_interpolant linear): regression_cons"),
            std::string::npos)
      << r.output;
  const fc::StoredSpec recorded = fp::read_checkpoint_spec(newest_checkpoint(dir.file("checkpoints")));
  EXPECT_EQ(recorded.spec.patch.local_slopes, 1);
  ASSERT_EQ(recorded.spec.regression.size(), 3u);
  EXPECT_NE(recorded.spec.regression[2], 0.0);

  ASSERT_EQ(recorded.spec.global_regression.size(), 2u);
  EXPECT_DOUBLE_EQ(recorded.spec.patch.global_blend, 0.5);
  EXPECT_EQ(recorded.spec.patch.global_interpolant, fc::Interpolant::kLinear);
  EXPECT_NE(recorded.spec.global_regression[1], recorded.spec.regression[1]);

  fp::DownscaleOptions o = icon_skill_downscale(dir);
  o.statics = {kIconData + ":sic"};
  fp::run_downscale(o);
  const auto plugin = read_step(dir.file("out.nc"), "ts", 0), offline = read_step(o.output, "ts", 0);
  ASSERT_EQ(plugin.size(), 20480u);
  EXPECT_LT(max_abs_difference(plugin, offline), 1e-3);

  // Three members unblended, and blended fully (W = 0) with two sampling seeds.
  const int M = 3;
  auto members = [&](double w, unsigned long long seed, const std::string& name, const std::string& hold_out = "") {
    fp::DownscaleOptions m = o;
    m.members = M;
    m.hold_out = hold_out;
    m.global_blend = w;
    m.seed = seed;
    m.output = dir.file(name);
    fp::run_downscale(m);
    std::vector<std::vector<float>> x;
    for (int j = 0; j < M; ++j) x.push_back(read_step(m.output, "ts", 0, j));
    return x;
  };
  const auto raw = members(1.0, 5, "w1.nc"), blended = members(0.0, 5, "w0.nc"), other = members(0.0, 6, "w0b.nc");
  auto mean = [&](const std::vector<std::vector<float>>& x, size_t i) {
    double s = 0;
    for (const auto& v : x) s += v[i];
    return s / M;
  };
  double seeds_apart = 0, means_apart = 0, deviations_apart = 0, moved = 0;
  for (size_t i = 0; i < 20480; ++i) {
    if (!std::isfinite(raw[0][i])) continue;
    seeds_apart = std::max(seeds_apart, std::fabs(double(blended[0][i]) - other[0][i]));
    means_apart = std::max(means_apart, std::fabs(mean(blended, i) - mean(other, i)));
    moved = std::max(moved, std::fabs(mean(blended, i) - mean(raw, i)));
    for (int j = 0; j < M; ++j)
      deviations_apart =
          std::max(deviations_apart, std::fabs((blended[j][i] - mean(blended, i)) - (raw[j][i] - mean(raw, i))));
  }
  EXPECT_GT(seeds_apart, 0.05);  // other members...
  EXPECT_LT(means_apart, 2e-3);  // ... about the same mean: the global regression's
  EXPECT_LT(deviations_apart, 2e-3);
  EXPECT_GT(moved, 0.05);
  // Sampling only the held-out patches (their local slopes selected with them) moves their mean to
  // the same global regression.
  const auto part = members(0.0, 5, "w0_part.nc", "0,90,0,180");
  size_t sampled = 0;
  for (size_t i = 0; i < 20480; ++i)
    if (std::isfinite(part[0][i])) {
      ++sampled;
      ASSERT_NEAR(mean(part, i), mean(blended, i), 2e-3) << "cell " << i;
    }
  EXPECT_GT(sampled, 1000u);

  const CommandResult resumed =
      run_command("mpiexec -n 1 " + binary("finecast-replay") + " --config " + dir.file("run.yaml") +
                  " --set checkpoint.resume=" + dir.file("checkpoints") +
                  " --set checkpoint.dir=" + dir.file("resumed") + " --set patch.local_slopes=2");
  EXPECT_NE(resumed.rc, 0) << resumed.output;
  EXPECT_NE(resumed.output.find("patch.local_slopes"), std::string::npos) << resumed.output;
}
