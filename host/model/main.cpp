// SPDX-License-Identifier: BSD-3-Clause
// finecast-host: an ICON-like MPI model on an ICON grid that drives ComIn plugins through
// finecast's host library, with entry points in ICON's order (host/time_loop.hpp, the time loop
// finecast-replay runs too).
#include <mpi.h>
#include <omp.h>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <memory>
#include <numeric>
#include <cstdio>
#include <string>
#include <vector>

#include "host/comin/host.hpp"
#include "host/model/device_fields.hpp"
#include "coupling/grid/icon_geometry.hpp"
#include "coupling/grid/icon_grid.hpp"
#include "host/model/host_model.hpp"
#include "common/thread_clock.hpp"
#include "coupling/program/mpi_program.hpp"
#include "host/model/nests.hpp"
#include "host/model/orography.hpp"
#include "host/model/run_config.hpp"
#include "host/model/run_file.hpp"
#include "host/model/surface_file.hpp"
#include "host/time_loop.hpp"
#include "coupling/io/cf_time.hpp"
#include "common/atomic_file.hpp"
#include "common/cli.hpp"
#include "common/log.hpp"

namespace fc = finecast::coupling;
namespace ch = finecast::host::comin;
namespace flog = finecast::log;
namespace fh = finecast::host;
using fc::now;

namespace {

struct Options {
  std::string run_file;
  int steps = 0;
  double step_seconds = -1;  ///< < 0: the run file's value
  double step_work = -1;     ///< < 0: the run file's step_work_seconds
  bool no_plugins = false;
  bool device_fields = false;  ///< --device-fields: the run file's device_fields: true
  std::string log_level = "info";
  std::vector<std::string> plugin_overrides;  ///< "key.path=value", appended to every plugin's options
  /// --write-orography: write the surface fields to this file and stop ("" = run the model)
  std::string write_orography;
  std::string geometry;    ///< --geometry: the ICON grid's coordinates ("" = file), forwarded as grid.geometry
  std::string step_times;  ///< --step-times: per-step CSV of the plugins' time ("" = none)
};

fc::IconGeometry geometry_of(const Options& opt) { return fc::parse_icon_geometry(opt.geometry, "--geometry"); }

/// --write-orography: the surface fields the run would hand its plugins, for every cell, into
/// one file (rank 0; each cell's value depends on that cell alone, as in the run).
int write_orography(const Options& opt, const fh::HostRunConfig& cfg, int rank) {
  if (rank != 0) return 0;
  const double t0 = now();
  const fc::IconGrid grid = fc::read_icon_grid(cfg.grid, geometry_of(opt));
  std::vector<int> cells(static_cast<size_t>(grid.n_cells));
  std::iota(cells.begin(), cells.end(), 0);
  const fh::CellOrography surface = fh::average_orography(cfg.orography, cfg.orography_variable, grid, cells);
  fh::write_surface_file(opt.write_orography, grid, surface, cfg.orography + " (" + cfg.orography_variable + ")");
  flog::info("wrote topography_c and fr_land of the " + std::to_string(grid.n_cells) + " cells of " + cfg.grid +
             " (relief " + cfg.orography + ": " + cfg.orography_variable + ") to " + opt.write_orography + " in " +
             fmt::format("{:.2f}", now() - t0) + " s");
  return 0;
}

/// The model times of this run: the fields are functions of the time since the experiment's
/// start, so that a run in chunks (restarts) computes what one long run computes; this run
/// covers `steps` steps from its own start.
struct RunClock {
  RunClock(const fh::HostRunConfig& cfg, const std::string& run_file)
      : clock("seconds since " + cfg.start, "proleptic_gregorian", run_file + ": start"),
        stop_seconds(cfg.dt * cfg.steps) {
    const fc::CfTime experiment("seconds since " + cfg.experiment_start, "proleptic_gregorian",
                                run_file + ": experiment_start");
    fc::DateTime start;
    fc::parse_datetime(cfg.start, start);
    fc::parse_datetime(cfg.experiment_start, experiment_start);
    run_offset = experiment.from_datetime(start);
  }
  std::string datetime_at(double seconds) const { return fc::format_datetime(clock.to_datetime(seconds)); }
  double start_utc_hours() const {
    return experiment_start.hour + experiment_start.minute / 60.0 + experiment_start.second / 3600.0;
  }

