// SPDX-License-Identifier: BSD-3-Clause
// Training controls: gradient accumulation, out-of-memory back-off, the validation split by
// time, early stopping, plateau reduction, the best state in checkpoints, threads: auto, and
// separate training and sampling devices.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "common/checkpoint_files.hpp"
#include "tests/trainer/trainer_test_data.hpp"
#include "trainer/checkpoint.hpp"
#include "trainer/data.hpp"
#include "trainer/downscaler.hpp"
#include "trainer/downscaler_impl.hpp"
#include "trainer/training_internal.hpp"
#include "trainer/validation.hpp"

namespace ft = finecast::trainer;
using namespace finecast::trainer::testing;  // NOLINT: the shared test data

namespace {

bool any_contains(const std::vector<std::string>& lines, const std::string& what) {
  for (const auto& l : lines)
    if (l.find(what) != std::string::npos) return true;
  return false;
}

/// ||a - b|| / ||b||.
double relative_difference(const torch::Tensor& a, const torch::Tensor& b) {
  return (a - b).norm().item<double>() / b.norm().item<double>();
}

/// `steps` host output steps of `per_step` samples each, in time order, with their step numbers.
struct TimedData {
  KnownDistribution d;
  std::vector<int64_t> time;
  TimedData(int64_t steps, int64_t per_step, uint32_t seed) : d(steps * per_step, seed) {
    for (int64_t s = 0; s < steps; ++s)
      for (int64_t i = 0; i < per_step; ++i) time.push_back(100 + s);
  }
  ft::DataView view() const {
    ft::DataView v{d.context.data(), d.fine.data(), nullptr, d.n};
    v.time = time.data();
    return v;
  }
};

}  // namespace

TEST(Accumulation, MicroBatchesEqualTheLargeBatch) {
  // Batch 64 in one piece against 4 accumulated micro-batches of 16: the same draws (they are
  // made per global batch), so the weights after two epochs agree to float rounding, on the
  // fused path and on autograd.
  KnownDistribution d(300, 2);  // 4 full global batches + one of 44
  for (bool autograd : {false, true}) {
    auto large = fast_training();
    large.batch_size = 64;
    large.force_autograd = autograd;
    auto small = large;
    small.batch_size = 16;
    small.accumulate = 4;
    ft::Downscaler a(small_model(), large, "cpu"), b(small_model(), small, "cpu");
    const auto init = ft::internals(a).flat.clone();
    for (int e = 0; e < 2; ++e) {
      const auto sa = a.train_epoch(view(d)), sb = b.train_epoch(view(d));
      EXPECT_EQ(sa.batches, 5);
      EXPECT_EQ(sb.batches, 5) << "one optimizer step per global batch";
      EXPECT_NEAR(sa.avg_loss, sb.avg_loss, 1e-5 * sa.avg_loss);
    }
    EXPECT_EQ(a.step(), b.step());
    const double diff = relative_difference(ft::internals(b).flat - init, ft::internals(a).flat - init);
    std::printf("%s: accumulated vs large batch, relative weight-update difference %.2e\n",
                autograd ? "autograd" : "fused", diff);
    EXPECT_LT(diff, 1e-4);
    // Without accumulation, batch 16 takes four times the steps and lands elsewhere.
    auto plain = small;
    plain.accumulate = 1;
    ft::Downscaler c(small_model(), plain, "cpu");
    c.train_epoch(view(d));
    c.train_epoch(view(d));
    EXPECT_GT(relative_difference(ft::internals(c).flat - init, ft::internals(a).flat - init), 0.1);
  }
}

