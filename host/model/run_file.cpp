// SPDX-License-Identifier: BSD-3-Clause
// The plugin list of run files, and the one way run files are read.
#include "host/model/run_file.hpp"

#include "coupling/io/cf_time.hpp"

namespace finecast::host::run_file {

namespace {

const schema::Table<comin::PluginSpec>& plugin_table() {
  using P = comin::PluginSpec;
  using namespace schema;
  static const Table<P> t{
      text("name", &P::name, "the plugin's name (ComIn's plugin_list(i)%name)"),
      text("library", &P::library, "the plugin's shared library (absolute, or found by dlopen)"),
      text("options", &P::options,
           "the plugin's options string (finecast: its config file and key.path=value overrides)"),
      text("comm", &P::comm, "name of the plugin's own MPI communicator (\"\" = none)"),
      text("primary_constructor", &P::primary_constructor, "the plugin's entry symbol (default comin_main)")};
  return t;
}

}  // namespace

yaml_schema::Entry plugins_entry(std::vector<comin::PluginSpec>& plugins, const yaml_schema::Origin& origin) {
  return yaml_schema::list_of<comin::PluginSpec>(
      "plugins", "the plugins in load order, as in ICON's &comin_nml", plugins,
      [](comin::PluginSpec& p) {
        auto entries = yaml_schema::bind(p, plugin_table());
        for (auto& e : entries) e.required = e.key == "library";
        return entries;
      },
      origin);
}

void read(const std::string& text, const std::string& path, const std::vector<yaml_schema::Entry>& entries,
          const yaml_schema::Origin& origin, const std::function<void(yaml_schema::ErrorList&)>& check) {
  const YAML::Node root = yaml_schema::parse(text, path);
  yaml_schema::ErrorList errors;
  yaml_schema::read(root, entries, origin, errors);
  if (check) check(errors);
  errors.throw_if_any();
}

void check_plugin_source(const std::vector<comin::PluginSpec>& plugins, const std::string& comin_namelist,
                         const std::string& path, yaml_schema::ErrorList& errors) {
  if (errors.failed("plugins") || errors.failed("comin_namelist")) return;
  if (!comin_namelist.empty() && !plugins.empty())
    errors.add("plugins", path + ": give either plugins or comin_namelist, not both");
}

bool is_datetime_or_empty(const std::string& text) {
  coupling::DateTime t;
  if (text.empty()) return true;
  if (!coupling::parse_datetime(text, t)) return false;
  if (const std::string e = coupling::date_error(t, "proleptic_gregorian"); !e.empty())
    throw schema::BadValue("must be a date of the proleptic_gregorian calendar, got \"" + text + "\": " + e);
  return true;
}

}  // namespace finecast::host::run_file
