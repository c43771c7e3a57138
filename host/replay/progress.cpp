// SPDX-License-Identifier: BSD-3-Clause
// Progress bar / progress lines of finecast-replay.
#include "host/replay/progress.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>

#include "common/error.hpp"

namespace finecast::host::replay {
namespace {

std::string clock_text(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "?";
  const long long s = std::llround(seconds);
  return fmt::format("{}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60);
}

constexpr int kBarWidth = 30;

}  // namespace

Progress::Mode Progress::parse_mode(const std::string& text) {
  // Both streams: Open MPI gives its ranks a pseudo-terminal for stdout even when mpiexec's
  // output goes to a file or a pipe (stderr stays a pipe), and a captured log must not fill with
  // redrawn bars.
  if (text == "auto") return isatty(fileno(stdout)) && isatty(fileno(stderr)) ? Mode::kBar : Mode::kLines;
  if (text == "bar") return Mode::kBar;
  if (text == "lines") return Mode::kLines;
  if (text == "none") return Mode::kNone;
  throw ConfigError("--progress must be one of auto, bar, lines, none; got '" + text + "'");
}

std::string Progress::status(int64_t done, int64_t total, double seconds) {
  const double rate = seconds > 0 ? done / seconds : 0.0;
  return fmt::format("{}/{} steps, {:.2f} steps/s, ETA {}", done, total, rate,
                     rate > 0 ? clock_text((total - done) / rate) : "?");
}

Progress::Progress(int64_t total_steps, Mode mode, int64_t every, std::FILE* out)
    : total_(std::max<int64_t>(1, total_steps)),
      every_(every > 0 ? every : std::max<int64_t>(1, total_steps / 20)),
      mode_(mode),
      out_(out),
      t0_(std::chrono::steady_clock::now()) {
  if (mode_ != Mode::kBar) return;
  // Log lines (also the plugin's: the log lives once, in libfinecast_common) must not be
  // overwritten by the bar.
  previous_sink_ = log::set_sink([this](log::Level level, const std::string& line) {
    std::lock_guard<std::mutex> lock(mutex_);
    clear();
    std::FILE* dest = level >= log::Level::kWarning ? stderr : stdout;
    std::fputs(line.c_str(), dest);
    std::fputc('\n', dest);
    std::fflush(dest);
    if (!finished_ && done_ > 0) draw();
  });
}

Progress::~Progress() {
  if (mode_ == Mode::kBar) {
    finish();
    log::set_sink(previous_sink_);
  }
}

void Progress::clear() {
  if (!drawn_) return;
  std::fputs("\r\033[K", out_);
  std::fflush(out_);
  drawn_ = false;
}

void Progress::draw() {
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count();
  const int filled = static_cast<int>(kBarWidth * done_ / total_);
  std::string bar(static_cast<size_t>(filled), '#');
  bar.resize(kBarWidth, '.');
  std::fprintf(out_, "\r\033[K[%s] %s  %s", bar.c_str(), status(done_, total_, seconds).c_str(), what_.c_str());
  std::fflush(out_);
  drawn_ = true;
  last_draw_ = seconds;
}

void Progress::update(int64_t done, const std::string& what) {
  std::unique_lock<std::mutex> lock(mutex_);
  done_ = done;
  what_ = what;
  if (mode_ == Mode::kNone) return;
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count();
  if (mode_ == Mode::kBar) {
    // Redrawing costs a write per step; a few per second are enough for the eye.
    if (done == total_ || last_draw_ < 0 || seconds - last_draw_ >= 0.2) draw();
    return;
  }
  lock.unlock();
  if (done % every_ == 0 || done == total_ || done == 1)
    log::info("replay: " + status(done, total_, seconds) + ", " + what);
}

void Progress::finish() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (finished_) return;
  finished_ = true;
  if (mode_ == Mode::kBar && drawn_) {
    std::fputc('\n', out_);
    std::fflush(out_);
    drawn_ = false;
  }
}

}  // namespace finecast::host::replay
