// SPDX-License-Identifier: BSD-3-Clause
// The fused CPU MLP against LibTorch autograd (loss, every gradient, sampling), and the fused
// AdamW step against torch::optim::AdamW; the sampler's packed product against a product in double.
#include <ATen/CPUGeneratorImpl.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <cstdio>
#include <random>
#include <tuple>

#include "tests/trainer/trainer_test_data.hpp"
#include "trainer/adamw.hpp"
#include "trainer/downscaler.hpp"
#include "trainer/downscaler_impl.hpp"
#include "trainer/fused_mlp.hpp"
#include "trainer/packed_gemm.hpp"
#include "trainer/training_internal.hpp"

namespace ft = finecast::trainer;
using namespace finecast::trainer::testing;  // NOLINT: the shared test data

namespace {

/// Random epoch tensors and one global batch of draws for a model's shapes.
struct Batch {
  ft::EpochTensors data;
  ft::StepDraws draws;
};

Batch make_batch(const ft::ModelOptions& mo, int64_t n, int64_t b, bool weighted, uint64_t seed) {
  auto gen = at::make_generator<at::CPUGeneratorImpl>(seed);
  const auto f = torch::TensorOptions().dtype(torch::kFloat32);
  Batch r;
  r.data.n = n;
  r.data.r0 = torch::randn({n, mo.patch_size}, gen, f);
  r.data.ctx = torch::randn({n, mo.context_size}, gen, f);
  if (weighted) {
    auto w = torch::rand({n, mo.patch_size}, gen, f) + 0.1;
    r.data.w = (w / w.sum(1, true)).contiguous();
  }
  r.draws.idx = torch::randperm(n, gen, torch::TensorOptions().dtype(torch::kInt64)).narrow(0, 0, b).contiguous();
  r.draws.t = torch::randint(0, mo.diffusion_steps, {b}, gen, torch::TensorOptions().dtype(torch::kInt64));
  r.draws.eps = torch::randn({b, mo.patch_size}, gen, f);
  return r;
}

/// max |a - b| / max |b|.
double relative_max_difference(const torch::Tensor& a, const torch::Tensor& b) {
  return (a - b).abs().max().item<double>() / b.abs().max().item<double>();
}

}  // namespace

// activation, hidden width, depth, conservative with area weights, v objective; widths 20, 13 and
// 60 end in a part of the activation pass's 8-float block
using FusedCase = std::tuple<ft::Activation, int64_t, int64_t, bool, bool>;
class FusedMlp : public ::testing::TestWithParam<FusedCase> {};

TEST_P(FusedMlp, LossAndEveryGradientEqualAutograd) {
  if (!ft::fused::compiled()) GTEST_SKIP() << "this build has no CBLAS, so no fused path";
  const auto [activation, hidden, depth, weighted, v_objective] = GetParam();
  ft::ModelOptions mo = small_model();
  mo.activation = activation;
  mo.hidden = hidden;
  mo.depth = depth;
  mo.objective = v_objective ? finecast::trainer::Objective::kV : finecast::trainer::Objective::kEps;
  ft::TrainOptions to = fast_training();
  ft::Downscaler fused(mo, to, "cpu");
  to.force_autograd = true;
  ft::Downscaler reference(mo, to, "cpu");
  ASSERT_EQ(fused.training_path(), "fused-cpu");
  ASSERT_EQ(reference.training_path(), "autograd");
  ASSERT_TRUE(torch::equal(ft::internals(fused).flat, ft::internals(reference).flat)) << "same seed, same weights";

  const Batch b = make_batch(mo, 200, 48, weighted, 3);
  const auto f = ft::forward_backward(ft::internals(fused), b.data, b.draws);
  const auto r = ft::forward_backward(ft::internals(reference), b.data, b.draws);
  EXPECT_NEAR(f.loss, r.loss, 2e-6 * r.loss);
  EXPECT_NEAR(f.norm, r.norm, 1e-5 * r.norm);
  // Every tensor separately: a wrong layer would hide in the norm of the whole gradient.
  const auto& im = ft::internals(reference);
  double worst = 0;
  std::string worst_name;
  for (size_t i = 0; i < im.names.size(); ++i) {
    const double d =
        relative_max_difference(ft::internals(fused).view(ft::internals(fused).grad, i), im.view(im.grad, i));
    if (d > worst) worst = d, worst_name = im.names[i];
  }
  std::printf("%s width %lld depth %lld %s %s: loss %.7g vs %.7g, worst gradient difference %.2e (%s)\n",
              ft::name(activation).c_str(), static_cast<long long>(hidden), static_cast<long long>(depth),
              weighted ? "weighted" : "uniform", v_objective ? "v" : "eps", f.loss, r.loss, worst, worst_name.c_str());
  // Float32 rounding of sums in a different order (and a 1e-7 exp): measured below 5e-7.
  EXPECT_LT(worst, 5e-6) << worst_name;
  // The test has teeth: another batch's gradient is far away.
  const Batch other = make_batch(mo, 200, 48, weighted, 4);
  ft::forward_backward(ft::internals(reference), other.data, other.draws);
  EXPECT_GT(relative_max_difference(ft::internals(fused).grad, ft::internals(reference).grad), 1e-2);
}

