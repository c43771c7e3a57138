// SPDX-License-Identifier: BSD-3-Clause
// model.arch: torchscript: a user's TorchScript denoiser trained by finecast's own loop. A scripted
// copy of the reference MLP trains to the built-in MLP's weights, its checkpoint embeds the module
// (resume and sampling need no file), and modules of the wrong signature are refused naming what
// differs.
#include <ATen/CPUGeneratorImpl.h>
#include <gtest/gtest.h>
#include <torch/script.h>
#include <torch/torch.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "tests/trainer/trainer_test_data.hpp"
#include "trainer/downscaler.hpp"
#include "trainer/downscaler_impl.hpp"
#include "trainer/models.hpp"
#include "trainer/torchscript_export.hpp"

namespace ft = finecast::trainer;
using ft::testing::KnownDistribution;

namespace {

ft::TrainOptions training() {
  ft::TrainOptions t;
  t.batch_size = 16;
  t.warmup_steps = 3;
  t.seed = 17;
  t.force_autograd = true;  // the built-in MLP through autograd, as the scripted one trains
  return t;
}

/// A TorchScript module (built in C++; torch.jit.script in Python writes the same) with
/// submodules, parameters and the methods of `source`.
torch::jit::Module scripted(const std::string& source, const ft::ModelOptions& o, bool with_layers = true) {
  auto cu = std::make_shared<torch::jit::CompilationUnit>();
  torch::jit::Module m(c10::QualifiedName("__torch__.user.Denoiser"), cu, true);
  if (with_layers) {
    int64_t in = o.patch_size + o.context_size + o.time_embedding;
    auto layer = [&](const std::string& name, int64_t fan_in, int64_t fan_out) {
      torch::jit::Module l(c10::QualifiedName("__torch__.user." + name), cu, true);
      l.register_parameter("weight", torch::zeros({fan_out, fan_in}), false);
      l.register_parameter("bias", torch::zeros({fan_out}), false);
      m.register_module(name, l);
    };
    for (int64_t i = 0; i < o.depth; ++i, in = o.hidden) layer("layer" + std::to_string(i), in, o.hidden);
    layer("out", in, o.patch_size);
  }
  m.register_buffer("step_table", ft::models::sinusoidal_table(o.diffusion_steps, o.time_embedding));
  m.define(source);
  return m;
}

/// The reference MLP of trainer/models.cpp as TorchScript, forward(x_t, t, context).
const char* kMlpSource = R"(
def forward(self, x_t: Tensor, t: Tensor, context: Tensor) -> Tensor:
    h = torch.cat([x_t, context, self.step_table.index_select(0, t)], 1)
    h = torch.silu(torch.linear(h, self.layer0.weight, self.layer0.bias))
    h = torch.silu(torch.linear(h, self.layer1.weight, self.layer1.bias))
    return torch.linear(h, self.out.weight, self.out.bias)
)";

class TorchScriptDenoiser : public ::testing::Test {
 protected:
  ft::testing::ScratchDir scratch_{"torchscript_test"};
  KnownDistribution data_{96, 8};

  ft::DataView view() const { return {data_.context.data(), data_.fine.data(), nullptr, data_.n}; }

  ft::ModelOptions with_module(const torch::jit::Module& m, const std::string& name = "denoiser.pt") {
    ft::ModelOptions o = ft::testing::tiny_mlp();
    o.arch = ft::Arch::kTorchscript;
    o.file = scratch_.path(name);
    m.save(o.file);
    return o;
  }

  /// The message of the std::invalid_argument a model of `o` throws at construction.
  static std::string refusal(const ft::ModelOptions& o) {
    try {
      ft::Downscaler d(o, training(), "cpu");
    } catch (const std::invalid_argument& e) {
      return e.what();
    }
    return "(accepted)";
  }
};

}  // namespace

