// SPDX-License-Identifier: BSD-3-Clause
// YAML helpers shared by the run files of finecast-host and finecast-replay.
#include "coupling/host/run_file.hpp"

#include <fstream>
#include <sstream>

namespace finecast::coupling::run_file {

std::string where(const std::string& path, const YAML::Node& node, const std::string& key) {
  return path + ":" + std::to_string(node.Mark().line + 1) + ": " + key;
}

void check_keys(const YAML::Node& map, const std::set<std::string>& allowed,
                const std::string& path, const std::string& prefix) {
  if (!map.IsMap())
    throw ConfigError(where(path, map, prefix.empty() ? "(top level)" : prefix) +
                      ": expected a map");
  for (const auto& kv : map) {
    const std::string key = kv.first.as<std::string>();
    if (allowed.count(key)) continue;
    std::string list;
    for (const auto& a : allowed) list += (list.empty() ? "" : ", ") + a;
    throw ConfigError(where(path, kv.first, prefix + key) + ": unknown key (allowed: " + list +
                      ")");
  }
}

YAML::Node parse(const std::string& text, const std::string& path) {
  try {
    return YAML::Load(text);
  } catch (const YAML::Exception& e) {
    throw ConfigError(path + ": not valid YAML: " + e.what());
  }
}

std::string load_text(const std::string& path, const std::string& what) {
  std::ifstream in(path);
  if (!in) throw ConfigError("cannot open " + what + " '" + path + "'");
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

std::vector<comin_host::PluginSpec> read_plugins(const YAML::Node& root, const std::string& path,
                                                 const std::string& comin_namelist) {
  std::vector<comin_host::PluginSpec> specs;
  const YAML::Node plugins = root["plugins"];
  if (!plugins || plugins.IsNull()) return specs;
  if (!plugins.IsSequence())
    throw ConfigError(where(path, plugins, "plugins") +
                      ": expected a list of {name, library, options, comm, primary_constructor}");
  if (!comin_namelist.empty() && plugins.size() > 0)
    throw ConfigError(where(path, plugins, "plugins") +
                      ": give either plugins or comin_namelist, not both");
  for (size_t i = 0; i < plugins.size(); ++i) {
    const YAML::Node p = plugins[i];
    const std::string prefix = "plugins[" + std::to_string(i) + "].";
    if (!p.IsMap())
      throw ConfigError(where(path, p, "plugins[" + std::to_string(i) + "]") + ": expected a map");
    check_keys(p, {"name", "library", "options", "comm", "primary_constructor"}, path, prefix);
    comin_host::PluginSpec spec;
    read(p, "name", spec.name, path, prefix);
    read(p, "library", spec.library, path, prefix);
    read(p, "options", spec.options, path, prefix);
    read(p, "comm", spec.comm, path, prefix);
    read(p, "primary_constructor", spec.primary_constructor, path, prefix);
    if (spec.library.empty()) throw ConfigError(where(path, p, prefix + "library") + ": missing");
    specs.push_back(spec);
  }
  return specs;
}

}  // namespace finecast::coupling::run_file
