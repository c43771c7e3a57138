// SPDX-License-Identifier: BSD-3-Clause
// Parsing and checking of finecast-host's YAML run file.
#include "coupling/host/run_config.hpp"

#include <yaml-cpp/yaml.h>

#include <fstream>
#include <set>
#include <sstream>
#include <type_traits>

#include "coupling/error.hpp"
#include "coupling/io/cf_time.hpp"

namespace finecast::coupling::host {
namespace {

std::string where(const std::string& path, const YAML::Node& node, const std::string& key) {
  return path + ":" + std::to_string(node.Mark().line + 1) + ": " + key;
}

void check_keys(const YAML::Node& map, const std::set<std::string>& allowed,
                const std::string& path, const std::string& prefix) {
  for (const auto& kv : map) {
    const std::string key = kv.first.as<std::string>();
    if (allowed.count(key)) continue;
    std::string list;
    for (const auto& a : allowed) list += (list.empty() ? "" : ", ") + a;
    throw ConfigError(where(path, kv.first, prefix + key) + ": unknown key (allowed: " + list +
                      ")");
  }
}

template <typename T>
void read(const YAML::Node& map, const char* key, T& out, const std::string& path,
          const std::string& prefix = "") {
  const YAML::Node node = map[key];
  if (!node) return;
  try {
    out = node.as<T>();
  } catch (const YAML::Exception&) {
    throw ConfigError(where(path, node, prefix + key) + ": expected " +
                      (std::is_same<T, std::string>::value ? "a string"
                       : std::is_integral<T>::value        ? "an integer"
                                                           : "a number") +
                      ", got '" + YAML::Dump(node) + "'");
  }
}

}  // namespace

HostRunConfig parse_host_run_config(const std::string& text, const std::string& path) {
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    throw ConfigError(path + ": not valid YAML: " + e.what());
  }
  HostRunConfig c;
  c.path = path;
  if (!root || root.IsNull()) return c;
  if (!root.IsMap()) throw ConfigError(path + ": the run file must be a YAML map of keys");
  check_keys(root,
             {"grid", "orography", "orography_variable", "start", "dt", "steps", "output_every",
              "nproma", "decomposition", "progress_every", "step_seconds", "plugins", "comin_namelist"},
             path, "");
  read(root, "grid", c.grid, path);
  read(root, "orography", c.orography, path);
  read(root, "orography_variable", c.orography_variable, path);
  read(root, "start", c.start, path);
  read(root, "dt", c.dt, path);
  read(root, "steps", c.steps, path);
  read(root, "output_every", c.output_every, path);
  read(root, "nproma", c.nproma, path);
  read(root, "progress_every", c.progress_every, path);
  read(root, "step_seconds", c.step_seconds, path);
  read(root, "comin_namelist", c.comin_namelist, path);
  std::string decomposition = "lat_bands";
  read(root, "decomposition", decomposition, path);
  try {
    c.decomposition = parse_decomposition(decomposition);
  } catch (const ConfigError& e) {
    throw ConfigError(where(path, root["decomposition"], "decomposition") + ": " + e.what());
  }
  DateTime t;
  if (!parse_datetime(c.start, t))
    throw ConfigError(where(path, root["start"], "start") + ": not an ISO 8601 date-time: '" +
                      c.start + "'");
  c.start = format_datetime(t);
  auto positive = [&](bool ok, const char* key, const std::string& value) {
    if (!ok) throw ConfigError(where(path, root[key], key) + ": must be > 0, got " + value);
  };
  positive(c.dt > 0, "dt", std::to_string(c.dt));
  positive(c.steps > 0, "steps", std::to_string(c.steps));
  positive(c.output_every > 0, "output_every", std::to_string(c.output_every));
  positive(c.nproma > 0, "nproma", std::to_string(c.nproma));
  if (c.step_seconds < 0)
    throw ConfigError(where(path, root["step_seconds"], "step_seconds") + ": must be >= 0");
  if (c.progress_every < 0)
    throw ConfigError(where(path, root["progress_every"], "progress_every") + ": must be >= 0");

  const YAML::Node plugins = root["plugins"];
  if (plugins && !plugins.IsNull()) {
    if (!plugins.IsSequence())
      throw ConfigError(where(path, plugins, "plugins") +
                        ": expected a list of {name, library, options, comm}");
    if (!c.comin_namelist.empty() && plugins.size() > 0)
      throw ConfigError(where(path, plugins, "plugins") +
                        ": give either plugins or comin_namelist, not both");
    for (size_t i = 0; i < plugins.size(); ++i) {
      const YAML::Node p = plugins[i];
      const std::string prefix = "plugins[" + std::to_string(i) + "].";
      if (!p.IsMap())
        throw ConfigError(where(path, p, "plugins[" + std::to_string(i) + "]") +
                          ": expected a map");
      check_keys(p, {"name", "library", "options", "comm"}, path, prefix);
      comin_host::PluginSpec spec;
      read(p, "name", spec.name, path, prefix);
      read(p, "library", spec.library, path, prefix);
      read(p, "options", spec.options, path, prefix);
      read(p, "comm", spec.comm, path, prefix);
      if (spec.library.empty()) throw ConfigError(where(path, p, prefix + "library") + ": missing");
      if (spec.name.empty()) throw ConfigError(where(path, p, prefix + "name") + ": missing");
      c.plugins.push_back(spec);
    }
  }
  return c;
}

HostRunConfig load_host_run_config(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw ConfigError("cannot open run file '" + path + "'");
  std::ostringstream text;
  text << in.rdbuf();
  return parse_host_run_config(text.str(), path);
}

}  // namespace finecast::coupling::host
