// SPDX-License-Identifier: BSD-3-Clause
// The conditioning spec: its checkpoint record (typed values) round-trips, the text of version 1
// and the string map of checkpoints written before spec_version read back, a newer version, a
// wrongly typed or a bad value is refused naming the key, and a resumed run's spec is compared
// where the model depends on it. (Through a real checkpoint file: tests/plugin/test_downscale.cpp.)
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>
#include <string>

#include "common/error.hpp"
#include "coupling/conditioning/conditioning_pipeline.hpp"
#include "coupling/conditioning/conditioning_spec.hpp"

namespace fc = finecast::coupling;

namespace {

fc::ConditioningSpec ts_spec() {
  fc::ConditioningSpec s;
  s.grid.type = fc::GridType::kIcon;
  s.grid.file = "grid.nc";
  s.patch_size = 256;
  s.fields = {"ts", "ps"};
  s.target = "ts";
  s.target_units = "K";
  s.patch.orography = "topography_c";
  s.patch.context_rings = 2;
  s.patch.relative_context = true;
  s.patch.statics = {"topography_c", "fr_land"};
  s.static_norms = {{300.5, 12.25}, {0.25, 0.5}};
  s.patch.residual = fc::Residual::kRegression;
  s.patch.interpolant = fc::Interpolant::kIdw;  // what a checkpoint without patch.interpolant reads back as on ICON
  s.regression = {0.1, -0.2, 1e-17, 3.0};
  return s;
}

}  // namespace

TEST(ConditioningSpec, CheckpointRecordRoundTrips) {
  fc::ConditioningSpec spec = ts_spec();
  spec.global_regression = {0.25, -0.5, 2.0, 1e-3};
  spec.patch.global_blend = 0.75;
  const finecast::schema::Record record = fc::spec_record(spec);
  EXPECT_EQ(record.size(), fc::conditioning_spec_table().size());
  EXPECT_EQ(record.at("spec_version"), finecast::schema::Value(int64_t{fc::kConditioningSpecVersion}));
  EXPECT_EQ(record.at("patch.size"), finecast::schema::Value(int64_t{256}));
  EXPECT_EQ(record.at("patch.relative_context"), finecast::schema::Value(int64_t{1}));
  EXPECT_EQ(record.at("fields"), finecast::schema::Value(std::vector<std::string>{"ts", "ps"}));
  EXPECT_EQ(record.at("patch.residual"), finecast::schema::Value(std::string("regression")));
  EXPECT_EQ(record.at("patch.static_norm"), finecast::schema::Value(std::vector<double>{300.5, 12.25, 0.25, 0.5}));
  EXPECT_EQ(record.at("patch.regression"), finecast::schema::Value(std::vector<double>{0.1, -0.2, 1e-17, 3.0}));
  const fc::StoredSpec back = fc::read_spec(record, {}, "ck.h5");
  EXPECT_EQ(back.version, fc::kConditioningSpecVersion);
  EXPECT_EQ(fc::spec_record(back.spec), record);
  EXPECT_EQ(back.spec.static_norms.size(), 2u);
  EXPECT_EQ(back.spec.static_norms[1].scale, 0.5);
  EXPECT_EQ(back.spec.regression[2], 1e-17);
  EXPECT_TRUE(back.has("grid.coarse_level"));
  EXPECT_EQ(fc::resume_differences(back, spec, "run.yaml"), "");
  const fc::PatchOptions o = fc::patch_options(back.spec);
  EXPECT_EQ(o.target, 0);
  EXPECT_EQ(o.n_static, 2);
  EXPECT_TRUE(o.interp_base);
  EXPECT_TRUE(o.orography);
  EXPECT_EQ(o.regression.size(), 4u);
  EXPECT_EQ(o.global_regression, (std::vector<double>{0.25, -0.5, 2.0, 1e-3}));
  EXPECT_EQ(o.global_blend, 0.75);
}