INSTANTIATE_TEST_SUITE_P(ActivationsAndWidths, FusedMlp,
                         ::testing::Values(FusedCase{ft::Activation::kSilu, 128, 3, false, false},
                                           FusedCase{ft::Activation::kSilu, 20, 1, true, false},
                                           FusedCase{ft::Activation::kSilu, 256, 2, true, true},
                                           FusedCase{ft::Activation::kGelu, 128, 3, false, false},
                                           FusedCase{ft::Activation::kGelu, 64, 2, true, true},
                                           FusedCase{ft::Activation::kGelu, 13, 1, false, true},
                                           FusedCase{ft::Activation::kRelu, 128, 3, true, false},
                                           FusedCase{ft::Activation::kRelu, 60, 1, false, true},
                                           FusedCase{ft::Activation::kRelu, 256, 2, false, false}));

TEST(FusedMlpPath, MicroBatchesAccumulateToTheGlobalBatchGradient) {
  if (!ft::fused::compiled()) GTEST_SKIP() << "no fused path in this build";
  const ft::ModelOptions mo = small_model();
  ft::Downscaler whole(mo, fast_training(), "cpu"), parts(mo, fast_training(), "cpu");
  const Batch b = make_batch(mo, 300, 60, true, 8);
  ft::internals(parts).micro_batch = 16;  // 16 + 16 + 16 + 12
  const auto w = ft::forward_backward(ft::internals(whole), b.data, b.draws);
  const auto p = ft::forward_backward(ft::internals(parts), b.data, b.draws);
  EXPECT_NEAR(p.loss, w.loss, 1e-6 * w.loss);
  EXPECT_LT(relative_max_difference(ft::internals(parts).grad, ft::internals(whole).grad), 1e-5);
}

