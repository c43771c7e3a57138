// SPDX-License-Identifier: BSD-3-Clause
// A training session on a snapshot of the rolling buffer, on a background thread (train.async)
// or inline. At most one is in flight; the model publishes its EMA weights when it ends.
#pragma once

#include <atomic>
#include <exception>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "plugin/comin_plugin/trainer_module.hpp"

namespace finecast::plugin {

/// The samples a session trains on: a consistent copy, so the host may keep pushing steps.
struct Snapshot {
  std::vector<float> context, fine, weights;
  std::vector<int64_t> step;        ///< each sample's buffer step (0 = oldest): train.validation splits by time
  std::vector<int64_t> global_row;  ///< each sample's row among all trainer ranks' (data-parallel)
  int64_t global_rows = 0;
  int64_t n = 0;
};

/// "Epoch 2/4: avg loss = 0.6822 (54 batches, 0.02 s, 160000 samples/s); session ends in ~0.1 s":
/// the line of the last epoch of `so_far`, of a session of `epochs` epochs (the samples per
/// second are this trainer rank's training samples).
std::string epoch_line(const trainer::SessionStats& so_far, int epochs);

/// One training session at a time, on a thread of its own or inline.
class TrainingSession {
 public:
  TrainingSession() = default;
  TrainingSession(const TrainingSession&) = delete;
  TrainingSession& operator=(const TrainingSession&) = delete;
  ~TrainingSession();

  /// Starts a session (trainer::Downscaler::train_session: validation split, `epochs` epochs, early
  /// stopping, publishing) on `data` with `threads` LibTorch threads
  /// (set on the thread that trains, restored afterwards); when `async` it runs on a background
  /// thread and this returns at once, otherwise it returns when the session ends. `before` (may
  /// be empty) runs first on the training thread; it and the session may throw: the exception is
  /// rethrown by collect().
  void start(Model& model, Snapshot data, int epochs, bool async, int threads, std::function<void()> before = {});

  /// With several trainer ranks, a session that fails on one of them leaves the others waiting
  /// in their gradient sums: `handler` (called on the training thread with the error) must end
  /// the run.
  void on_group_failure(std::function<void(const std::string&)> handler) { group_failure_ = std::move(handler); }

  /// True while a background session runs.
  bool in_flight() const;
  /// True when a session ran to the end since the last call (then clears the flag); rethrows
  /// the exception of a session that failed. Never blocks.
  bool collect();
  /// What the last finished session did (valid after collect() returned true).
  const trainer::SessionStats& last_stats() const { return stats_; }
  /// Blocks until the running session (if any) ends; collect() then reports its outcome.
  void wait();

 private:
  void run(Model* model, int epochs, int threads) noexcept;

  std::thread thread_;
  Snapshot data_;
  std::exception_ptr error_;
  trainer::SessionStats stats_;
  std::function<void()> before_;
  std::function<void(const std::string&)> group_failure_;
  std::atomic<bool> running_{false};
  bool finished_ = false;
};

}  // namespace finecast::plugin
