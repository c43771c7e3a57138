// SPDX-License-Identifier: BSD-3-Clause
// finecast-export: the TorchScript module of a trained checkpoint reproduces the trainer's own
// denoiser and sampler for the same inputs and noise (MLP, U-Net, graph denoiser; DDIM with and
// without eta, DDPM), loaded back with torch::jit::load here and with Debian's Python
// (tests/trainer/export_check.py, which runs docs/export.md's example).
#include <ATen/CPUGeneratorImpl.h>
#include <gtest/gtest.h>
#include <torch/script.h>
#include <torch/torch.h>

#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include "tests/trainer/random_rows.hpp"
#include "tests/trainer/trainer_test_data.hpp"
#include "trainer/checkpoint.hpp"
#include "trainer/downscaler.hpp"
#include "trainer/downscaler_impl.hpp"
#include "trainer/torchscript_export.hpp"

namespace ft = finecast::trainer;

namespace {

constexpr double kTolerance = 1e-5;

using Data = ft::testing::RandomRows;

torch::Tensor blob(std::vector<float>& v, std::vector<int64_t> shape) {
  return torch::from_blob(v.data(), shape, torch::kFloat32).clone();
}

double max_abs(const torch::Tensor& a, const torch::Tensor& b) { return (a - b).abs().max().item<double>(); }

class Export : public ::testing::Test {
 protected:
  ft::testing::ScratchDir scratch_{"export_test"};

  /// A model of `mo` trained for one short epoch on random data, saved and loaded back on the
  /// CPU as finecast-downscale loads it.
  ft::Downscaler trained(const ft::ModelOptions& mo, bool force_autograd) {
    ft::TrainOptions to;
    to.batch_size = 16;
    to.warmup_steps = 2;
    to.seed = 9;
    to.force_autograd = force_autograd;
    ft::Downscaler d(mo, to, "cpu");
    const Data data(mo, 48, 3);
    d.train_epoch(data.view());
    d.publish();
    const std::string path = scratch_.path("model.h5");
    d.save_checkpoint(path, metadata());
    return ft::Downscaler::load_checkpoint(path, "cpu");
  }

  static std::map<std::string, std::string> metadata() {
    return {{"context_fields", "tas"}, {"target", "tas"}, {"patch.residual", "mean"}};
  }

  /// Exports `model`, loads the file back and checks forward() and denoise() against the
  /// trainer's sample() and network; returns the worst differences. The patches' contexts are
  /// random, times `context_scale` (3: some beyond the training range).
  std::pair<double, double> compare(const ft::Downscaler& model, const ft::SampleOptions& so, bool with_weights,
                                    float context_scale = 1.0f) {
    const ft::ModelOptions& mo = model.model_options();
    ft::ExportOptions eo;
    eo.sample = so;
    eo.metadata = metadata();
    const std::string file = scratch_.path("downscaler.pt");
    ft::export_torchscript(model, eo, file);
    torch::jit::Module m = torch::jit::load(file);

    const int64_t n = 5, M = so.members, P = mo.patch_size;
    Data in(mo, n, 11);
    for (auto& v : in.context) v *= context_scale;
    for (auto& v : in.coarse) v *= context_scale;  // the context's coarse value, as forward() takes it
    if (context_scale > 2.0f) EXPECT_GT(model.rows_beyond_training_range(in.context.data(), n, 0.0), 0);
    const uint64_t seed = 77;
    std::vector<float> expected(static_cast<size_t>(n * M * P));
    model.sample(in.context.data(), in.coarse.data(), with_weights ? in.weights.data() : nullptr, n, so, seed,
                 expected.data());
    // The noise sample() draws for the seed.
    auto noise_values = ft::export_noise(mo, so, n, seed);
    auto noise = torch::from_blob(noise_values.data(), {ft::export_noise_draws(mo, so), n * M, P}, torch::kFloat32);
    auto gen = at::make_generator<at::CPUGeneratorImpl>(seed);
    auto ctx = blob(in.context, {n, mo.context_size});
    std::vector<torch::jit::IValue> args{ctx, noise};
    torch::jit::Kwargs kw;
    if (with_weights) kw["weights"] = blob(in.weights, {n, P});
    auto fine = m.get_method("forward")(args, kw).toTensor();
    EXPECT_EQ(fine.sizes().vec(), (std::vector<int64_t>{n, M, P}));
    const double sample_diff = max_abs(fine, blob(expected, {n, M, P}));

    // The denoiser alone, on normalised inputs, against the sampling network.
    auto x = torch::randn({n, P}, gen);
    auto t = torch::tensor(std::vector<int64_t>{0, 3, 7, mo.diffusion_steps - 1, 1});
    auto norm_ctx = m.get_method("normalise_context")({ctx}).toTensor();
    auto out = m.get_method("denoise")({x, t, norm_ctx}).toTensor();
    const auto& im = ft::internals(model);
    torch::Tensor ref;
    {
      torch::NoGradGuard no_grad;
      // The context as the sampler takes it: held near its training range (sample.clip_context).
      const auto held = so.clip_context ? ft::clip_to_training_range(ctx, im.sample_norm, so.clip_margin) : ctx;
      ref = im.sample_net->forward(x, (held - im.sample_norm.context_mean) / im.sample_norm.context_std, t);
    }
    const double denoise_diff = max_abs(out, ref);
    std::printf("[export] %s %s %lld steps eta %.1f inflation %.2f range %.1f weights %d: forward %.3g, denoise %.3g\n",
                ft::name(mo.arch).c_str(), ft::name(so.sampler).c_str(), static_cast<long long>(so.steps), so.eta,
                so.inflation, so.inflation_range, with_weights ? 1 : 0, sample_diff, denoise_diff);
    return {sample_diff, denoise_diff};
  }
};

ft::SampleOptions ddim(int64_t steps, double eta) {
  ft::SampleOptions so;
  so.sampler = ft::Sampler::kDdim;
  so.steps = steps;
  so.eta = eta;
  so.members = 3;
  return so;
}

}  // namespace