TEST_F(TorchScriptDenoiser, TrainsToTheBuiltInMlpsWeights) {
  ft::Downscaler builtin(ft::testing::tiny_mlp(), training(), "cpu");
  ft::Downscaler user(with_module(scripted(kMlpSource, ft::testing::tiny_mlp())), training(), "cpu");
  EXPECT_EQ(user.training_path(), "autograd");
  const auto& a = ft::internals(builtin);
  const auto& b = ft::internals(user);
  ASSERT_EQ(a.names, b.names);  // same parameters in the same order: the same seeded initial weights
  EXPECT_TRUE(torch::equal(a.flat, b.flat));
  for (int epoch = 0; epoch < 3; ++epoch) {
    const auto sa = builtin.train_epoch(view());
    const auto sb = user.train_epoch(view());
    EXPECT_NEAR(sa.avg_loss, sb.avg_loss, 1e-6);
  }
  EXPECT_GT(a.step, 10);
  EXPECT_LT((a.flat - b.flat).abs().max().item<double>(), 1e-5);
  EXPECT_LT((a.ema - b.ema).abs().max().item<double>(), 1e-5);
  EXPECT_GT((a.flat - ft::internals(ft::Downscaler(ft::testing::tiny_mlp(), training(), "cpu")).flat)
                .abs()
                .max()
                .item<double>(),
            1e-3)
      << "training changed nothing: the comparison would prove nothing";
}

TEST_F(TorchScriptDenoiser, CheckpointEmbedsTheModuleAndResumes) {
  const ft::ModelOptions o = with_module(scripted(kMlpSource, ft::testing::tiny_mlp()));
  ft::Downscaler user(o, training(), "cpu");
  user.train_epoch(view());
  user.publish();
  const std::string ckpt = scratch_.path("ckpt.h5");
  user.save_checkpoint(ckpt);
  std::filesystem::remove(o.file);  // resume and sampling must need nothing but the checkpoint

  ft::Downscaler resumed = ft::Downscaler::load_checkpoint(ckpt, "cpu");
  EXPECT_EQ(resumed.model_options().arch, ft::Arch::kTorchscript);
  EXPECT_TRUE(torch::equal(ft::internals(user).flat, ft::internals(resumed).flat));
  user.train_epoch(view());
  resumed.train_epoch(view());
  EXPECT_TRUE(torch::equal(ft::internals(user).flat, ft::internals(resumed).flat))
      << "a resumed run must follow the same trajectory";

  ft::SampleOptions so;
  so.members = 2;
  std::vector<float> a(static_cast<size_t>(4 * 2 * 16)), b(a.size());
  user.publish();
  resumed.publish();
  user.sample(data_.context.data(), data_.coarse.data(), nullptr, 4, so, 3, a.data());
  resumed.sample(data_.context.data(), data_.coarse.data(), nullptr, 4, so, 3, b.data());
  EXPECT_EQ(a, b);

  // finecast-export takes the user's module as the denoiser of the exported downscaler.
  ft::ExportOptions eo;
  eo.sample = so;
  const std::string exported = scratch_.path("exported.pt");
  ft::export_torchscript(resumed, eo, exported);
  torch::jit::Module m = torch::jit::load(exported);
  auto noise_values = ft::export_noise(resumed.model_options(), so, 4, 3);
  auto noise = torch::from_blob(noise_values.data(), {ft::export_noise_draws(resumed.model_options(), so), 4 * 2, 16},
                                torch::kFloat32);
  auto ctx = torch::from_blob(data_.context.data(), {4, 3}, torch::kFloat32).clone();
  auto coarse = torch::from_blob(data_.coarse.data(), {4}, torch::kFloat32).clone();
  auto fine = m.forward({ctx, noise, coarse}).toTensor();
  EXPECT_LT((fine.reshape({-1}) - torch::from_blob(b.data(), {4 * 2 * 16}, torch::kFloat32)).abs().max().item<double>(),
            1e-5);

  // A checkpoint of another module is refused by a model built from this one.
  const std::string other = R"(
def forward(self, x_t: Tensor, t: Tensor, context: Tensor) -> Tensor:
    h = torch.cat([x_t, context, self.step_table.index_select(0, t)], 1)
    h = torch.relu(torch.linear(h, self.layer0.weight, self.layer0.bias))
    h = torch.relu(torch.linear(h, self.layer1.weight, self.layer1.bias))
    return torch.linear(h, self.out.weight, self.out.bias)
)";
  ft::Downscaler different(with_module(scripted(other, ft::testing::tiny_mlp()), "other.pt"), training(), "cpu");
  try {
    different.restore(ckpt);
    FAIL() << "a checkpoint of a different module was restored";
  } catch (const ft::CheckpointError& e) {
    EXPECT_TRUE(ft::testing::contains(e.what(), "is not this model's")) << e.what();
  }
}

