// SPDX-License-Identifier: BSD-3-Clause
// finecast-downscale: a checkpoint written by a replay run reproduces the plugin's own sampling,
// downscales fine and coarse inputs conservatively, is scored by finecast-eval, and wrong
// grids, checkpoints and arguments are refused with messages that say what differs.
#include <gtest/gtest.h>
#include <hdf5.h>
#include <netcdf.h>

#include <cmath>
#include <fstream>
#include <map>
#include <sstream>

#include "common/checkpoint_files.hpp"
#include "common/error.hpp"
#include "coupling/grid/latlon_grid.hpp"
#include "coupling/grid/patches.hpp"
#include "coupling/io/field_reader.hpp"
#include "plugin/downscale/downscale.hpp"
#include "tests/plugin/downscale_test_util.hpp"
#include "tests/plugin/replay_test_util.hpp"
#include "trainer/checkpoint.hpp"
#include "trainer/downscaler.hpp"

namespace fc = finecast::coupling;
namespace fp = finecast::plugin;
namespace ft = finecast::trainer;
using namespace finecast::testing_replay;

using finecast::testing_downscale::downscale_error;
using finecast::testing_downscale::max_abs_difference;
using finecast::testing_downscale::read_step;

namespace {

/// An untrained checkpoint with the given context and patch sizes (the grid checks need no
/// training), with `metadata` and typed `groups`, as `name` (default: by its sizes).
std::string make_checkpoint(const std::string& dir, int64_t C, int64_t P,
                            const std::map<std::string, std::string>& metadata = {},
                            const ft::CheckpointGroups& groups = {}, const std::string& name = "",
                            const ft::TrainOptions& train = {}) {
  ft::ModelOptions mo;
  mo.context_size = C;
  mo.patch_size = P;
  mo.hidden = 8;
  mo.depth = 1;
  mo.time_embedding = 8;
  mo.diffusion_steps = 10;
  ft::Downscaler model(mo, train, "cpu");
  const std::string path =
      dir + "/" + (name.empty() ? "model_C" + std::to_string(C) + "_P" + std::to_string(P) + ".h5" : name);
  model.save_checkpoint(path, metadata, groups);
  return path;
}

/// A coarse field (lat, lon) without coordinates, as a model's coarse output could be.
void write_coarse_file(const std::string& path, const std::vector<float>& values, int ny, int nx) {
  int nc, dy, dx, var;
  ASSERT_EQ(nc_create(path.c_str(), NC_CLOBBER | NC_NETCDF4, &nc), NC_NOERR);
  ASSERT_EQ(nc_def_dim(nc, "lat", ny, &dy), NC_NOERR);
  ASSERT_EQ(nc_def_dim(nc, "lon", nx, &dx), NC_NOERR);
  const int dims[2] = {dy, dx};
  ASSERT_EQ(nc_def_var(nc, "tas", NC_FLOAT, 2, dims, &var), NC_NOERR);
  ASSERT_EQ(nc_put_att_text(nc, var, "units", 1, "K"), NC_NOERR);
  ASSERT_EQ(nc_enddef(nc), NC_NOERR);
  ASSERT_EQ(nc_put_var_float(nc, var, values.data()), NC_NOERR);
  ASSERT_EQ(nc_close(nc), NC_NOERR);
}

/// A text global attribute of a NetCDF file ("" when it has none).
std::string global_text(const std::string& path, const std::string& name) {
  int nc;
  if (nc_open(path.c_str(), NC_NOWRITE, &nc) != NC_NOERR) return "";
  size_t len = 0;
  std::string value;
  if (nc_inq_attlen(nc, NC_GLOBAL, name.c_str(), &len) == NC_NOERR) {
    value.resize(len);
    if (nc_get_att_text(nc, NC_GLOBAL, name.c_str(), value.data()) != NC_NOERR) value.clear();
  }
  nc_close(nc);
  return value;
}

/// The options of a 2-member sampling of June (step 5) of the tas file with `checkpoint` (a file
/// or directory) and seed 7, as the tiny replay's plugin samples at its end.
fp::DownscaleOptions june_options(const std::string& checkpoint, const std::string& output) {
  fp::DownscaleOptions o;
  o.checkpoint = checkpoint;
  o.input = kTas;
  o.vars = {"tas"};
  o.output = output;
  o.members = 2;
  o.device = "cpu";
  o.seed = 7;
  o.threads = 1;
  o.times = {"5"};
  return o;
}

}  // namespace