TEST(FusedMlpPath, SamplingEqualsTheAutogradSamplers) {
  // Same weights, seed and pre-drawn noise: the fused DDPM/DDIM loop against diffusion.cpp's
  // samplers on the LibTorch network, conservative with area weights.
  if (!ft::fused::compiled()) GTEST_SKIP() << "no fused path in this build";
  KnownDistribution d(256, 3);
  auto to = fast_training();
  ft::Downscaler fused(small_model(), to, "cpu");
  to.force_autograd = true;
  ft::Downscaler reference(small_model(), to, "cpu");
  fused.train_epoch(view(d));
  ft::internals(reference).flat.copy_(ft::internals(fused).flat);
  ft::internals(reference).ema.copy_(ft::internals(fused).ema);
  reference.update_normalisation(view(d));
  fused.publish();
  reference.publish();
  std::vector<float> w(static_cast<size_t>(6 * d.P));
  for (size_t i = 0; i < w.size(); ++i) w[i] = 0.5f + static_cast<float>(i % 5);
  for (const auto& [sampler, eta] : {std::make_pair(ft::Sampler::kDdpm, 0.0), std::make_pair(ft::Sampler::kDdim, 0.0),
                                     std::make_pair(ft::Sampler::kDdim, 0.7)}) {
    ft::SampleOptions so;
    so.sampler = sampler;
    so.eta = eta;
    so.members = 3;
    std::vector<float> a(static_cast<size_t>(6 * 3 * d.P)), b(a.size());
    fused.sample(d.context.data(), d.coarse.data(), w.data(), 6, so, 11, a.data());
    reference.sample(d.context.data(), d.coarse.data(), w.data(), 6, so, 11, b.data());
    double worst = 0, scale = 0;
    for (size_t i = 0; i < a.size(); ++i) {
      worst = std::max(worst, static_cast<double>(std::abs(a[i] - b[i])));
      scale = std::max(scale, static_cast<double>(std::abs(b[i])));
    }
    std::printf("fused vs autograd sampling (%s, eta %.1f): max difference %.2e of %.2f\n", ft::name(sampler).c_str(),
                eta, worst, scale);
    EXPECT_LT(worst, 1e-4 * scale) << ft::name(sampler);
  }
}

TEST(PackedWeight, ProductEqualsTheDoublePrecisionProductAndDoesNotDependOnTheSplit) {
  // C = A W^T through the packed panels against a product summed in double, for widths that end
  // inside a 16-column panel and row counts that end inside the 6-row block; leading dimensions
  // past the shapes, whose extra columns of C must stay untouched. Then the same elements from
  // other splits (one row at a time, one panel at a time) must be bitwise equal: the sampler's
  // output must not depend on batch size or thread count.
  std::mt19937 rng(5);
  std::normal_distribution<float> normal;
  for (const int64_t m : {1, 5, 6, 7, 13, 80})
    for (const int64_t n : {1, 15, 16, 17, 37})
      for (const int64_t k : {1, 7, 64}) {
        const int64_t lda = k + 3, ldw = k + 2, ldc = n + 5;
        std::vector<float> a(static_cast<size_t>(m * lda)), w(static_cast<size_t>(n * ldw));
        for (auto& v : a) v = normal(rng);
        for (auto& v : w) v = normal(rng);
        ft::fused::PackedWeight packed;
        packed.pack(w.data(), n, k, ldw);
        ASSERT_EQ(packed.panels(), (n + 15) / 16);
        const float sentinel = 12345.0f;
        std::vector<float> c(static_cast<size_t>(m * ldc), sentinel);
        packed.multiply(m, a.data(), lda, c.data(), ldc, 0, packed.panels());
        double worst = 0;
        for (int64_t i = 0; i < m; ++i) {
          for (int64_t j = 0; j < n; ++j) {
            double exact = 0, magnitude = 0;
            for (int64_t kk = 0; kk < k; ++kk) {
              exact += static_cast<double>(a[i * lda + kk]) * w[j * ldw + kk];
              magnitude += std::abs(static_cast<double>(a[i * lda + kk]) * w[j * ldw + kk]);
            }
            worst = std::max(worst, std::abs(c[i * ldc + j] - exact) / magnitude);
          }
          for (int64_t j = n; j < ldc; ++j) ASSERT_EQ(c[i * ldc + j], sentinel) << "column " << j << " written";
        }
        // The worst-case bound of k float multiply-adds (each rounding once or twice), relative
        // to the sum of the terms' magnitudes.
        EXPECT_LE(worst, 2.0 * static_cast<double>(k) * std::ldexp(1.0, -24)) << "m " << m << " n " << n << " k " << k;
        std::vector<float> split(c.size(), sentinel);
        for (int64_t i = 0; i < m; ++i)
          for (int64_t p = 0; p < packed.panels(); ++p)
            packed.multiply(1, a.data() + i * lda, lda, split.data() + i * ldc, ldc, p, p + 1);
        ASSERT_EQ(split, c) << "m " << m << " n " << n << " k " << k;
      }
}