  fc::CfTime clock;
  fc::DateTime experiment_start;
  double run_offset = 0;  ///< seconds from the experiment's start to this run's start
  double stop_seconds;    ///< the run's length
};

/// The plugins of the run file (or of its ComIn namelist), with the command line's overrides:
/// finecast reads "CONFIG.yaml key.path=value ..." from its options string, so overrides given
/// on the command line travel the same way they would in an ICON namelist.
std::vector<ch::PluginSpec> plugins_to_load(const Options& opt, const fh::HostRunConfig& cfg) {
  std::vector<ch::PluginSpec> plugins = cfg.plugins;
  if (!cfg.comin_namelist.empty()) plugins = ch::read_comin_namelist(cfg.comin_namelist);
  if (opt.no_plugins) plugins.clear();
  for (auto& p : plugins) {
    for (const auto& o : opt.plugin_overrides) p.options += " " + fc::quote_option(o);
    // The plugins' patches and position features on the cells the host computes its fields on.
    if (!opt.geometry.empty()) p.options += " " + fc::quote_option("grid.geometry=" + opt.geometry);
  }
  return plugins;
}

/// ICON's names, units and CF standard names for the fields finecast-host computes; the static
/// surface fields are filled once.
fh::FieldPointers add_variables(ch::Host& host, const fh::HostModel& model, int nlev, int domain = 1) {
  double* ts = host.add_variable("ts", domain, {0, "K", "surface_temperature", "surface temperature", true});
  double* ps = host.add_variable("ps", domain, {0, "Pa", "surface_air_pressure", "surface pressure", true});
  double* temp = host.add_variable("temp", domain, {nlev, "K", "air_temperature", "temperature", true});
  double* pres = host.add_variable("pres", domain, {nlev, "Pa", "air_pressure", "pressure", false});
  double* topography =
      host.add_variable("topography_c", domain,
                        {0, "m", "surface_altitude", "geometric height of the earth's surface above sea level", false});
  double* fr_land = host.add_variable("fr_land", domain, {0, "1", "land_area_fraction", "fraction land", false});
  model.write_topography(topography);
  model.write_land_fraction(fr_land);
  return {ts, ps, temp, pres};
}

/// The plugins' callbacks, timed. Like ICON, the model computes its fields with OpenMP threads;
/// a plugin that changes this rank's thread count (LibTorch's set_num_threads does) would slow
/// down or oversubscribe the model's own loops: it is told so, and the count restored.
class PluginCalls {
 public:
  explicit PluginCalls(ch::Host& host) : host_(host), omp_threads_(omp_get_max_threads()) {}
  /// An entry point, on the domain the time loop (fh::run_time_loop) gives, as ICON does.
  void at(t_comin_entry_point id, int domain, const std::string& datetime) {
    const double before = seconds_;
    timed(ch::Host::entry_point_name(id), [&] { host_.run_entry_point(id, domain, datetime); });
    loop_seconds_ += seconds_ - before;
  }
  void timed(const std::string& where, const std::function<void()>& call) {
    const double t0 = now();
    call();
    seconds_ += now() - t0;
    if (omp_get_max_threads() == omp_threads_) return;
    flog::warning("the plugins changed this rank's OpenMP thread count from " + std::to_string(omp_threads_) + " to " +
                  std::to_string(omp_get_max_threads()) + " in " + where + "; restored");
    omp_set_num_threads(omp_threads_);
  }
  double seconds() const { return seconds_; }
  /// The time-loop entry points alone (ComIn's device synchronisation included).
  double loop_seconds() const { return loop_seconds_; }
  /// Closes a time step: its entry points' seconds and its whole wall time go to step_times().
  void end_step() {
    const double t = now();
    step_times_.push_back(loop_seconds_ - loop_at_step_);
    step_times_.push_back(t - step_started_);
    loop_at_step_ = loop_seconds_;
    step_started_ = t;
  }
  void start_steps() { step_started_ = now(); }
  /// Per step: the seconds in the plugins' time-loop callbacks, then the step's wall time.
  const std::vector<double>& step_times() const { return step_times_; }

