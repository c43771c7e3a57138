// SPDX-License-Identifier: BSD-3-Clause
// Config parsing: good files, every class of bad input, and defaults == configs/reference.yaml.
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <fstream>
#include <iterator>
#include <set>
#include <sstream>

#include "common/error.hpp"
#include "plugin/config.hpp"

namespace fp = finecast::plugin;

namespace {

const char* kMinimal = "fields: [ts]\ngrid:\n  file: grid.nc\n";

/// The message of the ConfigError that parsing `text` throws ("" when it parses).
std::string error_of(const std::string& text, const std::vector<std::string>& overrides = {}) {
  try {
    fp::parse_config(text, "configs/x.yaml", overrides);
  } catch (const finecast::ConfigError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

// patch.interpolant must fit grid.type: named at parse time with the fix, both ways round.
TEST(Config, AnInterpolantOfTheOtherGridTypeIsRefusedNamingTheFix) {
  EXPECT_NE(error_of(std::string(kMinimal) + "patch: {interpolant: bspline}\n")
                .find("patch.interpolant bspline interpolates lat-lon blocks, but grid.type is icon: use idw, linear "
                      "or idw_linear"),
            std::string::npos);
  EXPECT_NE(
      error_of("fields: [ts]\ngrid: {type: latlon, file: f.nc, block: 8}\npatch: {interpolant: linear}\n")
          .find("patch.interpolant linear interpolates ICON cells, but grid.type is latlon: use bicubic or bspline"),
      std::string::npos);
  EXPECT_EQ(error_of("fields: [ts]\ngrid: {type: latlon, file: f.nc, block: 8}\npatch: {interpolant: bspline}\n"), "");
  EXPECT_EQ(error_of(std::string(kMinimal) + "patch: {interpolant: linear}\n"), "");
}

TEST(Config, MinimalConfigGetsEveryDefault) {
  const fp::Config c = fp::parse_config(kMinimal, "m.yaml");
  EXPECT_EQ(c.fields, std::vector<std::string>{"ts"});
  EXPECT_EQ(c.grid.file, "grid.nc");
  EXPECT_EQ(c.train.batch_size, 16);
  EXPECT_EQ(c.buffer.capacity, 48);
  EXPECT_EQ(c.model.diffusion_steps, 50);
  EXPECT_TRUE(c.train.async);
  EXPECT_EQ(c.coupling.entry_point, "EP_ATM_WRITE_OUTPUT_BEFORE");
}

TEST(Config, ValuesAreReadWithTheirTypes) {
  const fp::Config c = fp::parse_config(
      "fields: [ts, ps]\ndevice: cuda:1\nseed: 7\ngrid: {type: latlon, file: f.nc, block: 8}\n"
      "train: {lr: 2.5e-4, async: false, batch_size: 256}\nmodel: {arch: unet}\n",
      "t.yaml");
  EXPECT_EQ(c.fields, (std::vector<std::string>{"ts", "ps"}));
  EXPECT_EQ(c.device, "cuda:1");
  EXPECT_EQ(c.seed, 7u);
  EXPECT_EQ(c.grid.block, 8);
  EXPECT_DOUBLE_EQ(c.train.lr, 2.5e-4);
  EXPECT_FALSE(c.train.async);
  EXPECT_EQ(c.train.batch_size, 256);
  EXPECT_EQ(c.model.arch, finecast::trainer::Arch::kUnet);
}

TEST(Config, WrongTypeNamesFileLineKeyAndValue) {
  EXPECT_EQ(error_of(std::string(kMinimal) + "train:\n  batch_size: sixteen\n"),
            "configs/x.yaml:5: train.batch_size must be an integer in [1, 1048576], got \"sixteen\"");
  EXPECT_EQ(error_of(std::string(kMinimal) + "train:\n  async: maybe\n"),
            "configs/x.yaml:5: train.async must be true or false, got \"maybe\"");
  EXPECT_EQ(error_of(std::string(kMinimal) + "train:\n  lr: [1, 2]\n"),
            "configs/x.yaml:5: train.lr must be a positive number, got a list");
}

TEST(Config, OutOfRangeValues) {
  EXPECT_EQ(error_of(std::string(kMinimal) + "train:\n  batch_size: 0\n"),
            "configs/x.yaml:5: train.batch_size must be an integer in [1, 1048576], got 0");
  EXPECT_EQ(error_of(std::string(kMinimal) + "train:\n  ema_decay: 1.5\n"),
            "configs/x.yaml:5: train.ema_decay must be a number in [0, 1), got 1.5");
  EXPECT_EQ(error_of(std::string(kMinimal) + "model:\n  schedule: quadratic\n"),
            "configs/x.yaml:5: model.schedule must be one of linear, cosine, got \"quadratic\"");
  EXPECT_NE(error_of(std::string(kMinimal) + "device: cuda:N\n").find("device must be one of"), std::string::npos);
  EXPECT_EQ(error_of(std::string(kMinimal) + "device: cuda:3\n"), "");
  EXPECT_NE(error_of(std::string(kMinimal) + "device: gpu\n").find("configs/x.yaml:4: device must be one of auto"),
            std::string::npos);
  EXPECT_NE(error_of(std::string(kMinimal) + "coupling:\n  entry_point: EP_NOPE\n").find("coupling.entry_point"),
            std::string::npos);
}

TEST(Config, UnknownKeysListTheAllowedOnes) {
  const std::string e = error_of(std::string(kMinimal) + "train:\n  batchsize: 3\n");
  EXPECT_EQ(
      e.rfind("configs/x.yaml:5: unknown key train.batchsize (allowed in train: async, nice, free_cores, every,", 0),
      0u)
      << e;
  EXPECT_NE(e.find("batch_size"), std::string::npos);
  EXPECT_EQ(error_of(std::string(kMinimal) + "trian: {}\n").rfind("configs/x.yaml:4: unknown key trian (allowed: ", 0),
            0u);
}

TEST(Config, MissingRequiredKeys) {
  EXPECT_EQ(error_of("grid: {file: g.nc}\n").rfind("configs/x.yaml: missing required key fields", 0), 0u);
  EXPECT_EQ(error_of("fields: [ts]\n").rfind("configs/x.yaml: missing required key grid.file", 0), 0u);
  EXPECT_EQ(error_of("fields: []\ngrid: {file: g.nc}\n"),
            "configs/x.yaml:1: fields must be a non-empty list of variable names, got a list");
}

TEST(Config, InvalidYamlAndCombinations) {
  EXPECT_EQ(error_of("fields: [ts\n").rfind("configs/x.yaml:", 0), 0u);
  EXPECT_NE(error_of("- a\n- b\n").find("must be a mapping"), std::string::npos);
  EXPECT_NE(error_of(std::string(kMinimal) + "train: {min_steps: 60}\n").find("must not exceed buffer.capacity"),
            std::string::npos);
  EXPECT_NE(error_of(std::string(kMinimal) + "model: {arch: unet}\n").find("grid.type: latlon"), std::string::npos);
}

// Inputs that once crashed finecast-config or were silently accepted.
TEST(Config, DuplicateAndNonScalarKeysAreRefused) {
  EXPECT_EQ(error_of(std::string(kMinimal) + "seed: 1\nseed: 2\n"),
            "configs/x.yaml:5: duplicate key seed (first given on line 4)");
  EXPECT_EQ(error_of(std::string(kMinimal) + "train:\n  lr: 1\n  lr: 2\n"),
            "configs/x.yaml:6: duplicate key train.lr (first given on line 5)");
  EXPECT_EQ(error_of(std::string(kMinimal) + "? [a, b]\n: 1\n"), "configs/x.yaml:4: keys must be names, got a list");
  EXPECT_EQ(error_of(std::string(kMinimal) + "train: {{x: 1}: 2}\n"),
            "configs/x.yaml:4: keys must be names, got a mapping in train");
  EXPECT_EQ(error_of(kMinimal, {"device.x=1"}),
            "--set device.x=1: device takes a value, it has no keys below it (--set device=VALUE)");
  // yaml-cpp ends a quoted value that runs into the end of the file there ("ckpt " here).
  EXPECT_EQ(error_of(std::string(kMinimal) + "checkpoint:\n  dir: \"ckpt\n"),
            "configs/x.yaml:5: not valid YAML: the double quote opened at column 8 is never closed");
  EXPECT_EQ(error_of(std::string(kMinimal) + "device: 'cpu\n\n"),
            "configs/x.yaml:4: not valid YAML: the single quote opened at column 9 is never closed");
  // Closed quotes with escapes inside stay valid.
  EXPECT_EQ(error_of(std::string(kMinimal) + "checkpoint: {dir: \"a\\\"b\"}\nsample: {output: 'o''k.nc'}\n"), "");
}

TEST(Config, EveryErrorIsReportedInOneRun) {
  // Independent mistakes, each reported, one per line: in file order (the --set key is added at the
  // end of the file), then the missing key.
  const std::string e = error_of(
      "fields: [ts]\n"
      "train:\n"
      "  batch_size: sixteen\n"
      "  batchsize: 3\n"
      "model: {schedule: quadratic}\n"
      "sample: 7\n",
      {"device=gpu"});
  EXPECT_EQ(
      e,
      "configs/x.yaml:3: train.batch_size must be an integer in [1, 1048576], got \"sixteen\"\n"
      "configs/x.yaml:4: unknown key train.batchsize (allowed in train: async, nice, free_cores, every, min_steps, "
      "epochs, "
      "ranks, placement, gpu_ids, device_memory_fraction, hold_out, batch_size, lr, weight_decay, warmup_steps, "
      "decay_steps, "
      "min_lr_ratio, grad_clip, ema_decay, "
      "mixed_precision, max_bad_steps, accumulate, validation, validation_split, validation_every, "
      "validation_members, validation_max_samples, "
      "validation_metric, early_stop, plateau, plateau_factor, plateau_min_scale, keep_best, max_device_memory, "
      "force_autograd, threads, max_threads, cuda_graphs, noise_generator, max_seconds, max_steps, budget, "
      "noise_levels, "
      "noise_log_mean, noise_log_std, mean_fraction, mean_sigma, "
      "context_noise, crps_steps, crps_members, crps_sampler_steps, crps_lr, crps_held_out)\n"
      "configs/x.yaml:5: model.schedule must be one of linear, cosine, got \"quadratic\"\n"
      "configs/x.yaml:6: sample must be a mapping of keys (every, at_end, members, sampler, steps, eta, ddpm_variance, "
      "inflation, inflation_range, churn, recentre_sigma, clip_context, clip_margin, threads, max_threads, "
      "cuda_graphs, output, "
      "write_back, calibration, "
      "calibration_decay, device)\n"
      "--set device: device must be one of auto, cpu, cuda, cuda:N, mps, got \"gpu\"\n"
      "configs/x.yaml: missing required key grid.file (ICON grid file, or a CF file with the lat/lon "
      "coordinates)");
}

TEST(Config, RulesOnSeveralKeysSkipKeysThatFailed) {
  // min_steps is unreadable, so "min_steps must not exceed capacity" would judge its default (48)
  // against a capacity of 4: a mistake the user did not make.
  EXPECT_EQ(error_of(std::string(kMinimal) + "train: {min_steps: lots}\nbuffer: {capacity: 4}\n"),
            "configs/x.yaml:4: train.min_steps must be a positive integer, got \"lots\"");
  // Two rules that fail together are both reported.
  const std::string e =
      error_of(std::string(kMinimal) + "train: {min_steps: 60, mixed_precision: true}\ndevice: cpu\n");
  EXPECT_NE(e.find("train.min_steps (60) must not exceed buffer.capacity (48)"), std::string::npos) << e;
  EXPECT_NE(e.find("\nconfigs/x.yaml: train.mixed_precision needs a CUDA device"), std::string::npos) << e;
  // A missing `fields` is reported alone: the write_back rule needs it.
  EXPECT_EQ(error_of("grid: {file: g.nc}\nsample: {write_back: ts}\n").find('\n'), std::string::npos);
}

TEST(Config, OverridesApplyAndAreNamedInErrors) {
  const fp::Config c = fp::parse_config(kMinimal, "m.yaml", {"train.epochs=3", "device=cpu", "checkpoint.resume=ck"});
  EXPECT_EQ(c.train.epochs, 3);
  EXPECT_EQ(c.device, "cpu");
  EXPECT_EQ(c.checkpoint.resume, "ck");
  EXPECT_EQ(error_of(kMinimal, {"train.epochs=many"}),
            "--set train.epochs: train.epochs must be an integer in [1, 10000000], got \"many\"");
  EXPECT_NE(error_of(kMinimal, {"novalue"}).find("expected key.path=value"), std::string::npos);
}

TEST(Config, MissingFileIsNamed) {
  try {
    fp::load_config("/nonexistent/run.yaml");
    FAIL() << "expected ConfigError";
  } catch (const finecast::ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/run.yaml"), std::string::npos);
  }
}

TEST(Config, ResolvedDumpRoundTrips) {
  const fp::Config c =
      fp::parse_config(std::string(kMinimal) + "train: {lr: 3.0e-4}\nsample: {members: 4}\n", "m.yaml");
  const fp::Config again = fp::parse_config(fp::to_yaml(c), "dump.yaml");
  EXPECT_EQ(fp::to_yaml(again), fp::to_yaml(c));
  EXPECT_DOUBLE_EQ(again.train.lr, 3.0e-4);
  EXPECT_EQ(again.sample.members, 4);
  // The lists of names (rows of the conditioning settings), a single name a list of one.
  const fp::Config lists = fp::parse_config(
      std::string(kMinimal) +
          "patch: {residual: regression, static: [fr_land, hsurf], local_slopes: 1, local_slope_static: hsurf}\n",
      "m.yaml");
  EXPECT_EQ(lists.patch.local_slope_static, std::vector<std::string>{"hsurf"});
  const std::string dumped = fp::to_yaml(lists);
  EXPECT_NE(dumped.find("static: [fr_land, hsurf]"), std::string::npos) << dumped;
  EXPECT_EQ(fp::parse_config(dumped, "dump.yaml").patch.statics, (std::vector<std::string>{"fr_land", "hsurf"}));
  // A name with a comma would not read back from a checkpoint's text.
  EXPECT_NE(error_of(std::string(kMinimal) + "patch: {static: ['a,b']}\n").find("patch.static must be"),
            std::string::npos);
}

// configs/reference.yaml documents every key with its default: it must parse, list exactly the
// schema's keys, and its values must equal the parser's defaults (required keys are examples).
TEST(Config, ReferenceYamlAgreesWithTheDefaults) {
  const std::string path = std::string(FINECAST_SOURCE_DIR) + "/configs/reference.yaml";
  const fp::Config ref = fp::load_config(path);

  std::set<std::string> listed;
  const YAML::Node root = YAML::LoadFile(path);
  for (const auto& kv : root) {
    const std::string k = kv.first.as<std::string>();
    if (kv.second.IsMap()) {
      for (const auto& sub : kv.second) listed.insert(k + "." + sub.first.as<std::string>());
    } else {
      listed.insert(k);
    }
  }
  const auto keys = fp::config_keys();
  EXPECT_EQ(listed, std::set<std::string>(keys.begin(), keys.end()));

  fp::Config defaults;
  defaults.source = ref.source;
  defaults.fields = ref.fields;
  defaults.grid.file = ref.grid.file;
  for (const auto& k : fp::required_config_keys()) EXPECT_TRUE(k == "fields" || k == "grid.file") << k;
  EXPECT_EQ(fp::to_yaml(ref), fp::to_yaml(defaults));
}

// configs/reference.yaml is the schema's: every key with its default and its row's comment, as
// `finecast-config --reference` writes it. A new key or comment needs only the schema row; then
// regenerate the file.
TEST(Config, ReferenceYamlIsGeneratedFromTheSchema) {
  const std::string path = std::string(FINECAST_SOURCE_DIR) + "/configs/reference.yaml";
  std::ifstream in(path);
  const std::string committed((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(committed, fp::reference_yaml())
      << "configs/reference.yaml differs from the schema; regenerate it: build/bin/finecast-config --reference > "
         "configs/reference.yaml";
}

// External trainers join the plugin's own communicator; on the host's they could not.
TEST(Config, ExternalTrainersNeedThePluginCommunicator) {
  const std::string base = "fields: [ts]\ngrid: {file: g.nc}\ntrain: {placement: external}\n";
  try {
    fp::parse_config(base, "c.yaml");
    FAIL() << "train.placement external with coupling.communicator host was accepted";
  } catch (const finecast::ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("c.yaml: train.placement external needs coupling.communicator: plugin"),
              std::string::npos)
        << e.what();
  }
  EXPECT_EQ(fp::parse_config(base + "coupling: {communicator: plugin}\n", "c.yaml").train.placement,
            fp::Placement::kExternal);
}

TEST(Config, EntryPointIdsFollowComIn) {
  EXPECT_EQ(fp::entry_point_id("EP_SECONDARY_CONSTRUCTOR"), 1);
  EXPECT_EQ(fp::entry_point_id("EP_ATM_WRITE_OUTPUT_BEFORE"), 17);
  EXPECT_EQ(fp::entry_point_id("EP_DESTRUCTOR"), 42);
  EXPECT_EQ(fp::entry_point_id("EP_NOPE"), -1);
}

// The plugin options string is split like a shell would: quotes keep blanks (a YAML flow value).
TEST(Config, OptionsStringKeepsQuotedValuesWhole) {
  using finecast::plugin::split_options;
  EXPECT_EQ(split_options("  a.yaml  device=cpu "), (std::vector<std::string>{"a.yaml", "device=cpu"}));
  EXPECT_EQ(split_options("a.yaml fields='[{name: temp, level: 90}]' \"checkpoint.dir=a b\""),
            (std::vector<std::string>{"a.yaml", "fields=[{name: temp, level: 90}]", "checkpoint.dir=a b"}));
  EXPECT_EQ(split_options("x=''"), (std::vector<std::string>{"x="}));
  EXPECT_THROW(split_options("a.yaml fields='[ts"), finecast::ConfigError);
}

// The output section: format and deflate level checked, the global attributes kept as given.
TEST(Config, OutputFormatDeflateAndGlobalAttributes) {
  const std::string base = "fields: [ts]\ngrid: {file: g.nc}\n";
  const auto c = finecast::plugin::parse_config(
      base + "output: {format: cdf5, deflate: 0, title: A run, institution: DWD}\n", "out.yaml");
  EXPECT_EQ(c.output.format, finecast::plugin::OutputFormat::kCdf5);
  EXPECT_EQ(c.output.deflate, 0);
  EXPECT_EQ(c.output.title, "A run");
  EXPECT_EQ(c.output.institution, "DWD");
  EXPECT_EQ(finecast::plugin::parse_config(base, "d.yaml").output.format, finecast::plugin::OutputFormat::kNetcdf4);
  for (const char* bad : {"output: {format: hdf5}\n", "output: {deflate: 10}\n"}) {
    try {
      finecast::plugin::parse_config(base + bad, "bad.yaml");
      FAIL() << bad << " was accepted";
    } catch (const finecast::ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find(std::string("output.") + (bad[9] == 'f' ? "format" : "deflate")),
                std::string::npos)
          << e.what();
    }
  }
}

// A field may name one level of a 3-D variable (ICON numbering, 1 = model top).
TEST(Config, FieldsMayNameALevel) {
  const auto c = finecast::plugin::parse_config(
      "fields: [ts, {name: temp, level: 90}]\ngrid: {type: icon, file: g.nc}\n", "levels.yaml");
  EXPECT_EQ(c.fields, (std::vector<std::string>{"ts", "temp"}));
  EXPECT_EQ(c.field_levels, (std::vector<int>{0, 90}));
  const auto again = finecast::plugin::parse_config(finecast::plugin::to_yaml(c), "dump");
  EXPECT_EQ(again.field_levels, c.field_levels);
  EXPECT_THROW(finecast::plugin::parse_config("fields: [{name: temp, level: 0}]\ngrid: {file: g.nc}\n", "x"),
               finecast::ConfigError);
  EXPECT_THROW(finecast::plugin::parse_config("fields: [{level: 3}]\ngrid: {file: g.nc}\n", "x"),
               finecast::ConfigError);
}

TEST(Config, PrequentialCalibrationNeedsAnEnsemble) {
  EXPECT_EQ(error_of(std::string(kMinimal) + "sample: {calibration: prequential, members: 1}\n"),
            "configs/x.yaml: sample.calibration prequential scores the members' spread: it needs sample.members >= 2, "
            "got 1");
  EXPECT_EQ(fp::parse_config(std::string(kMinimal) + "sample: {calibration: prequential, members: 4}\n", "x.yaml", {})
                .sample.calibration,
            fp::Calibration::kPrequential);
  EXPECT_EQ(
      error_of(std::string(kMinimal) + "sample: {calibration: prequential, members: 4, calibration_decay: 1.5}\n"),
      "configs/x.yaml:4: sample.calibration_decay must be a number in [0, 1], got 1.5");
}

TEST(Config, StaticRefreshNeedsStaticCovariates) {
  EXPECT_EQ(error_of(std::string(kMinimal) + "patch: {static_refresh: true}\n"),
            "configs/x.yaml: patch.static_refresh gathers the patch.static fields at every step, but patch.static "
            "lists none");
  const fp::Config c =
      fp::parse_config(std::string(kMinimal) + "patch: {static: [clim], static_refresh: true}\n", "x.yaml", {});
  EXPECT_TRUE(c.patch.static_refresh);
  EXPECT_FALSE(
      fp::parse_config(std::string(kMinimal) + "patch: {static: [clim]}\n", "x.yaml", {}).patch.static_refresh);
}

TEST(Config, RegressionRefitNeedsARegressionBase) {
  EXPECT_EQ(
      error_of(std::string(kMinimal) + "patch: {residual: interp, regression_refit: true}\n"),
      "configs/x.yaml: patch.regression_refit refits the base of patch.residual regression, but patch.residual is "
      "interp");
  EXPECT_TRUE(fp::parse_config(
                  std::string(kMinimal) + "patch: {residual: regression, static: [clim], regression_refit: true}\n",
                  "x.yaml", {})
                  .patch.regression_refit);
}

TEST(Config, GlobalBlendNeedsARegressionFittedOnce) {
  EXPECT_EQ(error_of(std::string(kMinimal) + "patch: {residual: interp, global_blend: 0.5}\n"),
            "configs/x.yaml: patch.global_blend moves the members' mean toward the global regression of "
            "patch.residual regression, but patch.residual is interp");
  // The blend follows the refits (ReplayEndToEnd.RegressionRefitFitsTheBaseOnEveryStep).
  EXPECT_DOUBLE_EQ(
      fp::parse_config(std::string(kMinimal) + "patch: {residual: regression, static: [clim], regression_refit: true, "
                                               "global_blend: 0.5}\n",
                       "x.yaml", {})
          .patch.global_blend,
      0.5);
  EXPECT_NE(error_of(std::string(kMinimal) + "patch: {residual: regression, static: [clim], global_blend: 1.5}\n")
                .find("patch.global_blend"),
            std::string::npos);
  EXPECT_DOUBLE_EQ(
      fp::parse_config(std::string(kMinimal) + "patch: {residual: regression, static: [clim], global_blend: 0.7}\n",
                       "x.yaml", {})
          .patch.global_blend,
      0.7);
  // Off (1) goes with any base.
  EXPECT_DOUBLE_EQ(
      fp::parse_config(std::string(kMinimal) + "patch: {residual: interp, global_blend: 1}\n", "x.yaml", {})
          .patch.global_blend,
      1.0);
  // The global regression's own interpolant: of a regression, and of the grid's kind.
  EXPECT_EQ(error_of(std::string(kMinimal) + "patch: {residual: interp, global_interpolant: linear}\n"),
            "configs/x.yaml: patch.global_interpolant is the interpolant of the global regression of patch.residual "
            "regression, but patch.residual is interp");
  EXPECT_NE(
      error_of(std::string(kMinimal) + "patch: {residual: regression, static: [clim], global_interpolant: bspline}\n")
          .find("patch.global_interpolant bspline interpolates lat-lon blocks, but grid.type is icon"),
      std::string::npos);
  EXPECT_EQ(
      fp::parse_config(std::string(kMinimal) + "patch: {residual: regression, static: [clim], interpolant: idw_linear, "
                                               "global_interpolant: linear, global_blend: 0.75}\n",
                       "x.yaml", {})
          .patch.global_interpolant,
      finecast::coupling::Interpolant::kLinear);
}

TEST(Config, WeightDecayTimesTheLearningRateMustStayBelowOne) {
  EXPECT_EQ(error_of(std::string(kMinimal) + "train: {lr: 0.01, weight_decay: 100}\n"),
            "configs/x.yaml: train.weight_decay (100) times train.lr (0.01) must be below 1: AdamW scales "
            "the weights by 1 - lr x weight_decay at every step");
  EXPECT_EQ(fp::parse_config(std::string(kMinimal) + "train: {lr: 0.001, weight_decay: 3}\n", "x.yaml", {})
                .train.weight_decay,
            3.0);
}

TEST(Config, RegressionResidualNeedsStaticCovariates) {
  EXPECT_EQ(error_of(std::string(kMinimal) + "patch: {residual: regression}\n"),
            "configs/x.yaml: patch.residual regression fits the fine residual on the static covariates: list them "
            "in patch.static (e.g. [topography_c, fr_land]), or use patch.residual: interp");
  const fp::Config c =
      fp::parse_config(std::string(kMinimal) + "patch: {residual: regression, static: [fr_land]}\n", "x.yaml", {});
  EXPECT_EQ(c.patch.residual, fp::Residual::kRegression);
}

// patch.local_slopes adds terms to the regression, so it needs patch.residual regression, and
// its covariates must be among patch.static.
TEST(Config, LocalSlopesNeedTheRegressionAndItsCovariates) {
  EXPECT_EQ(error_of(std::string(kMinimal) + "patch: {residual: interp, local_slopes: 2}\n"),
            "configs/x.yaml: patch.local_slopes adds terms to the regression of patch.residual regression, but "
            "patch.residual is interp");
  EXPECT_EQ(
      error_of(std::string(kMinimal) +
               "patch: {residual: regression, static: [fr_land], local_slopes: 2, local_slope_static: [hsurf]}\n"),
      "configs/x.yaml: patch.local_slope_static: \"hsurf\" is not one of patch.static");
  // Twice would make the first step's fit collinear.
  EXPECT_EQ(error_of(std::string(kMinimal) + "patch: {residual: regression, static: [fr_land, hsurf], local_slopes: 2, "
                                             "local_slope_static: [hsurf, hsurf]}\n"),
            "configs/x.yaml: patch.local_slope_static lists \"hsurf\" twice");
  const fp::Config c = fp::parse_config(
      std::string(kMinimal) +
          "patch: {residual: regression, static: [fr_land, hsurf], local_slopes: 3, local_slope_static: [hsurf]}\n",
      "x.yaml", {});
  EXPECT_EQ(c.patch.local_slopes, 3);
  EXPECT_EQ(c.patch.local_slope_static, std::vector<std::string>{"hsurf"});
  EXPECT_DOUBLE_EQ(c.patch.local_slope_ridge, 0.1);
  // A window over half a 12 x 24 block grid (the time split's choice) is allowed; the bound is
  // that grid's whole extent.
  EXPECT_EQ(
      fp::parse_config(std::string(kMinimal) + "patch: {residual: regression, static: [hsurf], local_slopes: 12}\n",
                       "x.yaml", {})
          .patch.local_slopes,
      12);
  EXPECT_EQ(error_of(std::string(kMinimal) + "patch: {residual: regression, static: [hsurf], local_slopes: 25}\n"),
            "configs/x.yaml:4: patch.local_slopes must be an integer in [0, 24], got 25");
}

// Weak spots a probe found accepted without a word (issue 23): each is now refused at validation
// with an error naming the key (or, for a second YAML document, the line).
TEST(Config, DuplicateFieldsStepsBeyondTheScheduleAutoSpelledMinusOneAndASecondDocumentAreRefused) {
  const std::string grid = "grid: {file: grid.nc}\n";
  EXPECT_NE(error_of("fields: [ts, ts]\n" + grid).find("fields lists \"ts\" twice (entries 1 and 2)"),
            std::string::npos);
  EXPECT_NE(error_of("fields: [{name: temp, level: 3}, {name: temp, level: 3}]\n" + grid)
                .find("fields lists \"temp\" at level 3 twice"),
            std::string::npos);
  EXPECT_EQ(error_of("fields: [{name: temp, level: 3}, {name: temp, level: 4}]\n" + grid), "");  // two levels
  EXPECT_NE(error_of(std::string(kMinimal) + "model: {diffusion_steps: 20}\nsample: {steps: 21}\n")
                .find("sample.steps (21) must not exceed model.diffusion_steps (20)"),
            std::string::npos);
  EXPECT_EQ(error_of(std::string(kMinimal) + "model: {diffusion_steps: 20}\nsample: {steps: 20}\n"), "");
  // DDPM ignores sample.steps.
  EXPECT_EQ(error_of(std::string(kMinimal) + "model: {diffusion_steps: 5}\nsample: {sampler: ddpm}\n"), "");
  EXPECT_EQ(error_of(std::string(kMinimal) + "train: {threads: -1}\n"),
            "configs/x.yaml:4: train.threads must be auto or an integer in [0, 4096], got \"-1\"");
  EXPECT_NE(error_of(std::string(kMinimal) + "sample: {threads: -1}\n").find("sample.threads must be auto or"),
            std::string::npos);
  EXPECT_EQ(fp::parse_config(std::string(kMinimal) + "train: {threads: auto}\n", "t.yaml").train.threads, -1);
  EXPECT_EQ(error_of(std::string(kMinimal) + "---\nsample: {every: 3}\n"),
            "configs/x.yaml:5: a second YAML document (after \"---\"); finecast reads one document per file: put "
            "every key into the first");
  EXPECT_EQ(error_of(std::string("---\n") + kMinimal), "");  // one document, marked
  EXPECT_EQ(error_of(std::string(kMinimal) + "---\n"), "");  // an empty one after it holds nothing
}

// Every key that sizes memory or files has an upper bound, checked at validation.
TEST(Config, SizeKeysHaveUpperBounds) {
  const std::pair<const char*, const char*> too_large[] = {
      {"buffer: {capacity: 10001}", "buffer.capacity must be an integer in [1, 10000]"},
      {"sample: {members: 4097}", "sample.members must be an integer in [1, 4096]"},
      {"model: {hidden: 16385}", "model.hidden must be an integer in [1, 16384]"},
      {"model: {unet_channels: 1025}", "model.unet_channels must be an integer in [1, 1024]"},
      {"train: {batch_size: 1048577}", "train.batch_size must be an integer in [1, 1048576]"},
      {"train: {accumulate: 65537}", "train.accumulate must be an integer in [1, 65536]"},
      {"train: {epochs: 10000001}", "train.epochs must be an integer in [1, 10000000]"},
      {"checkpoint: {keep: 1001}", "checkpoint.keep must be an integer in [1, 1000]"},
      {"grid: {file: g.nc, block: 513}", "grid.block must be an integer in [2, 512]"},
  };
  for (const auto& [yaml, message] : too_large) {
    const std::string text = std::string("fields: [ts]\n") +
                             (std::string(yaml).rfind("grid", 0) == 0 ? "" : "grid: {file: g.nc}\n") + yaml + "\n";
    EXPECT_NE(error_of(text).find(message), std::string::npos) << yaml << ": " << error_of(text);
  }
}

// What finecast-trainer compares its own copy of the config with, and the fingerprint
// checkpoints record.
TEST(Config, DifferencesNameTheKeysAndTheHashFollowsTheText) {
  const fp::Config host = fp::parse_config(
      std::string(kMinimal) + "sample: {every: 2, write_back: ts_finecast}\nmodel: {hidden: 64}\n", "h.yaml");
  const fp::Config trainer =
      fp::parse_config(std::string(kMinimal) + "sample: {every: 3}\nmodel: {hidden: 64}\n", "t.yaml");
  EXPECT_EQ(fp::config_differences(trainer, host), (std::vector<std::string>{"sample.every", "sample.write_back"}));
  EXPECT_TRUE(fp::config_differences(host, host).empty());
  const std::string text = fp::to_yaml(host);
  EXPECT_EQ(fp::config_hash(text), fp::config_hash(fp::to_yaml(fp::parse_config(text, "again.yaml"))));
  EXPECT_NE(fp::config_hash(text), fp::config_hash(fp::to_yaml(trainer)));
  EXPECT_EQ(fp::config_hash(text).size(), 16u);
}

TEST(Config, GridGeometryIsReadAndOverriddenAsFinecastHostAndReplayForwardIt) {
  EXPECT_EQ(fp::parse_config(kMinimal, "m.yaml").grid.geometry, fp::IconGeometry::kFile);
  EXPECT_EQ(fp::parse_config(std::string(kMinimal) + "  geometry: uniform\n", "m.yaml").grid.geometry,
            fp::IconGeometry::kUniform);
  // finecast-host and finecast-replay --geometry append this override to every plugin's options.
  EXPECT_EQ(fp::parse_config(kMinimal, "m.yaml", {"grid.geometry=uniform"}).grid.geometry, fp::IconGeometry::kUniform);
  const std::string e = error_of(std::string(kMinimal) + "  geometry: stretched\n");
  EXPECT_NE(e.find("grid.geometry"), std::string::npos) << e;
  EXPECT_NE(e.find("uniform"), std::string::npos) << e;
}

// grid.geometry describes ICON cells: on a lat-lon grid (whose coordinates are the file's) a
// uniform geometry was accepted and ignored; it is refused naming both keys.
TEST(Config, AUniformGeometryOnALatLonGridIsRefusedNamingBothKeys) {
  const std::string latlon = "fields: [ts]\ngrid: {type: latlon, file: f.nc, block: 8, geometry: uniform}\n";
  const std::string e = error_of(latlon);
  EXPECT_NE(e.find("configs/x.yaml: grid.geometry: uniform applies to ICON grids only, but grid.type is latlon"),
            std::string::npos)
      << e;
  EXPECT_NE(error_of("fields: [ts]\ngrid: {type: latlon, file: f.nc, block: 8}\n", {"grid.geometry=uniform"})
                .find("grid.type is latlon"),
            std::string::npos);
  EXPECT_EQ(error_of("fields: [ts]\ngrid: {type: latlon, file: f.nc, block: 8, geometry: file}\n"), "");
}

// The sampler flags of finecast-downscale and finecast-export (trainer::overridden): each sets its
// own option through its row, the others keep what they were, and a value the row refuses is
// named with the flag's spelling.
TEST(SampleFlags, EachFlagSetsItsOwnOptionThroughItsRow) {
  namespace ft = finecast::trainer;
  ft::SampleOptions base;
  base.sampler = ft::Sampler::kDdpm;
  base.steps = 7;
  base.inflation = 2.5;
  ft::SampleOverrides given;
  EXPECT_EQ(ft::sampling_text(ft::overridden(base, given)), "ddpm, inflation 2.5");
  given.sampler = "ddim";
  given.steps = 3;
  given.eta = 0.5;
  EXPECT_EQ(ft::sampling_text(ft::overridden(base, given)), "ddim 3 steps, eta 0.5, inflation 2.5");
  given = {};
  given.ddpm_variance = "beta";
  given.churn = 0.25;
  given.inflation = 1.0;
  EXPECT_EQ(ft::sampling_text(ft::overridden(base, given)), "ddpm, variance beta, churn 0.25");
  given = {};
  given.recentre_sigma = 16.0;
  EXPECT_EQ(ft::sampling_text(ft::overridden(base, given)), "ddpm, recentred at sigma 16, inflation 2.5");
  given = {};
  given.clip_context = false;
  EXPECT_FALSE(ft::overridden(base, given).clip_context);
  EXPECT_EQ(ft::sampling_text(ft::overridden(base, given)), "ddpm, inflation 2.5, context not clipped");
  given = {};
  given.recentre_sigma = -1.0;
  try {
    ft::overridden(base, given);
    ADD_FAILURE() << "--recentre-sigma -1 was taken";
  } catch (const finecast::schema::BadValue& e) {
    EXPECT_EQ(std::string(e.what()).rfind("--recentre-sigma must be", 0), 0u) << e.what();
  }
  given = {};
  given.ddpm_variance = "wide";
  try {
    ft::overridden(base, given);
    ADD_FAILURE() << "--ddpm-variance wide was taken";
  } catch (const finecast::schema::BadValue& e) {
    EXPECT_EQ(std::string(e.what()).rfind("--ddpm-variance must be one of", 0), 0u) << e.what();
  }
}
