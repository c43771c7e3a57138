// SPDX-License-Identifier: BSD-3-Clause
// The trainer on a GPU: it learns there, bf16 learns, and checkpoints move between CPU and CUDA in
// both directions. Every test is skipped (not passed) where LibTorch sees no CUDA device, as on CI;
// scripts/device/build_cuda.sh runs them on a GPU machine.
#include <ATen/CPUGeneratorImpl.h>
#include <gtest/gtest.h>
#include <torch/script.h>
#include <torch/torch.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "tests/trainer/trainer_test_data.hpp"
#include "trainer/device.hpp"
#include "trainer/models.hpp"
#include "trainer/downscaler.hpp"
#include "trainer/downscaler_impl.hpp"
#include "trainer/adamw.hpp"
#include "trainer/philox_fill.hpp"
#include "trainer/sample_graph.hpp"
#include "trainer/sampling_internal.hpp"
#include "trainer/train_graph.hpp"
#include "trainer/training_internal.hpp"

namespace ft = finecast::trainer;
using namespace finecast::trainer::testing;  // NOLINT: the shared test data and scoring

namespace {

/// Skips without a GPU; one torch thread comes from the global environment of test_downscaler.cpp.
class Cuda : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device visible to LibTorch";
  }
  std::string path(const std::string& name) const { return scratch_.path(name); }
  ft::testing::ScratchDir scratch_{"cuda_test"};
};

/// ||a - b|| / ||b|| of the weight updates since `init` (both on the CPU).
double relative_update_difference(const torch::Tensor& a, const torch::Tensor& b, const torch::Tensor& init) {
  auto da = a.cpu() - init.cpu(), db = b.cpu() - init.cpu();
  return (da - db).norm().item<double>() / db.norm().item<double>();
}

std::vector<float> draw(const ft::Downscaler& ds, const KnownDistribution& d, int64_t n, uint64_t seed) {
  ft::SampleOptions so;
  so.members = 4;
  std::vector<float> out(static_cast<size_t>(n * so.members * d.P));
  ds.sample(d.context.data(), d.coarse.data(), nullptr, n, so, seed, out.data());
  return out;
}

double max_abs_difference(const std::vector<float>& a, const std::vector<float>& b) {
  double m = 0;
  for (size_t i = 0; i < a.size(); ++i) m = std::max(m, static_cast<double>(std::abs(a[i] - b[i])));
  return m;
}

}  // namespace

TEST_F(Cuda, AutoSelectsTheGpu) {
  const auto c = ft::select_device("auto");
  EXPECT_EQ(c.torch_device, "cuda:0");
  EXPECT_NE(c.log_line().find("Using device: CUDA - "), std::string::npos) << c.log_line();
  EXPECT_NE(c.log_line().find("GiB"), std::string::npos) << c.log_line();
  std::printf("%s\n", c.log_line().c_str());
}

TEST_F(Cuda, LearnsAKnownConditionalDistribution) {
  // The CPU test's data, model, schedule and tolerances (tests/trainer/test_downscaler.cpp).
  KnownDistribution train(4096, 1), test(64, 2);
  ft::Downscaler ds(small_model(), fast_training(), "cuda");
  EXPECT_EQ(ds.device(), "cuda:0");
  ft::SampleOptions so;
  so.sampler = finecast::trainer::Sampler::kDdpm;
  so.members = 32;
  EXPECT_GT(evaluate(ds, test, so, 9).mean_rmse, 0.3);
  for (int epoch = 0; epoch < 40; ++epoch) ds.train_epoch(view(train));
  ds.publish();
  const Skill s = evaluate(ds, test, so, 9);
  EXPECT_LT(s.mean_rmse, 0.12);
  EXPECT_NEAR(s.spread, test.true_std(), 0.3 * test.true_std());
  EXPECT_GT(s.amp_corr, 0.95);
  std::printf("cuda learning: %lld steps; ddpm rmse %.3f spread %.3f (truth %.3f) corr %.3f\n",
              static_cast<long long>(ds.step()), s.mean_rmse, s.spread, test.true_std(), s.amp_corr);
}