TEST(DownscaleEndToEnd, ReplayCheckpointReproducesThePluginAndIsScored) {
  ScratchDir dir("downscale");
  const CommandResult replay = run_tiny_replay(dir.path(), 1, "round_robin");
  ASSERT_EQ(replay.rc, 0) << replay.output;

  // Same checkpoint, same patches (June, coarsened), same seed and members as the plugin's one
  // sampling at the end of the replay: the same ensemble.
  // A directory: its newest valid checkpoint. The sampler and its 4 steps are the replay config's
  // (sample.*), recorded in the checkpoint.
  fp::DownscaleOptions o = june_options(dir.file("checkpoints"), dir.file("june.nc"));
  const fp::DownscaleResult res = fp::run_downscale(o);
  EXPECT_EQ(res.sampling, "ddim 4 steps");
  EXPECT_FALSE(res.coarse_input);
  EXPECT_EQ(res.n_coarse, 288);
  EXPECT_EQ(res.patch_size, 64);
  EXPECT_EQ(res.steps_written, 1);
  EXPECT_EQ(res.checkpoint.substr(0, dir.file("checkpoints/ckpt_").size()), dir.file("checkpoints/ckpt_"));
  for (int m = 0; m < 2; ++m) {
    const auto plugin = read_step(dir.file("out.nc"), "tas", 0, m), offline = read_step(o.output, "tas", 0, m);
    ASSERT_EQ(plugin.size(), offline.size());
    const double worst = max_abs_difference(plugin, offline);
    EXPECT_LT(worst, 1e-4) << "member " << m << " differs from the plugin's sample";
  }

  // The coarse field written is the block mean of the truth; every member keeps it exactly.
  const auto june = read_step(kTas, "tas", 5);
  const fc::PatchMap map = fc::latlon_patch_map(fc::read_latlon_grid(kTas, "tas"), 8);
  std::vector<float> coarse(static_cast<size_t>(map.n_coarse));
  fc::coarsen(map, june.data(), coarse.data());
  const auto coarse_on_fine = read_step(o.output, "tas_coarse", 0);
  const auto m0 = read_step(o.output, "tas", 0, 0), m1 = read_step(o.output, "tas", 0, 1);
  double spread = 0;
  for (int64_t c = 0; c < map.n_coarse; ++c) {
    double mean = 0;
    for (int p = 0; p < 64; ++p) {
      const int64_t i = map.fine_of_patch[c * 64 + p];
      ASSERT_NEAR(coarse_on_fine[i], coarse[c], 1e-3);
      mean += map.fine_weight[c * 64 + p] * m0[i];
      spread += std::fabs(double(m0[i]) - m1[i]);
    }
    ASSERT_NEAR(mean, coarse[c], 2e-3) << "patch " << c;
  }
  EXPECT_GT(spread, 0.0) << "the two members are identical";
  fc::FieldReader out(o.output, "tas");
  EXPECT_EQ(out.time_string(0), fc::FieldReader(kTas, "tas").time_string(5));
  EXPECT_EQ(out.attributes().units, "K");

  // The coarse input path: June's block means on the 12 x 24 coarse grid give the same coarse
  // field back and (up to the rounding of the area weights) the same samples.
  write_coarse_file(dir.file("coarse.nc"), coarse, 12, 24);
  fp::DownscaleOptions oc = o;
  oc.input = dir.file("coarse.nc");
  oc.grid = kTas;
  oc.grid_var = "tas";
  oc.times = {};
  oc.output = dir.file("from_coarse.nc");
  const fp::DownscaleResult rc = fp::run_downscale(oc);
  EXPECT_TRUE(rc.coarse_input);
  const auto cc = read_step(oc.output, "tas_coarse", 0), mc = read_step(oc.output, "tas", 0, 0);
  double worst_coarse = 0, worst_member = 0;
  for (size_t i = 0; i < cc.size(); ++i) {
    worst_coarse = std::max(worst_coarse, std::fabs(double(cc[i]) - coarse_on_fine[i]));
    worst_member = std::max(worst_member, std::fabs(double(mc[i]) - m0[i]));
  }
  EXPECT_LT(worst_coarse, 1e-3);
  EXPECT_LT(worst_member, 0.05);

  // The command line writes what finecast-eval scores (when the evaluation tool is built).
  const CommandResult cli = run_command(binary("finecast-downscale") + " --checkpoint " + res.checkpoint + " --input " +
                                        kTas + " --var tas --output " + dir.file("cli.nc") +
                                        " --members 3 --device cpu --time 5 --sampler ddim --steps 4 --threads 1");
  ASSERT_EQ(cli.rc, 0) << cli.output;
  EXPECT_NE(cli.output.find("288 patches; 1 step(s), 3 member(s), ddim 4 steps"), std::string::npos) << cli.output;
  fc::FieldReader cli_out(dir.file("cli.nc"), "tas", 2);
  EXPECT_EQ(cli_out.n_levels(), 3);
  if (exists(binary("finecast-eval"))) {
    const CommandResult ev =
        run_command(binary("finecast-eval") + " --truth " + kTas + " --pred " + dir.file("cli.nc") +
                    " --var tas --block 8 --time 5 --json " + dir.file("eval.json"));
    ASSERT_EQ(ev.rc, 0) << ev.output;
    std::ifstream in(dir.file("eval.json"));
    std::stringstream json;
    json << in.rdbuf();
    EXPECT_NE(json.str().find("crps"), std::string::npos) << json.str().substr(0, 400);
    // --time by date scores the same step: the truth's step at that date, and the one-step
    // prediction's step with the same date.
    const std::string date = cli_out.time_string(0);
    ASSERT_EQ(date.rfind("2005-06-", 0), 0u) << date;
    const CommandResult by_date = run_command(binary("finecast-eval") + " --truth " + kTas + " --pred " +
                                              dir.file("cli.nc") + " --var tas --block 8 --time " + date);
    ASSERT_EQ(by_date.rc, 0) << by_date.output;
    const CommandResult by_index = run_command(binary("finecast-eval") + " --truth " + kTas + " --pred " +
                                               dir.file("cli.nc") + " --var tas --block 8 --time 5");
    EXPECT_EQ(by_date.output, by_index.output);
    const CommandResult no_step = run_command(binary("finecast-eval") + " --truth " + kTas + " --pred " +
                                              dir.file("cli.nc") + " --var tas --block 8 --time 1999-01-01");
    EXPECT_EQ(no_step.rc, 1);
    EXPECT_NE(no_step.output.find("--time 1999-01-01: " + kTas + " has no step at 1999-01-01T00:00:00"),
              std::string::npos)
        << no_step.output;
  }
}