TEST(FusedAdamW, OneStepEqualsTorchOptimAdamW) {
  // The fused pass (CPU loop and the tensor form used on GPUs) against torch::optim::AdamW on
  // the same gradients, over three steps (the bias corrections change with the step).
  auto gen = at::make_generator<at::CPUGeneratorImpl>(1);
  const int64_t n = 10007;  // not a multiple of any vector width
  auto p0 = torch::randn({n}, gen), g = torch::randn({n}, gen);
  ft::TrainOptions o;
  o.weight_decay = 0.05;
  o.grad_clip = 0;  // clipping is not part of torch::optim::AdamW
  const double lr = 3e-3;
  auto ref = p0.clone().requires_grad_(true);
  torch::optim::AdamW opt({ref},
                          torch::optim::AdamWOptions(lr).betas({0.9, 0.999}).eps(1e-8).weight_decay(o.weight_decay));
  auto p = p0.clone(), m = torch::zeros({n}), v = torch::zeros({n}), e = p0.clone();
  auto pt = p0.clone(), mt = torch::zeros({n}), vt = torch::zeros({n}), et = p0.clone(), denom = torch::zeros({n});
  for (int64_t step = 0; step < 3; ++step) {
    auto gs = g * (1.0 + 0.5 * static_cast<double>(step));  // a different gradient each step
    ref.mutable_grad() = gs.clone();
    opt.step();
    const auto sp = ft::adamw::step_params(o, step, lr, gs.norm().item<double>());
    ft::adamw::update_cpu(p.data_ptr<float>(), gs.data_ptr<float>(), m.data_ptr<float>(), v.data_ptr<float>(),
                          e.data_ptr<float>(), n, sp);
    auto gt = gs.clone();
    ft::adamw::update_tensors(pt, gt, mt, vt, et, denom, sp);
    const auto r = ref.detach();
    // Weights of size ~4 move by ~3e-3 per step; the difference is float rounding of the weights
    // (one ulp of 4 is 4.8e-7), far below any error of a coefficient.
    const double step_size = (r - p0).abs().max().item<double>();
    EXPECT_LT((p - r).abs().max().item<double>(), 1e-3 * step_size) << "CPU loop, step " << step;
    EXPECT_LT((pt - r).abs().max().item<double>(), 1e-3 * step_size) << "tensor form, step " << step;
  }
  // And the optimizer state agrees too.
  auto& state = static_cast<torch::optim::AdamWParamState&>(*opt.state().begin()->second);
  EXPECT_LT((m - state.exp_avg()).abs().max().item<double>(), 1e-6 * state.exp_avg().abs().max().item<double>());
  EXPECT_LT((v - state.exp_avg_sq()).abs().max().item<double>(), 1e-6 * state.exp_avg_sq().abs().max().item<double>());
  // The EMA moved towards the weights.
  EXPECT_GT((e - p0).abs().max().item<double>(), 0.0);
}

TEST(FusedAdamW, ClippingScalesTheGradientLikeClipGradNorm) {
  ft::TrainOptions o;
  o.grad_clip = 1.0;
  EXPECT_FLOAT_EQ(ft::adamw::step_params(o, 0, 1e-3, 0.5).grad_scale, 1.0f);
  EXPECT_FLOAT_EQ(ft::adamw::step_params(o, 0, 1e-3, 4.0).grad_scale, static_cast<float>(1.0 / (4.0 + 1e-6)));
  o.grad_clip = 0;
  EXPECT_FLOAT_EQ(ft::adamw::step_params(o, 0, 1e-3, 4.0).grad_scale, 1.0f);
  auto g = torch::randn({70001});
  EXPECT_NEAR(ft::adamw::norm_cpu(g.data_ptr<float>(), g.numel()), g.norm().item<double>(),
              1e-5 * g.norm().item<double>());
}
