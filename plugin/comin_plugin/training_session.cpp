// SPDX-License-Identifier: BSD-3-Clause
#include "plugin/comin_plugin/training_session.hpp"

#include <sched.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <stdexcept>

#include "common/log.hpp"
#include "plugin/comin_plugin/free_cpus.hpp"

namespace finecast::plugin {
namespace {

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

/// Lowers the calling thread's priority by `steps` nice levels (at most to 19); the threads it
/// starts afterwards (LibTorch's and OpenBLAS's OpenMP workers) inherit it. On Linux a nice value
/// belongs to a thread (setpriority on its thread id), not to the whole process.
void lower_this_threads_priority(int steps) {
  if (steps <= 0) return;
  const auto tid = static_cast<id_t>(syscall(SYS_gettid));
  errno = 0;
  const int now = getpriority(PRIO_PROCESS, tid);
  if (now == -1 && errno != 0) return;
  const int target = std::min(19, now + steps);
  if (target != now && setpriority(PRIO_PROCESS, tid, target) != 0)
    log::warning(std::string("train.nice: the training thread's priority stays as the host's (setpriority: ") +
                 std::strerror(errno) + ")");
}

/// Moves the calling thread to `cpus` (empty: leaves it where it is); the threads it starts
/// afterwards inherit them. On Linux an affinity too belongs to a thread.
void move_this_thread_to(const std::vector<int>& cpus) {
  if (cpus.empty()) return;
  const cpu_set_t set = cpu_set_of(cpus);
  if (sched_setaffinity(0, sizeof set, &set) != 0)  // 0: the calling thread
    log::warning("train.free_cores: the training thread stays on its rank's cores (sched_setaffinity to CPU(s) " +
                 cpu_list_text(cpus) + ": " + std::strerror(errno) + ")");
}

/// "0.123" (seconds, 3 decimals).
std::string sec(double s) {
  char b[32];
  std::snprintf(b, sizeof b, "%.3f", s);
  return b;
}

/// Outside / epochs as "0.05x" ("-" without epochs).
std::string ratio(double outside, double epochs) {
  if (!(epochs > 0)) return "-";
  char b[32];
  std::snprintf(b, sizeof b, "%.3fx", outside / epochs);
  return b;
}

/// "2.41 s, host blocked 2.41 s; epochs 2.30 s, outside them 0.11 s (0.048x): snapshot 0.004,
/// thread start 0.000, cleaning ..., other 0.001": a session's (or the run's summed) times,
/// `other` being what no part accounts for.
std::string anatomy_text(const SessionTimes& p, const trainer::SessionAnatomy& a) {
  const double outside = p.total() - a.epochs;
  const double other = p.total() - p.snapshot - p.thread_start - p.thread_setup - p.epoch_lines - a.sum();
  return sec(p.total()) + " s, host blocked " + sec(p.host_blocked) + " s; epochs " + sec(a.epochs) +
         " s, outside them " + sec(outside) + " s (" + ratio(outside, a.epochs) + "): snapshot " + sec(p.snapshot) +
         ", thread start " + sec(p.thread_start) + ", thread setup " + sec(p.thread_setup) + ", epoch lines " +
         sec(p.epoch_lines) + ", cleaning " + sec(a.cleaning) + ", split " + sec(a.split) + ", normalisation " +
         sec(a.normalisation) + ", thread tuning " + sec(a.thread_tuning) + ", validation " + sec(a.validation) +
         ", publishing " + sec(a.publishing) + ", other " + sec(other);
}

}  // namespace

std::string anatomy_line(long long session, const SessionTimes& t, const trainer::SessionStats& st) {
  return "Session " + std::to_string(session) + " anatomy: " + anatomy_text(t, st.anatomy) +
         "; the training thread's CPU outside them " + sec(st.anatomy.cpu_outside_epochs) + " s";
}

void AnatomySums::add(long long session, const SessionTimes& t, const trainer::SessionStats& st) {
  const trainer::SessionAnatomy& a = st.anatomy;
  const double outside = t.total() - a.epochs;
  if (sessions == 0) first_outside = outside, first_epochs = a.epochs;
  if (a.epochs > 0 && outside / a.epochs >= worst_ratio) worst_ratio = outside / a.epochs, worst_session = session;
  ++sessions;
  plugin.snapshot += t.snapshot;
  plugin.thread_start += t.thread_start;
  plugin.run += t.run;
  plugin.thread_setup += t.thread_setup;
  plugin.epoch_lines += t.epoch_lines;
  plugin.host_blocked += t.host_blocked;
  trainer.cleaning += a.cleaning;
  trainer.split += a.split;
  trainer.normalisation += a.normalisation;
  trainer.thread_tuning += a.thread_tuning;
  trainer.epochs += a.epochs;
  trainer.validation += a.validation;
  trainer.publishing += a.publishing;
  trainer.cpu_outside_epochs += a.cpu_outside_epochs;
}

std::string AnatomySums::line() const {
  if (sessions == 0) return "";
  return "Session anatomy (" + std::to_string(sessions) + " sessions): " + anatomy_text(plugin, trainer) +
         "; first session outside " + sec(first_outside) + " s (" + ratio(first_outside, first_epochs) +
         "); most outside: session " + std::to_string(worst_session) + " (" +
         (worst_session > 0 ? ratio(worst_ratio, 1.0) : "-") + ")";
}

double time_left(const trainer::SessionStats& so_far, int epochs) {
  const auto done = static_cast<int>(so_far.epochs.size());
  if (done == 0) return 0;
  double seconds = 0;
  for (const trainer::EpochStats& k : so_far.epochs) seconds += k.seconds;
  // The time left by optimizer steps when the trainer planned them (a step budget, train.max_steps,
  // may end the session long before its epochs), else by epochs.
  const int64_t steps = so_far.session_steps, planned = so_far.session_steps_planned;
  if (planned > 0 && steps > 0)
    return seconds / static_cast<double>(steps) * static_cast<double>(std::max<int64_t>(0, planned - steps));
  return seconds / done * std::max(0, epochs - done);
}

std::string epoch_line(const trainer::SessionStats& so_far, int epochs) {
  const trainer::EpochStats& e = so_far.epochs.back();
  const auto done = static_cast<int>(so_far.epochs.size());
  const int64_t steps = so_far.session_steps, planned = so_far.session_steps_planned;
  const bool more = planned > 0 && steps > 0 ? steps < planned : done < epochs;
  const double left = time_left(so_far, epochs);
  char line[200];
  std::snprintf(line, sizeof line, "Epoch %d/%d: avg loss = %.4f (%lld batches, %.2f s, %.0f samples/s)%s", done,
                epochs, e.avg_loss, static_cast<long long>(e.batches), e.seconds,
                e.seconds > 0 ? static_cast<double>(so_far.train_samples) / e.seconds : 0.0,
                more ? "; session ends in ~" : "");
  return more ? line + log::duration(left) : line;
}

TrainingSession::~TrainingSession() {
  if (thread_.joinable()) thread_.join();
}

void TrainingSession::start(Model& model, Snapshot data, int epochs, bool async, int threads,
                            std::function<void()> before) {
  const auto started = Clock::now();
  if (in_flight()) throw std::logic_error("a training session is already in flight");
  if (thread_.joinable()) thread_.join();
  data_ = std::move(data);
  {
    std::lock_guard<std::mutex> lock(progress_mutex_);
    progress_ = Progress{0, epochs, 0.0, started};
  }
  error_ = nullptr;
  finished_ = false;
  before_ = std::move(before);
  times_ = SessionTimes{};
  times_.snapshot = data_.seconds;
  async_ = async;
  running_ = true;
  if (async) {
    thread_ = std::thread(&TrainingSession::run, this, &model, epochs, threads, started);
  } else {
    run(&model, epochs, threads, started);
  }
  // (The training thread writes the other members of times_ meanwhile; collect() reads them
  // after joining it.)
  times_.host_blocked = times_.snapshot + seconds_since(started);
}

void TrainingSession::run(Model* model, int epochs, int threads, Clock::time_point started) noexcept {
  const auto began = Clock::now();
  times_.thread_start = std::chrono::duration<double>(began - started).count();
  try {
    if (async_) {
      lower_this_threads_priority(nice_);
      move_this_thread_to(cpus_);
    }
    if (before_) before_();
    trainer::DataView view{data_.context.data(), data_.fine.data(), data_.weights.data(), data_.n};
    if (static_cast<int64_t>(data_.step.size()) == data_.n) view.time = data_.step.data();
    if (static_cast<int64_t>(data_.global_row.size()) == data_.n && data_.global_rows > 0) {
      view.global_row = data_.global_row.data();
      view.global_rows = data_.global_rows;
    }
    // Each epoch's line as it ends, then the notes it brought (validation scores, ...), from the
    // training thread (the log is thread-safe and prints to the process's own streams, never
    // through the host); the notes of the session's end after it.
    // (After the epochs, train.crps_steps reports its progress as notes: no new epoch line then.)
    std::size_t noted = 0, lined = 0;
    auto notes_from = [&noted](const trainer::SessionStats& st) {
      for (; noted < st.notes.size(); ++noted) log::info(st.notes[noted]);
    };
    stats_ = model->train_session(
        view, epochs, threads, [](const std::string& event) { log::warning(event); },
        [this, epochs, &notes_from, &lined](const trainer::SessionStats& so_far) {
          const auto t0 = Clock::now();
          if (so_far.epochs.size() != lined) log::progress(epoch_line(so_far, epochs));
          lined = so_far.epochs.size();
          notes_from(so_far);
          {
            std::lock_guard<std::mutex> lock(progress_mutex_);
            progress_ = {static_cast<int>(so_far.epochs.size()), epochs, time_left(so_far, epochs), Clock::now()};
          }
          times_.epoch_lines += seconds_since(t0);
        });
    notes_from(stats_);
    times_.run = seconds_since(began);
    times_.thread_setup = times_.run - stats_.seconds;
    finished_ = true;
  } catch (...) {
    error_ = std::current_exception();
    if (group_failure_) {
      std::string what = "unknown error";
      try {
        std::rethrow_exception(error_);
      } catch (const std::exception& e) {
        what = e.what();
      } catch (...) {
      }
      group_failure_(what);
    }
  }
  running_ = false;  // (data_ stays: the next snapshot reuses its memory, recycled())
}

bool TrainingSession::in_flight() const { return running_; }

void TrainingSession::reserve(int64_t rows, int C, int P) {
  if (in_flight()) throw std::logic_error("reserve(): a training session is in flight");
  const auto n = static_cast<size_t>(rows);
  data_.context.resize(n * static_cast<size_t>(C));
  data_.fine.resize(n * static_cast<size_t>(P));
  data_.weights.resize(n * static_cast<size_t>(P));
  data_.step.resize(n);
  data_.global_row.resize(n);
}

Snapshot TrainingSession::recycled() {
  if (in_flight()) throw std::logic_error("recycled(): a training session is in flight");
  if (thread_.joinable()) thread_.join();
  Snapshot s = std::move(data_);
  data_ = Snapshot{};
  return s;
}

double TrainingSession::Progress::left_now() const {
  // The estimate at the latest epoch's end, less the time since (sampling steps that paused the
  // session are in its epochs' times, and so in the estimate).
  return done == 0 ? -1 : std::max(0.0, left - seconds_since(at));
}

double TrainingSession::seconds_left() const {
  if (!running_) return -1;
  std::lock_guard<std::mutex> lock(progress_mutex_);
  return progress_.left_now();
}

std::string TrainingSession::progress() const {
  if (!running_) return "";
  std::lock_guard<std::mutex> lock(progress_mutex_);
  const double left = progress_.left_now();
  if (left < 0)
    return "epoch 1/" + std::to_string(progress_.epochs) + " started " + log::duration(seconds_since(progress_.at)) +
           " ago";
  return "epoch " + std::to_string(progress_.done) + "/" + std::to_string(progress_.epochs) + " done, ends in ~" +
         log::duration(left);
}

bool TrainingSession::collect() {
  if (running_) return false;
  if (thread_.joinable()) thread_.join();
  if (error_) {
    std::exception_ptr e = error_;
    error_ = nullptr;
    std::rethrow_exception(e);
  }
  const bool done = finished_;
  finished_ = false;
  return done;
}

void TrainingSession::wait() {
  if (thread_.joinable()) thread_.join();
}

}  // namespace finecast::plugin
