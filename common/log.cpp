// SPDX-License-Identifier: BSD-3-Clause
#include "common/log.hpp"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <mutex>
#include <stdexcept>

namespace finecast::log {
namespace {

struct State {
  std::mutex mutex;  // the trainer thread logs too
  int rank = -1;
  Level min_level = Level::kInfo;
  bool progress = true;
  Sink sink;
};

State& state() {
  static State s;
  return s;
}

const char* tag(Level level) {
  switch (level) {
    case Level::kDebug:
      return "DEBUG: ";
    case Level::kWarning:
      return "WARNING: ";
    case Level::kError:
      return "ERROR: ";
    default:
      return "";
  }
}

/// Writes `line` and a newline in one write() call, after what `out` holds: stdio wrote a line in
/// pieces (stderr is unbuffered: the text, then the newline), so that the lines of two ranks
/// sharing a terminal or pipe ran together. One write() of up to PIPE_BUF bytes to a pipe is
/// never interleaved with another.
void write_line(std::FILE* out, const std::string& line) {
  const std::string whole = line + '\n';
  std::fflush(out);
  const int fd = ::fileno(out);
  for (size_t done = 0; done < whole.size();) {
    const ssize_t n = ::write(fd, whole.data() + done, whole.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;  // nowhere to log to: nothing else to do
    done += static_cast<size_t>(n);
  }
}

void emit(Level level, const std::string& msg) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (level < s.min_level) return;
  const std::string line =
      (s.rank < 0 ? std::string("[finecast] ") : "[finecast r" + std::to_string(s.rank) + "] ") + tag(level) + msg;
  if (s.sink) {
    s.sink(level, line);
    return;
  }
  std::FILE* out = level >= Level::kWarning ? stderr : stdout;
  write_line(out, line);
}

}  // namespace

const schema::Names<Level>& names(Level) {
  static const schema::Names<Level> n{
      {Level::kDebug, "debug"}, {Level::kInfo, "info"}, {Level::kWarning, "warning"}, {Level::kError, "error"}};
  return n;
}

Level parse_level(const std::string& text) {
  Level level{};
  if (schema::parse_name(text, level)) return level;
  throw std::invalid_argument("log level must be one of debug, info, warning, error; got \"" + text + "\"");
}

void configure(int rank, Level min_level, bool progress_on_this_rank) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  s.rank = rank;
  s.min_level = min_level;
  s.progress = progress_on_this_rank;
}

Sink set_sink(Sink sink) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  Sink old = std::move(s.sink);
  s.sink = std::move(sink);
  return old;
}

std::string rank_ranges(const std::vector<int>& ranks) {
  std::vector<int> r = ranks;
  std::sort(r.begin(), r.end());
  std::string out;
  for (size_t i = 0; i < r.size();) {
    size_t j = i;
    while (j + 1 < r.size() && r[j + 1] == r[j] + 1) ++j;
    out += (out.empty() ? "" : ",") + std::to_string(r[i]) + (j > i ? "-" + std::to_string(r[j]) : "");
    i = j + 1;
  }
  return out;
}

std::string duration(double seconds) {
  char text[40];
  seconds = std::max(0.0, seconds);
  const auto s = static_cast<long long>(std::llround(seconds));
  if (seconds < 10) {
    std::snprintf(text, sizeof text, "%.1f s", seconds);
  } else if (s < 3600) {
    std::snprintf(text, sizeof text, "%lld min %02lld s", s / 60, s % 60);
  } else {
    std::snprintf(text, sizeof text, "%lld h %02lld min", s / 3600, s / 60 % 60);
  }
  return text;
}

std::string prefix() {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  return s.rank < 0 ? std::string("[finecast] ") : "[finecast r" + std::to_string(s.rank) + "] ";
}

void debug(const std::string& msg) { emit(Level::kDebug, msg); }
void info(const std::string& msg) { emit(Level::kInfo, msg); }
void warning(const std::string& msg) { emit(Level::kWarning, msg); }
void error(const std::string& msg) { emit(Level::kError, msg); }
void progress(const std::string& msg) {
  bool on;
  {
    std::lock_guard<std::mutex> lock(state().mutex);
    on = state().progress;
  }
  if (on) emit(Level::kInfo, msg);
}

}  // namespace finecast::log