TEST_F(TorchScriptDenoiser, WrongSignaturesAreRefusedNamingWhatDiffers) {
  const ft::ModelOptions o = ft::testing::tiny_mlp();
  auto source_returning = [](const std::string& expr) {
    return "def forward(self, x_t: Tensor, t: Tensor, context: Tensor) -> Tensor:\n"
           "    h = torch.cat([x_t, context, self.step_table.index_select(0, t)], 1)\n"
           "    h = torch.linear(torch.silu(torch.linear(h, self.layer0.weight, self.layer0.bias)), "
           "self.out.weight, self.out.bias)\n"
           "    return " +
           expr + "\n";
  };
  ft::ModelOptions one = o;
  one.depth = 1;
  std::string m = refusal(with_module(scripted(source_returning("torch.cat([h, h], 1)"), one), "wide.pt"));
  EXPECT_TRUE(ft::testing::contains(m, "forward returns shape [2, 32] for a batch of 2, expected [2, 16]")) << m;
  m = refusal(with_module(scripted(source_returning("h.double()"), one), "double.pt"));
  EXPECT_TRUE(ft::testing::contains(m, "forward returns Double, expected float32")) << m;
  m = refusal(with_module(scripted("def forward(self, x: Tensor, t: Tensor) -> Tensor:\n    return x\n", o), "two.pt"));
  EXPECT_TRUE(ft::testing::contains(m, "forward takes 2 input(s) (x, t)")) << m;
  EXPECT_TRUE(
      ft::testing::contains(m, "finecast calls forward(x_t: Tensor[B,16], t: Tensor[B] int64, context: Tensor[B,3])"))
      << m;
  m = refusal(with_module(scripted("def denoise(self, x: Tensor) -> Tensor:\n    return x\n", o), "none.pt"));
  EXPECT_TRUE(ft::testing::contains(m, "the module has no method forward")) << m;
  m = refusal(with_module(scripted("def forward(self, x_t: Tensor, t: Tensor, context: Tensor) -> Tensor:\n"
                                   "    return x_t\n",
                                   o, /*with_layers=*/false),
                          "empty.pt"));
  EXPECT_TRUE(ft::testing::contains(m, "the module has no parameters to train")) << m;
  // A shape error inside the module: the call is reported with the shapes finecast passed.
  ft::ModelOptions wide_context = o;
  wide_context.context_size = 5;
  m = refusal(with_module(scripted(kMlpSource, o), "mlp.pt"));
  EXPECT_EQ(m, "(accepted)");
  wide_context.file = scratch_.path("mlp.pt");
  wide_context.arch = ft::Arch::kTorchscript;
  m = refusal(wide_context);
  EXPECT_TRUE(ft::testing::contains(m, "forward fails on x_t [2, 16] float32, t [2] int64, context [2, 5] float32"))
      << m;
  ft::ModelOptions missing = o;
  missing.arch = ft::Arch::kTorchscript;
  m = refusal(missing);
  EXPECT_TRUE(ft::testing::contains(m, "model.file: arch torchscript needs")) << m;
  missing.file = scratch_.path("nope.pt");
  m = refusal(missing);
  EXPECT_TRUE(ft::testing::contains(m, "nope.pt: cannot be read")) << m;
}