TEST(OutOfMemory, TheMemoryLimitHalvesTheMicroBatchAndKeepsTheGlobalBatch) {
  KnownDistribution d(256, 3);
  const auto mo = small_model();
  auto to = fast_training();  // batch 64
  const int64_t params = ft::Downscaler(mo, to, "cpu").parameter_count();
  // A limit that a micro-batch of 32 fits and one of 64 does not.
  to.max_device_memory = (ft::estimate_batch_bytes(mo, params, 32) + ft::estimate_batch_bytes(mo, params, 64)) / 2;
  for (bool autograd : {false, true}) {
    to.force_autograd = autograd;
    ft::Downscaler limited(mo, to, "cpu");
    auto free_to = to;
    free_to.max_device_memory = 0;
    ft::Downscaler free(mo, free_to, "cpu");
    std::vector<std::string> events;
    const auto st = limited.train_epoch(view(d), [&](const std::string& e) { events.push_back(e); });
    free.train_epoch(view(d));
    EXPECT_EQ(st.oom_backoffs, 1);
    EXPECT_EQ(limited.micro_batch(), 32);
    EXPECT_EQ(limited.accumulation(), 2);
    EXPECT_EQ(st.batches, 4) << "the global batch of 64 is kept: 256 / 64 optimizer steps";
    EXPECT_TRUE(any_contains(events, "out of device memory at micro-batch 64")) << (events.empty() ? "" : events[0]);
    EXPECT_TRUE(any_contains(events, "micro-batch now 32, 2 micro-batches per optimizer step (global batch 64 kept)"));
    // It went on training, and trained what the unlimited model trained.
    EXPECT_EQ(limited.step(), free.step());
    EXPECT_LT(relative_difference(ft::internals(limited).flat, ft::internals(free).flat), 1e-5);
    // The next epoch starts at the smaller micro-batch: no second back-off.
    EXPECT_EQ(limited.train_epoch(view(d)).oom_backoffs, 0);
  }
  // A limit that not even one sample fits is an error, not an endless loop.
  to.max_device_memory = 1000;
  ft::Downscaler hopeless(mo, to, "cpu");
  try {
    hopeless.train_epoch(view(d));
    FAIL() << "expected an error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("even at micro-batch 1"), std::string::npos) << e.what();
  }
}

TEST(Validation, SplitHoldsOutTheMostRecentSteps) {
  // Steps given out of order and with repeats: the held-out rows are those of the largest step
  // numbers, whatever their position.
  const std::vector<int64_t> time = {7, 3, 9, 3, 5, 9, 7, 1, 5, 1};  // steps 1, 3, 5, 7, 9
  auto s = ft::split_by_time(time.data(), 10, 0.4);
  EXPECT_EQ(s.steps, 5);
  EXPECT_EQ(s.validation_steps, 2);
  EXPECT_EQ(s.validation, (std::vector<int64_t>{0, 2, 5, 6}));  // steps 7 and 9
  EXPECT_EQ(s.train, (std::vector<int64_t>{1, 3, 4, 7, 8, 9}));
  // At least one step when asked for any, never all; none when asked for none.
  EXPECT_EQ(ft::split_by_time(time.data(), 10, 0.01).validation_steps, 1);
  EXPECT_EQ(ft::split_by_time(time.data(), 10, 0.99).validation_steps, 4);
  EXPECT_TRUE(ft::split_by_time(time.data(), 10, 0.0).validation.empty());
  // Without step numbers each row is a step, in row order.
  auto rows = ft::split_by_time(nullptr, 10, 0.2);
  EXPECT_EQ(rows.validation, (std::vector<int64_t>{8, 9}));
  EXPECT_THROW(ft::split_by_time(nullptr, 10, 1.0), std::invalid_argument);
}