TEST_F(Cuda, TrainingFollowsTheCpuTrajectoryForTheSameSeed) {
  // Noise, steps and shuffling come from the same CPU generator on both devices, so the two runs
  // see identical batches; only floating-point rounding differs.
  KnownDistribution d(1024, 3);
  ft::Downscaler cpu(small_model(), fast_training(), "cpu"), gpu(small_model(), fast_training(), "cuda");
  const auto init = ft::internals(cpu).flat.clone();
  ASSERT_TRUE(torch::equal(init, ft::internals(gpu).flat.cpu())) << "same seed, same initial weights";
  double loss_cpu = 0, loss_gpu = 0;
  for (int e = 0; e < 3; ++e) {
    loss_cpu = cpu.train_epoch(view(d)).avg_loss;
    loss_gpu = gpu.train_epoch(view(d)).avg_loss;
  }
  EXPECT_EQ(cpu.step(), gpu.step());
  const double diff = relative_update_difference(ft::internals(gpu).flat, ft::internals(cpu).flat, init);
  std::printf("cpu vs cuda after %lld steps: loss %.5f vs %.5f, relative weight-update difference %.2e\n",
              static_cast<long long>(cpu.step()), loss_cpu, loss_gpu, diff);
  EXPECT_NEAR(loss_gpu, loss_cpu, 0.02 * loss_cpu);
  EXPECT_LT(diff, 0.05);
  // With another seed the updates differ by O(1): the tolerance above has teeth.
  auto other_seed = fast_training();
  other_seed.seed = 6;
  ft::Downscaler other(small_model(), other_seed, "cpu");
  ft::internals(other).flat.copy_(init);
  for (int e = 0; e < 3; ++e) other.train_epoch(view(d));
  EXPECT_GT(relative_update_difference(ft::internals(other).flat, ft::internals(cpu).flat, init), 0.2);
}

TEST_F(Cuda, Bf16TrainingLearns) {
  KnownDistribution train(4096, 1), test(64, 2);
  auto to = fast_training();
  to.bf16 = true;
  ft::Downscaler ds(small_model(), to, "cuda");
  {
    // bf16 autocast is really on: one epoch departs from the float32 twin by far more than the
    // float32 CPU/GPU rounding difference (~1e-5, TrainingFollowsTheCpuTrajectoryForTheSameSeed).
    KnownDistribution d(1024, 3);
    ft::Downscaler f32(small_model(), fast_training(), "cuda"), b16(small_model(), to, "cuda");
    const auto init = ft::internals(f32).flat.cpu().clone();
    f32.train_epoch(view(d));
    b16.train_epoch(view(d));
    const double diff = relative_update_difference(ft::internals(b16).flat, ft::internals(f32).flat, init);
    std::printf("bf16 vs float32 after one epoch: relative weight-update difference %.2e\n", diff);
    EXPECT_GT(diff, 1e-4);
  }
  std::vector<std::string> events;
  double first = 0, last = 0;
  for (int epoch = 0; epoch < 40; ++epoch) {
    const auto st = ds.train_epoch(view(train), [&](const std::string& e) { events.push_back(e); });
    EXPECT_EQ(st.bad_steps, 0);
    (epoch == 0 ? first : last) = st.avg_loss;
  }
  EXPECT_TRUE(events.empty()) << events.front();
  EXPECT_LT(last, 0.7 * first);
  ds.publish();
  ft::SampleOptions so;
  so.sampler = finecast::trainer::Sampler::kDdpm;
  so.members = 32;
  const Skill s = evaluate(ds, test, so, 9);
  std::printf("bf16 learning: loss %.4f -> %.4f; ddpm rmse %.3f spread %.3f corr %.3f\n", first, last, s.mean_rmse,
              s.spread, s.amp_corr);
  EXPECT_LT(s.mean_rmse, 0.15);
  EXPECT_GT(s.amp_corr, 0.95);
}

