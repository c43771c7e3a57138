// SPDX-License-Identifier: BSD-3-Clause
// The pieces of issue 15 inside the trainer: the triangle lattice of ICON patches (neighbours
// and parents), how the U-Net and the graph denoiser split the context (covariate fields in the
// documented order), the graph denoiser and the covariate channels training, sampling
// conservatively and surviving checkpoints, and the training budgets train.max_seconds and
// train.max_steps.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <chrono>
#include <cmath>
#include <map>
#include <set>
#include <vector>

#include "tests/trainer/trainer_test_data.hpp"
#include "trainer/diffusion.hpp"
#include "trainer/downscaler.hpp"
#include "trainer/models.hpp"

namespace ft = finecast::trainer;
namespace fm = finecast::trainer::models;

TEST(TriangleLattice, NeighboursPairUpAcrossEachEdgeDirectionAndParentsHoldFourChildren) {
  for (int64_t r : {2, 4, 16}) {
    const fm::TriangleLattice L = fm::triangle_lattice(r);
    const int64_t P = r * r;
    int64_t boundary = 0;
    for (int64_t s = 0; s < P; ++s)
      for (int d = 0; d < 3; ++d) {
        const int64_t q = L.neighbours[s * 3 + d];
        if (q == P) {
          ++boundary;
          continue;
        }
        // Across the same edge direction and back; an up cell borders only down cells.
        ASSERT_EQ(L.neighbours[q * 3 + d], s) << "r " << r << " cell " << s << " direction " << d;
        ASSERT_NE(L.down[q], L.down[s]);
      }
    EXPECT_EQ(boundary, 3 * r) << "r edges of the patch on each of its three sides";
    std::map<int64_t, std::vector<int64_t>> children;
    for (int64_t s = 0; s < P; ++s) children[L.parent[s]].push_back(s);
    ASSERT_EQ(static_cast<int64_t>(children.size()), P / 4);
    const fm::TriangleLattice half = fm::triangle_lattice(r / 2);
    for (const auto& [parent, kids] : children) {
      ASSERT_EQ(kids.size(), 4u);
      // Three children point like the parent; the fourth, in the middle, borders all three.
      int64_t middle = -1, like = 0;
      for (int64_t k : kids) {
        if (L.down[k] == half.down[parent])
          ++like;
        else
          middle = k;
      }
      ASSERT_EQ(like, 3);
      std::set<int64_t> around(L.neighbours.begin() + middle * 3, L.neighbours.begin() + middle * 3 + 3);
      for (int64_t k : kids) {
        if (k != middle) {
          EXPECT_EQ(around.count(k), 1u) << "parent " << parent;
        }
      }
    }
  }
  EXPECT_EQ(fm::lattice_side(256), 16);
  EXPECT_EQ(fm::lattice_side(64), 8);
  EXPECT_EQ(fm::lattice_side(48), 0);
}

TEST(ContextSplit, CovariateFieldsAreTheContextsTailCovariateAfterCovariateInSlotOrder) {
  const int64_t B = 3, head = 5, S = 2, P = 16;
  auto ctx = torch::empty({B, head + S * P});
  for (int64_t b = 0; b < B; ++b) {
    for (int64_t j = 0; j < head; ++j) ctx[b][j] = 1000 * b + j;
    for (int64_t s = 0; s < S; ++s)
      for (int64_t k = 0; k < P; ++k) ctx[b][head + s * P + k] = 1000 * b + 100 * (s + 1) + k;
  }
  const fm::SplitContext split = fm::split_context(ctx, S, P);
  ASSERT_EQ(split.head.sizes(), (std::vector<int64_t>{B, head}));
  ASSERT_EQ(split.fields.sizes(), (std::vector<int64_t>{B, S, P}));
  for (int64_t b = 0; b < B; ++b)
    for (int64_t s = 0; s < S; ++s)
      for (int64_t k = 0; k < P; ++k) ASSERT_EQ(split.fields[b][s][k].item<float>(), 1000 * b + 100 * (s + 1) + k);
  EXPECT_FALSE(fm::split_context(ctx, 0, P).fields.defined());
}