TEST_F(Export, MlpModuleReproducesTheSamplerAndTheDenoiser) {
  ft::Downscaler model = trained(ft::testing::tiny_mlp(), /*force_autograd=*/true);
  ft::SampleOptions ddpm = ddim(10, 0.0);
  ddpm.sampler = ft::Sampler::kDdpm;
  // A fitted spread inflation (sample.inflation) is applied by forward as sample() applies it.
  ft::SampleOptions inflated = ddpm;
  inflated.inflation = 1.7;
  // And per patch by the context's excess over the training range (sample.inflation_range), on
  // contexts that leave the range.
  ft::SampleOptions ranged = inflated;
  ranged.inflation_range = 0.8;
  for (const auto& so : {ddim(10, 0.0), ddim(5, 0.7), ddpm, inflated, ranged})
    for (bool weights : {false, true}) {
      const auto [sample_diff, denoise_diff] = compare(model, so, weights, so.inflation_range > 0 ? 3.0f : 1.0f);
      EXPECT_LT(sample_diff, kTolerance) << ft::name(so.sampler) << " eta " << so.eta << " weights " << weights;
      EXPECT_LT(denoise_diff, kTolerance);
    }
}

TEST_F(Export, MatchesTheFusedCpuSamplerToItsOwnTolerance) {
  // sample() of an MLP on the CPU runs the fused path (where the build has a CBLAS), whose
  // arithmetic order differs from autograd's; docs/training.md gives it 1e-5 of the field's scale.
  ft::Downscaler model = trained(ft::testing::tiny_mlp(), /*force_autograd=*/false);
  const auto [sample_diff, denoise_diff] = compare(model, ddim(10, 0.0), true);
  EXPECT_LT(sample_diff, 1e-4);
  EXPECT_LT(denoise_diff, kTolerance);
}

TEST_F(Export, UnetWithAttentionAndCovariatesReproducesTheSampler) {
  ft::ModelOptions o = ft::testing::tiny_mlp();
  o.arch = ft::Arch::kUnet;
  o.unet_channels = 4;
  o.attention = true;
  o.static_channels = 2;
  o.context_size = 3 + 2 * o.patch_size;
  ft::Downscaler model = trained(o, true);
  const auto [sample_diff, denoise_diff] = compare(model, ddim(4, 0.5), true);
  EXPECT_LT(sample_diff, kTolerance);
  EXPECT_LT(denoise_diff, kTolerance);
}

