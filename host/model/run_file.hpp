// SPDX-License-Identifier: BSD-3-Clause
// What the run files of finecast-host and finecast-replay share: the plugin list, read through
// the same option tables and YAML walker as the plugin's config (common/yaml_schema.hpp).
#pragma once

#include <string>
#include <vector>

#include "common/error.hpp"
#include "common/yaml_schema.hpp"
#include "host/comin/host.hpp"

namespace finecast::coupling::run_file {

/// `plugins`: a list of {name, library, options, comm, primary_constructor} read into `plugins`
/// (library required), as ICON's &comin_nml lists them.
yaml_schema::Entry plugins_entry(std::vector<comin_host::PluginSpec>& plugins, const yaml_schema::Origin& origin);

/// Reads a whole run file: parses `text`, walks it with `entries` (unknown keys, types, ranges,
/// missing keys: every problem at once), then runs `check` (rules on several keys; it records
/// into the error list). Throws one ConfigError listing everything found.
void read(const std::string& text, const std::string& path, const std::vector<yaml_schema::Entry>& entries,
          const yaml_schema::Origin& origin, const std::function<void(yaml_schema::ErrorList&)>& check);

/// `plugins` and `comin_namelist` exclude each other.
void check_plugin_source(const std::vector<comin_host::PluginSpec>& plugins, const std::string& comin_namelist,
                         const std::string& path, yaml_schema::ErrorList& errors);

/// A date-time option's rule: "" or an ISO 8601 date-time; normalised by the caller.
bool is_datetime_or_empty(const std::string& text);

}  // namespace finecast::coupling::run_file