TEST(Validation, ASessionTrainsOnTheOlderStepsAndScoresTheRecentOnes) {
  TimedData data(10, 40, 4);  // 10 output steps of 40 patches
  auto to = fast_training();
  to.validation = 0.2;
  to.validation_members = 4;
  to.validation_max_samples = 32;
  ft::Downscaler ds(small_model(), to, "cpu");
  auto first = ds.train_session(data.view(), 3);
  EXPECT_TRUE(first.trained);
  EXPECT_EQ(first.validation_steps, 2);
  EXPECT_EQ(first.validation_samples, 80);
  EXPECT_EQ(first.train_samples, 320);
  ASSERT_EQ(first.epochs.size(), 3u);
  EXPECT_EQ(first.epochs[0].batches, 5) << "320 training samples at batch 64";
  EXPECT_TRUE(std::isfinite(first.validation_loss));
  EXPECT_TRUE(std::isfinite(first.validation_crps));
  EXPECT_GT(first.validation_crps, 0.0);
  EXPECT_TRUE(first.improved);
  EXPECT_EQ(first.best_step, ds.step());
  EXPECT_TRUE(any_contains(first.notes, "validation: 80 held-out samples"));
  // Normalisation statistics come from the training part only.
  EXPECT_EQ(ft::internals(ds).sums.context_count, 320.0);
  // Training lowers the validation loss and CRPS of this learnable distribution.
  ft::SessionStats last;
  for (int s = 0; s < 4; ++s) last = ds.train_session(data.view(), 3);
  std::printf("validation loss %.4f -> %.4f, CRPS %.4f -> %.4f\n", first.validation_loss, last.validation_loss,
              first.validation_crps, last.validation_crps);
  EXPECT_LT(last.validation_loss, first.validation_loss);
  EXPECT_LT(last.validation_crps, first.validation_crps);
}

TEST(Validation, CrpsOfAnEnsemble) {
  // One member: the absolute error. Two members at +-1 around y: (1 + 1)/2 - |2|/4 = 0.5.
  EXPECT_DOUBLE_EQ(ft::validation::crps({3.0f}, 1.0), 2.0);
  EXPECT_DOUBLE_EQ(ft::validation::crps({-1.0f, 1.0f}, 0.0), 0.5);
  // A sharper ensemble around the truth scores better than a wide one.
  EXPECT_LT(ft::validation::crps({-0.1f, 0.0f, 0.1f}, 0.0), ft::validation::crps({-1.0f, 0.0f, 1.0f}, 0.0));
}

TEST(Validation, FairCrpsIsUnbiasedInTheEnsembleSize) {
  // Two members at +-1 around y: mean|X - y| = 1, |X1 - X2| = 2 over 2 * 1 ordered pairs.
  EXPECT_DOUBLE_EQ(ft::validation::crps_fair({-1.0f, 1.0f}, 0.0), 0.0);
  EXPECT_TRUE(std::isnan(ft::validation::crps_fair({1.0f}, 0.0)));
  // Members and truth from N(0, 1): the CRPS of the distribution is 1/sqrt(pi). The fair
  // estimator averages to it for 2 members; the usual one adds E|X - X'| / (2M) = 1/(2 sqrt(pi))
  // there, a penalty on spread.
  std::mt19937 rng(3);
  std::normal_distribution<float> normal;
  double fair = 0, usual = 0;
  const int n = 20000;
  for (int i = 0; i < n; ++i) {
    const std::vector<float> x = {normal(rng), normal(rng)};
    const double y = normal(rng);
    fair += ft::validation::crps_fair(x, y) / n;
    usual += ft::validation::crps(x, y) / n;
  }
  const double truth = 1.0 / std::sqrt(M_PI);
  EXPECT_NEAR(fair, truth, 0.015);
  EXPECT_NEAR(usual, 1.5 * truth, 0.015);
}

namespace {
/// Every row of `d` as its own sample of one time step (a single field's patches).
ft::CleanData clean_of(const KnownDistribution& d) { return ft::clean(view(d), d.C, d.P, "test"); }
}  // namespace