TEST_F(Export, GraphDenoiserWithCovariatesReproducesTheSampler) {
  ft::ModelOptions o = ft::testing::tiny_mlp();
  o.arch = ft::Arch::kGraph;
  o.unet_channels = 4;
  o.static_channels = 2;
  o.context_size = 3 + 2 * o.patch_size;
  o.activation = ft::Activation::kGelu;
  o.objective = ft::Objective::kEps;
  ft::Downscaler model = trained(o, true);
  const auto [sample_diff, denoise_diff] = compare(model, ddim(4, 0.0), true);
  EXPECT_LT(sample_diff, kTolerance);
  EXPECT_LT(denoise_diff, kTolerance);
}

TEST_F(Export, ForwardNamesWhatItMisses) {
  ft::Downscaler model = trained(ft::testing::tiny_mlp(), true);
  ft::ExportOptions eo;
  eo.sample = ddim(10, 0.0);
  eo.metadata = {{"context_fields", "tas"}, {"target", "tas"}, {"patch.relative_context", "true"}};
  const std::string file = scratch_.path("relative.pt");
  ft::export_torchscript(model, eo, file);
  torch::jit::Module m = torch::jit::load(file);
  EXPECT_EQ(m.attr("coarse_slot").toInt(), -1);
  auto message = [&](const std::vector<torch::jit::IValue>& args) -> std::string {
    try {
      m.forward(args);
    } catch (const std::exception& e) {  // the interpreter's errors are not all c10::Error
      return e.what();
    }
    return "";
  };
  auto ctx = torch::randn({2, 3});
  EXPECT_NE(message({ctx, torch::randn({1, 4, 16})}).find("pass coarse=[N]"), std::string::npos);
  EXPECT_NE(message({ctx, torch::randn({2, 4, 16})}).find("noise must be [noise_draws"), std::string::npos);
  EXPECT_NE(message({torch::randn({2, 5}), torch::randn({1, 4, 16})}).find("context must be [N, context_size]"),
            std::string::npos);
  // With the coarse value given, the patch means are kept exactly (conservation).
  auto coarse = torch::tensor(std::vector<float>{1.5f, -2.0f});
  auto fine = m.forward({ctx, torch::randn({1, 4, 16}), coarse}).toTensor();
  EXPECT_LT((fine.mean(2) - coarse.unsqueeze(1)).abs().max().item<double>(), 1e-5);
}

// A checkpoint whose conditioning spec is the typed group /conditioning (the plugin's, spec_version
// 2): finecast-export reads the fields, target and context from it as it reads the older text.
TEST_F(Export, ProgramReadsTheConditioningGroup) {
  using finecast::schema::Value;
  const ft::Downscaler model = trained(ft::testing::tiny_mlp(), true);
  const std::string checkpoint = scratch_.path("typed.h5"), file = scratch_.path("typed.pt");
  const finecast::schema::Record spec{
      {"spec_version", Value(int64_t{2})},          {"fields", Value(std::vector<std::string>{"tas", "ps", "ts"})},
      {"target", Value(std::string("ps"))},         {"patch.static", Value(std::vector<std::string>{})},
      {"patch.static_features", Value(int64_t{0})}, {"patch.relative_context", Value(int64_t{0})},
      {"patch.orography", Value(std::string())},    {"patch.residual", Value(std::string("interp"))}};
  model.save_checkpoint(checkpoint, {{"units", "Pa"}}, {{"conditioning", spec}});
  const std::string exe = std::string(FINECAST_BINARY_DIR) + "/bin/finecast-export";
  ASSERT_EQ(std::system((exe + " --checkpoint " + checkpoint + " --output " + file + " --log-level warning").c_str()),
            0);
  torch::jit::Module m = torch::jit::load(file);
  const auto variables = m.attr("variables").toList();
  ASSERT_EQ(variables.size(), 3u);
  EXPECT_EQ(variables.get(1).toStringRef(), "ps");
  EXPECT_EQ(m.attr("target").toStringRef(), "ps");
  EXPECT_EQ(m.attr("residual").toStringRef(), "interp");
  EXPECT_EQ(m.attr("units").toStringRef(), "Pa");
  EXPECT_EQ(m.attr("coarse_slot").toInt(), 1);  // one value per field, ps second
  const auto all = m.attr("metadata").toGenericDict();
  EXPECT_EQ(all.at("fields").toStringRef(), "tas,ps,ts");
  EXPECT_EQ(all.at("spec_version").toStringRef(), "2");
}

