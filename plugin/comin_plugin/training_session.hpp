// SPDX-License-Identifier: BSD-3-Clause
// A training session on a snapshot of the rolling buffer, on a background thread (train.async)
// or inline. At most one is in flight; the model publishes its EMA weights when it ends.
#pragma once

#include <atomic>
#include <chrono>
#include <exception>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
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
  double seconds = 0;  ///< what taking it cost the host (the buffer's copy, the rows' numbering)
};

/// Where one session's wall time went on the plugin's side, around the trainer's own parts
/// (trainer::SessionStats::anatomy, which make up `run` less `before`).
struct SessionTimes {
  double snapshot = 0;      ///< Snapshot::seconds
  double thread_start = 0;  ///< from start() to the session's first instruction (on its thread when asynchronous)
  double run = 0;           ///< from there to its end: the `before` hook, then train_session
  /// Of `run`, what is not train_session's (SessionStats::seconds): the thread's priority, the
  /// `before` hook, setting its thread count and back, its last notes.
  double thread_setup = 0;
  double epoch_lines = 0;   ///< of train_session's time, the progress lines after each epoch (this class's callback)
  double host_blocked = 0;  ///< what the host waited: the snapshot and start() (the whole session inline)
  double total() const { return snapshot + thread_start + run; }
};

/// "Session 2: 2.41 s, host blocked 2.41 s; epochs 2.30 s, outside them 0.11 s (0.05x): snapshot
/// 0.004, thread start 0.000, cleaning 0.010, ...": one session's anatomy for the log.
std::string anatomy_line(long long session, const SessionTimes& times, const trainer::SessionStats& stats);

/// The anatomy of a run's sessions, summed, and the session with the most time outside its
/// epochs (relative to them): the end-of-run summary.
struct AnatomySums {
  long long sessions = 0;
  SessionTimes plugin;
  trainer::SessionAnatomy trainer;
  double first_outside = 0, first_epochs = 0;  ///< the run's first session (the one-time costs)
  double worst_ratio = 0;                      ///< the largest outside / epochs of a session
  long long worst_session = 0;
  void add(long long session, const SessionTimes& times, const trainer::SessionStats& stats);
  /// "Session anatomy (2 sessions): ..." (empty without a session).
  std::string line() const;
};

/// "Epoch 2/4: avg loss = 0.6822 (54 batches, 0.02 s, 160000 samples/s); session ends in ~0.1 s":
/// the line of the last epoch of `so_far`, of a session of `epochs` epochs (the samples per
/// second are this trainer rank's training samples).
std::string epoch_line(const trainer::SessionStats& so_far, int epochs);
/// The seconds a session of `epochs` epochs has left after `so_far`, at the pace of its epochs so
/// far (by optimizer steps where the trainer planned them: a step budget may end it early).
double time_left(const trainer::SessionStats& so_far, int epochs);

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
  /// Where a running session stands, for the log: "epoch 3/12 done, ends in ~40 s" ("" when none
  /// runs). Any thread.
  std::string progress() const;
  /// The running session's seconds left at the pace of its epochs so far; < 0 before its first
  /// epoch ends or when none runs. Any thread.
  double seconds_left() const;
  /// True when a session ran to the end since the last call (then clears the flag); rethrows
  /// the exception of a session that failed. Never blocks.
  bool collect();
  /// What the last finished session did (valid after collect() returned true).
  const trainer::SessionStats& last_stats() const { return stats_; }
  /// Where the last finished session's time went on the plugin's side (likewise).
  const SessionTimes& last_times() const { return times_; }

  /// An asynchronous session's thread (and the OpenMP threads it starts) runs `nice` steps below
  /// the priority of the thread that starts it (Linux setpriority, capped at 19; 0 = the same): the
  /// host's ranks take the cores first. A synchronous session runs on the host's own thread, as is.
  void set_nice(int nice) { nice_ = nice; }
  /// An asynchronous session's thread (and the OpenMP threads it starts) runs on `cpus` (Linux
  /// sched_setaffinity; empty: where the starting thread may run). A synchronous one, as is.
  void set_cpus(std::vector<int> cpus) { cpus_ = std::move(cpus); }
  /// Blocks until the running session (if any) ends; collect() then reports its outcome.
  void wait();
  /// The last session's snapshot, for the next one to be taken into: its vectors keep their
  /// memory, so taking a snapshot of the same size allocates and touches no new pages (the first
  /// session's copy cost several times the later ones'). Not while a session is in flight.
  Snapshot recycled();
  /// Allocates (and touches) the memory of a snapshot of up to `rows` samples of C context and P
  /// fine values at set-up, where it blocks no time step, instead of in the first session.
  void reserve(int64_t rows, int C, int P);

 private:
  void run(Model* model, int epochs, int threads, std::chrono::steady_clock::time_point started) noexcept;

  std::thread thread_;
  Snapshot data_;
  std::exception_ptr error_;
  trainer::SessionStats stats_;
  SessionTimes times_;
  /// The latest epoch's end: epochs done of all, the estimate of the time left then, and when.
  struct Progress {
    int done = 0, epochs = 0;
    double left = 0;
    std::chrono::steady_clock::time_point at;
    /// Seconds left now at the epochs' pace; -1 before the first epoch ends.
    double left_now() const;
  };
  mutable std::mutex progress_mutex_;
  Progress progress_;
  bool async_ = false;
  int nice_ = 0;
  std::vector<int> cpus_;
  std::function<void()> before_;
  std::function<void(const std::string&)> group_failure_;
  std::atomic<bool> running_{false};
  bool finished_ = false;
};

}  // namespace finecast::plugin