TEST(Validation, PatchSplitHoldsOutASeededShareWhateverTheOrder) {
  const KnownDistribution d(400, 6);
  const auto a = ft::split_by_patches(clean_of(d), 0.25, 42);
  EXPECT_EQ(a.train.size() + a.validation.size(), 400u);
  EXPECT_GT(a.validation.size(), 70u);  // 100 on average; sd 8.7
  EXPECT_LT(a.validation.size(), 130u);
  EXPECT_EQ(ft::split_by_patches(clean_of(d), 0.25, 42).validation, a.validation) << "fixed for a seed";
  EXPECT_NE(ft::split_by_patches(clean_of(d), 0.25, 43).validation, a.validation) << "seeded";
  EXPECT_TRUE(ft::split_by_patches(clean_of(d), 0.0, 42).validation.empty());
  EXPECT_THROW(ft::split_by_patches(clean_of(d), 1.0, 42), std::invalid_argument);
  // The rows reversed (another rank's order): the same samples are held out.
  KnownDistribution r = d;
  for (int64_t i = 0; i < d.n; ++i) {
    std::copy_n(d.context.begin() + (d.n - 1 - i) * d.C, d.C, r.context.begin() + i * d.C);
    std::copy_n(d.fine.begin() + (d.n - 1 - i) * d.P, d.P, r.fine.begin() + i * d.P);
  }
  const auto b = ft::split_by_patches(clean_of(r), 0.25, 42);
  std::vector<int64_t> mirrored;
  for (auto it = b.validation.rbegin(); it != b.validation.rend(); ++it) mirrored.push_back(d.n - 1 - *it);
  EXPECT_EQ(mirrored, a.validation);
}

TEST(Validation, APatchSplitSessionNeverTrainsOnTheHeldOutSamples) {
  // One time step: a split by time holds nothing out, the split by patches does.
  const KnownDistribution d(320, 7);
  auto to = fast_training();
  to.validation = 0.2;
  to.validation_members = 2;
  to.validation_max_samples = 16;
  to.validation_split = ft::ValidationSplit::kPatches;
  ft::Downscaler split(small_model(), to, "cpu");
  const auto st = split.train_session(view(d), 2);
  const auto parts = ft::split_by_patches(clean_of(d), 0.2, to.seed);
  ASSERT_FALSE(parts.validation.empty());
  EXPECT_EQ(st.validation_samples, static_cast<int64_t>(parts.validation.size()));
  EXPECT_EQ(st.train_samples, static_cast<int64_t>(parts.train.size()));
  EXPECT_TRUE(std::isfinite(st.validation_crps));
  // The same training without the held-out rows and without validation takes the same steps
  // to the same weights: the held-out rows reached neither the batches nor the normalisation.
  const ft::Subset rest = ft::take_rows(view(d), parts.train, d.C, d.P);
  to.validation = 0;
  ft::Downscaler alone(small_model(), to, "cpu");
  alone.train_session(rest.view(), 2);
  EXPECT_EQ(alone.step(), split.step());
  EXPECT_TRUE(torch::equal(ft::internals(alone).flat, ft::internals(split).flat));
  // By time, the one step cannot be held out.
  to.validation = 0.2;
  to.validation_split = ft::ValidationSplit::kTime;
  ft::DataView one = view(d);
  const std::vector<int64_t> step0(static_cast<size_t>(d.n), 0);
  one.time = step0.data();
  EXPECT_EQ(ft::Downscaler(small_model(), to, "cpu").train_session(one, 1).validation_samples, 0);
}

TEST(Validation, APatchSplitThatLeavesNoPartNamesTheKeys) {
  const KnownDistribution d(12, 8);
  auto to = fast_training();
  to.validation_members = 0;
  to.validation_split = ft::ValidationSplit::kPatches;
  for (double f : {0.001, 0.999}) {
    to.validation = f;
    ft::Downscaler ds(small_model(), to, "cpu");
    try {
      ds.train_session(view(d), 1);
      ADD_FAILURE() << "no error for train.validation " << f;
    } catch (const std::invalid_argument& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find("train.validation_split"), std::string::npos) << what;
      EXPECT_NE(what.find(f < 0.5 ? "left no validation samples of 12" : "left no training samples of 12"),
                std::string::npos)
          << what;
    }
  }
}