// The conditioning the module needs, read by type from the typed group (lists as arrays, flags as
// 0/1) and from the text of older checkpoints alike; a value of another type in the group is an
// error naming the file, the key and the type expected (no text round trip to hide it).
TEST(ExportConditioning, TheTypedGroupIsReadByTypeAndOlderTextAlike) {
  using finecast::schema::Value;
  const finecast::schema::Record group{{"fields", Value(std::vector<std::string>{"tas", "ps"})},
                                       {"target", Value(std::string("ps"))},
                                       {"patch.static", Value(std::vector<std::string>{"HSURF"})},
                                       {"patch.static_features", Value(int64_t{1})},
                                       {"patch.relative_context", Value(int64_t{0})},
                                       {"patch.orography", Value(std::string("topography_c"))},
                                       {"patch.residual", Value(std::string("regression"))}};
  const ft::ExportConditioning typed = ft::export_conditioning(group, "new.h5");
  const ft::ExportConditioning text =
      ft::export_conditioning(std::map<std::string, std::string>{{"fields", "tas,ps"},
                                                                 {"target", "ps"},
                                                                 {"patch.static", "HSURF"},
                                                                 {"patch.static_features", "true"},
                                                                 {"patch.relative_context", "false"},
                                                                 {"patch.orography", "topography_c"},
                                                                 {"patch.residual", "regression"}});
  for (const ft::ExportConditioning& c : {typed, text}) {
    EXPECT_EQ(c.fields, (std::vector<std::string>{"tas", "ps"}));
    EXPECT_EQ(c.target, "ps");
    EXPECT_EQ(c.covariates, std::vector<std::string>{"HSURF"});
    ASSERT_TRUE(c.static_features.has_value());
    EXPECT_TRUE(*c.static_features);
    EXPECT_FALSE(c.relative_context);
    EXPECT_TRUE(c.orography);
    EXPECT_EQ(c.residual, "regression");
  }
  EXPECT_FALSE(ft::export_conditioning(finecast::schema::Record{}, "empty.h5").static_features.has_value());
  finecast::schema::Record wrong = group;
  wrong["fields"] = Value(std::string("tas,ps"));
  try {
    ft::export_conditioning(wrong, "old.h5");
    FAIL() << "a list stored as one string was accepted";
  } catch (const finecast::CheckpointError& e) {
    EXPECT_NE(std::string(e.what()).find("old.h5: /conditioning fields must be an array of names"), std::string::npos)
        << e.what();
  }
}

// finecast-export's forward samples as the checkpoint's run did (its /sampling: sampler, steps,
// inflation); a flag overrides only its own option; a recorded churn or recentring, which the
// exported sampler lacks, is refused with the flag that exports without it.
TEST_F(Export, ProgramSamplesAsTheCheckpointsRunDid) {
  using finecast::schema::Value;
  const ft::Downscaler model = trained(ft::testing::tiny_mlp(), true);
  const std::string exe = std::string(FINECAST_BINARY_DIR) + "/bin/finecast-export";
  auto exported = [&](const finecast::schema::Record& sampling, const std::string& flags) {
    const std::string checkpoint = scratch_.path("sampling.h5"), file = scratch_.path("sampling.pt");
    std::remove(file.c_str());
    model.save_checkpoint(checkpoint, metadata(), {{ft::kSamplingGroup, sampling}});
    const int rc = std::system(
        (exe + " --checkpoint " + checkpoint + " --output " + file + " --log-level error " + flags).c_str());
    return rc == 0 ? std::optional<torch::jit::Module>(torch::jit::load(file)) : std::nullopt;
  };
  const finecast::schema::Record recorded{
      {"sampler", Value(std::string("ddim"))}, {"steps", Value(int64_t{7})}, {"inflation", Value(2.5)}};
  auto m = exported(recorded, "");
  ASSERT_TRUE(m.has_value());
  EXPECT_EQ(m->attr("sampler").toStringRef(), "ddim");
  EXPECT_EQ(m->attr("steps").toInt(), 7);
  EXPECT_DOUBLE_EQ(m->attr("inflation").toDouble(), 2.5);
  m = exported(recorded, "--sampler ddpm --inflation 1");
  ASSERT_TRUE(m.has_value());
  EXPECT_EQ(m->attr("sampler").toStringRef(), "ddpm");
  EXPECT_EQ(m->attr("steps").toInt(), ft::testing::tiny_mlp().diffusion_steps);
  EXPECT_DOUBLE_EQ(m->attr("inflation").toDouble(), 1.0);
  m = exported(recorded, "--steps 3");
  ASSERT_TRUE(m.has_value());
  EXPECT_EQ(m->attr("steps").toInt(), 3);
  EXPECT_DOUBLE_EQ(m->attr("inflation").toDouble(), 2.5);

  finecast::schema::Record churned = recorded;
  churned["churn"] = Value(0.5);
  EXPECT_FALSE(exported(churned, "").has_value());
  m = exported(churned, "--churn 0");
  ASSERT_TRUE(m.has_value());
  EXPECT_DOUBLE_EQ(m->attr("inflation").toDouble(), 2.5);

  finecast::schema::Record recentred = recorded;
  recentred["recentre_sigma"] = Value(16.0);
  EXPECT_FALSE(exported(recentred, "").has_value());
  EXPECT_TRUE(exported(recentred, "--recentre-sigma 0").has_value());
}

