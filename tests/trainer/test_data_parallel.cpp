// SPDX-License-Identifier: BSD-3-Clause
// Data-parallel training: a group of members, each holding part of the rows, trains as one member
// holding all of them (same global batches, summed gradients), to rounding. The group here is
// threads in this process with a shared-memory reducer (the plugin's is MPI on its trainer ranks;
// the trainer only sees the Reducer interface).
#include <gtest/gtest.h>

#include <algorithm>
#include <condition_variable>
#include <limits>
#include <mutex>
#include <thread>

#include "tests/trainer/trainer_test_data.hpp"
#include "trainer/downscaler.hpp"
#include "trainer/downscaler_impl.hpp"

using namespace finecast::trainer::testing;  // NOLINT: the shared test data

namespace {

/// Sums (maxima) across `size` threads: each call blocks until every member has contributed, then
/// every member gets the same sums (accumulated in double).
class ThreadGroup {
 public:
  explicit ThreadGroup(int size) : size_(size) {}
  void sum(double* v, int64_t n) { reduce(v, n, false); }
  void max(double* v, int64_t n) { reduce(v, n, true); }
  int size() const { return size_; }

 private:
  void reduce(double* v, int64_t n, bool take_max) {
    std::unique_lock<std::mutex> lock(m_);
    const long long generation = generation_;
    if (arrived_ == 0) acc_.assign(static_cast<size_t>(n), take_max ? -std::numeric_limits<double>::infinity() : 0.0);
    for (int64_t i = 0; i < n; ++i) {
      auto& a = acc_[static_cast<size_t>(i)];
      a = take_max ? std::max(a, v[i]) : a + v[i];
    }
    if (++arrived_ == size_) {
      result_ = acc_;
      arrived_ = 0;
      ++generation_;
      cv_.notify_all();
    } else {
      cv_.wait(lock, [&] { return generation_ != generation; });
    }
    for (int64_t i = 0; i < n; ++i) v[i] = result_[static_cast<size_t>(i)];
  }
  std::mutex m_;
  std::condition_variable cv_;
  int size_, arrived_ = 0;
  long long generation_ = 0;
  std::vector<double> acc_, result_;
};

class ThreadReducer : public ft::Reducer {
 public:
  ThreadReducer(ThreadGroup& g, int rank) : g_(g), rank_(rank) {}
  int rank() const override { return rank_; }
  int size() const override { return g_.size(); }
  void sum(double* v, int64_t n) override { g_.sum(v, n); }
  void sum(float* v, int64_t n) override {
    std::vector<double> d(v, v + n);
    g_.sum(d.data(), n);
    for (int64_t i = 0; i < n; ++i) v[i] = static_cast<float>(d[static_cast<size_t>(i)]);
  }
  void max(double* v, int64_t n) override { g_.max(v, n); }

 private:
  ThreadGroup& g_;
  int rank_;
};

/// Rows of `d` as `steps` time steps of `per_step` patches; member m of `size` holds the patches
/// p with p * size / per_step == m (contiguous patch ranges, as the plugin's trainer ranks do).
struct Part {
  std::vector<float> context, fine;
  std::vector<int64_t> time, global;
  ft::DataView view(int64_t global_rows) const {
    ft::DataView v{context.data(), fine.data(), nullptr, static_cast<int64_t>(time.size())};
    v.time = time.data();
    v.global_row = global.data();
    v.global_rows = global_rows;
    return v;
  }
};

Part part_of(const KnownDistribution& d, int64_t per_step, int member, int size) {
  Part p;
  for (int64_t row = 0; row < d.n; ++row) {
    const int64_t patch = row % per_step;
    if (patch * size / per_step != member) continue;
    p.context.insert(p.context.end(), d.context.begin() + row * d.C, d.context.begin() + (row + 1) * d.C);
    p.fine.insert(p.fine.end(), d.fine.begin() + row * d.P, d.fine.begin() + (row + 1) * d.P);
    p.time.push_back(row / per_step);
    p.global.push_back(row);
  }
  return p;
}

double max_relative_difference(const torch::Tensor& a, const torch::Tensor& b) {
  return ((a - b).abs().max() / b.abs().max()).item<double>();
}

}  // namespace

