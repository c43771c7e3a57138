// SPDX-License-Identifier: BSD-3-Clause
// The downscaler learns a known conditional distribution; conservation; determinism; NaN recovery.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <thread>

#include "tests/trainer/trainer_test_data.hpp"
#include "trainer/downscaler.hpp"
#include "trainer/downscaler_impl.hpp"

namespace ft = finecast::trainer;
using namespace finecast::trainer::testing;  // NOLINT: the shared test data and scoring

namespace {

/// One intra-op thread for every trainer test: results do not depend on the core count, and a
/// busy 2-core CI machine cannot stall OpenMP barriers (spinning threads that are not scheduled
/// made a 2-thread run ~100x slower under load).
class OneTorchThread : public ::testing::Environment {
 public:
  void SetUp() override { ft::set_torch_threads(1); }
};
[[maybe_unused]] ::testing::Environment* const kOneThread = ::testing::AddGlobalTestEnvironment(new OneTorchThread);

/// The training-range tests' model: small, one epoch on `d` in batches of 32, published.
ft::Downscaler range_test_model(const KnownDistribution& d) {
  auto to = fast_training();
  to.batch_size = 32;
  ft::Downscaler ds(small_model(), to, "cpu");
  ds.train_epoch(view(d));
  ds.publish();
  return ds;
}

}  // namespace

TEST(Downscaler, LearnsAKnownConditionalDistribution) {
  const auto t0 = std::chrono::steady_clock::now();
  KnownDistribution train(4096, 1), test(64, 2);
  ft::Downscaler ds(small_model(), fast_training(), "cpu");
  ft::SampleOptions so;
  so.sampler = finecast::trainer::Sampler::kDdpm;
  so.members = 32;

  // Tolerances: mean error < 0.12 (pattern amplitude 0.2..1.8, cell noise 0.29), spread within
  // 30% of 0.29, amplitude correlation > 0.95. The untrained model must fail them.
  const Skill before = evaluate(ds, test, so, 9);
  EXPECT_GT(before.mean_rmse, 0.3) << "an untrained model already fits: the test would prove nothing";

  for (int epoch = 0; epoch < 40; ++epoch) ds.train_epoch(view(train));
  ds.publish();
  const Skill ddpm = evaluate(ds, test, so, 9);
  EXPECT_LT(ddpm.mean_rmse, 0.12);
  EXPECT_NEAR(ddpm.spread, test.true_std(), 0.3 * test.true_std());
  EXPECT_GT(ddpm.amp_corr, 0.95);

  so.sampler = finecast::trainer::Sampler::kDdim;
  so.steps = 10;
  const Skill ddim = evaluate(ds, test, so, 9);
  EXPECT_LT(ddim.mean_rmse, 0.15);
  EXPECT_GT(ddim.amp_corr, 0.95);
  EXPECT_NEAR(ddim.spread, test.true_std(), 0.3 * test.true_std());

  // sample.recentre_sigma: 4 members' own mean carries the noise of 4 draws (0.29 / 2 a cell);
  // recentred on the denoiser's estimate of the conditional mean it nearly drops, and the
  // members' spread stays that of independent draws.
  so.sampler = finecast::trainer::Sampler::kDdpm;
  so.members = 4;
  const Skill four = evaluate(ds, test, so, 9);
  so.recentre_sigma = 16.0;
  const Skill recentred = evaluate(ds, test, so, 9);
  EXPECT_LT(recentred.mean_rmse, 0.5 * four.mean_rmse);
  EXPECT_LT(recentred.mean_rmse, ddpm.mean_rmse) << "4 recentred members against 32 members' own mean";
  EXPECT_NEAR(recentred.spread, test.true_std(), 0.3 * test.true_std());
  std::printf("learning test: 4 members' mean rmse %.3f, recentred %.3f (spread %.3f)\n", four.mean_rmse,
              recentred.mean_rmse, recentred.spread);

  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  RecordProperty("seconds", std::to_string(secs));
  std::printf(
      "learning test: %d steps, %.1f s; ddpm rmse %.3f spread %.3f (truth %.3f) corr %.3f; "
      "ddim rmse %.3f spread %.3f corr %.3f\n",
      static_cast<int>(ds.step()), secs, ddpm.mean_rmse, ddpm.spread, test.true_std(), ddpm.amp_corr, ddim.mean_rmse,
      ddim.spread, ddim.amp_corr);
}