// A module whose result has the right shape for the start-up probe's batch of 2 but [P, B] for
// the batches of training and sampling: every call is checked, and the error names model.file
// and both shapes (it was LibTorch's "The size of tensor a (16) must match the size of tensor b").
TEST_F(TorchScriptDenoiser, AResultOfTheWrongShapeForAnyBatchNamesTheFileAndTheShapes) {
  const std::string source = R"(
def forward(self, x_t: Tensor, t: Tensor, context: Tensor) -> Tensor:
    h = torch.cat([x_t, context, self.step_table.index_select(0, t)], 1)
    h = torch.silu(torch.linear(h, self.layer0.weight, self.layer0.bias))
    h = torch.silu(torch.linear(h, self.layer1.weight, self.layer1.bias))
    out = torch.linear(h, self.out.weight, self.out.bias)
    if x_t.size(0) == 2:
        return out
    return out.t()
)";
  const ft::ModelOptions o = with_module(scripted(source, ft::testing::tiny_mlp()), "transposed.pt");
  ft::TrainOptions batch8 = training();
  batch8.batch_size = 8;
  ft::Downscaler user(o, batch8, "cpu");  // the probe's batch of 2 passes
  try {
    user.train_epoch(view());
    FAIL() << "a result of shape [P, B] was trained on";
  } catch (const std::exception& e) {
    EXPECT_TRUE(
        ft::testing::contains(e.what(), "model.file " + o.file +
                                            ": forward returns shape [16, 8] for a batch of 8, expected [8, 16]; "
                                            "finecast calls forward(x_t: Tensor[B,16]"))
        << e.what();
  }
}

// model.file that is no TorchScript file (torch.jit.save writes a zip archive) is refused from its
// first bytes: a 3 GB file was read whole (6.3 GB resident) before torch::jit::load refused it, and
// /dev/zero would be read without end.
TEST_F(TorchScriptDenoiser, AFileThatIsNoZipArchiveIsRefusedFromItsFirstBytes) {
  ft::ModelOptions o = ft::testing::tiny_mlp();
  o.arch = ft::Arch::kTorchscript;
  o.file = "/dev/zero";
  std::string m = refusal(o);
  EXPECT_TRUE(
      ft::testing::contains(m,
                            "model.file /dev/zero: not a TorchScript file (torch.jit.save writes a zip archive, "
                            "which starts with the bytes 50 4b 03 04; this file starts with 00 00 00 00)"))
      << m;
  o.file = scratch_.path("empty.pt");
  { std::ofstream(o.file).flush(); }
  m = refusal(o);
  EXPECT_TRUE(ft::testing::contains(m, "empty.pt: not a TorchScript file") &&
              ft::testing::contains(m, "this file is empty)"))
      << m;
}

TEST_F(TorchScriptDenoiser, ThePythonExampleOfTheDocsTrainsLikeTheBuiltInMlp) {
  // docs/training.md's module, written by torch.jit.script in Debian's Python (the version of
  // the LibTorch finecast builds against).
  if (std::system("/usr/bin/python3 -c 'import torch' > /dev/null 2>&1") != 0)
    GTEST_SKIP() << "/usr/bin/python3 with torch (python3-torch) is not installed";
  const std::string doc = std::string(FINECAST_SOURCE_DIR) + "/docs/training.md";
  // torch.jit.script reads the class's source file: the block is written to one and run.
  const std::string cmd = "cd " + scratch_.dir().string() +
                          " && /usr/bin/python3 -c \"import re; open('example.py', 'w').write(re.search("
                          "r'\\x60\\x60\\x60python\\n(.*?)\\x60\\x60\\x60', open('" +
                          doc + "').read(), re.S).group(1))\" && /usr/bin/python3 example.py";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  ft::ModelOptions o;  // the example's sizes
  o.context_size = 7;
  o.patch_size = 256;
  o.hidden = 256;
  o.depth = 2;
  o.time_embedding = 64;
  o.diffusion_steps = 50;
  ft::ModelOptions user = o;
  user.arch = ft::Arch::kTorchscript;
  user.file = scratch_.path("denoiser.pt");
  ft::Downscaler a(o, training(), "cpu"), b(user, training(), "cpu");
  ASSERT_EQ(ft::internals(a).names, ft::internals(b).names);
  auto gen = at::make_generator<at::CPUGeneratorImpl>(4);
  auto ctx = torch::randn({32, 7}, gen), fine = torch::randn({32, 256}, gen);
  const ft::DataView v{ctx.data_ptr<float>(), fine.data_ptr<float>(), nullptr, 32};
  a.train_epoch(v);
  b.train_epoch(v);
  EXPECT_EQ(ft::internals(b).step, 2);
  EXPECT_LT((ft::internals(a).flat - ft::internals(b).flat).abs().max().item<double>(), 1e-5);
}
