// SPDX-License-Identifier: BSD-3-Clause
// One logging interface for every finecast program and the plugin: levels, a rank prefix under
// MPI, rank filtering for training progress, and an injectable sink (a capture buffer in tests).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "common/schema.hpp"

namespace finecast::log {

enum class Level { kDebug = 0, kInfo = 1, kWarning = 2, kError = 3 };

/// Receives each finished line (prefix included, no trailing newline).
using Sink = std::function<void(Level, const std::string&)>;

/// The level names "debug", "info", "warning", "error" (option tables, schema::name_of).
const schema::Names<Level>& names(Level);

/// Parses "debug" | "info" | "warning" | "error"; throws std::invalid_argument otherwise.
Level parse_level(const std::string& text);

/// Sets this process's rank (-1 = not under MPI: no rank in the prefix), the lowest level
/// printed, and whether progress() lines are printed on this rank.
void configure(int rank, Level min_level, bool progress_on_this_rank);

/// Replaces the sink; an empty function restores the default (info to stdout, warnings and
/// errors to stderr, flushed per line). Returns the previous sink.
Sink set_sink(Sink sink);

void debug(const std::string& msg);
void info(const std::string& msg);
void warning(const std::string& msg);
void error(const std::string& msg);
/// Training / replay progress: printed only on ranks configured for it (the trainer rank).
void progress(const std::string& msg);

/// "0-3,5,7-9": ranks, sorted, consecutive ones as ranges (reports that name many ranks).
std::string rank_ranges(const std::vector<int>& ranks);

/// A duration for progress lines: "4.2 s", "12 min 05 s", "3 h 20 min".
std::string duration(double seconds);

/// The prefix this process puts before every line, e.g. "[finecast r2] ".
std::string prefix();

}  // namespace finecast::log