TEST(Downscaler, ConservativeSamplesKeepTheCoarseValueForEveryMember) {
  KnownDistribution d(256, 3);
  ft::Downscaler ds(small_model(), fast_training(), "cpu");
  ds.train_epoch(view(d));
  ds.publish();
  // Non-uniform area weights (rows need not sum to 1: they are normalised).
  std::vector<float> w(static_cast<size_t>(8 * d.P));
  for (size_t i = 0; i < w.size(); ++i) w[i] = 0.5f + static_cast<float>(i % 7);
  std::vector<float> coarse = {-3.0f, 0.0f, 1.25f, 1000.0f, 2.0f, -0.5f, 7.0f, 0.1f};
  for (const auto sampler : {ft::Sampler::kDdpm, ft::Sampler::kDdim}) {
    ft::SampleOptions so;
    so.sampler = sampler;
    so.members = 5;
    std::vector<float> out(static_cast<size_t>(8 * 5 * d.P));
    for (bool weighted : {false, true}) {
      ds.sample(d.context.data(), coarse.data(), weighted ? w.data() : nullptr, 8, so, 1, out.data());
      for (int64_t i = 0; i < 8; ++i) {
        double wsum = 0;
        for (int64_t j = 0; j < d.P; ++j) wsum += weighted ? w[i * d.P + j] : 1.0;
        for (int64_t k = 0; k < 5; ++k) {
          double mean = 0, var = 0;
          for (int64_t j = 0; j < d.P; ++j) {
            const double v = out[(i * 5 + k) * d.P + j];
            mean += v * (weighted ? w[i * d.P + j] : 1.0) / wsum;
          }
          for (int64_t j = 0; j < d.P; ++j) var += std::pow(out[(i * 5 + k) * d.P + j] - mean, 2);
          EXPECT_NEAR(mean, coarse[i], 2e-6 * std::max(1.0f, std::abs(coarse[i])))
              << ft::name(sampler) << " row " << i << " member " << k << (weighted ? " weighted" : "");
          EXPECT_GT(var, 1e-6) << "samples must not collapse onto the coarse value";
        }
      }
    }
  }
}

// A constant field of tiny values (1e-20 here, a field in units that make it so): its residual is
// float32 rounding, and the residual scale once had a fixed floor of 1e-12, so the samples were
// the field plus noise 1e8 times the field. The floor follows the field's magnitude now.
TEST(Downscaler, TheSamplesOfAConstantTinyFieldStayCloseToIt) {
  const int64_t n = 64, C = 3, P = 16;
  const float value = 1e-20f;
  std::vector<float> context(static_cast<size_t>(n * C), value), fine(static_cast<size_t>(n * P), value);
  ft::ModelOptions mo = small_model();
  mo.hidden = 16;
  mo.depth = 1;
  mo.diffusion_steps = 10;
  ft::Downscaler ds(mo, fast_training(), "cpu");
  ds.train_epoch({context.data(), fine.data(), nullptr, n});
  ds.publish();
  ft::SampleOptions so;
  so.members = 3;
  std::vector<float> coarse(4, value), out(static_cast<size_t>(4 * 3 * P));
  ds.sample(context.data(), coarse.data(), nullptr, 4, so, 1, out.data());
  double worst = 0;
  for (float v : out) worst = std::max(worst, std::abs(static_cast<double>(v) - value));
  EXPECT_LT(worst, 1e-5 * value) << "samples deviate from the constant field by " << worst;
}

