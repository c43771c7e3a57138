// SPDX-License-Identifier: BSD-3-Clause
#include "plugin/comin_plugin/training_session.hpp"

#include <algorithm>
#include <cstdio>
#include <stdexcept>

#include "common/log.hpp"

namespace finecast::plugin {

std::string epoch_line(const trainer::SessionStats& so_far, int epochs) {
  const trainer::EpochStats& e = so_far.epochs.back();
  const auto done = static_cast<int>(so_far.epochs.size());
  double seconds = 0;
  for (const trainer::EpochStats& k : so_far.epochs) seconds += k.seconds;
  // The time left by optimizer steps when the trainer planned them (a step budget, train.max_steps,
  // may end the session long before its epochs), else by epochs.
  const int64_t steps = so_far.session_steps, planned = so_far.session_steps_planned;
  const bool by_steps = planned > 0 && steps > 0;
  const bool more = by_steps ? steps < planned : done < epochs;
  const double left = by_steps ? seconds / static_cast<double>(steps) * static_cast<double>(planned - steps)
                               : seconds / done * std::max(0, epochs - done);
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
  if (in_flight()) throw std::logic_error("a training session is already in flight");
  if (thread_.joinable()) thread_.join();
  data_ = std::move(data);
  error_ = nullptr;
  finished_ = false;
  before_ = std::move(before);
  running_ = true;
  if (async) {
    thread_ = std::thread(&TrainingSession::run, this, &model, epochs, threads);
  } else {
    run(&model, epochs, threads);
  }
}

void TrainingSession::run(Model* model, int epochs, int threads) noexcept {
  try {
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
    std::size_t noted = 0;
    auto notes_from = [&noted](const trainer::SessionStats& st) {
      for (; noted < st.notes.size(); ++noted) log::info(st.notes[noted]);
    };
    stats_ = model->train_session(
        view, epochs, threads, [](const std::string& event) { log::warning(event); },
        [epochs, &notes_from](const trainer::SessionStats& so_far) {
          log::progress(epoch_line(so_far, epochs));
          notes_from(so_far);
        });
    notes_from(stats_);
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
  data_ = Snapshot{};  // free the copy
  running_ = false;
}

bool TrainingSession::in_flight() const { return running_; }

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