// A lat-lon replay with an orography-like static field (input.static: January's tas held
// constant, named oro; patch.orography: oro): the checkpoint records the orography context and
// finecast-downscale, given the same field with --orography FILE:VAR, reproduces the sample.
TEST(DownscaleEndToEnd, LatLonStaticOrographyFromAReplayIsReproduced) {
  ScratchDir dir("downscale_oro");
  std::string run = tiny_run_file(dir.file("plugin.yaml"), "round_robin");
  const std::string vars = "variables: [tas]}";
  ASSERT_NE(run.find(vars), std::string::npos);
  run.replace(run.find(vars), vars.size(), "variables: [tas], static: [{file: " + kTas + ", var: tas, name: oro}]}");
  write_text(dir.file("plugin.yaml"), tiny_plugin_config(dir.path()) + "patch: {orography: oro}\n");
  write_text(dir.file("run.yaml"), run);
  const CommandResult replay = run_command("mpiexec -n 1 " + binary("finecast-replay") + " --config " +
                                           dir.file("run.yaml") + " --progress lines");
  ASSERT_EQ(replay.rc, 0) << replay.output;
  EXPECT_NE(replay.output.find("context of 9 values"), std::string::npos) << replay.output;

  fp::DownscaleOptions o = june_options(dir.file("checkpoints"), dir.file("june.nc"));
  EXPECT_NE(downscale_error(o).find("--orography FILE:VAR"), std::string::npos) << downscale_error(o);
  o.orography = kTas;  // FILE alone: the variable is the one the checkpoint names (oro): absent
  EXPECT_NE(downscale_error(o).find("has no variable 'oro'"), std::string::npos) << downscale_error(o);
  o.orography = kTas + ":tas";
  const fp::DownscaleResult res = fp::run_downscale(o);
  EXPECT_TRUE(res.orography);
  for (int m = 0; m < 2; ++m) {
    const auto plugin = read_step(dir.file("out.nc"), "tas", 0, m), offline = read_step(o.output, "tas", 0, m);
    ASSERT_EQ(plugin.size(), offline.size());
    const double worst = max_abs_difference(plugin, offline);
    EXPECT_LT(worst, 1e-4) << "member " << m << " differs from the plugin's sample";
  }
}