TEST(Downscaler, NonConservativeModeDoesNotForceTheMean) {
  KnownDistribution d(256, 3);
  auto mo = small_model();
  mo.conservative = false;
  ft::Downscaler ds(mo, fast_training(), "cpu");
  ds.publish();
  ft::SampleOptions so;
  so.members = 4;
  std::vector<float> out(static_cast<size_t>(4 * d.P));
  ds.sample(d.context.data(), d.coarse.data(), nullptr, 1, so, 1, out.data());
  double worst = 0;
  for (int k = 0; k < 4; ++k) {
    double m = 0;
    for (int64_t j = 0; j < d.P; ++j) m += out[k * d.P + j] / d.P;
    worst = std::max(worst, std::abs(m - d.coarse[0]));
  }
  EXPECT_GT(worst, 1e-3);  // the projection is what makes conservative mode exact
}

TEST(Downscaler, SeededTrainingAndSamplingAreDeterministic) {
  KnownDistribution d(300, 4);
  auto run = [&](uint64_t seed) {
    auto to = fast_training();
    to.seed = seed;
    to.batch_size = 32;  // 300 = 9 full batches + a partial one
    ft::Downscaler ds(small_model(), to, "cpu");
    ds.train_epoch(view(d));
    ds.train_epoch(view(d));
    ds.publish();
    ft::SampleOptions so;
    so.members = 3;
    std::vector<float> out(static_cast<size_t>(3 * 3 * d.P));
    ds.sample(d.context.data(), d.coarse.data(), nullptr, 3, so, 77, out.data());
    return std::make_pair(ft::internals(ds).flat.clone(), out);
  };
  const auto a = run(10), b = run(10), c = run(11);
  EXPECT_TRUE(torch::equal(a.first, b.first));
  EXPECT_EQ(a.second, b.second);
  EXPECT_FALSE(torch::equal(a.first, c.first));
}

// sample.clip_context: the network sees each context feature within the range it had in training,
// widened by sample.clip_margin times its width. A row whose features lie far beyond samples
// exactly what the row at those bounds does (same seed, same noise); unclipped, or inside the
// bounds, it samples something else. The range is the training rows' own, to the float.
TEST(Downscaler, ContextBeyondTheTrainingRangeIsHeldToItsEdges) {
  const KnownDistribution d(200, 6);
  ft::Downscaler ds = range_test_model(d);
  std::vector<float> lo(3, 1e30f), hi(3, -1e30f);
  for (int64_t i = 0; i < d.n; ++i)
    for (int64_t k = 0; k < 3; ++k) {
      lo[k] = std::min(lo[k], d.context[i * 3 + k]);
      hi[k] = std::max(hi[k], d.context[i * 3 + k]);
    }
  const auto& sums = ft::internals(ds).sums;
  for (size_t k = 0; k < 3; ++k) {
    EXPECT_EQ(sums.context_min[k], lo[k]);
    EXPECT_EQ(sums.context_max[k], hi[k]);
  }
  // Above the range in the first two features, below it in the third.
  const std::vector<float> edge = {hi[0], hi[1], lo[2]}, beyond = {hi[0] + 5, hi[1] + 40, lo[2] - 3};
  const float coarse = hi[0];
  auto sample = [&](const std::vector<float>& context, bool clip, double margin) {
    ft::SampleOptions so;
    so.members = 3;
    so.clip_context = clip;
    so.clip_margin = margin;
    std::vector<float> out(static_cast<size_t>(3 * d.P));
    ds.sample(context.data(), &coarse, nullptr, 1, so, 9, out.data());
    return out;
  };
  EXPECT_EQ(sample(beyond, true, 0), sample(edge, true, 0));
  EXPECT_NE(sample(beyond, false, 0), sample(edge, false, 0));
  EXPECT_EQ(sample(edge, false, 0), sample(edge, true, 0));  // inside the range nothing changes
  // With a margin of a half: the bounds lie half the range's width beyond it, and a value between
  // the range and them is the network's to see.
  std::vector<float> bound(3), inside(3);
  for (int k = 0; k < 3; ++k) {
    const float width = hi[k] - lo[k], sign = k < 2 ? 1.0f : -1.0f;
    bound[k] = edge[k] + sign * 0.5f * width;
    inside[k] = edge[k] + sign * 0.25f * width;
  }
  EXPECT_EQ(sample(beyond, true, 0.5), sample(bound, true, 0.5));
  EXPECT_NE(sample(inside, true, 0.5), sample(edge, true, 0.5));
  EXPECT_EQ(sample(inside, true, 0.5), sample(inside, false, 0.5));
  // The rows the clip would move are counted (finecast-downscale's log line): beyond, not the
  // edge; with a margin of a half, not `inside`.
  std::vector<float> rows = edge;
  rows.insert(rows.end(), beyond.begin(), beyond.end());
  rows.insert(rows.end(), inside.begin(), inside.end());
  EXPECT_EQ(ds.rows_beyond_training_range(rows.data(), 3, 0.0), 2);
  EXPECT_EQ(ds.rows_beyond_training_range(rows.data(), 3, 0.5), 1);
  EXPECT_EQ(ds.rows_beyond_training_range(d.context.data(), d.n, 0.0), 0);
}

