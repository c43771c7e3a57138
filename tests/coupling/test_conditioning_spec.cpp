// SPDX-License-Identifier: BSD-3-Clause
// The conditioning spec: its checkpoint record round-trips, the string map of checkpoints written
// before spec_version reads back, a newer version or a bad value is refused naming the key, and a
// resumed run's spec is compared where the model depends on it.
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "common/error.hpp"
#include "coupling/conditioning/conditioning_pipeline.hpp"
#include "coupling/conditioning/conditioning_spec.hpp"

namespace fc = finecast::coupling;

namespace {

fc::ConditioningSpec ts_spec() {
  fc::ConditioningSpec s;
  s.grid_type = fc::GridType::kIcon;
  s.grid_file = "grid.nc";
  s.patch_size = 256;
  s.fields = {"ts", "ps"};
  s.target = "ts";
  s.target_units = "K";
  s.orography = "topography_c";
  s.context_rings = 2;
  s.relative_context = true;
  s.statics = {"topography_c", "fr_land"};
  s.static_norms = {{300.5, 12.25}, {0.25, 0.5}};
  s.residual = fc::Residual::kRegression;
  s.regression = {0.1, -0.2, 1e-17, 3.0};
  return s;
}

}  // namespace

TEST(ConditioningSpec, CheckpointRecordRoundTrips) {
  const fc::ConditioningSpec spec = ts_spec();
  const auto meta = fc::spec_metadata(spec);
  EXPECT_EQ(meta.at("spec_version"), std::to_string(fc::kConditioningSpecVersion));
  EXPECT_EQ(meta.at("fields"), "ts,ps");
  EXPECT_EQ(meta.at("patch.residual"), "regression");
  const fc::StoredSpec back = fc::read_spec(meta, "ck.h5");
  EXPECT_EQ(back.version, fc::kConditioningSpecVersion);
  EXPECT_EQ(fc::spec_metadata(back.spec), meta);
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
  EXPECT_FALSE(s.spec.static_features);
  EXPECT_EQ(s.spec.context_rings, 1);
  EXPECT_EQ(s.spec.residual, fc::Residual::kInterp);
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
}

// A checkpoint trained on ts resumed by a run configured with ps: the difference names both fields
// and both units; what a model does not depend on (file names, learned parts) is not compared.
TEST(ConditioningSpec, ResumeComparesFieldsUnitsAndContext) {
  fc::ConditioningSpec ts;
  ts.fields = {"ts"};
  ts.target = "ts";
  ts.target_units = "K";
  ts.patch_size = 256;
  const fc::StoredSpec stored = fc::read_spec(fc::spec_metadata(ts), "ck.h5");
  fc::ConditioningSpec ps = ts;
  ps.fields = {"ps"};
  ps.target = "ps";
  ps.target_units = "Pa";
  EXPECT_EQ(fc::resume_differences(stored, ps, "run.yaml"),
            "fields: the checkpoint has ts, run.yaml has ps; target: the checkpoint has ts, run.yaml has ps; "
            "target_units: the checkpoint has K, run.yaml has Pa");
  fc::ConditioningSpec moved = ts;
  moved.grid_file = "elsewhere/grid.nc";
  moved.static_norms = {{1, 2}};
  moved.target_units = "";  // a host that does not say
  EXPECT_EQ(fc::resume_differences(stored, moved, "run.yaml"), "");
  fc::ConditioningSpec rings = ts;
  rings.context_rings = 1;
  rings.residual = fc::Residual::kInterp;
  EXPECT_EQ(fc::resume_differences(stored, rings, "run.yaml"),
            "patch.context_rings: the checkpoint has 0, run.yaml has 1; patch.residual: the checkpoint has mean, "
            "run.yaml has interp");
  // An older checkpoint compares only what it recorded.
  EXPECT_EQ(fc::resume_differences(fc::read_spec({{"target", "ts"}}, "old.h5"), ps, "run.yaml"),
            "target: the checkpoint has ts, run.yaml has ps");
}

// The plugin's samplings and finecast-downscale's steps use one seed sequence.
TEST(ConditioningPipeline, SamplingSeedsFollowOneSequence) {
  EXPECT_EQ(fc::sampling_seed(42, 1), 42u + 7919u);
  EXPECT_EQ(fc::sampling_seed(42, 3, 2), 42u + 3u * 7919u + 2u * 1000003u);
}