TEST(DataParallel, AGroupTrainsAsOneMemberHoldingAllRows) {
  const KnownDistribution d(960, 3);  // 12 steps of 80 patches
  const int64_t per_step = 80;
  auto to = fast_training();
  to.validation = 0.25;  // the split by time is the group's too
  to.validation_members = 2;
  to.validation_max_samples = 32;
  // Alone, with every row (the rows' times as the group sees them).
  Part all = part_of(d, per_step, 0, 1);
  ft::Downscaler alone(small_model(), to, "cpu");
  ft::DataView v = all.view(d.n);
  v.global_row = nullptr;
  const auto s1 = alone.train_session(v, 2);

  for (int size : {2, 3}) {
    ThreadGroup group(size);
    std::vector<std::unique_ptr<ft::Downscaler>> members;
    std::vector<Part> parts;
    for (int m = 0; m < size; ++m) {
      members.push_back(std::make_unique<ft::Downscaler>(small_model(), to, "cpu"));
      members.back()->set_reducer(std::make_shared<ThreadReducer>(group, m));
      parts.push_back(part_of(d, per_step, m, size));
    }
    std::vector<ft::SessionStats> stats(static_cast<size_t>(size));
    std::vector<std::thread> threads;
    for (int m = 0; m < size; ++m)
      threads.emplace_back([&, m] { stats[m] = members[m]->train_session(parts[m].view(d.n), 2); });
    for (auto& t : threads) t.join();
    for (int m = 0; m < size; ++m) {
      SCOPED_TRACE("group of " + std::to_string(size) + ", member " + std::to_string(m));
      EXPECT_EQ(members[m]->step(), alone.step());
      // Every member has the same weights (the same summed steps) ...
      EXPECT_TRUE(torch::equal(ft::internals(*members[m]).flat, ft::internals(*members[0]).flat));
      // ... equal to training alone up to the order of the gradient sums.
      EXPECT_LT(max_relative_difference(ft::internals(*members[m]).flat, ft::internals(alone).flat), 1e-4);
      EXPECT_NEAR(stats[m].epochs.back().avg_loss, s1.epochs.back().avg_loss, 1e-4 * s1.epochs.back().avg_loss);
      EXPECT_EQ(stats[m].validation_samples, s1.validation_samples);
      EXPECT_EQ(stats[m].train_samples + stats[m].validation_samples > 0, true);
      // The training range of the context (sample.clip_context) is the group's, not the member's.
      EXPECT_EQ(ft::internals(*members[m]).sums.context_min, ft::internals(alone).sums.context_min);
      EXPECT_EQ(ft::internals(*members[m]).sums.context_max, ft::internals(alone).sums.context_max);
    }
  }
}

TEST(DataParallel, APatchSplitIsTheSameOnOneAndTwoMembers) {
  // One time step of 320 patches (a single field), 20% held out by the sample rule: each member
  // decides for its own rows, and the group trains on the same rows, in the same global order,
  // as one process holding all of them.
  const KnownDistribution d(320, 11);
  auto to = fast_training();
  to.validation = 0.2;
  to.validation_split = ft::ValidationSplit::kPatches;
  to.validation_members = 2;
  to.validation_max_samples = 16;
  Part all = part_of(d, d.n, 0, 1);
  ft::Downscaler alone(small_model(), to, "cpu");
  ft::DataView v = all.view(d.n);
  v.global_row = nullptr;
  const auto s1 = alone.train_session(v, 2);
  ASSERT_GT(s1.validation_samples, 0);
  ThreadGroup group(2);
  std::vector<std::unique_ptr<ft::Downscaler>> members;
  std::vector<Part> parts;
  for (int m = 0; m < 2; ++m) {
    members.push_back(std::make_unique<ft::Downscaler>(small_model(), to, "cpu"));
    members.back()->set_reducer(std::make_shared<ThreadReducer>(group, m));
    parts.push_back(part_of(d, d.n, m, 2));
  }
  std::vector<ft::SessionStats> stats(2);
  std::thread other([&] { stats[1] = members[1]->train_session(parts[1].view(d.n), 2); });
  stats[0] = members[0]->train_session(parts[0].view(d.n), 2);
  other.join();
  EXPECT_EQ(stats[0].validation_samples, s1.validation_samples);
  EXPECT_EQ(stats[0].train_samples + stats[1].train_samples, s1.train_samples);
  EXPECT_EQ(members[0]->step(), alone.step());
  EXPECT_TRUE(torch::equal(ft::internals(*members[1]).flat, ft::internals(*members[0]).flat));
  EXPECT_LT(max_relative_difference(ft::internals(*members[0]).flat, ft::internals(alone).flat), 1e-4);
}

TEST(DataParallel, AMemberWithoutRowsStillTakesPart) {
  const KnownDistribution d(160, 4);
  auto to = fast_training();
  ThreadGroup group(2);
  ft::Downscaler a(small_model(), to, "cpu"), b(small_model(), to, "cpu");
  a.set_reducer(std::make_shared<ThreadReducer>(group, 0));
  b.set_reducer(std::make_shared<ThreadReducer>(group, 1));
  const Part whole = part_of(d, 80, 0, 1);
  const Part none;
  std::thread t([&] { b.train_session(none.view(d.n), 1); });
  a.train_session(whole.view(d.n), 1);
  t.join();
  EXPECT_GT(a.step(), 0);
  EXPECT_EQ(a.step(), b.step());
  EXPECT_TRUE(torch::equal(ft::internals(a).flat, ft::internals(b).flat));
  EXPECT_EQ(ft::internals(b).sums.context_min, ft::internals(a).sums.context_min);
  EXPECT_EQ(ft::internals(b).sums.context_max, ft::internals(a).sums.context_max);
}