TEST_F(Cuda, CheckpointWrittenOnGpuContinuesOnCpu) {
  KnownDistribution d(512, 4);
  ft::Downscaler gpu(small_model(), fast_training(), "cuda");
  for (int e = 0; e < 2; ++e) gpu.train_epoch(view(d));
  gpu.publish();
  gpu.save_checkpoint(path("gpu.h5"), {{"written_on", "cuda"}});

  auto cpu = ft::Downscaler::load_checkpoint(path("gpu.h5"), "cpu");
  EXPECT_EQ(cpu.device(), "cpu");
  EXPECT_EQ(cpu.step(), gpu.step());
  // The state crosses devices bitwise.
  EXPECT_TRUE(torch::equal(ft::internals(cpu).flat, ft::internals(gpu).flat.cpu()));
  EXPECT_TRUE(torch::equal(ft::internals(cpu).ema, ft::internals(gpu).ema.cpu()));
  EXPECT_TRUE(torch::equal(ft::internals(cpu).exp_avg, ft::internals(gpu).exp_avg.cpu()));
  EXPECT_TRUE(torch::equal(ft::internals(cpu).exp_avg_sq, ft::internals(gpu).exp_avg_sq.cpu()));
  // The same weights and seed sample the same fields on both devices (up to rounding).
  cpu.publish();
  const double sample_diff = max_abs_difference(draw(cpu, d, 16, 11), draw(gpu, d, 16, 11));
  EXPECT_LT(sample_diff, 1e-3);
  // Training goes on from the same optimizer step and follows the GPU's own continuation.
  const auto at_save = ft::internals(gpu).flat.cpu().clone();
  for (int e = 0; e < 2; ++e) {
    gpu.train_epoch(view(d));
    cpu.train_epoch(view(d));
  }
  EXPECT_EQ(cpu.step(), gpu.step());
  const double diff = relative_update_difference(ft::internals(cpu).flat, ft::internals(gpu).flat, at_save);
  std::printf("gpu -> cpu: sample difference %.2e, relative difference of the continued updates %.2e\n", sample_diff,
              diff);
  EXPECT_LT(diff, 0.05);
}

TEST_F(Cuda, CheckpointWrittenOnCpuContinuesOnGpu) {
  KnownDistribution d(512, 5);
  ft::Downscaler cpu(small_model(), fast_training(), "cpu");
  for (int e = 0; e < 2; ++e) cpu.train_epoch(view(d));
  cpu.save_checkpoint(path("cpu.h5"));
  auto gpu = ft::Downscaler::load_checkpoint(path("cpu.h5"), "cuda");
  EXPECT_EQ(gpu.device(), "cuda:0");
  EXPECT_TRUE(ft::internals(gpu).exp_avg.is_cuda()) << "the optimizer state must move with the weights";
  EXPECT_TRUE(torch::equal(ft::internals(gpu).flat.cpu(), ft::internals(cpu).flat));
  const auto at_save = ft::internals(cpu).flat.clone();
  for (int e = 0; e < 2; ++e) {
    const auto st = gpu.train_epoch(view(d));
    EXPECT_EQ(st.bad_steps, 0);
    cpu.train_epoch(view(d));
  }
  EXPECT_EQ(gpu.step(), cpu.step());
  const double diff = relative_update_difference(ft::internals(gpu).flat, ft::internals(cpu).flat, at_save);
  std::printf("cpu -> gpu: relative difference of the continued updates %.2e\n", diff);
  EXPECT_LT(diff, 0.05);
}