 private:
  ch::Host& host_;
  const int omp_threads_;
  double seconds_ = 0, loop_seconds_ = 0;
  double loop_at_step_ = 0, step_started_ = 0;
  std::vector<double> step_times_;
};

/// The area-weighted global mean of ts: a global diagnostic every step, as ICON's halo
/// exchanges and reductions keep its ranks in step. Collective.
double global_mean_ts(const fh::HostModel& model, const double* ts, MPI_Comm comm) {
  double sums[2] = {0, 0}, global[2] = {0, 0};
  const auto& dom = model.domain();
  for (size_t j = 0; j < model.cells().owned.size(); ++j) {
    sums[0] += dom.area[j] * ts[j];
    sums[1] += dom.area[j];
  }
  MPI_Allreduce(sums, global, 2, MPI_DOUBLE, MPI_SUM, comm);
  return global[0] / global[1];
}

/// The fields a model step changes (the static surface fields are uploaded once).
const std::vector<std::string> kStepFields = {"ts", "ps", "temp", "pres"};
const std::vector<std::string> kAllFields = {"ts", "ps", "temp", "pres", "topography_c", "fr_land"};

/// Wall-clock seconds of the run, per rank.
struct RunTimes {
  double setup = 0;   ///< start-up, up to the plugins' primary constructors
  double fields = 0;  ///< the model's own computation of its fields
  double steps = 0;   ///< the time loop alone, without the plugins' finish
  double total = 0;   ///< from the secondary constructors to the end
};

/// Spins until the calling thread has used `seconds` of CPU time (step_work_seconds): a model's
/// work that needs its core, so that the step's wall time shows whoever else holds it.
void busy_work(double seconds) {
  if (seconds <= 0) return;
  const double end = finecast::thread_cpu_seconds() + seconds;
  volatile double sink = 1.0;
  while (finecast::thread_cpu_seconds() < end)
    for (int i = 0; i < 20000; ++i) sink = sink * 1.0000001 + 1e-9;  // ~50 us between the clock's reads
}

/// The run in ICON's order of entry points (fh::run_time_loop): the model computes its fields
/// in the integration, output every `output_every` steps, a restart every `restart_every` steps
/// and at the end of the run (as ICON writes its restart files); each step ends with the global
/// mean ts, the step's minimum wall time and progress lines; then the plugins' finish.
void time_loop(const fh::HostRunConfig& cfg, const RunClock& time, const fh::HostModel& model,
               const fh::FieldPointers& fields, const std::vector<fh::Nest>& nests, ch::Host& host, PluginCalls& calls,
               const fc::ModelComms& comms, fh::DeviceFields* device, double t_loop, RunTimes& times) {
  const int progress_every = cfg.progress_every > 0 ? cfg.progress_every : std::max(1, cfg.steps / 10);
  double t_last = now();
  const double t_first = t_last;
  int step_last = 0;
  fh::TimeLoop loop;
  loop.steps = cfg.steps;
  loop.start = cfg.start;
  loop.datetime = [&](int64_t step) { return time.datetime_at(cfg.dt * static_cast<double>(step)); };
  loop.integrate = [&](int64_t step) {
    const double t0 = now();
    model.compute(time.run_offset + cfg.dt * static_cast<double>(step), fields);
    busy_work(cfg.step_work_seconds);
    if (device) device->upload(kStepFields);  // a GPU model's step ends with its fields there
    times.fields += now() - t0;
  };
  for (const auto& n : nests) loop.nests.push_back(n.id);
  loop.integrate_nest = [&](int64_t step, int domain, int sub) {  // ICON: half the step, twice
    const double t0 = now();
    const fh::Nest& n = nests[static_cast<size_t>(domain - 2)];
    n.model.compute(time.run_offset + cfg.dt * (static_cast<double>(step - 1) + double(sub) / fh::kNestSubsteps),
                    n.fields);
    times.fields += now() - t0;
  };
  loop.output_due = [&](int64_t step) { return step % cfg.output_every == 0; };
  loop.restart_due = [&](int64_t step) {
    return step == cfg.steps || (cfg.restart_every > 0 && step % cfg.restart_every == 0);
  };
  loop.min_step_seconds = cfg.step_seconds;
  loop.step_done = [&](int64_t step64, const std::string& datetime) {
    const int step = static_cast<int>(step64);
    const double mean_ts = global_mean_ts(model, fields.ts, comms.model);
    calls.end_step();  // after the collective: a step lasts until the slowest rank is done
    if (comms.rank != 0 || (step % progress_every != 0 && step != cfg.steps)) return;
    const double t = now();
    flog::info("step " + std::to_string(step) + "/" + std::to_string(cfg.steps) + ", model time " + datetime + ", " +
               fmt::format("{:.4f}", (t - t_last) / (step - step_last)) + " s/step, global mean ts " +
               fmt::format("{:.2f}", mean_ts) + " K" +
               // The run's ETA at the mean pace so far (plugins' sessions and all).
               (step < cfg.steps ? "; run ends in ~" + flog::duration((t - t_first) / step * (cfg.steps - step))
                                 : std::string()));
    t_last = t;
    step_last = step;
  };
  loop.steps_done = [&] { times.steps = now() - t_loop; };
  calls.start_steps();
  fh::run_time_loop(
      loop, {[&](t_comin_entry_point ep, int domain, const std::string& datetime) { calls.at(ep, domain, datetime); },
             [&] { calls.timed("EP_FINISH", [&] { host.finish(); }); }});
}

/// With device fields: what ComIn's device synchronisation copied for the plugins (all ranks'
/// bytes, the slowest rank's time). Collective.
void report_device_sync(const fh::HostRunConfig& cfg, const ch::Host& host, const fc::ModelComms& comms) {
  const ch::DeviceSyncStats st = host.device_sync_stats();
  double local[3] = {static_cast<double>(st.bytes), static_cast<double>(st.to_host + st.to_device), st.seconds};
  double sum[3] = {0, 0, 0}, worst = 0;
  MPI_Reduce(local, sum, 3, MPI_DOUBLE, MPI_SUM, 0, comms.model);
  MPI_Reduce(&local[2], &worst, 1, MPI_DOUBLE, MPI_MAX, 0, comms.model);
  if (comms.rank != 0) return;
  flog::info("ComIn device sync for the plugins: " + fmt::format("{:.0f}", sum[1]) + " whole-field copies, " +
             fmt::format("{:.3f}", sum[0] / 1e6) + " MB on all ranks (" +
             fmt::format("{:.1f}", sum[0] / 1e3 / cfg.steps) + " kB/step), slowest rank " +
             fmt::format("{:.6f}", worst / cfg.steps) + " s/step");
}

/// --step-times: per step, the slowest rank's seconds in the plugins' time-loop callbacks and the
/// step's wall time, as CSV (written atomically by rank 0). A training session inside a callback
/// shows as its step's plugin time. Collective.
void write_step_times(const std::string& path, const PluginCalls& calls, const fc::ModelComms& comms) {
  const std::vector<double>& local = calls.step_times();
  std::vector<double> worst(local.size(), 0.0);
  MPI_Reduce(local.data(), worst.data(), static_cast<int>(local.size()), MPI_DOUBLE, MPI_MAX, 0, comms.model);
  if (comms.rank != 0) return;
  finecast::AtomicFile file(path);
  {
    std::FILE* f = std::fopen(file.tmp_path().c_str(), "w");
    if (!f) throw finecast::IoError("--step-times " + path + ": cannot write " + file.tmp_path());
    std::fprintf(f, "step,plugin_seconds,step_seconds\n");
    for (size_t i = 0; i + 1 < worst.size(); i += 2)
      std::fprintf(f, "%zu,%.6f,%.6f\n", i / 2 + 1, worst[i], worst[i + 1]);
    if (std::fclose(f) != 0) throw finecast::IoError("--step-times " + path + ": write failed");
  }
  file.commit();
  flog::info("per-step plugin times written to " + path);
}

/// The summary line; the slowest rank sets the pace of an MPI model. Collective.
void report(const fh::HostRunConfig& cfg, const RunTimes& times, const PluginCalls& calls,
            const fc::ModelComms& comms) {
  double local[5] = {times.total, calls.seconds(), times.fields, times.steps, calls.loop_seconds()};
  double worst[5] = {0, 0, 0, 0, 0};
  MPI_Reduce(local, worst, 5, MPI_DOUBLE, MPI_MAX, 0, comms.model);
  if (comms.rank != 0) return;
  flog::info("finished " + std::to_string(cfg.steps) + " steps on " + std::to_string(comms.n_ranks) +
             " rank(s): " + fmt::format("{:.5f}", worst[0] / cfg.steps) + " s/step (fields " +
             fmt::format("{:.5f}", worst[2] / cfg.steps) + " s/step, plugin callbacks " +
             fmt::format("{:.5f}", worst[1] / cfg.steps) + " s/step incl. constructors, " +
             fmt::format("{:.6f}", worst[4] / cfg.steps) + " s/step in the time loop); loop " +
             fmt::format("{:.2f}", worst[0]) + " s, start-up " + fmt::format("{:.2f}", times.setup) +
             " s; time loop alone " + fmt::format("{:.5f}", worst[3] / cfg.steps) + " s/step");
}

int run(const Options& opt, const fc::ModelComms& comms) {
  const int rank = comms.rank, n_ranks = comms.n_ranks;
  const fc::StartupLog startup(rank);
  startup.stage("reading the run file " + opt.run_file);
  fh::HostRunConfig cfg = fh::load_host_run_config(opt.run_file);
  if (opt.steps > 0) cfg.steps = opt.steps;
  if (opt.step_seconds >= 0) cfg.step_seconds = opt.step_seconds;
  if (opt.step_work >= 0) cfg.step_work_seconds = opt.step_work;
  if (opt.device_fields) cfg.device_fields = true;
  if (!opt.write_orography.empty()) return write_orography(opt, cfg, rank);
  const std::vector<ch::PluginSpec> plugins = plugins_to_load(opt, cfg);
  const RunClock time(cfg, opt.run_file);

  startup.stage("reading the ICON grid " + cfg.grid);
  const fc::IconGrid grid = fc::read_icon_grid(cfg.grid, geometry_of(opt));
  fh::HostModelSetup setup;
  setup.orography = cfg.orography;
  setup.orography_variable = cfg.orography_variable;
  setup.decomposition = cfg.decomposition;
  setup.nproma = cfg.nproma;
  setup.dt = cfg.dt;
  setup.start_utc_hours = time.start_utc_hours();
  setup.nlev = cfg.nlev;
  startup.stage("decomposing the grid over " + std::to_string(n_ranks) +
                " rank(s) and interpolating the orography of " + cfg.orography);
  const fh::HostModel model(grid, setup, n_ranks, rank);
  flog::info("grid " + cfg.grid + ": " + std::to_string(grid.n_cells) + " cells; this rank owns " +
             std::to_string(model.cells().owned.size()) + " + " + std::to_string(model.cells().halo.size()) +
             " halo, nproma " + std::to_string(cfg.nproma) + ", " + std::to_string(omp_get_max_threads()) +
             " OpenMP thread(s)");

  ch::GlobalData global;
  global.vct_a = model.vct_a();
  global.host_revision = std::string("finecast-host ") + FINECAST_VERSION;
  global.restart_run = cfg.restart_run;
  const std::string stop = time.datetime_at(time.stop_seconds);
  ch::Host host(comms.model,
                {cfg.experiment_start, cfg.experiment_stop.empty() ? stop : cfg.experiment_stop, cfg.start, stop},
                global, comms.comin);
  ch::Domain domain = model.domain();
  domain.dom_start = time.run_offset;
  domain.dom_end = time.run_offset + time.stop_seconds;
  host.add_domain(std::move(domain));
  const fh::FieldPointers fields = add_variables(host, model, cfg.nlev);
  model.compute(time.run_offset, fields);
  std::vector<fh::Nest> nests;
  nests.reserve(cfg.nests.size());
  for (size_t i = 0; i < cfg.nests.size(); ++i) {  // domains 2, 3, ...: children of domain 1
    const std::string& file = cfg.nests[i].grid;
    startup.stage("reading and decomposing nest " + std::to_string(i + 2) + ", " + file);
    const fc::IconGrid nest_grid =
        fh::read_nest_grid(file, grid, opt.run_file + ": nests[" + std::to_string(i) + "].grid");
    nests.push_back({static_cast<int>(i) + 2, fh::HostModel(nest_grid, setup, n_ranks, rank), {}});
    ch::Domain d = nests.back().model.domain();
    d.parent_id = 1;
    d.dom_start = time.run_offset;
    d.dom_end = time.run_offset + time.stop_seconds;
    host.add_domain(std::move(d));
    nests.back().fields = add_variables(host, nests.back().model, cfg.nlev, nests.back().id);
    nests.back().model.compute(time.run_offset, nests.back().fields);
    flog::info("domain " + std::to_string(i + 2) + " (nest of domain 1): " + file + ": " +
               std::to_string(nest_grid.n_cells) + " cells; this rank owns " +
               std::to_string(nests.back().model.cells().owned.size()));
  }
  std::unique_ptr<fh::DeviceFields> device;
  if (cfg.device_fields) {
    startup.stage("device copies of the fields (device_fields)");
    device = std::make_unique<fh::DeviceFields>(host, kAllFields, 1, comms.model);
    if (rank == 0)
      flog::info("device fields: " + device->device_line() +
                 "; ComIn reports has_device, plugins may read with COMIN_FLAG_DEVICE");
  }

  for (const auto& p : plugins)
    if (rank == 0) flog::info("plugin '" + p.name + "': " + p.library + " (options '" + p.options + "')");
  PluginCalls calls(host);  // takes the model's OpenMP thread count before any plugin runs
  startup.stage("loading " + std::to_string(plugins.size()) + " plugin(s) (primary constructors)");
  host.load_plugins(plugins);
  RunTimes times;
  times.setup = startup.seconds();
  if (rank == 0)
    flog::info("start-up " + fmt::format("{:.2f}", times.setup) + " s; " + std::to_string(plugins.size()) +
               " plugin(s); " + std::to_string(cfg.steps) + " steps of " + fmt::format("{:g}", cfg.dt) + " s from " +
               cfg.start);

  const double t_loop = now();
  calls.timed("the secondary constructors", [&] { host.secondary_constructor(); });
  time_loop(cfg, time, model, fields, nests, host, calls, comms, device.get(), t_loop, times);
  times.total = now() - t_loop;
  report(cfg, times, calls, comms);
  if (device) report_device_sync(cfg, host, comms);
  if (!opt.step_times.empty()) write_step_times(opt.step_times, calls, comms);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "finecast-host: an ICON-like MPI model that runs ComIn plugins (finecast's host library).\n"
      "Example: mpiexec -n 4 --oversubscribe build/bin/finecast-host configs/demo_host.yaml --set device=cpu"};
  Options opt;
  finecast::cli::add_config(app, opt.run_file, "YAML run file (grid, time stepping, decomposition, plugins)");
  // The run file's bounds (run_file::limits) hold for the overrides too.
  namespace lim = fh::run_file::limits;
  app.add_option("--steps", opt.steps, "override the run file's number of steps")->check(CLI::Range(1LL, lim::kSteps));
  app.add_option("--step-seconds", opt.step_seconds, "override the run file's minimum wall time per step (0 = none)")
      ->check(CLI::Range(0.0, lim::kStepSeconds));
  app.add_option("--step-work", opt.step_work,
                 "override the run file's step_work_seconds: CPU seconds each rank's step computes (0 = none)")
      ->check(CLI::Range(0.0, lim::kStepSeconds));
  app.add_flag("--no-plugins", opt.no_plugins, "run without any plugin (baseline for overhead measurements)");
  app.add_flag("--device-fields", opt.device_fields,
               "keep device copies of the fields, as ICON built for GPUs does (the run file's device_fields: "
               "true; a CUDA build only)");
  finecast::cli::add_log_level(app, opt.log_level);
  app.add_option("--write-orography", opt.write_orography,
                 "write the surface fields the run gives its plugins (topography_c, fr_land, on "
                 "every cell of the grid) to this NetCDF file and stop without running; "
                 "finecast-downscale --orography FILE reads it");
  app.add_option("--geometry", opt.geometry,
                 std::string(fc::kIconGeometryHelp) +
                     "; for the run and --write-orography, and sets the plugins' grid.geometry (default: file)")
      ->check(CLI::IsMember({"file", "uniform"}));
  app.add_option("--step-times", opt.step_times,
                 "write a CSV with, per time step, the slowest rank's seconds in the plugins' time-loop "
                 "callbacks and the step's wall time (what a training session inside a callback costs the model)");
  finecast::cli::add_set(app, opt.plugin_overrides,
                         "append key.path=value to every plugin's options (finecast config overrides), e.g. "
                         "--set checkpoint.resume=out/ckpt --set device=cpu.");
  finecast::cli::add_version(app, "finecast-host");
  return fc::mpi_main(argc, argv, "finecast-host", app, opt.log_level,
                      [&](const fc::ModelComms& comms) { return run(opt, comms); });
}
