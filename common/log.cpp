// SPDX-License-Identifier: BSD-3-Clause
#include "common/log.hpp"

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
  std::fputs(line.c_str(), out);
  std::fputc('\n', out);
  std::fflush(out);
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