// sample.inflation_range: a patch's members spread around their mean by inflation * (1 + e)^k,
// e the largest excess of its raw context over the training range in units of the range's width.
// Inside the range the members are those of the plain inflation; beyond it their deviations from
// the same mean are (1 + e)^k times as large (same seed, same noise), with or without the clip.
TEST(Downscaler, InflationGrowsWithTheContextsExcessOverTheTrainingRange) {
  const KnownDistribution d(200, 6);
  ft::Downscaler ds = range_test_model(d);
  const auto& sums = ft::internals(ds).sums;
  const auto lo = [&](int k) { return static_cast<float>(sums.context_min[static_cast<size_t>(k)]); };
  const auto hi = [&](int k) { return static_cast<float>(sums.context_max[static_cast<size_t>(k)]); };
  const auto width = [&](int k) { return static_cast<double>(hi(k)) - lo(k); };
  // Inside; beyond in two features (the larger excess, 0.6 of the second's width, counts); below.
  const std::vector<float> rows = {
      lo(0), hi(1), lo(2), static_cast<float>(hi(0) + 0.2 * width(0)), static_cast<float>(hi(1) + 0.6 * width(1)),
      lo(2), lo(0), lo(1), static_cast<float>(lo(2) - 1.5 * width(2))};
  const std::vector<float> coarse = {0.1f, 0.2f, 0.3f};
  const int M = 4;
  auto sample = [&](double k, bool clip) {
    ft::SampleOptions so;
    so.members = M;
    so.inflation = 1.5;
    so.inflation_range = k;
    so.clip_context = clip;
    std::vector<float> out(static_cast<size_t>(3 * M * d.P));
    ds.sample(rows.data(), coarse.data(), nullptr, 3, so, 17, out.data());
    return out;
  };
  for (const bool clip : {true, false}) {
    const auto plain = sample(0.0, clip), grown = sample(2.0, clip);
    const double excess[3] = {0.0, 0.6, 1.5};
    for (int r = 0; r < 3; ++r) {
      const double factor = std::pow(1.0 + excess[r], 2.0);
      for (int64_t i = 0; i < d.P; ++i) {
        double mean_plain = 0, mean_grown = 0;
        for (int m = 0; m < M; ++m) {
          mean_plain += plain[static_cast<size_t>((r * M + m) * d.P + i)] / M;
          mean_grown += grown[static_cast<size_t>((r * M + m) * d.P + i)] / M;
        }
        EXPECT_NEAR(mean_grown, mean_plain, 1e-4) << "row " << r << " clip " << clip;
        for (int m = 0; m < M; ++m) {
          const double dev_plain = plain[static_cast<size_t>((r * M + m) * d.P + i)] - mean_plain;
          const double dev_grown = grown[static_cast<size_t>((r * M + m) * d.P + i)] - mean_grown;
          EXPECT_NEAR(dev_grown, factor * dev_plain, 1e-4 * (1 + std::abs(dev_grown))) << "row " << r;
        }
      }
    }
  }
}