TEST(EarlyStopping, ValidationEveryNStepsStopsWithinASession) {
  // As below, the score repeats exactly; validated every 2 epochs (5 steps each), patience 2:
  // validations at steps 10, 20, 30, stopped there, out of 8 epochs = 40 steps.
  const KnownDistribution d(320, 9);
  auto to = fast_training();
  to.lr = 1e-30;
  to.warmup_steps = 0;
  to.validation = 0.2;
  to.validation_members = 0;
  to.validation_split = ft::ValidationSplit::kPatches;
  to.validation_every = 10;
  to.early_stop = 2;
  to.keep_best = true;
  const int64_t per_epoch =
      (static_cast<int64_t>(ft::split_by_patches(clean_of(d), 0.2, to.seed).train.size()) + 63) / 64;
  ASSERT_EQ(per_epoch, 5);
  ft::Downscaler ds(small_model(), to, "cpu");
  std::vector<std::string> events;
  std::vector<size_t> notes_at_epoch;
  const auto st = ds.train_session(
      view(d), 8, [&](const std::string& e) { events.push_back(e); },
      [&](const ft::SessionStats& so_far) { notes_at_epoch.push_back(so_far.notes.size()); });
  EXPECT_TRUE(st.stopped);
  EXPECT_EQ(ds.step(), 30);
  EXPECT_EQ(st.best_step, 10);
  EXPECT_EQ(ds.best_state_step(), 10);
  // Validation scores and early stopping are notes (information), not events (warnings), and
  // each epoch's progress call already holds the notes of its validation.
  EXPECT_TRUE(any_contains(st.notes, "held-out samples at step 20"));
  EXPECT_TRUE(any_contains(st.notes, "early stopping: validation loss not better than"));
  EXPECT_FALSE(any_contains(events, "validation"));
  EXPECT_EQ(notes_at_epoch, (std::vector<size_t>{0, 1, 1, 2, 2, 4}));
  // Without validation_every, once at the session's end.
  to.validation_every = 0;
  to.early_stop = 0;
  ft::Downscaler once(small_model(), to, "cpu");
  int validations = 0;
  for (const std::string& note : once.train_session(view(d), 8).notes)
    validations += note.rfind("validation: ", 0) == 0;
  EXPECT_EQ(validations, 1);
  EXPECT_EQ(once.step(), 40);
}

TEST(EarlyStopping, StopsAfterPatienceSessionsWithoutImprovement) {
  // A learning rate too small to move any weight: the validation loss repeats exactly, so only
  // the first session improves; with patience 2 the third session is the last that trains.
  TimedData data(6, 32, 5);
  auto to = fast_training();
  to.lr = 1e-30;
  to.warmup_steps = 0;
  to.validation = 0.34;
  to.validation_members = 0;
  to.early_stop = 2;
  ft::Downscaler ds(small_model(), to, "cpu");
  std::vector<std::string> events;
  auto log = [&](const std::string& e) { events.push_back(e); };
  const auto s1 = ds.train_session(data.view(), 1, log);
  const auto s2 = ds.train_session(data.view(), 1, log);
  EXPECT_TRUE(s1.improved);
  EXPECT_FALSE(s2.improved);
  EXPECT_EQ(s2.sessions_without_improvement, 1);
  EXPECT_FALSE(s2.stopped);
  const auto s3 = ds.train_session(data.view(), 1, log);
  EXPECT_TRUE(s3.trained);
  EXPECT_TRUE(s3.stopped);
  EXPECT_TRUE(any_contains(s3.notes, "early stopping: validation loss not better than"));
  const int64_t step = ds.step();
  const auto s4 = ds.train_session(data.view(), 1, log);
  EXPECT_FALSE(s4.trained);
  EXPECT_TRUE(s4.stopped);
  EXPECT_EQ(ds.step(), step) << "a stopped trainer takes no more steps";
  EXPECT_TRUE(any_contains(events, "session skipped"));
  // Without early stopping the same run keeps training.
  to.early_stop = 0;
  ft::Downscaler go_on(small_model(), to, "cpu");
  for (int s = 0; s < 4; ++s) EXPECT_TRUE(go_on.train_session(data.view(), 1).trained);
}