namespace {

/// Samples of `P` values with a covariate field in the context tail: fine = coarse + 0.5 * covariate.
struct CovariateData {
  int64_t n, C, P;
  std::vector<float> context, fine, coarse;
  CovariateData(int64_t samples, int64_t head, int64_t patch) : n(samples), C(head + patch), P(patch) {
    std::mt19937 rng(3);
    std::normal_distribution<float> normal;
    context.resize(static_cast<size_t>(n * C));
    fine.resize(static_cast<size_t>(n * P));
    coarse.resize(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) {
      const float c = normal(rng);
      coarse[i] = c;
      for (int64_t j = 0; j < head; ++j) context[i * C + j] = j == 0 ? c : normal(rng);
      float m = 0;
      std::vector<float> x(static_cast<size_t>(P));
      for (auto& v : x) m += v = normal(rng);
      for (int64_t k = 0; k < P; ++k) {
        x[k] -= m / static_cast<float>(P);
        context[i * C + head + k] = x[k];
        fine[i * P + k] = c + 0.5f * x[k];
      }
    }
  }
};

void trains_samples_and_round_trips(ft::ModelOptions mo, const std::string& dir) {
  const CovariateData d(64, mo.context_size - mo.patch_size, mo.patch_size);
  ft::TrainOptions to;
  to.batch_size = 32;
  to.seed = 9;
  ft::Downscaler model(mo, to, "cpu");
  const ft::DataView view{d.context.data(), d.fine.data(), nullptr, d.n};
  const auto st = model.train_session(view, 2);
  ASSERT_EQ(st.epochs.size(), 2u);
  EXPECT_TRUE(std::isfinite(st.epochs.back().avg_loss));
  ft::SampleOptions so;
  so.members = 2;
  so.steps = 3;
  std::vector<float> out(static_cast<size_t>(4 * 2 * mo.patch_size));
  model.sample(d.context.data(), d.coarse.data(), nullptr, 4, so, 11, out.data());
  for (int64_t i = 0; i < 4; ++i)
    for (int m = 0; m < 2; ++m) {
      double mean = 0;
      for (int64_t k = 0; k < mo.patch_size; ++k) mean += out[(i * 2 + m) * mo.patch_size + k];
      EXPECT_NEAR(mean / static_cast<double>(mo.patch_size), d.coarse[i], 1e-4);  // conservative
    }
  const std::string path = dir + "/ck.h5";
  model.save_checkpoint(path);
  ft::Downscaler back = ft::Downscaler::load_checkpoint(path, "cpu");
  EXPECT_EQ(back.model_options().arch, mo.arch);
  EXPECT_EQ(back.model_options().static_channels, mo.static_channels);
  std::vector<float> again(out.size());
  back.sample(d.context.data(), d.coarse.data(), nullptr, 4, so, 11, again.data());
  EXPECT_EQ(out, again);
}

}  // namespace

TEST(GraphDenoiser, TrainsSamplesConservativelyWithACovariateChannelAndRoundTrips) {
  ft::testing::ScratchDir dir("graph");
  ft::ModelOptions mo;
  mo.arch = ft::Arch::kGraph;
  mo.patch_size = 64;  // an ICON patch three levels finer than its coarse cell: r = 8
  mo.context_size = 7 + 64;
  mo.static_channels = 1;
  mo.unet_channels = 8;
  mo.time_embedding = 16;
  mo.diffusion_steps = 20;
  trains_samples_and_round_trips(mo, dir.dir().string());
  // Patches that are no refined triangle are refused with the reason.
  mo.patch_size = 48;
  mo.context_size = 7;
  mo.static_channels = 0;
  EXPECT_THROW(ft::Downscaler(mo, ft::TrainOptions{}, "cpu"), std::invalid_argument);
}

TEST(UNet, TakesTheCovariatesAsInputChannelsAndRoundTrips) {
  ft::testing::ScratchDir dir("unet_static");
  ft::ModelOptions mo;
  mo.arch = ft::Arch::kUnet;
  mo.patch_size = 64;
  mo.context_size = 5 + 64;
  mo.static_channels = 1;
  mo.unet_channels = 8;
  mo.time_embedding = 16;
  mo.diffusion_steps = 20;
  trains_samples_and_round_trips(mo, dir.dir().string());
}

TEST(TrainingBudget, StopsWhenSpentAndDecaysTheLearningRateOverIt) {
  ft::TrainOptions o;
  o.lr = 1e-3;
  o.min_lr_ratio = 0.1;
  o.warmup_steps = 10;
  EXPECT_DOUBLE_EQ(ft::diffusion::learning_rate(o, 5, 0.5), ft::diffusion::learning_rate(o, 5));  // warm-up by steps
  EXPECT_NEAR(ft::diffusion::learning_rate(o, 50, 0.0), 1e-3, 1e-12);
  EXPECT_NEAR(ft::diffusion::learning_rate(o, 50, 0.5), 1e-3 * (0.1 + 0.9 * 0.5), 1e-12);
  EXPECT_NEAR(ft::diffusion::learning_rate(o, 50, 1.0), 1e-4, 1e-12);
  EXPECT_NEAR(ft::diffusion::learning_rate(o, 50, 3.0), 1e-4, 1e-12);
  EXPECT_DOUBLE_EQ(ft::diffusion::learning_rate(o, 50, -1.0), ft::diffusion::learning_rate(o, 50));

  const ft::testing::KnownDistribution d(512, 4);
  ft::TrainOptions to = ft::testing::fast_training();
  to.max_seconds = 0.6;
  to.budget = ft::BudgetScope::kRun;
  ft::Downscaler model(ft::testing::small_model(), to, "cpu");
  const ft::DataView view{d.context.data(), d.fine.data(), nullptr, d.n};
  const auto t0 = std::chrono::steady_clock::now();
  const auto st = model.train_session(view, 1000000);
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_TRUE(st.budget_spent);
  EXPECT_GE(st.budget_used, 0.6);
  EXPECT_LT(wall, 10.0) << "a million epochs stopped by the budget";
  EXPECT_GT(model.step(), 0);
  // The run's budget is spent: the next session trains nothing.
  const int64_t steps = model.step();
  const auto again = model.train_session(view, 5);
  EXPECT_TRUE(again.epochs.empty());
  EXPECT_EQ(model.step(), steps);
}