TEST(Downscaler, SamplingUsesOnlyPublishedWeightsWhileTrainingRuns) {
  KnownDistribution d(2048, 6);
  ft::Downscaler ds(small_model(), fast_training(), "cpu");
  ds.update_normalisation(view(d));
  ds.publish();
  ft::SampleOptions so;
  so.members = 2;
  std::vector<float> before(static_cast<size_t>(4 * 2 * d.P)), during(before.size()), after(before.size());
  ds.sample(d.context.data(), d.coarse.data(), nullptr, 4, so, 3, before.data());
  std::atomic<bool> done{false};
  std::thread trainer([&] {
    for (int e = 0; e < 3; ++e) ds.train_epoch(view(d));
    done = true;
  });
  int draws = 0;
  while (!done || draws == 0) {
    ds.sample(d.context.data(), d.coarse.data(), nullptr, 4, so, 3, during.data());
    ASSERT_EQ(during, before) << "a sample during training saw unpublished weights";
    ++draws;
  }
  trainer.join();
  ds.publish();
  ds.sample(d.context.data(), d.coarse.data(), nullptr, 4, so, 3, after.data());
  EXPECT_NE(after, before);
}

TEST(Downscaler, NanLossesAreSkippedAndTheLastGoodWeightsRestored) {
  KnownDistribution d(640, 7);
  auto to = fast_training();
  to.lr = 1e12;  // the first step blows the weights up; every later loss overflows
  to.warmup_steps = 0;
  to.grad_clip = 0;
  to.max_bad_steps = 3;
  ft::Downscaler ds(small_model(), to, "cpu");
  std::vector<std::string> events;
  const auto st = ds.train_epoch(view(d), [&](const std::string& e) { events.push_back(e); });
  EXPECT_GT(st.bad_steps, 0);
  bool restored = false;
  for (const auto& e : events) restored = restored || e.find("restored the last good weights") != std::string::npos;
  EXPECT_TRUE(restored);
  EXPECT_TRUE(torch::isfinite(ft::internals(ds).flat).all().item<bool>()) << "training left non-finite weights";
  EXPECT_TRUE(torch::isfinite(ft::internals(ds).ema).all().item<bool>());
}

TEST(Downscaler, RowsWithNanAreDroppedNotTrainedOn) {
  KnownDistribution d(128, 8);
  d.fine[5 * d.P + 3] = std::nanf("");
  d.context[9 * d.C] = INFINITY;
  ft::Downscaler ds(small_model(), fast_training(), "cpu");
  const auto st = ds.train_epoch(view(d));
  EXPECT_EQ(st.skipped_samples, 2);
  EXPECT_EQ(st.bad_steps, 0);
  EXPECT_TRUE(std::isfinite(st.avg_loss));
  EXPECT_EQ(st.batches, 2);  // 126 rows at batch 64
}

TEST(Downscaler, UNetTrainsAndSamplesThroughTheSameInterface) {
  KnownDistribution d(256, 9, 64);
  auto mo = small_model();
  mo.arch = finecast::trainer::Arch::kUnet;
  mo.patch_size = 64;
  mo.unet_channels = 8;
  auto to = fast_training();
  to.batch_size = 32;
  ft::Downscaler ds(mo, to, "cpu");
  double first = 0, last = 0;
  for (int e = 0; e < 6; ++e) {
    const auto st = ds.train_epoch(view(d));
    (e == 0 ? first : last) = st.avg_loss;
  }
  EXPECT_LT(last, first);
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
}

TEST(Downscaler, OptionsAreValidatedWithTheKeyName) {
  auto mo = small_model();
  mo.diffusion_steps = 1;
  try {
    ft::Downscaler ds(mo, fast_training(), "cpu");
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "model.diffusion_steps: must be an integer in [2, 100000], got 1");
  }
  auto to = fast_training();
  to.batch_size = 0;
  EXPECT_THROW(ft::Downscaler(small_model(), to, "cpu"), std::invalid_argument);
  EXPECT_THROW(ft::Downscaler(small_model(), fast_training(), "tpu"), std::invalid_argument);
  ft::Downscaler ds(small_model(), fast_training(), "cpu");
  ft::SampleOptions so;
  so.members = 0;
  float x = 0;
  EXPECT_THROW(ds.sample(&x, &x, nullptr, 1, so, 0, &x), std::invalid_argument);
}