TEST_F(Cuda, TorchScriptCheckpointMovesBetweenCpuAndGpu) {
  // A one-layer MLP as the user's TorchScript module (model.arch: torchscript).
  ft::ModelOptions o = small_model();
  o.depth = 1;
  auto cu = std::make_shared<torch::jit::CompilationUnit>();
  torch::jit::Module m(c10::QualifiedName("__torch__.user.Denoiser"), cu, true);
  const int64_t in = o.patch_size + o.context_size + o.time_embedding;
  for (const auto& [name, fan_in, fan_out] :
       {std::tuple<std::string, int64_t, int64_t>{"layer0", in, o.hidden}, {"out", o.hidden, o.patch_size}}) {
    torch::jit::Module l(c10::QualifiedName("__torch__.user." + name), cu, true);
    l.register_parameter("weight", torch::zeros({fan_out, fan_in}), false);
    l.register_parameter("bias", torch::zeros({fan_out}), false);
    m.register_module(name, l);
  }
  m.register_buffer("step_table", ft::models::sinusoidal_table(o.diffusion_steps, o.time_embedding));
  m.define(R"(
def forward(self, x_t: Tensor, t: Tensor, context: Tensor) -> Tensor:
    h = torch.cat([x_t, context, self.step_table.index_select(0, t)], 1)
    h = torch.silu(torch.linear(h, self.layer0.weight, self.layer0.bias))
    return torch.linear(h, self.out.weight, self.out.bias)
)");
  o.arch = ft::Arch::kTorchscript;
  o.file = path("denoiser.pt");
  m.save(o.file);

  KnownDistribution d(256, 6);
  ft::Downscaler cpu(o, fast_training(), "cpu");
  cpu.train_epoch(view(d));
  cpu.save_checkpoint(path("cpu.h5"));
  std::filesystem::remove(o.file);  // the checkpoint embeds the module
  auto gpu = ft::Downscaler::load_checkpoint(path("cpu.h5"), "cuda");
  EXPECT_EQ(gpu.training_path(), "autograd");  // a scripted module trains eagerly
  EXPECT_TRUE(torch::equal(ft::internals(gpu).flat.cpu(), ft::internals(cpu).flat));
  EXPECT_EQ(gpu.train_epoch(view(d)).bad_steps, 0);
  gpu.publish();
  const auto samples = draw(gpu, d, 8, 3);
  for (float v : samples) ASSERT_TRUE(std::isfinite(v));
  gpu.save_checkpoint(path("gpu.h5"));
  auto back = ft::Downscaler::load_checkpoint(path("gpu.h5"), "cpu");
  EXPECT_TRUE(torch::equal(ft::internals(back).flat, ft::internals(gpu).flat.cpu()));
  EXPECT_LT(max_abs_difference(draw(back, d, 8, 3), samples), 1e-3);
}

TEST_F(Cuda, UNetTrainsAndSamplesOnTheGpu) {
  KnownDistribution d(256, 9, 64);
  auto mo = small_model();
  mo.arch = finecast::trainer::Arch::kUnet;
  mo.patch_size = 64;
  mo.unet_channels = 8;
  ft::Downscaler ds(mo, fast_training(), "cuda");
  double first = 0, last = 0;
  for (int e = 0; e < 10; ++e) (e == 0 ? first : last) = ds.train_epoch(view(d)).avg_loss;
  EXPECT_LT(last, first);
  ds.publish();
  const auto out = draw(ds, d, 8, 3);
  // Conservative sampling: every member keeps its patch mean on the GPU too.
  for (int64_t i = 0; i < 8; ++i)
    for (int64_t k = 0; k < 4; ++k) {
      double m = 0;
      for (int64_t j = 0; j < d.P; ++j) m += out[(i * 4 + k) * d.P + j];
      EXPECT_NEAR(m / static_cast<double>(d.P), d.coarse[i], 1e-4);
    }
}

// ---- issue 17: CUDA graphs, separate devices, out-of-memory back-off on the GPU ----

TEST_F(Cuda, GraphReplayedTrainingEqualsEagerTraining) {
  // The captured step (three eager warm-up steps, then capture and replays) against the eager
  // step on the same GPU: the same arithmetic in a different kernel order (device-side clipping
  // and masked AdamW), so equal to float rounding.
  KnownDistribution d(1024, 3);
  auto to = fast_training();
  ft::Downscaler graph(small_model(), to, "cuda");
  to.cuda_graphs = false;
  ft::Downscaler eager(small_model(), to, "cuda");
  EXPECT_EQ(graph.training_path(), "autograd+cuda-graphs");
  EXPECT_EQ(eager.training_path(), "autograd");
  const auto init = ft::internals(eager).flat.cpu().clone();
  double lg = 0, le = 0;
  for (int e = 0; e < 3; ++e) {
    lg = graph.train_epoch(view(d)).avg_loss;
    le = eager.train_epoch(view(d)).avg_loss;
  }
  ASSERT_TRUE(ft::internals(graph).train_graph);
  EXPECT_TRUE(ft::internals(graph).train_graph->captured());
  EXPECT_TRUE(ft::internals(graph).train_graph->fused_update()) << "the replays ran the two-kernel tail";
  EXPECT_EQ(graph.step(), eager.step());
  const double diff = relative_update_difference(ft::internals(graph).flat, ft::internals(eager).flat, init);
  std::printf("cuda graph vs eager after %lld steps: loss %.6f vs %.6f, relative weight-update difference %.2e\n",
              static_cast<long long>(graph.step()), lg, le, diff);
  EXPECT_NEAR(lg, le, 1e-4 * le);
  EXPECT_LT(diff, 1e-3);
}