TEST(Plateau, ReducesTheLearningRateAfterPatienceSessions) {
  TimedData data(6, 32, 5);
  auto to = fast_training();
  to.lr = 1e-30;
  to.warmup_steps = 0;
  to.validation = 0.34;
  to.validation_members = 0;
  to.plateau = 2;
  to.plateau_factor = 0.5;
  to.plateau_min_scale = 0.2;
  ft::Downscaler ds(small_model(), to, "cpu");
  std::vector<double> scales;
  std::vector<std::string> notes;
  for (int s = 0; s < 7; ++s) {
    const ft::SessionStats st = ds.train_session(data.view(), 1);
    scales.push_back(st.lr_scale);
    notes.insert(notes.end(), st.notes.begin(), st.notes.end());
  }
  // Session 1 improves; reductions after sessions 3 and 5 (two without improvement each), then
  // the floor 0.2 holds.
  EXPECT_EQ(scales, (std::vector<double>{1.0, 1.0, 0.5, 0.5, 0.25, 0.25, 0.2}));
  EXPECT_TRUE(any_contains(notes, "plateau: validation loss not better than"));
  EXPECT_DOUBLE_EQ(ds.learning_rate(1000), 0.2 * ft::Downscaler(small_model(), to, "cpu").learning_rate(1000));
}

TEST(BestState, IsRecordedInCheckpointsAndKeptAsItsOwnFile) {
  ScratchDir dir("best_state");
  TimedData data(8, 32, 6);
  auto to = fast_training();
  to.validation = 0.25;
  to.validation_members = 0;
  to.keep_best = true;
  ft::Downscaler ds(small_model(), to, "cpu");
  ft::SessionStats st;
  int64_t best_step = -1;
  double best = 1e300;
  for (int s = 0; s < 4; ++s) {
    st = ds.train_session(data.view(), 2);
    if (st.improved) best_step = ds.step(), best = st.validation_loss;
  }
  ASSERT_GE(best_step, 0);
  EXPECT_EQ(ds.best_state_step(), best_step);
  EXPECT_DOUBLE_EQ(st.best_score, best);
  const std::string path = ft::save_checkpoint_in_dir(ds, dir.dir().string(), 2);
  const std::string best_path = finecast::checkpoint_files::best_path(dir.dir().string());
  ASSERT_TRUE(std::filesystem::exists(best_path));
  // The periodic checkpoint records the best score; the best file holds the state of that step.
  auto resumed = ft::Downscaler::load_checkpoint(path, "cpu");
  EXPECT_DOUBLE_EQ(resumed.validation_record().best_score, best);
  EXPECT_EQ(resumed.validation_record().best_step, best_step);
  EXPECT_EQ(resumed.validation_record().sessions, 4);
  auto best_model = ft::Downscaler::load_checkpoint(best_path, "cpu");
  EXPECT_EQ(best_model.step(), best_step);
  EXPECT_TRUE(torch::equal(ft::internals(best_model).flat, ft::internals(ds).best->flat));
  // keep-last-K never deletes it, and the newest valid checkpoint is a periodic one.
  for (int s = 0; s < 3; ++s) {
    ds.train_session(data.view(), 1);
    ft::save_checkpoint_in_dir(ds, dir.dir().string(), 1);
  }
  EXPECT_TRUE(std::filesystem::exists(best_path));
  EXPECT_EQ(*ft::newest_valid_checkpoint(dir.dir().string()),
            finecast::checkpoint_files::checkpoint_path(dir.dir().string(), ds.step()));
}

