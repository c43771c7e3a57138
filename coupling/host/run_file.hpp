// SPDX-License-Identifier: BSD-3-Clause
// YAML helpers shared by the run files of finecast-host and finecast-replay.
#pragma once

#include <yaml-cpp/yaml.h>

#include <set>
#include <string>
#include <type_traits>
#include <vector>

#include "coupling/comin/host.hpp"
#include "common/error.hpp"

namespace finecast::coupling::run_file {

/// "path:line: key", the start of every message about one key of a run file.
std::string where(const std::string& path, const YAML::Node& node, const std::string& key);

/// Throws ConfigError when `map` is not a map or has a key outside `allowed` (listing them);
/// `prefix` ("plugins[0].") is put before the key names in messages.
void check_keys(const YAML::Node& map, const std::set<std::string>& allowed,
                const std::string& path, const std::string& prefix);

/// Reads map[key] into `out`; an absent or null key leaves `out` at its default, a value of
/// the wrong type throws ConfigError naming the key and the expected type.
template <typename T>
void read(const YAML::Node& map, const char* key, T& out, const std::string& path,
          const std::string& prefix = "") {
  const YAML::Node node = map[key];
  if (!node || node.IsNull()) return;
  try {
    if (!node.IsScalar()) throw YAML::Exception(node.Mark(), "not a scalar");
    out = node.as<T>();
  } catch (const YAML::Exception&) {
    throw ConfigError(where(path, node, prefix + key) + ": expected " +
                      (std::is_same<T, std::string>::value ? "a string"
                       : std::is_integral<T>::value        ? "an integer"
                                                           : "a number") +
                      ", got '" + YAML::Dump(node) + "'");
  }
}

/// Parses run file text; invalid YAML throws ConfigError naming `path`.
YAML::Node parse(const std::string& text, const std::string& path);

/// The text of a run file; `what` names the file in the error ("cannot open <what> 'path'").
std::string load_text(const std::string& path, const std::string& what);

/// The `plugins:` list of {name, library, options, comm} under `root`; a non-empty list next
/// to a `comin_namelist` (given as read from the same file) is an error.
std::vector<comin_host::PluginSpec> read_plugins(const YAML::Node& root, const std::string& path,
                                                 const std::string& comin_namelist);

}  // namespace finecast::coupling::run_file
