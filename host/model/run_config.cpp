// SPDX-License-Identifier: BSD-3-Clause
// finecast-host's run file: one option table, read by the YAML walker the plugin's config uses.
#include "host/model/run_config.hpp"

#include <limits>

#include "common/error.hpp"
#include "host/model/run_file.hpp"
#include "coupling/io/cf_time.hpp"

namespace finecast::host {

namespace {

const schema::Table<HostRunConfig>& host_run_table() {
  using C = HostRunConfig;
  using namespace schema;
  namespace lim = run_file::limits;
  const std::string date_rule = "an ISO 8601 date-time (e.g. 1979-01-01T00:00:00)";
  static const Table<C> t{
      text("grid", &C::grid, "ICON grid file"),
      text("orography", &C::orography, "relief file averaged onto the cells (topography_c, fr_land)"),
      text("orography_variable", &C::orography_variable, "its variable"),
      text("start", &C::start, "model time of this run's first step", date_rule,
           [](const std::string& s) { return !s.empty() && run_file::is_datetime_or_empty(s); }),
      text("experiment_start", &C::experiment_start, "the experiment's start when this run is one chunk (\"\" = start)",
           "\"\" or " + date_rule, run_file::is_datetime_or_empty),
      text("experiment_stop", &C::experiment_stop, "the experiment's end (\"\" = the end of this run)",
           "\"\" or " + date_rule, run_file::is_datetime_or_empty),
      real("dt", &C::dt, 0.0, lim::kDt, "seconds per step", true),
      integer("steps", &C::steps, 1, lim::kSteps, "steps of this run"),
      integer("output_every", &C::output_every, 1, lim::kSteps, "steps between EP_ATM_WRITE_OUTPUT_BEFORE/AFTER"),
      integer("restart_every", &C::restart_every, 0, lim::kSteps,
              "steps between the host's restarts (0 = at the end only)"),
      boolean("restart_run", &C::restart_run, "this run continues an earlier one (ComIn's lrestartrun)"),
      integer("nproma", &C::nproma, 1, lim::kNproma, "block length of the host arrays"),
      integer("nlev", &C::nlev, 1, lim::kLevels, "full levels of the 3-D fields (temp, pres)"),
      choice("decomposition", &C::decomposition, "how the cells are spread over the ranks"),
      integer("progress_every", &C::progress_every, 0, lim::kSteps,
              "steps between progress lines; 0 = about ten per run"),
      real("step_seconds", &C::step_seconds, 0.0, lim::kStepSeconds,
           "minimum wall time of one step (0 = as fast as possible)"),
      real("step_work_seconds", &C::step_work_seconds, 0.0, lim::kStepSeconds,
           "CPU time each rank's step computes besides the toy model (a busy loop; 0 = none)"),
      boolean("device_fields", &C::device_fields,
              "keep a device copy of every field, as ICON built for GPUs does (finecast-host built with CUDA)"),
      text("comin_namelist", &C::comin_namelist, "ICON &comin_nml file; replaces `plugins` when set")};
  return t;
}

const schema::Table<NestSpec>& nest_table() {
  static const schema::Table<NestSpec> t{
      schema::text("grid", &NestSpec::grid, "the nest's ICON grid file: a limited area inside domain 1's grid")};
  return t;
}

}  // namespace

HostRunConfig parse_host_run_config(const std::string& text, const std::string& path) {
  HostRunConfig c;
  c.path = path;
  const yaml_schema::Origin origin{path, {}};
  auto entries = yaml_schema::bind(c, host_run_table());
  entries.push_back(run_file::plugins_entry(c.plugins, origin));
  entries.push_back(yaml_schema::list_of<NestSpec>(
      "nests", "child domains of domain 1 (ICON's nests: domains 2, 3, ...), each {grid: FILE}", c.nests,
      [](NestSpec& n) {
        auto e = yaml_schema::bind(n, nest_table());
        for (auto& entry : e) entry.required = true;
        return e;
      },
      origin));
  run_file::read(text, path, entries, origin, [&](yaml_schema::ErrorList& errors) {
    // Dates in one form; the experiment starts with this run unless it is a later chunk.
    for (std::string* d : {&c.start, &c.experiment_start, &c.experiment_stop}) {
      coupling::DateTime t;
      if (coupling::parse_datetime(*d, t)) *d = coupling::format_datetime(t);
    }
    if (c.experiment_start.empty()) c.experiment_start = c.start;
    if (!errors.failed("experiment_start") && !errors.failed("start") && c.experiment_start > c.start)
      errors.add("experiment_start",
                 path + ": experiment_start " + c.experiment_start + " is after this run's start " + c.start);
    run_file::check_plugin_source(c.plugins, c.comin_namelist, path, errors);
    if (c.device_fields && !c.nests.empty())
      errors.add("nests", path + ": nests with device_fields: true are not supported (device copies of domain 1 only)");
  });
  return c;
}

HostRunConfig load_host_run_config(const std::string& path) {
  return parse_host_run_config(yaml_schema::load_text(path, "run file"), path);
}

}  // namespace finecast::host