TEST(Threads, AutoMeasuresAndLeavesTheTrainingUnchanged) {
  // Tuning runs real steps on a copy of the state: a session with threads: auto trains exactly
  // what a session with a fixed thread count trains.
  TimedData data(4, 64, 7);
  auto to = fast_training();
  to.threads = -1;
  to.max_threads = 2;
  ft::Downscaler tuned(small_model(), to, "cpu");
  std::vector<std::string> events;
  const auto st = tuned.train_session(data.view(), 2, [&](const std::string& e) { events.push_back(e); });
  // The reference trains with the thread count the tuner chose: BLAS with 1 and 2 threads may
  // sum in another order, so only the same count can be compared bitwise.
  to.threads = st.train_threads;
  ft::Downscaler fixed(small_model(), to, "cpu");
  fixed.train_session(data.view(), 2);
  ft::set_torch_threads(1);  // back to the suite's setting
  EXPECT_TRUE(st.train_threads == 1 || st.train_threads == 2) << st.train_threads;
  EXPECT_TRUE(any_contains(events, "train.threads auto: per step at batch 64 with 1..2 threads: 1: "))
      << events.front();
  EXPECT_EQ(tuned.thread_choices().size(), 1u);
  EXPECT_EQ(tuned.step(), fixed.step());
  EXPECT_TRUE(torch::equal(ft::internals(tuned).flat, ft::internals(fixed).flat));
  EXPECT_TRUE(torch::equal(ft::internals(tuned).exp_avg_sq, ft::internals(fixed).exp_avg_sq));
  // Sampling: measured once per batch size, then remembered.
  tuned.publish();
  ft::SampleOptions so;
  so.members = 2;
  so.threads = -1;
  so.max_threads = 2;
  std::vector<float> a(static_cast<size_t>(5 * 2 * data.d.P)), b(a.size());
  tuned.sample(data.d.context.data(), data.d.coarse.data(), nullptr, 5, so, 3, a.data());
  tuned.sample(data.d.context.data(), data.d.coarse.data(), nullptr, 5, so, 3, b.data());
  EXPECT_EQ(tuned.thread_choices().size(), 2u);
  EXPECT_EQ(a, b);
}

TEST(Devices, TrainingAndSamplingDevicesAreSeparate) {
  // CPU only here (the CUDA combinations are in test_cuda.cpp): the API keeps both devices and
  // publish() moves the weights to the sampling copy.
  KnownDistribution d(128, 8);
  ft::Downscaler ds(small_model(), fast_training(), "cpu", "cpu");
  EXPECT_EQ(ds.device(), "cpu");
  EXPECT_EQ(ds.sample_device(), "cpu");
  EXPECT_THROW(ft::Downscaler(small_model(), fast_training(), "cpu", "tpu"), std::invalid_argument);
  ds.train_epoch(view(d));
  ds.publish();
  EXPECT_TRUE(torch::equal(ft::internals(ds).sample_flat, ft::internals(ds).ema));
}

TEST(TrainOptions, NewKeysAreValidatedWithTheirNames) {
  auto expect_key = [](const ft::TrainOptions& to, const std::string& key) {
    try {
      ft::Downscaler ds(small_model(), to, "cpu");
      ADD_FAILURE() << key << " accepted";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find("train." + key), std::string::npos) << e.what();
    }
  };
  auto t = fast_training();
  t.accumulate = 0;
  expect_key(t, "accumulate");
  t = fast_training();
  t.validation = 1.0;
  expect_key(t, "validation");
  t = fast_training();
  t.validation_metric = ft::ValidationMetric::kCrps;
  t.validation_members = 0;  // a CRPS needs an ensemble
  expect_key(t, "validation_metric");
  t = fast_training();
  t.validation_members = 1;
  expect_key(t, "validation_members");
  t = fast_training();
  t.plateau_factor = 1.0;
  expect_key(t, "plateau_factor");
  t = fast_training();
  t.threads = -2;
  expect_key(t, "threads");
  t = fast_training();
  t.early_stop = 3;  // without validation there is no score to stop on
  expect_key(t, "early_stop");
  t = fast_training();
  t.keep_best = true;
  expect_key(t, "keep_best");
  auto mo = small_model();
  mo.hidden = 0;
  EXPECT_THROW(ft::Downscaler(mo, fast_training(), "cpu"), std::invalid_argument);
  mo = small_model();
  mo.attention = true;  // the MLP has no attention
  EXPECT_THROW(ft::Downscaler(mo, fast_training(), "cpu"), std::invalid_argument);
}

