// SPDX-License-Identifier: BSD-3-Clause
// finecast-replay's progress report: a redrawn bar on a terminal, periodic lines otherwise.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <mutex>
#include <string>

#include "common/log.hpp"

namespace finecast::host::replay {

/// Reports steps done, steps/s and the time left. In bar mode it owns the terminal's last line:
/// while it is alive, finecast log lines (the plugin's too, from any thread) clear the bar,
/// print, and redraw it.
class Progress {
 public:
  enum class Mode { kBar, kLines, kNone };
  /// "auto" (bar when stdout and stderr are both terminals, else lines) | "bar" | "lines" | "none"; throws
  /// ConfigError otherwise.
  static Mode parse_mode(const std::string& text);

  /// `every`: steps between plain lines (0 = about 20 per run). Print on one rank only.
  Progress(int64_t total_steps, Mode mode, int64_t every, std::FILE* out = stdout);
  ~Progress();
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  /// Step `done` (1-based) of the total has finished; `what` says where (epoch, model time).
  void update(int64_t done, const std::string& what);
  /// Clears the bar (leaves a final line in bar mode).
  void finish();

  /// "12/48 steps, 3.40 steps/s, ETA 0:00:11" for the given numbers (tested on its own).
  static std::string status(int64_t done, int64_t total, double seconds);

 private:
  void draw();
  void clear();

  int64_t total_, every_, done_ = 0;
  Mode mode_;
  std::FILE* out_;
  std::string what_;
  std::chrono::steady_clock::time_point t0_;
  double last_draw_ = -1;
  bool drawn_ = false, finished_ = false;
  log::Sink previous_sink_;
  std::mutex mutex_;  ///< the plugin may log from its training thread while the bar is redrawn
};

}  // namespace finecast::host::replay