TEST_F(Cuda, GraphReplayedSamplingEqualsEagerSampling) {
  KnownDistribution d(512, 4);
  ft::Downscaler ds(small_model(), fast_training(), "cuda");
  ds.train_epoch(view(d));
  ds.publish();
  for (const auto sampler : {ft::Sampler::kDdpm, ft::Sampler::kDdim}) {
    ft::SampleOptions so;
    so.sampler = sampler;
    so.members = 4;
    auto eager = so;
    eager.cuda_graphs = false;
    for (int call = 0; call < 3; ++call) {  // warm-up, capture, replay
      std::vector<float> a(static_cast<size_t>(80 * 4 * d.P)), b(a.size());
      ds.sample(d.context.data(), d.coarse.data(), nullptr, 80, so, 7 + call, a.data());
      ds.sample(d.context.data(), d.coarse.data(), nullptr, 80, eager, 7 + call, b.data());
      const double diff = max_abs_difference(a, b);
      if (call == 2)
        std::printf("cuda graph vs eager sampling (%s): max difference %.2e\n", ft::name(sampler).c_str(), diff);
      EXPECT_LT(diff, 1e-4) << ft::name(sampler) << " call " << call;
    }
  }
  EXPECT_EQ(ft::internals(ds).sample_graphs->shapes(), 2u);
}

TEST_F(Cuda, TrainedOnTheGpuSamplesOnTheCpuAndTheReverse) {
  KnownDistribution d(512, 5);
  ft::Downscaler gpu_cpu(small_model(), fast_training(), "cuda", "cpu");
  ft::Downscaler cpu_gpu(small_model(), fast_training(), "cpu", "cuda");
  ft::Downscaler cpu_cpu(small_model(), fast_training(), "cpu");
  EXPECT_EQ(gpu_cpu.sample_device(), "cpu");
  EXPECT_EQ(cpu_gpu.sample_device(), "cuda:0");
  for (int e = 0; e < 2; ++e) {
    gpu_cpu.train_epoch(view(d));
    cpu_gpu.train_epoch(view(d));
    cpu_cpu.train_epoch(view(d));
  }
  gpu_cpu.publish();
  cpu_gpu.publish();
  cpu_cpu.publish();
  EXPECT_TRUE(ft::internals(gpu_cpu).sample_flat.is_cpu());
  EXPECT_TRUE(ft::internals(cpu_gpu).sample_flat.is_cuda());
  const auto ref = draw(cpu_cpu, d, 16, 11);
  const double d1 = max_abs_difference(draw(gpu_cpu, d, 16, 11), ref),
               d2 = max_abs_difference(draw(cpu_gpu, d, 16, 11), ref);
  std::printf("gpu-trained, cpu-sampled vs cpu/cpu: %.2e; cpu-trained, gpu-sampled: %.2e\n", d1, d2);
  EXPECT_LT(d1, 1e-2);  // training on the GPU rounds differently (see TrainingFollowsTheCpuTrajectory...)
  EXPECT_LT(d2, 1e-3);  // the same weights, sampled on the GPU
}

TEST_F(Cuda, OutOfMemoryBackOffOnTheGpu) {
  KnownDistribution d(512, 6);
  const auto mo = small_model();
  auto to = fast_training();
  const int64_t params = ft::Downscaler(mo, to, "cpu").parameter_count();
  to.max_device_memory = (ft::estimate_batch_bytes(mo, params, 32) + ft::estimate_batch_bytes(mo, params, 64)) / 2;
  ft::Downscaler ds(mo, to, "cuda");
  std::vector<std::string> events;
  const auto st = ds.train_epoch(view(d), [&](const std::string& e) { events.push_back(e); });
  EXPECT_EQ(st.oom_backoffs, 1);
  EXPECT_EQ(ds.micro_batch(), 32);
  EXPECT_EQ(st.batches, 8);
  EXPECT_EQ(st.bad_steps, 0);
}

