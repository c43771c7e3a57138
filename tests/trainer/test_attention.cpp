// SPDX-License-Identifier: BSD-3-Clause
// model.attention: self-attention at the U-Net's lowest resolution.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <string>

#include "tests/trainer/trainer_test_data.hpp"
#include "trainer/checkpoint.hpp"
#include "trainer/downscaler.hpp"
#include "trainer/downscaler_impl.hpp"

namespace ft = finecast::trainer;
using namespace finecast::trainer::testing;  // NOLINT: the shared test data

namespace {

ft::ModelOptions unet(bool attention) {
  auto mo = small_model();
  mo.arch = finecast::trainer::Arch::kUnet;
  mo.patch_size = 64;
  mo.unet_channels = 8;
  mo.attention = attention;
  return mo;
}

/// The network's raw output for fixed inputs.
torch::Tensor output(ft::Downscaler& ds) {
  torch::NoGradGuard no_grad;
  auto gen = at::make_generator<at::CPUGeneratorImpl>(3);
  auto x = torch::randn({6, 64}, gen), c = torch::randn({6, 3}, gen);
  auto t = torch::tensor({0, 5, 10, 20, 30, 49}, torch::kInt64);
  return ft::internals(ds).net->forward(x, c, t);
}

}  // namespace

TEST(Attention, AddsAResidualBranchThatChangesTheOutput) {
  ft::Downscaler with(unet(true), fast_training(), "cpu"), without(unet(false), fast_training(), "cpu");
  // qkv (16 -> 48) and the output projection (16 -> 16) at 2c = 16 channels.
  EXPECT_EQ(with.parameter_count() - without.parameter_count(), 16 * 48 + 48 + 16 * 16 + 16);
  // The same weights in every shared tensor, by name.
  auto& wi = ft::internals(with);
  auto& wo = ft::internals(without);
  for (size_t i = 0; i < wo.names.size(); ++i)
    for (size_t j = 0; j < wi.names.size(); ++j)
      if (wi.names[j] == wo.names[i]) wi.view(wi.flat, j).copy_(wo.view(wo.flat, i));
  const auto y_with = output(with), y_without = output(without);
  const double change = (y_with - y_without).abs().max().item<double>() / y_without.abs().max().item<double>();
  std::printf("attention changes the output by %.3g (relative max)\n", change);
  EXPECT_GT(change, 1e-2);
  // With its output projection at zero the branch adds nothing: exactly the model without it.
  for (size_t j = 0; j < wi.names.size(); ++j)
    if (wi.names[j].rfind("attn.proj.", 0) == 0) wi.view(wi.flat, j).zero_();
  EXPECT_LT((output(with) - y_without).abs().max().item<double>(), 1e-6);
}

TEST(Attention, TrainsSamplesConservativelyAndRoundTripsThroughCheckpoints) {
  ScratchDir dir("attention");
  KnownDistribution d(256, 9, 64);
  auto to = fast_training();
  to.batch_size = 32;
  ft::Downscaler ds(unet(true), to, "cpu");
  double first = 0, last = 0;
  for (int e = 0; e < 6; ++e) (e == 0 ? first : last) = ds.train_epoch(view(d)).avg_loss;
  std::printf("unet with attention: loss %.4f -> %.4f\n", first, last);
  EXPECT_LT(last, 0.9 * first);
  ds.publish();
  ft::SampleOptions so;
  so.members = 2;
  std::vector<float> out(static_cast<size_t>(2 * 2 * 64));
  ds.sample(d.context.data(), d.coarse.data(), nullptr, 2, so, 1, out.data());
  for (int k = 0; k < 4; ++k) {
    double m = 0;
    for (int j = 0; j < 64; ++j) m += out[k * 64 + j] / 64.0;
    EXPECT_NEAR(m, d.coarse[k / 2], 1e-5);
  }
  ds.save_checkpoint(dir.path("a.h5"));
  auto back = ft::Downscaler::load_checkpoint(dir.path("a.h5"), "cpu");
  EXPECT_TRUE(back.model_options().attention);
  EXPECT_TRUE(torch::equal(ft::internals(back).flat, ft::internals(ds).flat));
  ft::Downscaler plain(unet(false), to, "cpu");
  try {
    plain.restore(dir.path("a.h5"));
    FAIL() << "a checkpoint with attention loaded into a model without";
  } catch (const ft::CheckpointError& e) {
    EXPECT_NE(std::string(e.what()).find("attention: file has true, this model has false"), std::string::npos)
        << e.what();
  }
}