// Version 1: the text in /metadata, as the build before the /conditioning group wrote ts_spec().
TEST(ConditioningSpec, ReadsVersionOneText) {
  const std::map<std::string, std::string> v1{
      {"spec_version", "1"},
      {"grid.type", "icon"},
      {"grid.file", "grid.nc"},
      {"grid.variable", ""},
      {"grid.coarse_level", "0"},
      {"grid.block", "16"},
      {"patch.size", "256"},
      {"fields", "ts,ps"},
      {"target", "ts"},
      {"target_units", "K"},
      {"patch.static_features", "true"},
      {"patch.orography", "topography_c"},
      {"patch.context_rings", "2"},
      {"patch.relative_context", "true"},
      {"patch.residual", "regression"},
      {"patch.static", "topography_c,fr_land"},
      {"patch.static_norm", "300.5 12.25;0.25 0.5"},
      {"patch.regression", "0.10000000000000001,-0.20000000000000001,1.0000000000000001e-17,3"},
      {"sessions", "3"}};
  const fc::StoredSpec s = fc::read_spec(std::nullopt, v1, "v1.h5");
  EXPECT_EQ(s.version, 1);
  EXPECT_EQ(fc::spec_record(s.spec), fc::spec_record(ts_spec()));
  for (const auto& [key, text] : v1) {
    if (key != "spec_version" && key != "sessions") {
      EXPECT_TRUE(s.has(key)) << key;
    }
  }
  // A group, when there is one, is what counts: the text beside it is not read.
  EXPECT_EQ(fc::read_spec(fc::spec_record(fc::ConditioningSpec{}), v1, "v2.h5").spec.target, "");
}

// The string map checkpoints held before spec_version, as the plugin wrote it (`fields` held only
// the target, `context_fields` every field) and as the tests' hand-made checkpoints hold parts of it.
TEST(ConditioningSpec, ReadsTheOlderStringMap) {
  const std::map<std::string, std::string> v0{{"fields", "ps"},
                                              {"target", "ps"},
                                              {"context_fields", "ts,ps"},
                                              {"patch.static_features", "false"},
                                              {"patch.orography", ""},
                                              {"patch.context_rings", "1"},
                                              {"patch.relative_context", "false"},
                                              {"patch.residual", "interp"},
                                              {"patch.static", ""},
                                              {"patch.static_norm", ""},
                                              {"patch.regression", ""},
                                              {"sessions", "3"}};
  const fc::StoredSpec s = fc::read_spec(v0, "old.h5");
  EXPECT_EQ(s.version, 0);
  EXPECT_EQ(s.spec.fields, (std::vector<std::string>{"ts", "ps"}));
  EXPECT_EQ(s.spec.target, "ps");
  EXPECT_EQ(fc::patch_options(s.spec).target, 1);
  EXPECT_FALSE(s.spec.patch.static_features);
  EXPECT_EQ(s.spec.patch.context_rings, 1);
  EXPECT_EQ(s.spec.patch.residual, fc::Residual::kInterp);
  EXPECT_TRUE(s.has("patch.orography"));
  EXPECT_FALSE(s.has("grid.type"));
  EXPECT_FALSE(s.has("target_units"));

  // Only part of it (a checkpoint saved by hand), or nothing: the defaults, marked as not recorded.
  const fc::StoredSpec partial = fc::read_spec({{"patch.orography", ""}}, "plain.h5");
  EXPECT_TRUE(partial.has("patch.orography"));
  EXPECT_FALSE(partial.has("patch.static_features"));
  EXPECT_FALSE(partial.has("fields"));
  EXPECT_TRUE(fc::read_spec({}, "none.h5").keys.empty());
}