TEST_F(Cuda, FusedAdamWStepEqualsTorchOptimAdamWOnTheGpu) {
  // The tensor form of the fused step (the eager CUDA path) against torch::optim::AdamW, on the GPU.
  auto gen = at::make_generator<at::CPUGeneratorImpl>(1);
  const int64_t n = 10007;
  const auto p0 = torch::randn({n}, gen).cuda(), g = torch::randn({n}, gen).cuda();
  ft::TrainOptions o;
  o.weight_decay = 0.05;
  o.grad_clip = 0;
  const double lr = 3e-3;
  auto ref = p0.clone().requires_grad_(true);
  torch::optim::AdamW opt({ref}, torch::optim::AdamWOptions(lr).weight_decay(o.weight_decay));
  auto p = p0.clone(), m = torch::zeros_like(p0), v = torch::zeros_like(p0), e = p0.clone(),
       denom = torch::zeros_like(p0);
  for (int64_t step = 0; step < 3; ++step) {
    auto gs = g * (1.0 + 0.5 * static_cast<double>(step));
    ref.mutable_grad() = gs.clone();
    opt.step();
    auto gt = gs.clone();
    ft::adamw::update_tensors(p, gt, m, v, e, denom, ft::adamw::step_params(o, step, lr, 0.0));
    const double step_size = (ref.detach() - p0).abs().max().item<double>();
    EXPECT_LT((p - ref.detach()).abs().max().item<double>(), 1e-3 * step_size) << "step " << step;
  }
}

TEST_F(Cuda, PhiloxKernelDrawsTheCpuStream) {
  // train.noise_generator philox: the kernel (stream number read on the device) against the CPU
  // loop, element for element. Both compute Box-Muller in double and round to float.
  namespace px = finecast::trainer::philox;
  ASSERT_TRUE(ft::graphs::compiled()) << "a CUDA build has the kernels";
  const int64_t n = 262147;
  const uint64_t key = px::key_of(42);
  std::vector<float> cpu(static_cast<size_t>(n));
  px::fill_normal_cpu(cpu.data(), n, key, 12345, px::kTrainingNoise);
  auto gpu = torch::empty({n}, torch::TensorOptions().dtype(torch::kFloat32).device(torch::kCUDA));
  const auto stream =
      torch::full({1}, int64_t{12345}, torch::TensorOptions().dtype(torch::kInt64).device(torch::kCUDA));
  px::fill_normal(gpu, key, stream, px::kTrainingNoise);
  const auto back = gpu.cpu();
  int64_t differ = 0;
  double worst = 0;
  for (int64_t i = 0; i < n; ++i) {
    const float a = back.data_ptr<float>()[i], b = cpu[static_cast<size_t>(i)];
    if (std::memcmp(&a, &b, sizeof a) != 0) ++differ;
    worst = std::max(worst, static_cast<double>(std::abs(a - b)));
  }
  std::printf("philox on cuda vs cpu: %lld of %lld normals differ (max %.2e)\n", static_cast<long long>(differ),
              static_cast<long long>(n), worst);
  EXPECT_EQ(differ, 0);
}

TEST_F(Cuda, PhiloxNoiseTrainsTheSameInTheGraphEagerlyAndOnTheCpu) {
  // The graph draws the noise inside the captured step; the eager CUDA and the CPU steps draw it
  // on the host: the same stream, so the same batches on all three, up to rounding.
  KnownDistribution d(1024, 3);
  auto to = fast_training();
  to.noise_generator = ft::NoiseGenerator::kPhilox;
  ft::Downscaler graph(small_model(), to, "cuda"), cpu(small_model(), to, "cpu");
  to.cuda_graphs = false;
  ft::Downscaler eager(small_model(), to, "cuda");
  const auto init = ft::internals(cpu).flat.clone();
  double lg = 0, le = 0, lc = 0;
  for (int e = 0; e < 3; ++e) {
    lg = graph.train_epoch(view(d)).avg_loss;
    le = eager.train_epoch(view(d)).avg_loss;
    lc = cpu.train_epoch(view(d)).avg_loss;
  }
  ASSERT_TRUE(ft::internals(graph).train_graph);
  EXPECT_TRUE(ft::internals(graph).train_graph->captured());
  const double ge = relative_update_difference(ft::internals(graph).flat, ft::internals(eager).flat, init);
  const double gc = relative_update_difference(ft::internals(graph).flat, ft::internals(cpu).flat, init);
  std::printf(
      "philox noise after %lld steps: loss graph %.6f eager %.6f cpu %.6f; relative weight-update difference "
      "graph vs eager %.2e, graph vs cpu %.2e\n",
      static_cast<long long>(graph.step()), lg, le, lc, ge, gc);
  EXPECT_EQ(graph.step(), cpu.step());
  EXPECT_LT(ge, 1e-3);
  EXPECT_LT(gc, 0.05);
}