// The sampling options a checkpoint's training config gives (sample.* of its config_resolved) are
// finecast-downscale's defaults, its fitted sample.inflation included, so that a checkpoint samples
// as the plugin that wrote it did; what the command line gives overrides them one by one.
TEST(DownscaleSampling, TheTrainingConfigsSampleOptionsAreTheDefaults) {
  ScratchDir dir("downscale_sampling");
  std::string config = tiny_plugin_config(dir.path());
  const std::string steps = "members: 2, steps: 4,";
  ASSERT_NE(config.find(steps), std::string::npos);
  config.replace(config.find(steps), steps.size(), "members: 2, steps: 4, sampler: ddpm, inflation: 3,");
  write_text(dir.file("plugin.yaml"), config);
  write_text(dir.file("run.yaml"), tiny_run_file(dir.file("plugin.yaml"), "round_robin"));
  const CommandResult replay = run_command("mpiexec -n 1 " + binary("finecast-replay") + " --config " +
                                           dir.file("run.yaml") + " --progress lines");
  ASSERT_EQ(replay.rc, 0) << replay.output;

  const fp::DownscaleOptions o = june_options(dir.file("checkpoints"), dir.file("default.nc"));
  const fp::DownscaleResult res = fp::run_downscale(o);
  EXPECT_EQ(res.sampling, "ddpm, inflation 3");
  // Both outputs say how their members were sampled.
  EXPECT_EQ(global_text(dir.file("out.nc"), "finecast_sampling"), "ddpm, inflation 3");
  EXPECT_EQ(global_text(o.output, "finecast_sampling"), "ddpm, inflation 3");
  for (int m = 0; m < 2; ++m)
    EXPECT_LT(max_abs_difference(read_step(dir.file("out.nc"), "tas", 0, m), read_step(o.output, "tas", 0, m)), 1e-4)
        << "member " << m << " differs from the plugin's sample";

  // --inflation 1: the same ensemble mean, a third of the deviations from it (two members: the
  // deviation is half their difference).
  fp::DownscaleOptions plain = o;
  plain.sample.inflation = 1.0;
  plain.output = dir.file("plain.nc");
  EXPECT_EQ(fp::run_downscale(plain).sampling, "ddpm");
  EXPECT_EQ(global_text(plain.output, "finecast_sampling"), "ddpm");
  const auto a0 = read_step(o.output, "tas", 0, 0), a1 = read_step(o.output, "tas", 0, 1);
  const auto b0 = read_step(plain.output, "tas", 0, 0), b1 = read_step(plain.output, "tas", 0, 1);
  double worst_mean = 0, worst_spread = 0, spread = 0;
  for (size_t i = 0; i < a0.size(); ++i) {
    worst_mean = std::max(worst_mean, std::fabs((double(a0[i]) + a1[i]) - (double(b0[i]) + b1[i])) / 2);
    worst_spread = std::max(worst_spread, std::fabs((double(a0[i]) - a1[i]) - 3 * (double(b0[i]) - b1[i])));
    spread = std::max(spread, std::fabs(double(b0[i]) - b1[i]));
  }
  EXPECT_GT(spread, 0.1);
  EXPECT_LT(worst_mean, 1e-3);
  EXPECT_LT(worst_spread, 1e-3 * (1 + spread));

  // scripts/inflate_ensemble.py applies an inflation to an output already written: inflation 3 on
  // the plain output is the inflation-3 sampling, and its finecast_sampling says so.
  const CommandResult post =
      run_command("/usr/bin/python3 " + std::string(FINECAST_SOURCE_DIR) + "/scripts/inflate_ensemble.py --input " +
                  plain.output + " --var tas --factor 3 --output " + dir.file("post.nc"));
  ASSERT_EQ(post.rc, 0) << post.output;
  EXPECT_EQ(global_text(dir.file("post.nc"), "finecast_sampling"), "ddpm, inflation 3");
  for (int m = 0; m < 2; ++m)
    EXPECT_LT(max_abs_difference(read_step(dir.file("post.nc"), "tas", 0, m), read_step(o.output, "tas", 0, m)),
              1e-4 * (1 + spread))
        << "member " << m << " of the inflated output differs from the inflated sampling";

  // Each option alone: --sampler ddim keeps the config's 4 steps and its inflation.
  fp::DownscaleOptions ddim = o;
  ddim.sample.sampler = "ddim";
  ddim.output = dir.file("ddim.nc");
  EXPECT_EQ(fp::run_downscale(ddim).sampling, "ddim 4 steps, inflation 3");

  // The command line sets only what it is given, and says where the rest came from.
  auto command_for = [](const std::string& checkpoint, const std::string& output) {
    return binary("finecast-downscale") + " --checkpoint " + checkpoint + " --input " + kTas +
           " --var tas --members 2 --device cpu --time 5 --threads 1 --output " + output;
  };
  const std::string cli = command_for(dir.file("checkpoints"), dir.file("cli.nc"));
  const CommandResult by_default = run_command(cli);
  ASSERT_EQ(by_default.rc, 0) << by_default.output;
  EXPECT_NE(by_default.output.find(": ddpm, inflation 3 (options not given: sample.* of the config it was trained "
                                   "with)"),
            std::string::npos)
      << by_default.output;
  const CommandResult given = run_command(cli + " --inflation 1 --steps 2 --sampler ddim");
  ASSERT_EQ(given.rc, 0) << given.output;
  EXPECT_NE(given.output.find(": ddim 2 steps (options not given:"), std::string::npos) << given.output;

  // A checkpoint whose training config does not parse (another version's keys) samples with the
  // plugin's defaults, with a warning.
  const std::string odd = make_checkpoint(dir.path(), 8, 64, {{"config_resolved", "fields: [tas]\nno_such_key: 1\n"}});
  fp::DownscaleOptions other = o;
  other.checkpoint = odd;
  other.output = dir.file("odd.nc");
  EXPECT_EQ(fp::run_downscale(other).sampling, "ddim 10 steps");

  // The plugin records its sample.* as the typed group /sampling, which is read before the config
  // text: here the group alone says ddpm with inflation 2.
  const auto recorded = ft::read_checkpoint_sampling(
      finecast::checkpoint_files::checkpoints_newest_first(dir.file("checkpoints"))[0].second);
  ASSERT_TRUE(recorded.has_value());
  EXPECT_EQ(recorded->sampler, ft::Sampler::kDdpm);
  EXPECT_EQ(recorded->steps, 4);
  EXPECT_EQ(recorded->inflation, 3.0);
  other.checkpoint =
      make_checkpoint(dir.path(), 8, 64, {{"config_resolved", "fields: [tas]\nno_such_key: 1\n"}},
                      {{ft::kSamplingGroup, {{"sampler", std::string("ddpm")}, {"inflation", 2.0}}}}, "grouped.h5");
  other.output = dir.file("grouped.nc");
  EXPECT_EQ(fp::run_downscale(other).sampling, "ddpm, inflation 2");
  // A checkpoint written before the group: sample.* of its config text.
  other.checkpoint = make_checkpoint(dir.path(), 8, 64, {{"config_resolved", config}}, {}, "text_only.h5");
  other.output = dir.file("text_only.nc");
  EXPECT_EQ(fp::run_downscale(other).sampling, "ddpm, inflation 3");
  // A checkpoint fine-tuned on the CRPS of DDIM-10 members (train.crps_steps) says so when it is
  // sampled another way (here its config's ddpm), and not when it is sampled that way.
  ft::TrainOptions tuned;
  tuned.crps_steps = 5;
  const std::string tuned_cli = command_for(
      make_checkpoint(dir.path(), 8, 64, {{"config_resolved", config}}, {}, "tuned.h5", tuned), dir.file("tuned.nc"));
  const CommandResult other_way = run_command(tuned_cli);
  ASSERT_EQ(other_way.rc, 0) << other_way.output;
  EXPECT_NE(other_way.output.find("was fine-tuned (train.crps_steps 5) for members drawn by DDIM with 10 steps and eta "
                                  "0; sampled with ddpm, inflation 3 "),
            std::string::npos)
      << other_way.output;
  const CommandResult same_way = run_command(tuned_cli + " --sampler ddim --steps 10 --eta 0");
  ASSERT_EQ(same_way.rc, 0) << same_way.output;
  EXPECT_EQ(same_way.output.find("was fine-tuned"), std::string::npos) << same_way.output;
  // A value of the group that its row refuses is named with the file and the key.
  other.checkpoint = make_checkpoint(dir.path(), 8, 64, {}, {{ft::kSamplingGroup, {{"inflation", std::string("x")}}}},
                                     "bad_sampling.h5");
  try {
    fp::run_downscale(other);
    ADD_FAILURE() << "an inflation \"x\" was read";
  } catch (const finecast::CheckpointError& e) {
    EXPECT_NE(std::string(e.what()).find(other.checkpoint + ": /sampling inflation "), std::string::npos) << e.what();
  }
}

