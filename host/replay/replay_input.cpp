// SPDX-License-Identifier: BSD-3-Clause
// File expansion, step concatenation and range selection of finecast-replay's input.
#include "host/replay/replay_input.hpp"

#include <glob.h>

#include <tuple>

#include "common/error.hpp"
#include "coupling/io/cf_time.hpp"
#include "coupling/io/plausibility.hpp"

namespace finecast::host::replay {
namespace {

std::string shape_text(const std::vector<size_t>& shape) {
  std::string s;
  for (size_t d : shape) s += (s.empty() ? "" : " x ") + std::to_string(d);
  return s;
}

bool has_glob_chars(const std::string& s) { return s.find_first_of("*?[") != std::string::npos; }

/// Orders dates by value, not by text ("999-01-01" < "1000-01-01").
bool parse(const std::string& text, std::tuple<int, int, int, int, int, double>& out) {
  coupling::DateTime t;
  if (!coupling::parse_datetime(text, t)) return false;
  out = {t.year, t.month, t.day, t.hour, t.minute, t.second};
  return true;
}

}  // namespace

std::vector<std::string> expand_files(const std::vector<std::string>& patterns, const std::string& context) {
  std::vector<std::string> files;
  for (const auto& p : patterns) {
    if (!has_glob_chars(p)) {
      files.push_back(p);  // a missing plain file is reported by the reader, with its NetCDF error
      continue;
    }
    glob_t g{};
    const int rc = glob(p.c_str(), 0, nullptr, &g);
    if (rc == 0)
      for (size_t i = 0; i < g.gl_pathc; ++i) files.emplace_back(g.gl_pathv[i]);
    globfree(&g);
    if (rc != 0) throw ConfigError(context + ": input.files: the pattern '" + p + "' matches no file");
  }
  return files;
}

ReplayInput::ReplayInput(const ReplayRunConfig& config)
    : variables_(config.variables), out_of_range_(config.variables.size(), 0) {
  // input.variables[].plausible and input.static[].plausible, for every reader of this process
  // (the static fields are read through coupling/io's own readers); they replace those of any
  // run file read before.
  std::vector<std::string> overrides;
  for (const auto& v : config.variables)
    if (!v.plausible.empty()) overrides.push_back(v.var + "=" + v.plausible);
  for (const auto& s : config.static_variables)
    if (!s.variable.plausible.empty()) overrides.push_back(s.variable.var + "=" + s.variable.plausible);
  coupling::clear_plausible_overrides();
  coupling::set_plausible_overrides(overrides, config.path + ": plausible");
  files_ = expand_files(config.files, config.path);
  std::string calendar;
  for (int f = 0; f < static_cast<int>(files_.size()); ++f) {
    int64_t n_times = -1;
    for (size_t v = 0; v < variables_.size(); ++v) {
      coupling::FieldReader reader(files_[f], variables_[v].var, variables_[v].level);
      if (f == 0 && v == 0) {
        n_values_ = reader.n_values();
        shape_ = reader.spatial_shape();
        kind_ = reader.grid_kind();
        calendar = reader.calendar();
      } else if (reader.spatial_shape() != shape_) {
        throw IoError(files_[f] + ": variable " + variables_[v].var + " has the spatial shape " +
                      shape_text(reader.spatial_shape()) + ", but " + files_[0] + ": " + variables_[0].var + " has " +
                      shape_text(shape_) + " (every replayed variable must live on the same grid)");
      }
      if (f == 0) attributes_.push_back(reader.attributes());
      if (v == 0) {
        n_times = reader.n_times();
        for (int64_t t = 0; t < n_times; ++t) steps_.push_back({f, t, reader.time_string(t)});
      } else if (reader.n_times() != n_times) {
        throw IoError(files_[f] + ": variable " + variables_[v].var + " has " + std::to_string(reader.n_times()) +
                      " time steps, " + variables_[0].var + " has " + std::to_string(n_times));
      }
    }
  }
  const int64_t n = n_steps_total();
  // Each file's axis increases (FieldReader checks); across files the order given must go on.
  std::tuple<int, int, int, int, int, double> prev_time, time;
  for (int64_t i = 1; i < n; ++i)
    if (steps_[i].file != steps_[i - 1].file && parse(steps_[i - 1].datetime, prev_time) &&
        parse(steps_[i].datetime, time) && !(time > prev_time))
      throw IoError(files_[steps_[i].file] + ": its first step, " + steps_[i].datetime + ", is not after the last " +
                    "step of " + files_[steps_[i - 1].file] + ", " + steps_[i - 1].datetime + " (" + config.path +
                    ": input.files are played in the order given; every step needs a time of its own)");
  // Every message below names existing steps; an input without steps has none to name.
  if (n == 0) {
    std::string what = std::to_string(files_.size()) + " file(s)";
    if (!files_.empty() && !variables_.empty())
      what += ": the time dimension of '" + variables_.front().var + "' in " + files_.front() +
              (files_.size() > 1 ? " and the other files" : "") + " is empty";
    throw IoError(config.path + ": the input has no time steps (" + what + "); nothing to replay");
  }
  auto resolve = [&](const StepBound& b, bool is_start) -> int64_t {
    if (!b.given) return is_start ? 0 : n - 1;
    const std::string key = is_start ? "time.start" : "time.stop";
    if (!b.is_date) {
      if (b.index >= n)
        throw ConfigError(config.path + ": " + key + " is step " + std::to_string(b.index) + " but the input has " +
                          std::to_string(n) + " steps (0.." + std::to_string(n - 1) + ")");
      return b.index;
    }
    std::tuple<int, int, int, int, int, double> bound, t;
    parse(b.date, bound);
    coupling::DateTime date;
    coupling::parse_datetime(b.date, date);
    if (const std::string e = coupling::date_error(date, calendar); !e.empty())
      throw ConfigError(config.path + ": " + key + " " + b.date + " is no date of the input's calendar: " + e);
    // start: the first step at or after the date; stop: the last at or before it.
    if (is_start) {
      for (int64_t i = 0; i < n; ++i) {
        if (!parse(steps_[i].datetime, t))
          throw ConfigError(config.path + ": " + key + " is a date but " + files_[steps_[i].file] +
                            " has no time coordinate; give a step index");
        if (t >= bound) return i;
      }
    } else {
      for (int64_t i = n - 1; i >= 0; --i) {
        if (!parse(steps_[i].datetime, t))
          throw ConfigError(config.path + ": " + key + " is a date but " + files_[steps_[i].file] +
                            " has no time coordinate; give a step index");
        if (t <= bound) return i;
      }
    }
    throw ConfigError(config.path + ": " + key + " " + b.date + " is outside the input's dates " +
                      steps_.front().datetime + " .. " + steps_.back().datetime);
  };
  const int64_t first = resolve(config.start, true), last = resolve(config.stop, false);
  if (last < first)
    throw ConfigError(config.path + ": time.stop (step " + std::to_string(last) + ", " + steps_[last].datetime +
                      ") is before time.start (step " + std::to_string(first) + ", " + steps_[first].datetime + ")");
  for (int64_t i = first; i <= last; i += config.stride) selected_.push_back(i);

  if (selected_.size() >= 2) {
    coupling::DateTime a, b;
    if (coupling::parse_datetime(steps_[selected_[0]].datetime, a) &&
        coupling::parse_datetime(steps_[selected_[1]].datetime, b)) {
      // In the files' own calendar: a 360_day file may start on February 30.
      const coupling::CfTime clock(
          "seconds since " + coupling::format_datetime(a), calendar,
          files_[steps_[selected_[0]].file] + ": the time of step " + std::to_string(selected_[0]));
      step_seconds_ = clock.from_datetime(b);
    }
  }
}

ReplayInput::~ReplayInput() = default;

const std::string& ReplayInput::datetime(int64_t i) const { return steps_.at(selected_.at(i)).datetime; }

void ReplayInput::open_file(int file) {
  if (file == open_file_) return;
  readers_.clear();
  for (const auto& v : variables_) {
    readers_.push_back(std::make_unique<coupling::FieldReader>(files_[file], v.var, v.level));
    readers_.back()->set_max_abs(v.max_abs);
  }
  open_file_ = file;
}

int64_t ReplayInput::read(int64_t i, int v, float* out) {
  const Step& s = steps_.at(selected_.at(i));
  open_file(s.file);
  const int64_t n = readers_.at(v)->read(s.t, out);
  out_of_range_.at(v) += n;
  return n;
}

std::string ReplayInput::valid_range_text(int v) const {
  if (open_file_ < 0) {
    coupling::FieldReader reader(files_.front(), variables_.at(v).var, variables_.at(v).level);
    reader.set_max_abs(variables_.at(v).max_abs);
    return reader.valid_range_text();
  }
  return readers_.at(v)->valid_range_text();
}

}  // namespace finecast::host::replay
