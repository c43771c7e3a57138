// SPDX-License-Identifier: BSD-3-Clause
// What the run files of finecast-host and finecast-replay share: the plugin list, read through
// the same option tables and YAML walker as the plugin's config (common/yaml_schema.hpp).
#pragma once

#include <string>
#include <vector>

#include "common/error.hpp"
#include "common/yaml_schema.hpp"
#include "host/comin/host.hpp"

namespace finecast::host::run_file {

/// `plugins`: a list of {name, library, options, comm, primary_constructor} read into `plugins`
/// (library required), as ICON's &comin_nml lists them.
yaml_schema::Entry plugins_entry(std::vector<comin::PluginSpec>& plugins, const yaml_schema::Origin& origin);

/// Reads a whole run file: parses `text`, walks it with `entries` (unknown keys, types, ranges,
/// missing keys: every problem at once), then runs `check` (rules on several keys; it records
/// into the error list). Throws one ConfigError listing everything found.
void read(const std::string& text, const std::string& path, const std::vector<yaml_schema::Entry>& entries,
          const yaml_schema::Origin& origin, const std::function<void(yaml_schema::ErrorList&)>& check);

/// `plugins` and `comin_namelist` exclude each other.
void check_plugin_source(const std::vector<comin::PluginSpec>& plugins, const std::string& comin_namelist,
                         const std::string& path, yaml_schema::ErrorList& errors);

/// A date-time option's rule: "" or an ISO 8601 date-time that exists in the proleptic
/// Gregorian calendar (finecast-host's; 1979-02-30 throws schema::BadValue saying why);
/// normalised by the caller.
bool is_datetime_or_empty(const std::string& text);

/// Upper bounds of the size keys of both run files: each is far above what a run of these
/// programs uses and far below what exhausts a node's memory or the int range, so that a typo
/// (`nproma: 100000000` once grew a rank to 12 GB until the kernel killed it) fails at
/// validation, naming the key, instead of at run time.
namespace limits {
/// Block length: ICON's GPU runs use one block per rank, tens of thousands of cells.
constexpr long long kNproma = 1'000'000;
/// Full levels of a 3-D field (ICON: up to about 200).
constexpr long long kLevels = 1'000;
/// Time steps of one run, and intervals counted in steps.
constexpr long long kSteps = 100'000'000;
/// Passes over the input of finecast-replay.
constexpr long long kEpochs = 1'000'000;
/// Seconds per model step (a day).
constexpr double kDt = 86'400.0;
/// Minimum wall time of a step (an hour).
constexpr double kStepSeconds = 3'600.0;
}  // namespace limits

}  // namespace finecast::host::run_file