// The conditioning spec in a real checkpoint: typed attributes of /conditioning (the patch size an
// integer, the regression coefficients a real array, the fields a string array) that read back
// into the same spec; a wrongly typed attribute is refused naming the file and the attribute; a
// checkpoint with the version-1 text in /metadata (no group) still reads.
TEST(DownscaleCheckpointSpec, StoredTypedReadBackAndCheckedByType) {
  ScratchDir dir("downscale_spec");
  fc::ConditioningSpec spec;
  spec.grid.type = fc::GridType::kLatLon;
  spec.grid.file = "fine.nc";
  spec.grid.variable = "tas";
  spec.grid.block = 4;
  spec.patch_size = 16;
  spec.fields = {"tas", "ps"};
  spec.target = "tas";
  spec.target_units = "K";
  spec.patch.static_features = false;
  spec.patch.orography = "oro";
  spec.patch.context_rings = 1;
  spec.patch.relative_context = true;
  spec.patch.statics = {"oro", "fr_land"};
  spec.static_norms = {{10.5, 2.0}, {0.25, 0.5}};
  spec.patch.residual = fc::Residual::kRegression;
  spec.regression = {0.5, -1.0, 2.0, 1e-17};
  const std::string path = make_checkpoint(dir.path(), 7, 16, {{"datetime", "2000-01-01T00:00:00"}},
                                           {{fc::kConditioningGroup, fc::spec_record(spec)}}, "typed.h5");

  const hid_t f = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  ASSERT_GE(f, 0);
  auto open = [&](const char* key) { return H5Aopen_by_name(f, "conditioning", key, H5P_DEFAULT, H5P_DEFAULT); };
  const hid_t size = open("patch.size"), coef = open("patch.regression"), fields = open("fields");
  ASSERT_GE(size, 0);
  ASSERT_GE(coef, 0);
  ASSERT_GE(fields, 0);
  const hid_t size_type = H5Aget_type(size), coef_type = H5Aget_type(coef), fields_type = H5Aget_type(fields);
  const hid_t coef_space = H5Aget_space(coef);
  EXPECT_EQ(H5Tget_class(size_type), H5T_INTEGER);
  EXPECT_EQ(H5Tget_class(coef_type), H5T_FLOAT);
  EXPECT_EQ(H5Tget_size(coef_type), 8u);
  EXPECT_EQ(H5Sget_simple_extent_ndims(coef_space), 1);
  EXPECT_EQ(H5Tget_class(fields_type), H5T_STRING);
  long long stored_size = 0;
  std::vector<double> stored_coef(4);
  EXPECT_GE(H5Aread(size, H5T_NATIVE_LLONG, &stored_size), 0);
  EXPECT_GE(H5Aread(coef, H5T_NATIVE_DOUBLE, stored_coef.data()), 0);
  EXPECT_EQ(stored_size, 16);
  EXPECT_EQ(stored_coef, spec.regression);
  for (const hid_t id : {size_type, coef_type, fields_type}) H5Tclose(id);
  H5Sclose(coef_space);
  for (const hid_t id : {size, coef, fields}) H5Aclose(id);
  H5Fclose(f);

  const fc::StoredSpec back = fp::read_checkpoint_spec(path);
  EXPECT_EQ(back.version, fc::kConditioningSpecVersion);
  EXPECT_EQ(fc::spec_record(back.spec), fc::spec_record(spec));
  EXPECT_EQ(fc::resume_differences(back, spec, "run.yaml"), "");

  finecast::schema::Record wrong = fc::spec_record(spec);
  wrong["patch.size"] = 16.0;
  const std::string bad = make_checkpoint(dir.path(), 7, 16, {}, {{fc::kConditioningGroup, wrong}}, "wrong.h5");
  try {
    fp::read_checkpoint_spec(bad);
    ADD_FAILURE() << "a real patch.size was read";
  } catch (const finecast::CheckpointError& e) {
    EXPECT_EQ(std::string(e.what()), bad + ": /conditioning patch.size is a real number, expected an integer");
  }

  const std::string v1 = make_checkpoint(
      dir.path(), 7, 16, {{"spec_version", "1"}, {"fields", "tas,ps"}, {"target", "tas"}, {"patch.residual", "interp"}},
      {}, "v1.h5");
  const fc::StoredSpec old = fp::read_checkpoint_spec(v1);
  EXPECT_EQ(old.version, 1);
  EXPECT_EQ(old.spec.fields, (std::vector<std::string>{"tas", "ps"}));
  EXPECT_EQ(old.spec.patch.residual, fc::Residual::kInterp);
  EXPECT_FALSE(old.has("patch.size"));
}