TEST(ConditioningSpec, RefusesNewerVersionsAndBadValuesNamingTheKey) {
  auto message = [](const std::map<std::string, std::string>& meta) {
    try {
      fc::read_spec(meta, "ck.h5");
    } catch (const finecast::CheckpointError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_NE(message({{"spec_version", "99"}}).find("ck.h5: conditioning spec_version 99"), std::string::npos);
  EXPECT_NE(message({{"patch.context_rings", "two"}}).find("ck.h5: patch.context_rings must be"), std::string::npos);
  EXPECT_NE(
      message({{"patch.residual", "cubic"}}).find("ck.h5: patch.residual must be one of mean, interp, regression"),
      std::string::npos);
  EXPECT_NE(message({{"spec_version", "1"}, {"patch.static", "a"}, {"patch.regression", "1,2,3"}})
                .find("patch.regression holds 3 coefficient(s), expected 2"),
            std::string::npos);
  EXPECT_NE(message({{"spec_version", "2"}}).find("ck.h5: /metadata holds spec_version 2, expected 0 or 1"),
            std::string::npos);
  // The global regression has no local-slope terms: 2 coefficients per covariate.
  EXPECT_NE(message({{"spec_version", "1"},
                     {"patch.static", "a"},
                     {"patch.regression", "1,2"},
                     {"patch.global_regression", "1,2,3"}})
                .find("ck.h5: patch.global_regression holds 3 coefficient(s), expected 2"),
            std::string::npos);
}

namespace {

/// What read_spec says of ts_spec()'s record with `key` set to `value` ("" when it reads it).
std::string read_error(const std::string& key, const finecast::schema::Value& value) {
  finecast::schema::Record group = fc::spec_record(ts_spec());
  group[key] = value;
  try {
    fc::read_spec(group, {}, "ck.h5");
  } catch (const finecast::CheckpointError& e) {
    return std::string(e.what());
  }
  return std::string();
}

}  // namespace

// Version 2: each attribute of /conditioning must have its row's type and pass its row's checks.
TEST(ConditioningSpec, RefusesWronglyTypedAttributesNamingThem) {
  const auto message = read_error;
  EXPECT_EQ(message("patch.size", 256.0), "ck.h5: /conditioning patch.size is a real number, expected an integer");
  EXPECT_EQ(message("patch.regression", std::vector<std::string>{"0.1"}),
            "ck.h5: /conditioning patch.regression is a string array, expected a real array");
  EXPECT_EQ(message("fields", std::string("ts,ps")),
            "ck.h5: /conditioning fields is a string, expected a string array");
  EXPECT_EQ(message("patch.relative_context", std::string("true")),
            "ck.h5: /conditioning patch.relative_context is a string, expected an integer");
  EXPECT_NE(message("patch.relative_context", int64_t{2}).find("patch.relative_context must be 0 or 1"),
            std::string::npos);
  EXPECT_NE(message("patch.context_rings", int64_t{9}).find("/conditioning patch.context_rings must be"),
            std::string::npos);
  EXPECT_NE(message("patch.static_norm", std::vector<double>{1, 2, 3}).find("patch.static_norm must be (mean, scale)"),
            std::string::npos);
  EXPECT_NE(message("patch.static_norm", std::vector<double>{1, 0, 3, 1}).find("patch.static_norm must be"),
            std::string::npos);
  EXPECT_NE(message("spec_version", int64_t{3}).find("ck.h5: conditioning spec_version 3, but this build reads 0 to 2"),
            std::string::npos);
  EXPECT_EQ(message("spec_version", 2.0), "ck.h5: /conditioning spec_version is a real number, expected an integer");
  finecast::schema::Record unversioned = fc::spec_record(ts_spec());
  unversioned.erase("spec_version");
  EXPECT_THROW(fc::read_spec(unversioned, {}, "ck.h5"), finecast::CheckpointError);
}

// The settable keys are the config's rows (conditioning_settings_table, which the plugin's config
// takes in) with the same rules; each row says whether a resume compares it.
TEST(ConditioningSpec, TheSettingsAreTheSpecsRowsAndFlagWhatAResumeCompares) {
  const auto& spec = fc::conditioning_spec_table();
  for (const auto& row : fc::conditioning_settings_table()) {
    const auto it = std::find_if(spec.begin(), spec.end(), [&](const auto& f) { return f.key == row.key; });
    ASSERT_NE(it, spec.end()) << row.key;
    EXPECT_EQ(it->rule, row.rule) << row.key;
    EXPECT_EQ(it->resume_compares, row.resume_compares) << row.key;
  }
  std::set<std::string> compared;
  for (const auto& f : spec)
    if (f.resume_compares) compared.insert(f.key);
  EXPECT_EQ(compared, (std::set<std::string>{
                          "grid.type", "grid.geometry", "patch.size", "fields", "target", "target_units",
                          "patch.static_features", "patch.orography", "patch.context_rings", "patch.relative_context",
                          "patch.residual", "patch.interpolant", "patch.static", "patch.local_slopes",
                          "patch.local_slope_ridge", "patch.local_slope_static", "patch.global_interpolant"}));
}

// One range for the config and the checkpoint: what a config may set is what a checkpoint may hold
// (finecast-downscale's -1 and 0, "from the patch size", never pass through the rows).
TEST(ConditioningSpec, GridRangesAreTheConfigs) {
  auto message = [](const std::string& key, int64_t value) { return read_error(key, value); };
  EXPECT_EQ(message("grid.coarse_level", -1),
            "ck.h5: /conditioning grid.coarse_level must be an integer in [0, 20], got -1");
  EXPECT_EQ(message("grid.block", 0), "ck.h5: /conditioning grid.block must be an integer in [2, 512], got 0");
  EXPECT_EQ(message("grid.block", 1024), "ck.h5: /conditioning grid.block must be an integer in [2, 512], got 1024");
  EXPECT_EQ(message("grid.block", 512), "");
}

// The config's local-slope rule, on what a checkpoint recorded.
TEST(ConditioningSpec, RefusesLocalSlopeSettingsTheConfigRefuses) {
  auto message = [](const std::string& key, const finecast::schema::Value& value) {
    finecast::schema::Record group = fc::spec_record(ts_spec());
    group[key] = value;
    group.erase("patch.regression");
    try {
      fc::read_spec(group, {}, "ck.h5");
    } catch (const finecast::CheckpointError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_EQ(message("patch.local_slope_static", std::vector<std::string>{"hsurf"}),
            "ck.h5: patch.local_slope_static: \"hsurf\" is not one of patch.static");
  EXPECT_EQ(message("patch.local_slope_static", std::vector<std::string>{"fr_land", "fr_land"}),
            "ck.h5: patch.local_slope_static lists \"fr_land\" twice");
  EXPECT_EQ(message("patch.local_slope_static", std::vector<std::string>{"fr_land"}), "");
  fc::ConditioningSpec interp = ts_spec();
  interp.patch.residual = fc::Residual::kInterp;
  interp.patch.local_slopes = 2;
  interp.regression.clear();
  try {
    fc::read_spec(fc::spec_record(interp), {}, "ck.h5");
    FAIL() << "local slopes without the regression were read";
  } catch (const finecast::CheckpointError& e) {
    EXPECT_EQ(std::string(e.what()),
              "ck.h5: patch.local_slopes adds terms to the regression of patch.residual regression, but "
              "patch.residual is interp");
  }
}

// A checkpoint trained on ts resumed by a run configured with ps: the difference names both fields
// and both units; what a model does not depend on (file names, learned parts) is not compared.
TEST(ConditioningSpec, ResumeComparesFieldsUnitsAndContext) {
  fc::ConditioningSpec ts;
  ts.fields = {"ts"};
  ts.target = "ts";
  ts.target_units = "K";
  ts.patch_size = 256;
  const fc::StoredSpec stored = fc::read_spec(fc::spec_record(ts), {}, "ck.h5");
  fc::ConditioningSpec ps = ts;
  ps.fields = {"ps"};
  ps.target = "ps";
  ps.target_units = "Pa";
  EXPECT_EQ(fc::resume_differences(stored, ps, "run.yaml"),
            "fields: the checkpoint has ts, run.yaml has ps; target: the checkpoint has ts, run.yaml has ps; "
            "target_units: the checkpoint has K, run.yaml has Pa");
  fc::ConditioningSpec moved = ts;
  moved.grid.file = "elsewhere/grid.nc";
  moved.static_norms = {{1, 2}};
  moved.target_units = "";  // a host that does not say
  EXPECT_EQ(fc::resume_differences(stored, moved, "run.yaml"), "");
  fc::ConditioningSpec rings = ts;
  rings.patch.context_rings = 1;
  rings.patch.residual = fc::Residual::kInterp;
  EXPECT_EQ(fc::resume_differences(stored, rings, "run.yaml"),
            "patch.context_rings: the checkpoint has 0, run.yaml has 1; patch.residual: the checkpoint has mean, "
            "run.yaml has interp");
  // An older checkpoint compares only what it recorded.
  EXPECT_EQ(fc::resume_differences(fc::read_spec({{"target", "ts"}}, "old.h5"), ps, "run.yaml"),
            "target: the checkpoint has ts, run.yaml has ps");
}

// patch.interpolant: a checkpoint written before it existed used the grid's interpolant of that
// time, and reads back with it, so that resuming it with another interpolant is refused.
TEST(ConditioningSpec, CheckpointsWithoutAnInterpolantReadBackTheOneTheyUsed) {
  fc::ConditioningSpec latlon;
  latlon.grid.type = fc::GridType::kLatLon;
  latlon.fields = {"tas"};
  latlon.target = "tas";
  latlon.patch.residual = fc::Residual::kInterp;
  latlon.patch.interpolant = fc::Interpolant::kBspline;
  finecast::schema::Record record = fc::spec_record(latlon);
  EXPECT_EQ(record.at("patch.interpolant"), finecast::schema::Value(std::string("bspline")));
  EXPECT_EQ(fc::read_spec(record, {}, "new.h5").spec.patch.interpolant, fc::Interpolant::kBspline);
  record.erase("patch.interpolant");
  const fc::StoredSpec old = fc::read_spec(record, {}, "old.h5");
  EXPECT_EQ(old.spec.patch.interpolant, fc::Interpolant::kBicubic);
  EXPECT_EQ(fc::resume_differences(old, latlon, "run.yaml"),
            "patch.interpolant: the checkpoint has bicubic, run.yaml has bspline");
  // patch.global_interpolant likewise: a checkpoint without it blended toward its base's own, so
  // another one is refused; naming the base's own is the same as auto.
  fc::ConditioningSpec own = latlon;
  own.patch.interpolant = fc::Interpolant::kBicubic;
  own.patch.global_interpolant = fc::Interpolant::kBspline;
  EXPECT_EQ(fc::resume_differences(old, own, "run.yaml"),
            "patch.global_interpolant: the checkpoint has auto, run.yaml has bspline");
  own.patch.global_interpolant = fc::Interpolant::kBicubic;
  EXPECT_EQ(fc::resume_differences(old, own, "run.yaml"), "");
  fc::ConditioningSpec icon = latlon;
  icon.grid.type = fc::GridType::kIcon;
  icon.patch.interpolant = fc::Interpolant::kIdw;
  record = fc::spec_record(icon);
  record.erase("patch.interpolant");
  EXPECT_EQ(fc::read_spec(record, {}, "old.h5").spec.patch.interpolant, fc::Interpolant::kIdw);
  // Version 0 did not record the grid type: auto, resolved once the grid is known.
  EXPECT_EQ(fc::read_spec({{"target", "ts"}}, "v0.h5").spec.patch.interpolant, fc::Interpolant::kAuto);
}

// The plugin's samplings and finecast-downscale's steps use one seed sequence.
TEST(ConditioningPipeline, SamplingSeedsFollowOneSequence) {
  EXPECT_EQ(fc::sampling_seed(42, 1), 42u + 7919u);
  EXPECT_EQ(fc::sampling_seed(42, 3, 2), 42u + 3u * 7919u + 2u * 1000003u);
}