TEST_F(Cuda, SamplerNoiseDrawnOnTheGpuIsTheHostStream) {
  // The captured sampler draws its noise on the device from the staged {key, first}: DDPM-50's
  // 51 draws of rows 7..86, element for element what sampling::noise draws on the host.
  namespace fs = finecast::trainer::sampling;
  namespace px = finecast::trainer::philox;
  const int64_t draws = 51, first_row = 7, rows = 80, members = 2, P = 64;
  const auto params = fs::noise_params(first_row, members, P, 42);
  auto gpu =
      torch::empty({draws, rows * members * P}, torch::TensorOptions().dtype(torch::kFloat32).device(torch::kCUDA));
  px::fill_normal_draws(gpu, params.cuda(), px::kSamplingNoise);
  const auto back = gpu.cpu();
  const auto host = fs::noise(draws, first_row, rows, members, P, 42).contiguous();
  int64_t differ = 0;
  for (int64_t i = 0; i < back.numel(); ++i)
    differ += std::memcmp(back.data_ptr<float>() + i, host.data_ptr<float>() + i, sizeof(float)) != 0;
  std::printf("sampler noise on cuda vs host: %lld of %lld normals differ\n", static_cast<long long>(differ),
              static_cast<long long>(back.numel()));
  EXPECT_EQ(differ, 0);
}

TEST_F(Cuda, CapturedOptimizerTailEqualsTheTensorFormAndSkipsABadStep) {
  // adamw::graph_update_cuda (norm, NaN/Inf check, clipping, AdamW, EMA, step counts in two
  // kernels) against update_tensors with the host's clipping scale; a NaN gradient changes
  // nothing but the counts.
  auto gen = at::make_generator<at::CPUGeneratorImpl>(5);
  const int64_t n = 100003;
  const auto cuda = torch::TensorOptions().dtype(torch::kFloat32).device(torch::kCUDA);
  const auto p0 = torch::randn({n}, gen).cuda();
  auto p = p0.clone(), m = torch::zeros({n}, cuda), v = torch::zeros({n}, cuda), e = p0.clone();
  auto pr = p0.clone(), mr = torch::zeros({n}, cuda), vr = torch::zeros({n}, cuda), er = p0.clone(),
       denom = torch::zeros({n}, cuda);
  auto stats = torch::zeros({5}, cuda);
  auto partial = torch::zeros({ft::adamw::graph_update_partials()},
                              torch::TensorOptions().dtype(torch::kFloat64).device(torch::kCUDA));
  ft::TrainOptions o;
  o.weight_decay = 0.05;
  o.grad_clip = 100.0;  // the gradients' norms are ~316 and ~632: clipped
  const double lr = 2e-3;
  int64_t good = 0;
  for (int step = 0; step < 4; ++step) {
    auto g = (torch::randn({n}, gen) * (1.0 + 0.5 * (step % 2))).cuda();
    if (step == 2) g[17] = std::nanf("");
    const double norm = g.cpu().to(torch::kFloat64).norm().item<double>();
    const auto sp = ft::adamw::step_params(o, good, lr, norm);
    const auto hyper = torch::tensor({sp.lr, sp.decay_factor, sp.lr / sp.bc1, 1.0f / sp.bc2_sqrt, sp.ema_weight,
                                      static_cast<float>(o.grad_clip)})
                           .cuda();
    const auto loss = torch::full({}, 0.25f, cuda);
    const auto before = p.clone();
    ft::adamw::graph_update_cuda(p, g, m, v, e, hyper, loss, partial, stats);
    if (step == 2) {
      EXPECT_TRUE(torch::equal(p, before)) << "a NaN gradient must change no weight";
      EXPECT_TRUE(torch::equal(m, mr) && torch::equal(v, vr) && torch::equal(e, er)) << "nor a moment or the EMA";
      continue;
    }
    auto gr = g.clone();
    ft::adamw::update_tensors(pr, gr, mr, vr, er, denom, sp);
    ++good;
    // Equal to rounding: the larger of 1e-3 of the step and two float ulps of the weights (the
    // kernel contracts p * decay - step into one rounding, the tensor form rounds twice).
    const double step_size = (pr - before).abs().max().item<double>();
    const double tol = std::max(1e-3 * step_size, 2.0 * 1.1920929e-7 * pr.abs().max().item<double>());
    EXPECT_LT((p - pr).abs().max().item<double>(), tol) << "step " << step;
    EXPECT_LT((e - er).abs().max().item<double>(), tol) << "step " << step;
    // Each side rounds in its own order: compare one step at a time, from the same state.
    p.copy_(pr);
    m.copy_(mr);
    v.copy_(vr);
    e.copy_(er);
  }
  const auto st = stats.cpu();
  std::printf("fused optimizer tail: statistics %g %g %g %g %g\n", st[0].item<double>(), st[1].item<double>(),
              st[2].item<double>(), st[3].item<double>(), st[4].item<double>());
  EXPECT_FLOAT_EQ(st[0].item<float>(), 0.75f);  // the loss of the 3 good steps
  EXPECT_EQ(st[1].item<float>(), 3.0f);
  EXPECT_EQ(st[2].item<float>(), 1.0f);
  EXPECT_EQ(st[3].item<float>(), 0.0f);  // the bad run ended
  EXPECT_EQ(st[4].item<float>(), 1.0f);
}

