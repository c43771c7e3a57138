// SPDX-License-Identifier: BSD-3-Clause
// Parsing and checking of finecast-host's YAML run file.
#include "coupling/host/run_config.hpp"

#include "common/error.hpp"
#include "coupling/host/run_file.hpp"
#include "coupling/io/cf_time.hpp"

namespace finecast::coupling::host {

using run_file::check_keys;
using run_file::read;
using run_file::where;

HostRunConfig parse_host_run_config(const std::string& text, const std::string& path) {
  const YAML::Node root = run_file::parse(text, path);
  HostRunConfig c;
  c.path = path;
  if (!root || root.IsNull()) return c;
  if (!root.IsMap()) throw ConfigError(path + ": the run file must be a YAML map of keys");
  check_keys(root,
             {"grid", "orography", "orography_variable", "start", "experiment_start", "experiment_stop", "dt", "steps", "output_every", "restart_every", "restart_run",
              "nproma", "nlev", "decomposition", "progress_every", "step_seconds", "plugins", "comin_namelist"},
             path, "");
  read(root, "grid", c.grid, path);
  read(root, "orography", c.orography, path);
  read(root, "orography_variable", c.orography_variable, path);
  read(root, "start", c.start, path);
  read(root, "experiment_start", c.experiment_start, path);
  read(root, "experiment_stop", c.experiment_stop, path);
  read(root, "dt", c.dt, path);
  read(root, "steps", c.steps, path);
  read(root, "output_every", c.output_every, path);
  read(root, "restart_every", c.restart_every, path);
  read(root, "restart_run", c.restart_run, path);
  read(root, "nproma", c.nproma, path);
  read(root, "nlev", c.nlev, path);
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
  for (auto [key, value] : {std::pair<const char*, std::string*>{"experiment_start", &c.experiment_start},
                            {"experiment_stop", &c.experiment_stop}}) {
    if (value->empty()) continue;
    DateTime e;
    if (!parse_datetime(*value, e))
      throw ConfigError(where(path, root[key], key) + ": not an ISO 8601 date-time: '" + *value + "'");
    *value = format_datetime(e);
  }
  if (c.experiment_start.empty()) c.experiment_start = c.start;
  if (c.experiment_start > c.start)
    throw ConfigError(where(path, root["experiment_start"], "experiment_start") + ": " + c.experiment_start +
                      " is after this run's start " + c.start);
  auto positive = [&](bool ok, const char* key, const std::string& value) {
    if (!ok) throw ConfigError(where(path, root[key], key) + ": must be > 0, got " + value);
  };
  positive(c.dt > 0, "dt", std::to_string(c.dt));
  positive(c.steps > 0, "steps", std::to_string(c.steps));
  positive(c.output_every > 0, "output_every", std::to_string(c.output_every));
  positive(c.nproma > 0, "nproma", std::to_string(c.nproma));
  positive(c.nlev > 0, "nlev", std::to_string(c.nlev));
  if (c.restart_every < 0)
    throw ConfigError(where(path, root["restart_every"], "restart_every") + ": must be >= 0");
  if (c.step_seconds < 0)
    throw ConfigError(where(path, root["step_seconds"], "step_seconds") + ": must be >= 0");
  if (c.progress_every < 0)
    throw ConfigError(where(path, root["progress_every"], "progress_every") + ": must be >= 0");

  c.plugins = run_file::read_plugins(root, path, c.comin_namelist);
  return c;
}

HostRunConfig load_host_run_config(const std::string& path) {
  return parse_host_run_config(run_file::load_text(path, "run file"), path);
}

}  // namespace finecast::coupling::host