TEST(TrainingBudget, StepBudgetStopsAfterExactlyMaxStepsAndTheDecaySpansIt) {
  ft::TrainOptions o;
  o.max_steps = 110;
  // The decay starts where the warm-up ends and reaches its end at max_steps.
  EXPECT_DOUBLE_EQ(ft::diffusion::step_budget_fraction(o, 5, 10), 0.0);
  EXPECT_DOUBLE_EQ(ft::diffusion::step_budget_fraction(o, 10, 10), 0.0);
  EXPECT_DOUBLE_EQ(ft::diffusion::step_budget_fraction(o, 60, 10), 0.5);
  EXPECT_DOUBLE_EQ(ft::diffusion::step_budget_fraction(o, 110, 10), 1.0);
  EXPECT_DOUBLE_EQ(ft::diffusion::step_budget_fraction(o, 500, 0), 1.0);

  const ft::testing::KnownDistribution d(512, 4);  // 8 batches of 64 an epoch
  for (const auto scope : {ft::BudgetScope::kSession, ft::BudgetScope::kRun}) {
    ft::TrainOptions to = ft::testing::fast_training();
    to.max_steps = 13;  // mid-epoch: one full epoch and 5 batches of the second
    to.budget = scope;
    ft::Downscaler model(ft::testing::small_model(), to, "cpu");
    const ft::DataView view{d.context.data(), d.fine.data(), nullptr, d.n};
    std::vector<std::string> warnings;
    const auto st = model.train_session(view, 1000000, [&](const std::string& e) { warnings.push_back(e); });
    EXPECT_TRUE(st.budget_spent);
    EXPECT_EQ(model.step(), 13) << "exactly max_steps optimizer steps, whatever the epochs";
    EXPECT_EQ(st.budget_steps, 13);
    EXPECT_EQ(st.session_steps, 13);
    EXPECT_EQ(st.session_steps_planned, 13) << "the plan the epoch lines' time left follows";
    // Reaching the step budget is how such a run ends: a note, not a warning.
    EXPECT_TRUE(warnings.empty()) << warnings.front();
    ASSERT_EQ(st.notes.size(), 1u);
    EXPECT_NE(st.notes[0].find("step budget train.max_steps 13 reached"), std::string::npos) << st.notes[0];
    ASSERT_EQ(st.epochs.size(), 2u);
    EXPECT_EQ(st.epochs[1].batches, 5);
    const auto again = model.train_session(view, 1000000);
    if (scope == ft::BudgetScope::kSession) {
      EXPECT_EQ(model.step(), 26) << "each session has its own 13 steps";
    } else {
      EXPECT_TRUE(again.epochs.empty()) << "the run's 13 steps are spent";
      EXPECT_EQ(model.step(), 13);
    }
  }
}

TEST(TrainingBudget, WarnsWhenTheTimeBudgetEndsASessionBeforeHalfItsPlannedSteps) {
  const ft::testing::KnownDistribution d(512, 4);  // 8 batches of 64 an epoch
  const ft::DataView view{d.context.data(), d.fine.data(), nullptr, d.n};
  auto warnings = [&](double max_seconds, int64_t max_steps, int64_t epochs, ft::SessionStats& st) {
    ft::TrainOptions to = ft::testing::fast_training();
    to.max_seconds = max_seconds;
    to.max_steps = max_steps;
    ft::Downscaler model(ft::testing::small_model(), to, "cpu");
    std::vector<std::string> found;
    st = model.train_session(view, epochs, [&](const std::string& e) {
      if (e.find("planned optimizer steps") != std::string::npos) found.push_back(e);
    });
    EXPECT_EQ(st.budget_steps, model.step());
    return found;
  };
  ft::SessionStats st;
  // 0.05 s cannot hold 400 epochs x 8 steps (nor 2,000 steps of a step budget).
  auto w = warnings(0.05, 0, 400, st);
  EXPECT_EQ(st.planned_steps, 3200);
  ASSERT_EQ(w.size(), 1u);
  EXPECT_NE(w[0].find("after " + std::to_string(st.budget_steps) + " of 3200 planned"), std::string::npos) << w[0];
  w = warnings(0.05, 2000, 400, st);
  EXPECT_EQ(st.planned_steps, 2000) << "the step budget caps the plan";
  ASSERT_EQ(w.size(), 1u);
  EXPECT_NE(w[0].find(" of 2000 planned"), std::string::npos) << w[0];
  // A time budget that is not reached, or a plan the step budget completes: no warning.
  EXPECT_TRUE(warnings(60.0, 0, 2, st).empty());
  EXPECT_EQ(st.budget_steps, 16);
  EXPECT_TRUE(warnings(60.0, 3, 400, st).empty());
  EXPECT_EQ(st.budget_steps, 3);
}
