// SPDX-License-Identifier: BSD-3-Clause
// The command-line convention every finecast program follows (README, "Command lines"): one
// helper per shared flag, so the spelling, validation and help text live in one place.
#pragma once

#include <string>
#include <vector>

namespace CLI {
class App;
class Option;
class Validator;
}  // namespace CLI

namespace finecast::cli {

/// The version finecast was built as (the CMake project version).
std::string version();

/// The running program's own file (/proc/self/exe, links resolved): programs that start
/// themselves again under mpiexec, or find files installed beside them. Throws
/// std::filesystem::filesystem_error when it cannot be read.
std::string executable_path();

/// --version: prints "<program> <version>" and exits 0. CLI11 already gives every app --help.
void add_version(CLI::App& app, const std::string& program);

/// The program's run or config file, given either positionally or as --config FILE (-c): both
/// spellings are one option, so giving it twice is a usage error. `more_names` adds spellings
/// users already have (e.g. "--run"). When `required`, a missing file is a usage error that
/// names both spellings (checked in the app's final callback, which this takes); otherwise
/// `path` keeps its default.
CLI::Option* add_config(CLI::App& app, std::string& path, const std::string& help, bool required = true,
                        const std::string& more_names = "");

/// --set KEY=VALUE, repeatable. Each --set takes exactly one value, so a positional file may
/// follow it (`--set device=cpu run.yaml`). The values are checked by the program (a plugin
/// config or a run file knows its keys); here only the KEY=VALUE form.
CLI::Option* add_set(CLI::App& app, std::vector<std::string>& sets, const std::string& help);

/// --log-level debug|info|warning|error; anything else is a usage error listing the four.
CLI::Option* add_log_level(CLI::App& app, std::string& level);

/// Checks of a number above 0 (`positive`) or at least 0 (`non_negative`). CLI11's PositiveNumber
/// and NonNegativeNumber name their range with the largest double written out in full ("Value 0
/// not in range 0 to 17976931348623157081...", 309 digits); these say "must be greater than 0, got 0".
CLI::Validator positive();
CLI::Validator non_negative();

/// --time T: a 0-based step index or an ISO 8601 date ("2005-06-16", "2005-06-16T12:00:00"),
/// resolved against the input file by coupling::select_steps. The repeatable form and the
/// single one.
CLI::Option* add_time(CLI::App& app, std::vector<std::string>& times, const std::string& help);
CLI::Option* add_time(CLI::App& app, std::string& time, const std::string& help);

}  // namespace finecast::cli
