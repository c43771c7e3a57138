// SPDX-License-Identifier: BSD-3-Clause
// A training session that yields to its host: another thread holds the gate (the plugin, while it
// samples on the cores the session trains on), and the session waits before its next optimizer
// step until the gate is released. Torch-free, so the plugin can hold it.
#pragma once

#include <atomic>
#include <condition_variable>
#include <mutex>

namespace finecast::trainer {

class PauseGate {
 public:
  /// The trainer waits at its next step until every hold is released.
  void hold() {
    std::lock_guard<std::mutex> lock(mutex_);
    ++holds_;
    held_.store(true, std::memory_order_release);
  }
  void release() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (holds_ > 0) --holds_;
      held_.store(holds_ > 0, std::memory_order_release);
    }
    released_.notify_all();
  }
  /// The trainer's side, between optimizer steps: returns at once unless the gate is held (one
  /// atomic load then: it runs before every optimizer step).
  void wait_while_held() {
    if (!held_.load(std::memory_order_acquire)) return;
    std::unique_lock<std::mutex> lock(mutex_);
    if (holds_ > 0) {
      ++waits_;
      released_.wait(lock, [this] { return holds_ == 0; });
    }
  }
  /// How often the trainer has waited (tests, logs).
  long long waits() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return waits_;
  }

  /// Holds the gate for its lifetime (no-op on a null gate).
  class Hold {
   public:
    explicit Hold(PauseGate* gate) : gate_(gate) {
      if (gate_) gate_->hold();
    }
    ~Hold() {
      if (gate_) gate_->release();
    }
    Hold(const Hold&) = delete;
    Hold& operator=(const Hold&) = delete;

   private:
    PauseGate* gate_;
  };

 private:
  mutable std::mutex mutex_;
  std::condition_variable released_;
  int holds_ = 0;
  std::atomic<bool> held_{false};  ///< holds_ > 0, readable without the mutex
  long long waits_ = 0;
};

}  // namespace finecast::trainer