TEST(CrpsFinetune, LowersTheFairCrpsOfTheMembersAndLeavesTrainingsWeights) {
  // Two models trained alike for a few epochs (under-trained: members too wide or too narrow),
  // one of them then fine-tuned on the fair CRPS of DDIM-10 members (train.crps_steps). On new
  // data of the same distribution, members drawn the same way score a lower fair CRPS, and the
  // ensemble spread moves towards the true one. Training's own weights are those of the model
  // that was not fine-tuned, bit for bit: only the sampling (EMA) weights change.
  KnownDistribution train(1024, 11), test(256, 12);
  auto to = fast_training();
  ft::Downscaler plain(small_model(), to, "cpu");
  to.crps_steps = 120;
  to.crps_members = 4;
  to.crps_lr = 1e-3;
  ft::Downscaler tuned(small_model(), to, "cpu");
  plain.train_session(view(train), 3);
  const auto st = tuned.train_session(view(train), 3);
  EXPECT_TRUE(any_contains(st.notes, "crps fine-tuning: 120 steps of 64 x 4 members (DDIM 10)")) << st.notes.size();
  EXPECT_TRUE(torch::equal(ft::internals(plain).flat, ft::internals(tuned).flat));
  EXPECT_FALSE(torch::equal(ft::internals(plain).ema, ft::internals(tuned).ema));

  ft::SampleOptions so;
  so.sampler = ft::Sampler::kDdim;
  so.steps = 10;
  so.members = 8;
  const Skill before = evaluate(plain, test, so, 77), after = evaluate(tuned, test, so, 77);
  std::printf("fair CRPS %.4f -> %.4f, spread %.4f -> %.4f (true %.4f)\n", before.crps_fair, after.crps_fair,
              before.spread, after.spread, test.true_std());
  EXPECT_LT(after.crps_fair, 0.95 * before.crps_fair);
  EXPECT_LT(std::abs(after.spread - test.true_std()), std::abs(before.spread - test.true_std()));
}

TEST(CrpsFinetune, OptionsAreValidatedWithTheirNames) {
  auto t = fast_training();
  t.crps_members = 1;  // a CRPS needs an ensemble
  try {
    ft::Downscaler ds(small_model(), t, "cpu");
    ADD_FAILURE() << "crps_members 1 accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("train.crps_members"), std::string::npos) << e.what();
  }
  t = fast_training();
  t.crps_steps = 5;
  t.crps_held_out = true;  // without a held-out part there is nothing to tune on
  try {
    ft::Downscaler ds(small_model(), t, "cpu");
    ADD_FAILURE() << "crps_held_out without train.validation accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("train.crps_held_out"), std::string::npos) << e.what();
  }
}

TEST(CrpsFinetune, HeldOutTunesOnTheMostRecentStepsOnly) {
  // train.crps_held_out: the fine-tuning draws its rows from the held-out steps. Two sessions on
  // the same training steps whose held-out steps differ get the same training (weights bit for
  // bit) and different sampling weights; with crps_held_out off the held-out steps are not used
  // by the fine-tuning, and the sampling weights agree.
  TimedData a(8, 64, 21), b(8, 64, 21);
  std::mt19937 rng(5);
  std::normal_distribution<float> normal;
  for (int64_t i = 6 * 64 * b.d.P; i < b.d.n * b.d.P; ++i) b.d.fine[static_cast<size_t>(i)] += normal(rng);
  auto to = fast_training();
  to.validation = 0.25;  // the 2 most recent of 8 steps
  to.validation_members = 0;
  to.crps_steps = 6;
  for (const bool held_out : {true, false}) {
    to.crps_held_out = held_out;
    ft::Downscaler x(small_model(), to, "cpu"), y(small_model(), to, "cpu");
    x.train_session(a.view(), 1);
    y.train_session(b.view(), 1);
    EXPECT_TRUE(torch::equal(ft::internals(x).flat, ft::internals(y).flat)) << held_out;
    EXPECT_EQ(torch::equal(ft::internals(x).ema, ft::internals(y).ema), !held_out) << held_out;
  }
}