TEST_F(Export, ProgramWritesAModuleThatDebiansPythonLoadsAndRuns) {
  // Debian's python3-torch matches the LibTorch finecast builds against.
  if (std::system("/usr/bin/python3 -c 'import torch' > /dev/null 2>&1") != 0)
    GTEST_SKIP() << "/usr/bin/python3 with torch (python3-torch) is not installed";
  ft::Downscaler model = trained(ft::testing::tiny_mlp(), true);
  const std::string checkpoint = scratch_.path("model.h5"), file = scratch_.path("program.pt");
  const std::string exe = std::string(FINECAST_BINARY_DIR) + "/bin/finecast-export";
  ASSERT_EQ(std::system((exe + " --help > /dev/null").c_str()), 0);
  ASSERT_EQ(std::system((exe + " --checkpoint " + checkpoint + " --output " + file +
                         " --sampler ddim --steps 6 --log-level warning")
                            .c_str()),
            0);
  // The reference the Python side compares with: inputs and the trainer's samples, as the
  // buffers of a small TorchScript module (what torch.jit.load reads in Python).
  const ft::ModelOptions& mo = model.model_options();
  const ft::SampleOptions so = ddim(6, 0.0);
  const int64_t n = 4, M = so.members, P = mo.patch_size;
  Data in(mo, n, 21);
  std::vector<float> expected(static_cast<size_t>(n * M * P));
  model.sample(in.context.data(), in.coarse.data(), in.weights.data(), n, so, 5, expected.data());
  auto gen = at::make_generator<at::CPUGeneratorImpl>(5);
  auto noise = ft::export_noise(mo, so, n, 5);  // the noise of sample()'s seed 5
  torch::jit::Module ref(c10::QualifiedName("__torch__.finecast.ExportReference"),
                         std::make_shared<torch::jit::CompilationUnit>(), true);
  auto ctx = blob(in.context, {n, mo.context_size});
  ref.register_buffer("context", ctx);
  ref.register_buffer("weights", blob(in.weights, {n, P}));
  ref.register_buffer(
      "noise", torch::from_blob(noise.data(), {ft::export_noise_draws(mo, so), n * M, P}, torch::kFloat32).clone());
  ref.register_buffer("expected", blob(expected, {n, M, P}));
  auto x = torch::randn({n, P}, gen);
  auto t = torch::tensor(std::vector<int64_t>{0, 5, 11, 19});
  const auto& im = ft::internals(model);
  ref.register_buffer("x_t", x);
  ref.register_buffer("t", t);
  const auto held = ft::clip_to_training_range(ctx, im.sample_norm, so.clip_margin);  // sample.clip_context
  ref.register_buffer(
      "expected_denoise",
      im.sample_net->forward(x, (held - im.sample_norm.context_mean) / im.sample_norm.context_std, t).detach().clone());
  const std::string reference = scratch_.path("reference.pt");
  ref.save(reference);
  const std::string source = FINECAST_SOURCE_DIR;
  const std::string cmd = "/usr/bin/python3 " + source + "/tests/trainer/export_check.py " + file + " " + reference +
                          " " + source + "/docs/export.md";
  EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
}
