// SPDX-License-Identifier: BSD-3-Clause
// The CUDA-graph paths run eagerly on the CPU: the capturable training step (device-side
// clipping, AdamW, EMA, NaN/Inf check, statistics) and the staged sampler loop must do what
// the regular eager paths do. On a GPU, test_cuda.cpp compares the captured graphs with eager.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <string>
#include <vector>

#include "tests/trainer/trainer_test_data.hpp"
#include "trainer/downscaler.hpp"
#include "trainer/downscaler_impl.hpp"
#include "trainer/sample_graph.hpp"
#include "trainer/train_graph.hpp"

namespace ft = finecast::trainer;
using namespace finecast::trainer::testing;  // NOLINT: the shared test data

namespace {

ft::TrainOptions autograd_training() {
  auto t = fast_training();
  t.force_autograd = true;  // the graph path is the autograd path's (the fused one is CPU-only)
  return t;
}

}  // namespace

TEST(GraphPath, StaticStepTrainsLikeTheEagerStep) {
  KnownDistribution d(300, 2);  // 4 full batches through the graph path, the last 44 eagerly
  std::vector<float> w(static_cast<size_t>(d.n * d.P));
  for (size_t i = 0; i < w.size(); ++i) w[i] = 0.5f + static_cast<float>(i % 7);
  for (bool weighted : {false, true}) {
    ft::DataView v = view(d);
    if (weighted) v.weights = w.data();
    ft::Downscaler eager(small_model(), autograd_training(), "cpu"), graph(small_model(), autograd_training(), "cpu");
    ft::internals(graph).force_graph_path = true;
    const auto init = ft::internals(eager).flat.clone();
    double loss_e = 0, loss_g = 0;
    for (int e = 0; e < 3; ++e) {
      loss_e = eager.train_epoch(v).avg_loss;
      loss_g = graph.train_epoch(v).avg_loss;
    }
    ASSERT_TRUE(ft::internals(graph).train_graph) << "the graph path was not taken";
    EXPECT_EQ(graph.step(), eager.step());
    EXPECT_NEAR(loss_g, loss_e, 1e-5 * loss_e);
    const double diff = (ft::internals(graph).flat - ft::internals(eager).flat).norm().item<double>() /
                        (ft::internals(eager).flat - init).norm().item<double>();
    std::printf("static step vs eager (%s): loss %.6f vs %.6f, relative weight-update difference %.2e\n",
                weighted ? "weighted" : "uniform", loss_g, loss_e, diff);
    EXPECT_LT(diff, 1e-4);
    EXPECT_LT((ft::internals(graph).ema - ft::internals(eager).ema).abs().max().item<double>(), 1e-5);
  }
}

TEST(GraphPath, NonFiniteStepsChangeNothingAndAreCountedAtTheEpochEnd) {
  KnownDistribution d(640, 7);
  auto to = autograd_training();
  to.lr = 1e12;  // the first step blows the weights up; every later loss overflows
  to.warmup_steps = 0;
  to.grad_clip = 0;
  to.max_bad_steps = 3;
  ft::Downscaler ds(small_model(), to, "cpu");
  ft::internals(ds).force_graph_path = true;
  std::vector<std::string> events;
  const auto st = ds.train_epoch(view(d), [&](const std::string& e) { events.push_back(e); });
  EXPECT_GT(st.bad_steps, 0);
  EXPECT_EQ(ds.step(), st.batches - st.bad_steps) << "bad steps are not counted as optimizer steps";
  bool skipped = false, restored = false;
  for (const auto& e : events) {
    skipped = skipped || e.find("graph-replayed steps skipped") != std::string::npos;
    restored = restored || e.find("restored the last good weights") != std::string::npos;
  }
  EXPECT_TRUE(skipped);
  EXPECT_TRUE(restored);
  EXPECT_TRUE(torch::isfinite(ft::internals(ds).flat).all().item<bool>());
  EXPECT_TRUE(torch::isfinite(ft::internals(ds).ema).all().item<bool>());
}

TEST(GraphPath, NotTakenWhenMicroBatching) {
  KnownDistribution d(256, 3);
  auto to = autograd_training();
  to.batch_size = 32;
  to.accumulate = 2;
  ft::Downscaler ds(small_model(), to, "cpu");
  ft::internals(ds).force_graph_path = true;
  ds.train_epoch(view(d));
  EXPECT_FALSE(ft::internals(ds).train_graph) << "a graph is captured for one micro-batch per step only";
}

TEST(GraphPath, StagedSamplerLoopEqualsTheEagerSampler) {
  KnownDistribution d(128, 9, 64);
  auto mo = small_model();
  mo.arch = finecast::trainer::Arch::kUnet;
  mo.patch_size = 64;
  mo.unet_channels = 8;
  ft::Downscaler a(mo, fast_training(), "cpu"), b(mo, fast_training(), "cpu");
  a.train_epoch(view(d));
  b.train_epoch(view(d));
  a.publish();
  b.publish();
  ft::internals(b).sample_graphs = std::make_unique<ft::graphs::SampleGraphs>(torch::Device(torch::kCPU));
  std::vector<float> w(static_cast<size_t>(4 * d.P), 1.0f);
  // Churn's noise is pre-drawn with the rest, so the staged loop draws what the eager one does.
  for (const double churn : {0.0, 0.5})
    for (const auto sampler : {ft::Sampler::kDdpm, ft::Sampler::kDdim}) {
      ft::SampleOptions so;
      so.sampler = sampler;
      so.members = 3;
      so.eta = 0.5;
      so.churn = churn;
      for (int call = 0; call < 3; ++call) {  // warm-up, "capture", replay
        std::vector<float> x(static_cast<size_t>(4 * 3 * d.P)), y(x.size());
        a.sample(d.context.data(), d.coarse.data(), w.data(), 4, so, 5 + call, x.data());
        b.sample(d.context.data(), d.coarse.data(), w.data(), 4, so, 5 + call, y.data());
        EXPECT_EQ(x, y) << ft::name(sampler) << " churn " << churn << " call " << call;
      }
    }
  EXPECT_EQ(ft::internals(b).sample_graphs->shapes(), 4u);
}