TEST(DownscalePool, PooledMembersAreTheUnionOfEachCheckpointsMembers) {
  // Two different models (widths 8 and 12) with the same context: --checkpoint A --checkpoint B
  // with 4 members is A's 2 members with the seed and B's 2 with seed + 1, in that order.
  ScratchDir dir("downscale_pool");
  const std::string a = make_checkpoint(dir.path(), 8, 64);
  ft::ModelOptions mo;
  mo.context_size = 8;
  mo.patch_size = 64;
  mo.hidden = 12;
  mo.depth = 1;
  mo.time_embedding = 8;
  mo.diffusion_steps = 10;
  const std::string b = dir.file("wide.h5");
  ft::Downscaler(mo, ft::TrainOptions{}, "cpu").save_checkpoint(b);
  fp::DownscaleOptions o;
  o.input = kTas;
  o.vars = {"tas"};
  o.device = "cpu";
  o.threads = 1;
  o.times = {"0"};
  o.sample.sampler = "ddpm";
  o.seed = 7;
  fp::DownscaleOptions pooled = o, only_a = o, only_b = o;
  pooled.checkpoint = a;
  pooled.pool = {b};
  pooled.members = 4;
  pooled.output = dir.file("pooled.nc");
  only_a.checkpoint = a;
  only_a.members = 2;
  only_a.output = dir.file("a.nc");
  only_b.checkpoint = b;
  only_b.members = 2;
  only_b.seed = 8;
  only_b.output = dir.file("b.nc");
  fp::run_downscale(pooled);
  fp::run_downscale(only_a);
  fp::run_downscale(only_b);
  for (int m = 0; m < 4; ++m) {
    const auto p = read_step(pooled.output, "tas", 0, m);
    const auto single = read_step(m < 2 ? only_a.output : only_b.output, "tas", 0, m % 2);
    ASSERT_EQ(p.size(), 18432u);
    EXPECT_EQ(max_abs_difference(p, single), 0.0) << "pooled member " << m;
  }
  EXPECT_GT(max_abs_difference(read_step(pooled.output, "tas", 0, 0), read_step(pooled.output, "tas", 0, 2)), 1e-3);
  pooled.members = 3;
  EXPECT_NE(downscale_error(pooled).find("--members 3 must be a multiple of the 2 --checkpoint given"),
            std::string::npos)
      << downscale_error(pooled);
}

TEST(DownscaleErrors, MismatchedGridsAndCheckpointsAreNamed) {
  ScratchDir dir("downscale_err");
  const std::string ck = make_checkpoint(dir.path(), 8, 64);
  fp::DownscaleOptions o;
  o.checkpoint = ck;
  o.input = kTas;
  o.vars = {"tas"};
  o.output = dir.file("x.nc");
  o.device = "cpu";
  o.members = 1;
  o.times = {"0"};

  fp::DownscaleOptions b = o;
  b.block = 16;
  EXPECT_NE(downscale_error(b).find("was trained on patches of 64 fine cells, but " + kTas +
                                    " (96 x 192, blocks of 16 x 16) gives patches of 256 (check --block)"),
            std::string::npos)
      << downscale_error(b);

  b = o;
  b.checkpoint = make_checkpoint(dir.path(), 7, 64);
  EXPECT_NE(downscale_error(b).find("expects a context of 7 values per patch, but 1 field(s) on"), std::string::npos)
      << downscale_error(b);
  EXPECT_NE(downscale_error(b).find("give 8 with position features, 9 with position features "
                                    "and orography, 5 without position features or orography, "
                                    "6 with orography"),
            std::string::npos)
      << downscale_error(b);

  b = o;
  b.grid = "/usr/share/ncarg/data/nug/HSURF_regional_model_0.44deg.nc";
  b.grid_var = "";
  const std::string grid_error = downscale_error(b);
  EXPECT_NE(grid_error.find(kTas + ": tas has 18432 values per step, but /usr/share/ncarg/data/nug/"
                                   "HSURF_regional_model_0.44deg.nc"),
            std::string::npos)
      << grid_error;

  b = o;
  b.coarse_level = 2;
  EXPECT_NE(downscale_error(b).find("--coarse-level is for ICON grids"), std::string::npos);
  b = o;
  b.checkpoint = dir.file("none.h5");
  EXPECT_NE(downscale_error(b).find("--checkpoint " + dir.file("none.h5") + ": no such file or directory"),
            std::string::npos);
  b = o;
  b.checkpoint = dir.path();  // holds checkpoints, but none named like the plugin's (ckpt_*.h5)
  EXPECT_NE(downscale_error(b).find("holds no valid checkpoint"), std::string::npos) << downscale_error(b);
  b = o;
  b.times = {"12"};
  EXPECT_NE(downscale_error(b).find("--time 12: " + kTas + ": tas has 12 time step(s) (0..11)"), std::string::npos);
  b = o;
  b.vars = {"pr"};
  EXPECT_NE(downscale_error(b).find("pr"), std::string::npos);
  EXPECT_FALSE(exists(o.output)) << "a failed run must not leave an output";

  // An untrained but well-formed checkpoint runs: the checks above are not false alarms.
  EXPECT_EQ(downscale_error(o), "");
  EXPECT_TRUE(exists(o.output));
}

