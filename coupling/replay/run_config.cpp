// SPDX-License-Identifier: BSD-3-Clause
// Parsing and checking of finecast-replay's YAML run file.
#include "coupling/replay/run_config.hpp"

#include <set>

#include "common/error.hpp"
#include "coupling/host/run_file.hpp"
#include "coupling/io/cf_time.hpp"

namespace finecast::coupling::replay {
namespace {

using run_file::check_keys;
using run_file::read;
using run_file::where;

/// A string or a list of strings.
std::vector<std::string> read_string_list(const YAML::Node& node, const std::string& path,
                                          const std::string& key) {
  std::vector<std::string> out;
  if (!node || node.IsNull()) return out;
  if (node.IsScalar()) return {node.as<std::string>()};
  if (!node.IsSequence())
    throw ConfigError(where(path, node, key) + ": expected a string or a list of strings");
  for (size_t i = 0; i < node.size(); ++i) {
    if (!node[i].IsScalar())
      throw ConfigError(where(path, node[i], key + "[" + std::to_string(i) + "]") +
                        ": expected a string");
    out.push_back(node[i].as<std::string>());
  }
  return out;
}

/// "tas" or {var: tas, name: ts, level: 0}.
ReplayVariable read_variable(const YAML::Node& node, const std::string& path,
                             const std::string& key, const std::set<std::string>& extra_keys = {}) {
  ReplayVariable v;
  if (node.IsScalar()) {
    v.var = node.as<std::string>();
  } else {
    std::set<std::string> allowed{"var", "name", "level"};
    allowed.insert(extra_keys.begin(), extra_keys.end());
    check_keys(node, allowed, path, key + ".");
    read(node, "var", v.var, path, key + ".");
    read(node, "name", v.name, path, key + ".");
    read(node, "level", v.level, path, key + ".");
  }
  if (v.var.empty())
    throw ConfigError(where(path, node, key + ".var") + ": missing (the NetCDF variable name)");
  if (v.name.empty()) v.name = v.var;
  if (v.level < 0) throw ConfigError(where(path, node, key + ".level") + ": must be >= 0");
  return v;
}

StepBound read_bound(const YAML::Node& time, const char* key, const std::string& path) {
  StepBound b;
  const YAML::Node node = time[key];
  if (!node || node.IsNull()) return b;
  const std::string text = node.IsScalar() ? node.as<std::string>() : std::string();
  b.given = true;
  long long index = 0;
  size_t used = 0;
  try {
    index = std::stoll(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (!text.empty() && used == text.size()) {
    if (index < 0)
      throw ConfigError(where(path, node, std::string("time.") + key) +
                        ": a step index must be >= 0");
    b.index = index;
    return b;
  }
  DateTime t;
  if (!parse_datetime(text, t))
    throw ConfigError(where(path, node, std::string("time.") + key) +
                      ": expected a 0-based step index or an ISO 8601 date, got '" +
                      YAML::Dump(node) + "'");
  b.is_date = true;
  b.date = format_datetime(t);
  return b;
}

}  // namespace

ReplayRunConfig parse_replay_run_config(const std::string& text, const std::string& path) {
  const YAML::Node root = run_file::parse(text, path);
  if (!root || root.IsNull())
    throw ConfigError(path +
                      ": the run file is empty; it needs at least input.files, "
                      "input.variables and plugins (see docs/offline.md)");
  if (!root.IsMap()) throw ConfigError(path + ": the run file must be a YAML map of keys");
  ReplayRunConfig c;
  c.path = path;
  check_keys(root,
             {"input", "grid", "time", "epochs", "nproma", "decomposition", "seed",
              "progress_every", "plugins", "comin_namelist"},
             path, "");

  const YAML::Node input = root["input"];
  if (!input)
    throw ConfigError(path + ": input: missing (input.files and input.variables are required)");
  check_keys(input, {"files", "variables", "static"}, path, "input.");
  c.files = read_string_list(input["files"], path, "input.files");
  if (c.files.empty())
    throw ConfigError(where(path, input, "input.files") +
                      ": missing (one or more NetCDF files or globs)");
  const YAML::Node vars = input["variables"];
  if (!vars || vars.IsNull() || (vars.IsSequence() && vars.size() == 0))
    throw ConfigError(where(path, input, "input.variables") +
                      ": missing (the NetCDF variables to replay)");
  if (vars.IsSequence()) {
    for (size_t i = 0; i < vars.size(); ++i)
      c.variables.push_back(
          read_variable(vars[i], path, "input.variables[" + std::to_string(i) + "]"));
  } else {
    c.variables.push_back(read_variable(vars, path, "input.variables"));
  }
  const YAML::Node statics = input["static"];
  if (statics && !statics.IsNull()) {
    if (!statics.IsSequence())
      throw ConfigError(where(path, statics, "input.static") +
                        ": expected a list of {file, var, name, level}");
    for (size_t i = 0; i < statics.size(); ++i) {
      const std::string key = "input.static[" + std::to_string(i) + "]";
      if (!statics[i].IsMap())
        throw ConfigError(where(path, statics[i], key) +
                          ": expected a map {file, var, name, level}");
      StaticVariable s;
      s.variable = read_variable(statics[i], path, key, {"file"});
      read(statics[i], "file", s.file, path, key + ".");
      if (s.file.empty()) throw ConfigError(where(path, statics[i], key + ".file") + ": missing");
      c.static_variables.push_back(s);
    }
  }
  std::set<std::string> names;
  for (const auto& v : c.variables)
    if (!names.insert(v.name).second)
      throw ConfigError(path + ": input.variables: host variable '" + v.name + "' given twice");
  for (const auto& s : c.static_variables)
    if (!names.insert(s.variable.name).second)
      throw ConfigError(path + ": input.static: host variable '" + s.variable.name +
                        "' given twice");

  if (const YAML::Node grid = root["grid"]; grid && !grid.IsNull()) {
    check_keys(grid, {"type", "file"}, path, "grid.");
    read(grid, "type", c.grid_type, path, "grid.");
    read(grid, "file", c.grid_file, path, "grid.");
  }
  if (c.grid_type != "latlon" && c.grid_type != "icon")
    throw ConfigError(where(path, root["grid"]["type"], "grid.type") +
                      ": must be latlon or icon, got '" + c.grid_type + "'");
  if (c.grid_type == "icon" && c.grid_file.empty())
    throw ConfigError(where(path, root["grid"], "grid.file") +
                      ": required for grid.type icon (the ICON grid file)");

  if (const YAML::Node time = root["time"]; time && !time.IsNull()) {
    check_keys(time, {"start", "stop", "stride"}, path, "time.");
    c.start = read_bound(time, "start", path);
    c.stop = read_bound(time, "stop", path);
    read(time, "stride", c.stride, path, "time.");
    if (c.stride < 1)
      throw ConfigError(where(path, time["stride"], "time.stride") + ": must be >= 1");
  }
  read(root, "epochs", c.epochs, path, "");
  read(root, "nproma", c.nproma, path, "");
  read(root, "decomposition", c.decomposition, path, "");
  read(root, "seed", c.seed, path, "");
  read(root, "progress_every", c.progress_every, path, "");
  read(root, "comin_namelist", c.comin_namelist, path, "");
  if (c.epochs < 1) throw ConfigError(where(path, root["epochs"], "epochs") + ": must be >= 1");
  if (c.nproma < 1) throw ConfigError(where(path, root["nproma"], "nproma") + ": must be >= 1");
  if (c.progress_every < 0)
    throw ConfigError(where(path, root["progress_every"], "progress_every") + ": must be >= 0");
  if (c.decomposition != "round_robin" && c.decomposition != "lat_bands" &&
      c.decomposition != "random")
    throw ConfigError(where(path, root["decomposition"], "decomposition") +
                      ": must be one of round_robin, lat_bands, random; got '" + c.decomposition +
                      "'");
  if (c.decomposition == "random" && c.grid_type == "icon")
    throw ConfigError(
        where(path, root["decomposition"], "decomposition") +
        ": random is for latlon grids; ICON grids use round_robin or lat_bands (as finecast-host)");

  c.plugins = run_file::read_plugins(root, path, c.comin_namelist);
  return c;
}

ReplayRunConfig load_replay_run_config(const std::string& path) {
  return parse_replay_run_config(run_file::load_text(path, "replay run file"), path);
}

}  // namespace finecast::coupling::replay
