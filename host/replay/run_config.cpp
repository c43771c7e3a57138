// SPDX-License-Identifier: BSD-3-Clause
// finecast-replay's run file: option tables and a few list-valued keys, read by the YAML walker
// the plugin's config uses.
#include "host/replay/run_config.hpp"

#include <limits>
#include <set>

#include "common/error.hpp"
#include "host/model/run_file.hpp"
#include "coupling/io/cf_time.hpp"
#include "coupling/io/plausibility.hpp"

namespace finecast::host::replay {
namespace {

using schema::BadValue;
using yaml_schema::describe;
using yaml_schema::Entry;

const schema::Table<ReplayVariable>& variable_table() {
  using V = ReplayVariable;
  using namespace schema;
  static const Table<V> t{
      text("var", &V::var, "the NetCDF variable"),
      text("name", &V::name, "the host variable it becomes (default: var)"),
      integer("level", &V::level, 0, run_file::limits::kLevels - 1, "0-based index of its level dimension"),
      real("max_abs", &V::max_abs, 0, std::numeric_limits<double>::infinity(),
           "values with |value| above this are missing, as outside the valid range (0 = no "
           "bound beyond the file's valid range and _FillValue)"),
      text("plausible", &V::plausible,
           "LO,HI: the plausible range of its values, replacing finecast's table for its units "
           "and standard_name; none: no plausibility check (\"\" = the table)",
           "\"\", none or LO,HI (numbers, LO <= HI)", [](const std::string& v) {
             try {
               if (!v.empty()) coupling::parse_plausible_range(v, "plausible");
             } catch (const ConfigError&) {
               return false;
             }
             return true;
           })};
  return t;
}

/// "tas" or {var: tas, name: ts, level: 0}.
void read_variable(const YAML::Node& node, ReplayVariable& v, const yaml_schema::Origin& origin, const std::string& key,
                   const std::vector<Entry>& extra = {}) {
  if (node.IsScalar()) {
    v.var = node.Scalar();
  } else if (node.IsMap()) {
    auto entries = yaml_schema::bind(v, variable_table());
    entries.insert(entries.end(), extra.begin(), extra.end());
    for (auto& e : entries) e.required = e.key == "var" || e.key == "file";
    yaml_schema::ErrorList errors;
    yaml_schema::read(node, entries, origin, errors, nullptr, key + ".");
    errors.throw_if_any();
  } else {
    throw BadValue("entries must be a variable name or {var, name, level}, got " + describe(node));
  }
  if (v.name.empty()) v.name = v.var;
}

Entry files_entry(ReplayRunConfig& c) {
  Entry e;
  e.key = "input.files";
  e.comment = "one or more NetCDF files or glob patterns, their steps concatenated in the order given";
  e.required = true;
  e.read = [&c](const YAML::Node& n) {
    c.files.clear();
    if (n.IsScalar()) c.files.push_back(n.Scalar());
    if (n.IsSequence())
      for (const auto& item : n) {
        if (!item.IsScalar())
          throw BadValue("must be a file name or a list of them, got a list holding " + describe(item));
        c.files.push_back(item.Scalar());
      }
    if (c.files.empty() || c.files.front().empty())
      throw BadValue("must be a file name or a list of them, got " + describe(n));
  };
  e.write = [&c] { return YAML::Node(c.files); };
  return e;
}

Entry variables_entry(ReplayRunConfig& c, const yaml_schema::Origin& origin) {
  Entry e;
  e.key = "input.variables";
  e.comment = "the NetCDF variables to replay, each a name or {var: tas, name: ts, level: 0}";
  e.required = true;
  e.read = [&c, &origin](const YAML::Node& n) {
    c.variables.clear();
    const bool list = n.IsSequence();
    const std::size_t count = list ? n.size() : 1;
    for (std::size_t i = 0; i < count; ++i) {
      c.variables.emplace_back();
      read_variable(list ? n[i] : n, c.variables.back(), origin,
                    "input.variables" + (list ? "[" + std::to_string(i) + "]" : std::string()));
    }
    if (c.variables.empty()) throw BadValue("must name at least one variable, got an empty list");
  };
  e.write = [&c] {
    YAML::Node list(YAML::NodeType::Sequence);
    for (auto& v : c.variables) list.push_back(yaml_schema::write(yaml_schema::bind(v, variable_table())));
    return list;
  };
  return e;
}

Entry statics_entry(ReplayRunConfig& c, const yaml_schema::Origin& origin) {
  Entry e;
  e.key = "input.static";
  e.comment = "fields read once and held constant: [{file: F, var: V, name: N, level: L}]";
  e.read = [&c, &origin](const YAML::Node& n) {
    if (!n.IsSequence()) throw BadValue("must be a list of {file, var, name, level}, got " + describe(n));
    c.static_variables.clear();
    for (std::size_t i = 0; i < n.size(); ++i) {
      const std::string key = "input.static[" + std::to_string(i) + "]";
      if (!n[i].IsMap()) throw BadValue("entries must be {file, var, name, level}, got " + describe(n[i]));
      c.static_variables.emplace_back();
      StaticVariable& s = c.static_variables.back();
      read_variable(n[i], s.variable, origin, key,
                    yaml_schema::bind(s, schema::Table<StaticVariable>{
                                             schema::text("file", &StaticVariable::file, "the file it is read from")}));
    }
  };
  e.write = [&c] {
    YAML::Node list(YAML::NodeType::Sequence);
    for (auto& s : c.static_variables) {
      YAML::Node m = yaml_schema::write(yaml_schema::bind(s.variable, variable_table()));
      m["file"] = s.file;
      list.push_back(m);
    }
    return list;
  };
  return e;
}

/// time.start / time.stop: a 0-based step index or an ISO 8601 date.
Entry bound_entry(const std::string& key, StepBound& b, const std::string& comment) {
  Entry e;
  e.key = key;
  e.comment = comment;
  e.read = [&b](const YAML::Node& n) {
    const std::string text = n.IsScalar() ? n.Scalar() : std::string();
    long long index = 0;
    b = StepBound{};
    b.given = true;
    if (schema::parse_integer(text, index)) {
      if (index < 0) throw BadValue("must be a step index >= 0 or an ISO 8601 date, got " + text);
      b.index = index;
      return;
    }
    coupling::DateTime t;
    if (!coupling::parse_datetime(text, t))
      throw BadValue("must be a 0-based step index or an ISO 8601 date, got " + describe(n));
    b.is_date = true;
    b.date = coupling::format_datetime(t);
  };
  e.write = [&b] { return !b.given ? YAML::Node("") : b.is_date ? YAML::Node(b.date) : YAML::Node(b.index); };
  return e;
}

const schema::Table<ReplayRunConfig>& replay_table() {
  using C = ReplayRunConfig;
  using namespace schema;
  namespace lim = run_file::limits;
  static const Table<C> t{
      text("grid.type", &C::grid_type, "latlon (CF lat-lon or rotated pole, from the files) | icon",
           "one of latlon, icon", [](const std::string& v) { return v == "latlon" || v == "icon"; }),
      text("grid.file", &C::grid_file,
           "icon: the ICON grid file (required); latlon: coordinates (\"\" = the first file)"),
      integer("time.stride", &C::stride, 1, lim::kSteps, "play every stride-th step"),
      integer("epochs", &C::epochs, 1, lim::kEpochs, "passes over the selected steps"),
      integer("nproma", &C::nproma, 1, lim::kNproma, "block length of the host arrays"),
      text("decomposition", &C::decomposition, "how the cells are spread over the ranks",
           "one of round_robin, lat_bands, random",
           [](const std::string& v) { return v == "round_robin" || v == "lat_bands" || v == "random"; }),
      unsigned64("seed", &C::seed, "seed of the random decomposition"),
      integer("progress_every", &C::progress_every, 0, lim::kSteps,
              "steps between plain progress lines (0: about 20 per run)"),
      text("comin_namelist", &C::comin_namelist, "ICON &comin_nml file; replaces `plugins` when set")};
  return t;
}

}  // namespace

ReplayRunConfig parse_replay_run_config(const std::string& text, const std::string& path) {
  ReplayRunConfig c;
  c.path = path;
  const yaml_schema::Origin origin{path, {}};
  std::vector<Entry> entries{files_entry(c), variables_entry(c, origin), statics_entry(c, origin),
                             bound_entry("time.start", c.start, "first step: index or ISO 8601 date"),
                             bound_entry("time.stop", c.stop, "last step (inclusive): index or date")};
  for (auto& e : yaml_schema::bind(c, replay_table())) entries.push_back(std::move(e));
  entries.push_back(run_file::plugins_entry(c.plugins, origin));
  run_file::read(text, path, entries, origin, [&](yaml_schema::ErrorList& errors) {
    std::set<std::string> names;
    if (!errors.failed("input"))
      for (const auto& v : c.variables)
        if (!names.insert(v.name).second)
          errors.add("input.variables", path + ": input.variables: host variable '" + v.name + "' given twice");
    for (const auto& s : c.static_variables)
      if (!names.insert(s.variable.name).second)
        errors.add("input.static", path + ": input.static: host variable '" + s.variable.name + "' given twice");
    if (!errors.failed("grid") && c.grid_type == "icon" && c.grid_file.empty())
      errors.add("grid.file", path + ": grid.file is required for grid.type icon (the ICON grid file)");
    if (!errors.failed("decomposition") && !errors.failed("grid") && c.decomposition == "random" &&
        c.grid_type == "icon")
      errors.add("decomposition", path +
                                      ": decomposition random is for latlon grids; ICON grids use round_robin or "
                                      "lat_bands (as finecast-host)");
    run_file::check_plugin_source(c.plugins, c.comin_namelist, path, errors);
  });
  return c;
}

ReplayRunConfig load_replay_run_config(const std::string& path) {
  return parse_replay_run_config(yaml_schema::load_text(path, "replay run file"), path);
}

}  // namespace finecast::host::replay