TEST(DownscaleCli, BadArgumentsGiveClearErrors) {
  ScratchDir dir("downscale_cli");
  const std::string bin = binary("finecast-downscale");
  auto r = run_command(bin + " --checkpoint x.h5 --input " + kTas);
  EXPECT_NE(r.rc, 0);
  EXPECT_NE(r.output.find("--var is required"), std::string::npos) << r.output;
  r = run_command(bin + " --checkpoint x.h5 --input " + kTas + " --var tas --members 0");
  EXPECT_NE(r.rc, 0);
  // CLI11's PositiveNumber wrote its range with the largest double in full (309 digits).
  EXPECT_NE(r.output.find("--members: must be greater than 0, got 0"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("0000000000"), std::string::npos) << r.output;
  r = run_command(bin + " --checkpoint x.h5 --input " + kTas + " --var tas --threads -1");
  EXPECT_NE(r.output.find("--threads: must be 0 or more, got -1"), std::string::npos) << r.output;
  r = run_command(bin + " --checkpoint x.h5 --input " + kTas + " --var tas --block 8 --coarse-level 0");
  EXPECT_NE(r.rc, 0);
  EXPECT_NE(r.output.find("excludes"), std::string::npos) << r.output;
  r = run_command(bin + " --checkpoint x.h5 --input " + kTas + " --var tas --sampler euler");
  EXPECT_NE(r.rc, 0);
  EXPECT_NE(r.output.find("--sampler"), std::string::npos) << r.output;
  r = run_command(bin + " --checkpoint " + dir.file("x.h5") + " --input " + kTas + " --var tas --device cpu");
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(r.output.find("--checkpoint " + dir.file("x.h5") + ": no such file or directory"), std::string::npos)
      << r.output;
  r = run_command(bin + " --help");
  EXPECT_EQ(r.rc, 0);
  EXPECT_NE(r.output.find("--coarse-level"), std::string::npos);
}

// ICON: a real R2B4 output file (one step, two fields) replayed on 3 ranks in latitude bands,
// coarsened to R2B0 by the plugin; downscaling the same step offline gives the same ensemble.
TEST(DownscaleEndToEnd, IconReplayOnThreeRanksIsReproducedOffline) {
  const std::string data = "/usr/share/ncarg/data/nug/atm_phy_mag0004_1985.nc";
  const std::string grid = "/usr/share/ncarg/data/nug/triangular_grid_ICON.nc";
  ScratchDir dir("downscale_icon");
  write_text(dir.file("plugin.yaml"),
             "fields: [ts]\ndevice: cpu\nseed: 5\n"
             "grid: {type: icon, file: " +
                 grid +
                 ", coarse_level: 0}\n"
                 "buffer: {capacity: 2}\n"
                 "model: {hidden: 32, depth: 2, time_embedding: 16, diffusion_steps: 10}\n"
                 "train: {async: false, every: 1, min_steps: 1, epochs: 1, batch_size: 16, threads: 1}\n"
                 "sample: {every: 0, members: 2, steps: 3, output: " +
                 dir.file("out.nc") +
                 "}\n"
                 "checkpoint: {dir: " +
                 dir.file("checkpoints") + "}\n");
  write_text(dir.file("run.yaml"), "input: {files: " + data +
                                       ", variables: [ts, {var: ts_wtr, name: tsw}]}\n"
                                       "grid: {type: icon, file: " +
                                       grid +
                                       "}\n"
                                       "epochs: 3\nnproma: 16\ndecomposition: lat_bands\n"
                                       "plugins:\n  - {name: finecast, library: " +
                                       plugin_library() + ", options: " + dir.file("plugin.yaml") + "}\n");
  const CommandResult r = run_command("mpiexec -n 3 --oversubscribe " + binary("finecast-replay") + " --config " +
                                      dir.file("run.yaml") + " --progress lines");
  ASSERT_EQ(r.rc, 0) << r.output;
  EXPECT_NE(r.output.find("3 coupling steps, 3 training sessions, 1 samplings"), std::string::npos) << r.output;

  fp::DownscaleOptions o;
  o.checkpoint = dir.file("checkpoints");
  o.input = data;
  o.vars = {"ts"};
  o.grid = grid;
  o.output = dir.file("offline.nc");
  o.members = 2;
  o.device = "cpu";
  o.sample.steps = 3;
  o.seed = 5;
  o.threads = 1;
  const fp::DownscaleResult res = fp::run_downscale(o);
  EXPECT_EQ(res.n_coarse, 80);
  EXPECT_EQ(res.patch_size, 256);
  for (int m = 0; m < 2; ++m) {
    const auto plugin = read_step(dir.file("out.nc"), "ts", 0, m), offline = read_step(o.output, "ts", 0, m);
    ASSERT_EQ(plugin.size(), 20480u);
    const double worst = max_abs_difference(plugin, offline);
    EXPECT_LT(worst, 1e-4) << "member " << m;
  }
  // A lat-lon block size makes no sense on an ICON field, and R2B1 patches do not fit the model.
  o.block = 16;
  EXPECT_NE(downscale_error(o).find("--block is for lat-lon grids"), std::string::npos);
  o.block = 0;
  o.coarse_level = 1;
  EXPECT_NE(downscale_error(o).find("was trained on patches of 256 fine cells, but " + grid +
                                    " (R2B4 -> R2B1) gives patches of 64 (check --coarse-level)"),
            std::string::npos)
      << downscale_error(o);
}

// Issue 43: --hold-out / --region sample only the patches finecast-eval scores, with contexts from
// the whole field. The tas grid (96 x 192) has 12 x 24 blocks of 8 x 8; a mask flagging rows 0..7
// holds out the first block row, patches 0..23 (one non-zero cell per block is enough).
TEST(DownscaleHoldOut, SamplesOnlyTheScoredPatchesAndEqualsTheWholeFieldThere) {
  ScratchDir dir("downscale_hold_out");
  const std::string ck = make_checkpoint(dir.path(), 8, 64);
  std::vector<float> mask(96 * 192, 0.0f);
  for (int x = 0; x < 192; x += 8) mask[static_cast<size_t>(3 * 192 + x + 5)] = 1.0f;  // row 3, in each block
  write_coarse_file(dir.file("mask.nc"), mask, 96, 192);
  fp::DownscaleOptions whole;
  whole.checkpoint = ck;
  whole.input = kTas;
  whole.vars = {"tas"};
  whole.device = "cpu";
  whole.threads = 1;
  whole.members = 2;
  whole.times = {"0"};
  whole.seed = 7;  // DDIM with eta 0 (the defaults): the first draw's noise is the only one
  whole.output = dir.file("whole.nc");
  fp::DownscaleOptions held = whole;
  held.hold_out = dir.file("mask.nc") + ":tas";
  held.output = dir.file("held.nc");
  EXPECT_EQ(fp::run_downscale(whole).n_sampled, 288);
  const fp::DownscaleResult r = fp::run_downscale(held);
  EXPECT_EQ(r.n_sampled, 24);
  EXPECT_NE(
      global_text(held.output, "finecast_sampled_patches").find("24 of 288 patches, those held out by --hold-out"),
      std::string::npos)
      << global_text(held.output, "finecast_sampled_patches");
  for (int m = 0; m < 2; ++m) {
    const auto a = read_step(whole.output, "tas", 0, m), b = read_step(held.output, "tas", 0, m);
    ASSERT_EQ(b.size(), 96u * 192u);
    int64_t sampled = 0;
    double worst = 0;
    for (size_t i = 0; i < b.size(); ++i) {
      const bool in_first_row = i < 8 * 192;
      const bool finite = std::isfinite(b[i]) && std::fabs(b[i]) < 1e19f;
      EXPECT_EQ(finite, in_first_row) << "cell " << i << " member " << m;
      if (!finite || !in_first_row) continue;
      ++sampled;
      worst = std::max(worst, std::fabs(double(a[i]) - b[i]));
    }
    EXPECT_EQ(sampled, 24 * 64);
    // The scored patches lead the patch order and fit one batch: the sampler draws them the same
    // noise as the whole field's run, with the same (whole-field) contexts.
    EXPECT_LT(worst, 1e-3) << "member " << m;
  }
  // The coarse field stays whole: the baselines of finecast-eval interpolate it.
  const auto coarse = read_step(held.output, "tas_coarse", 0);
  EXPECT_EQ(max_abs_difference(coarse, read_step(whole.output, "tas_coarse", 0)), 0.0);

  // --region: the blocks wholly north of the equator (6 block rows); with --hold-out, the
  // patches both select (the flagged block row is the first or the last northern one).
  fp::DownscaleOptions north = whole;
  north.region = "0,90,-180,180";
  north.output = dir.file("north.nc");
  EXPECT_EQ(fp::run_downscale(north).n_sampled, 144);
  std::vector<float> two_rows = mask;
  for (int x = 0; x < 192; x += 8) two_rows[static_cast<size_t>(90 * 192 + x)] = 1.0f;  // the last block row too
  write_coarse_file(dir.file("two_rows.nc"), two_rows, 96, 192);
  north.hold_out = dir.file("two_rows.nc") + ":tas";
  EXPECT_EQ(fp::run_downscale(north).n_sampled, 24);

  // A mask on another grid, a missing variable, a mask that flags nothing: named before sampling.
  write_coarse_file(dir.file("small.nc"), std::vector<float>(10 * 10, 1.0f), 10, 10);
  fp::DownscaleOptions bad = held;
  bad.hold_out = dir.file("small.nc") + ":tas";
  std::string e = downscale_error(bad);
  EXPECT_NE(e.find("--hold-out " + dir.file("small.nc") + ":tas: "), std::string::npos) << e;
  EXPECT_NE(e.find("expected variable 'tas' of '" + dir.file("small.nc") + "' on the fine grid " + kTas),
            std::string::npos)
      << e;
  bad.hold_out = dir.file("mask.nc") + ":nope";
  e = downscale_error(bad);
  EXPECT_NE(e.find("expected variable 'nope' of '" + dir.file("mask.nc") + "'"), std::string::npos) << e;
  write_coarse_file(dir.file("zeros.nc"), std::vector<float>(96 * 192, 0.0f), 96, 192);
  bad.hold_out = dir.file("zeros.nc") + ":tas";
  e = downscale_error(bad);
  EXPECT_NE(e.find("the mask flags no cell of any patch"), std::string::npos) << e;
  bad.hold_out = "";
  bad.region = "10,11,0,1";
  e = downscale_error(bad);
  EXPECT_NE(e.find("no patch of " + kTas + " (96 x 192, blocks of 8 x 8) is inside --region 10,11,0,1"),
            std::string::npos)
      << e;
}

// Issue 43: members of two models sampled with the same noise are near copies, so pooled
// checkpoints draw distinct seeds (--seed + k) by default: the same checkpoint given twice gives
// two different halves.
TEST(DownscalePool, TheSameCheckpointTwiceDrawsDistinctMembers) {
  ScratchDir dir("downscale_pool_same");
  const std::string a = make_checkpoint(dir.path(), 8, 64);
  fp::DownscaleOptions o;
  o.checkpoint = a;
  o.pool = {a};
  o.input = kTas;
  o.vars = {"tas"};
  o.device = "cpu";
  o.threads = 1;
  o.times = {"0"};
  o.members = 2;
  o.seed = 11;
  o.output = dir.file("pooled.nc");
  const fp::DownscaleResult r = fp::run_downscale(o);
  EXPECT_EQ(r.seeds, (std::vector<unsigned long long>{11, 12}));
  EXPECT_GT(max_abs_difference(read_step(o.output, "tas", 0, 0), read_step(o.output, "tas", 0, 1)), 1e-3);
}