TEST_F(Cuda, FusedSamplerStepsEqualTheTensorSteps) {
  // The captured loop updates x in one kernel per step (sampler_cuda.cu); the eager loop in
  // tensor operations: conservative with weights (v objective) and not (eps objective), DDPM
  // and DDIM with noise (eta 0.5), equal to float rounding.
  KnownDistribution d(512, 8);
  std::vector<float> w(static_cast<size_t>(80 * d.P));
  for (size_t i = 0; i < w.size(); ++i) w[i] = 0.5f + static_cast<float>(i % 7) / 7.0f;
  for (const bool conservative : {true, false}) {
    auto mo = small_model();
    mo.conservative = conservative;
    mo.objective = conservative ? ft::Objective::kV : ft::Objective::kEps;
    ft::Downscaler ds(mo, fast_training(), "cuda");
    ds.train_epoch(view(d));
    ds.publish();
    for (const auto sampler : {ft::Sampler::kDdpm, ft::Sampler::kDdim}) {
      ft::SampleOptions so;
      so.sampler = sampler;
      so.members = 2;
      so.eta = 0.5;
      auto eager = so;
      eager.cuda_graphs = false;
      const float* weights = conservative ? w.data() : nullptr;
      double diff = 0;
      for (int call = 0; call < 3; ++call) {  // warm-up, capture, replay
        std::vector<float> a(static_cast<size_t>(80 * 2 * d.P)), b(a.size());
        ds.sample(d.context.data(), d.coarse.data(), weights, 80, so, 3 + call, a.data());
        ds.sample(d.context.data(), d.coarse.data(), weights, 80, eager, 3 + call, b.data());
        diff = std::max(diff, max_abs_difference(a, b));
      }
      // The captured loop ran the kernel: the same loop with tensor steps has more kernels.
      auto& graphs = *ft::internals(ds).sample_graphs;
      const int64_t fused_kernels = graphs.last_runner()->graph_kernels();
      graphs.fused_steps = false;
      for (int call = 0; call < 2; ++call) {  // warm-up, capture
        std::vector<float> a(static_cast<size_t>(80 * 2 * d.P));
        ds.sample(d.context.data(), d.coarse.data(), weights, 80, so, 3, a.data());
      }
      const int64_t tensor_kernels = graphs.last_runner()->graph_kernels();
      graphs.fused_steps = true;
      std::printf("fused sampler steps vs tensor steps (%s, %s): max difference %.2e, kernels %lld vs %lld\n",
                  conservative ? "conservative, weighted, v" : "eps", ft::name(sampler).c_str(), diff,
                  static_cast<long long>(fused_kernels), static_cast<long long>(tensor_kernels));
      EXPECT_LT(diff, 1e-4) << ft::name(sampler) << (conservative ? " conservative" : "");
      EXPECT_LT(fused_kernels, tensor_kernels) << ft::name(sampler) << (conservative ? " conservative" : "");
    }
  }
}
