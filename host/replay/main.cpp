// SPDX-License-Identifier: BSD-3-Clause
// finecast-replay: plays fields of NetCDF files, step by step, through finecast's ComIn host
// library into plugins, decomposed over MPI ranks as a host model would.
#include <mpi.h>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <algorithm>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "host/comin/host.hpp"
#include "coupling/error.hpp"
#include "coupling/grid/icon_geometry.hpp"
#include "coupling/grid/icon_grid.hpp"
#include "coupling/grid/latlon_grid.hpp"
#include "host/model/decomposition.hpp"
#include "coupling/program/mpi_program.hpp"
#include "coupling/io/field_reader.hpp"
#include "coupling/io/static_field.hpp"
#include "common/cli.hpp"
#include "common/region.hpp"
#include "common/log.hpp"
#include "host/replay/latlon_domain.hpp"
#include "host/replay/progress.hpp"
#include "host/replay/replay_input.hpp"
#include "host/replay/run_config.hpp"
#include "host/model/run_file.hpp"
#include "host/time_loop.hpp"

namespace fc = finecast::coupling;
namespace ch = finecast::host::comin;
namespace fr = finecast::host::replay;
namespace flog = finecast::log;
namespace fh = finecast::host;
using fc::now;

namespace {

struct Options {
  std::string run_file;
  std::vector<std::string> sets;
  int epochs = 0;
  std::string progress = "auto";
  std::string log_level = "info";
  std::string hold_out;  ///< --hold-out: forwarded to the plugins as train.hold_out
  std::string geometry;  ///< --geometry: the ICON grid's coordinates, forwarded as grid.geometry
};

/// Appends the --set overrides to the plugins' options strings ("CONFIG.yaml key=value ...").
/// "NAME:key=value" goes to the plugin called NAME only, "key=value" to every plugin.
void apply_overrides(std::vector<ch::PluginSpec>& plugins, const std::vector<std::string>& sets) {
  for (const auto& set : sets) {
    const size_t eq = set.find('=');
    if (eq == std::string::npos || eq == 0)
      throw finecast::ConfigError("--set " + set + ": expected KEY=VALUE or PLUGIN:KEY=VALUE (e.g. --set device=cpu)");
    std::string target, item = set;
    const size_t colon = set.substr(0, eq).find(':');
    if (colon != std::string::npos) {
      target = set.substr(0, colon);
      item = set.substr(colon + 1);
    }
    bool used = false;
    for (auto& p : plugins) {
      if (!target.empty() && p.name != target) continue;
      if (p.options.find_first_not_of(" \t") == std::string::npos)
        throw finecast::ConfigError("--set " + set + ": plugin '" + p.name +
                                    "' has an empty options string, so there is no config to override");
      p.options += " " + fc::quote_option(item);
      used = true;
    }
    if (!used)
      throw finecast::ConfigError(
          "--set " + set + ": " +
          (target.empty() ? std::string("the run file lists no plugin") : "no plugin is called '" + target + "'"));
  }
}

/// MPI_Bcast of a float array of any length (MPI counts are int).
void broadcast(std::vector<float>& values, MPI_Comm comm) {
  const size_t chunk = static_cast<size_t>(std::numeric_limits<int>::max() / 2);
  for (size_t off = 0; off < values.size(); off += chunk) {
    const int n = static_cast<int>(std::min(chunk, values.size() - off));
    CHECK_MPI(MPI_Bcast(values.data() + off, n, MPI_FLOAT, 0, comm));
  }
}

/// Writes the local cells' values of a global field into a blocked (nproma, 1, nblks) variable.
void fill(double* var, const std::vector<float>& global, const ch::Domain& domain) {
  for (size_t j = 0; j < domain.glb_index.size(); ++j)
    var[j % domain.nproma + domain.nproma * (j / domain.nproma)] = global[domain.glb_index[j] - 1];
}

/// The run file's plugins (or its ComIn namelist's) with the command line's --set and
/// --hold-out.
std::vector<ch::PluginSpec> plugins_to_load(const Options& opt, const fr::ReplayRunConfig& cfg) {
  std::vector<ch::PluginSpec> plugins = cfg.plugins;
  if (!cfg.comin_namelist.empty()) plugins = ch::read_comin_namelist(cfg.comin_namelist);
  if (plugins.empty()) flog::warning(cfg.path + ": no plugins: the replay only reads the files");
  std::vector<std::string> sets = opt.sets;
  if (!opt.hold_out.empty()) {
    const auto [file, var] = fc::split_file_var(opt.hold_out);
    if (!finecast::is_regions_text(opt.hold_out) && (file.empty() || var.empty()))
      throw finecast::ConfigError(
          "--hold-out " + opt.hold_out +
          ": expected a region lat0,lat1,lon0,lon1 in degrees (several joined by ';') or FILE:VAR (a "
          "NetCDF mask on the fine grid)");
    sets.push_back("train.hold_out=" + opt.hold_out);
  }
  // The plugins' patches, position features and hold-out box on the cells the host plays.
  if (!opt.geometry.empty()) sets.push_back("grid.geometry=" + opt.geometry);
  apply_overrides(plugins, sets);
  return plugins;
}

/// The grid the fields live on, this rank's part of it as a host domain, and the grid itself
/// for the static fields' checks.
struct ReplayGrid {
  ch::Domain domain;
  std::optional<fc::IconGrid> icon;
  std::optional<fc::LatLonGrid> latlon;
  std::string latlon_source;  ///< where the lat-lon grid comes from, for messages
};

ReplayGrid icon_grid(const fr::ReplayRunConfig& cfg, const Options& opt, const fr::ReplayInput& input, int rank,
                     int n_ranks, const fc::StartupLog& startup) {
  startup.stage("reading the ICON grid " + cfg.grid_file + " and decomposing it over " + std::to_string(n_ranks) +
                " rank(s)");
  ReplayGrid g;
  const fc::IconGrid& grid =
      g.icon.emplace(fc::read_icon_grid(cfg.grid_file, fc::parse_icon_geometry(opt.geometry, "--geometry")));
  if (grid.n_cells != input.n_values())
    throw finecast::GridError(cfg.path + ": grid.file " + cfg.grid_file + " has " + std::to_string(grid.n_cells) +
                              " cells, but " + input.files().front() + ": " + cfg.variables.front().var + " has " +
                              std::to_string(input.n_values()) + " values per step");
  const fh::LocalCells cells = fh::decompose(grid, fh::parse_decomposition(cfg.decomposition), n_ranks, rank);
  g.domain = fh::make_domain(grid, cells, cfg.nproma, input.step_seconds());
  return g;
}

ReplayGrid latlon_grid(const fr::ReplayRunConfig& cfg, const fr::ReplayInput& input, int rank, int n_ranks,
                       const fc::StartupLog& startup) {
  if (input.grid_kind() == fc::FieldReader::GridKind::kUnstructured)
    throw finecast::ConfigError(cfg.path + ": grid.type is latlon but " + input.files().front() + ": " +
                                cfg.variables.front().var +
                                " is on an unstructured grid (use grid.type: icon and grid.file: the ICON grid file)");
  const std::string grid_file = cfg.grid_file.empty() ? input.files().front() : cfg.grid_file;
  startup.stage("reading the lat-lon grid of " + grid_file + " and decomposing it over " + std::to_string(n_ranks) +
                " rank(s)");
  ReplayGrid g;
  const fc::LatLonGrid& grid = g.latlon.emplace(fc::read_latlon_grid(grid_file, cfg.variables.front().var));
  if (grid.nlat * grid.nlon != input.n_values())
    throw finecast::GridError(cfg.path + ": the lat-lon grid of " + grid_file + " has " + std::to_string(grid.nlat) +
                              " x " + std::to_string(grid.nlon) + " cells, but " + input.files().front() + ": " +
                              cfg.variables.front().var + " has " + std::to_string(input.n_values()) +
                              " values per step");
  const fh::LocalCells cells = fr::decompose_latlon(grid, cfg.decomposition, cfg.seed, n_ranks, rank);
  g.domain = fr::make_latlon_domain(grid, cells, cfg.nproma, input.step_seconds());
  g.latlon_source = grid_file + " (" + cfg.path + ")";
  return g;
}

/// input.static: each static field as a host variable, read on rank 0 and checked against the
/// grid (ICON cells and centres, or lat-lon coordinates: a larger grid that contains the replayed
/// one, such as a model's orography file, is cut).
void add_static_fields(ch::Host& host, const fr::ReplayRunConfig& cfg, const fr::ReplayInput& input,
                       const ReplayGrid& grid, int rank, const fc::StartupLog& startup) {
  std::vector<float> global(static_cast<size_t>(input.n_values()));
  for (const auto& s : cfg.static_variables) {
    startup.stage("reading the static field " + s.variable.var + " of " + s.file);
    double* var = host.add_variable(s.variable.name, 1, ch::VariableInfo{});
    if (rank == 0) {
      if (s.variable.level != 0) {
        fc::FieldReader reader(s.file, s.variable.var, s.variable.level);
        if (reader.n_values() != input.n_values())
          throw finecast::GridError(cfg.path + ": input.static: " + s.file + ": " + s.variable.var + " has " +
                                    std::to_string(reader.n_values()) + " values, the replayed fields " +
                                    std::to_string(input.n_values()));
        reader.read(0, global.data());
      } else {
        try {
          global = grid.icon ? fc::read_static_icon(s.file, s.variable.var, *grid.icon)
                             : fc::read_static_latlon(s.file, s.variable.var, *grid.latlon, grid.latlon_source);
        } catch (const finecast::Error& e) {
          throw finecast::GridError(cfg.path + ": input.static: " + e.what());
        }
      }
    }
    broadcast(global, host.comm());
    fill(var, global, grid.domain);
  }
}

/// --hold-out FILE:VAR: read on rank 0 onto the replayed grid before any plugin is loaded, so that
/// a missing file or variable, or a mask of another grid, stops the run at once, naming both (the
/// plugin reads it again to flag its patches, coupling/grid/hold_out_mask.hpp).
void check_hold_out_mask(const Options& opt, const ReplayGrid& grid, int rank) {
  if (opt.hold_out.empty() || finecast::is_regions_text(opt.hold_out) || rank != 0) return;
  const auto [file, var] = fc::split_file_var(opt.hold_out);
  try {
    if (grid.icon)
      fc::read_static_icon(file, var, *grid.icon);
    else
      fc::read_static_latlon(file, var, *grid.latlon, grid.latlon_source);
  } catch (const finecast::Error& e) {
    throw finecast::ConfigError("--hold-out " + opt.hold_out + ": " + e.what() + "; expected variable '" + var +
                                "' of '" + file +
                                "' on the replayed grid (one value per fine cell; non-zero = held out)");
  }
}

/// The replay's run in ICON's order of entry points (fh::run_time_loop): every selected step of
/// every epoch; the fields change during the integration, as the model's would; output every
/// step and no restarts (a replay writes none); then the plugins' finish. Returns the seconds
/// rank 0 spent reading the files.
double time_loop(ch::Host& host, const fr::ReplayRunConfig& cfg, fr::ReplayInput& input, const ch::Domain& domain,
                 const std::vector<double*>& vars, int rank, fr::Progress::Mode progress_mode) {
  const int64_t n_steps = input.n_selected() * cfg.epochs;
  std::vector<float> global(static_cast<size_t>(input.n_values()));
  double t_read = 0;
  fr::Progress progress(n_steps, rank == 0 ? progress_mode : fr::Progress::Mode::kNone, cfg.progress_every);
  // Step `step` (from 1) replays the input's selected step `(step - 1) % n_selected`.
  const auto input_step = [&](int64_t step) { return (step - 1) % input.n_selected(); };
  fh::TimeLoop loop;
  loop.steps = n_steps;
  loop.start = input.datetime(0);
  loop.datetime = [&](int64_t step) { return input.datetime(input_step(step)); };
  loop.integrate = [&](int64_t step) {
    for (size_t v = 0; v < vars.size(); ++v) {
      if (rank == 0) {
        const double t0 = now();
        // The reader logs the first step of each file that has values outside the valid or
        // plausible range; the totals follow at the end.
        input.read(input_step(step), static_cast<int>(v), global.data());
        t_read += now() - t0;
      }
      // The other ranks wait here while rank 0 trains (synchronous training), as ICON's
      // ranks wait in their next halo exchange.
      broadcast(global, host.comm());
      fill(vars[v], global, domain);
    }
  };
  loop.output_due = [](int64_t) { return true; };
  loop.step_done = [&](int64_t step, const std::string& datetime) {
    const int64_t epoch = (step - 1) / input.n_selected() + 1;
    progress.update(step, (cfg.epochs > 1 ? "epoch " + std::to_string(epoch) + "/" + std::to_string(cfg.epochs) + ", "
                                          : std::string()) +
                              datetime);
  };
  loop.steps_done = [&] { progress.finish(); };
  fh::run_time_loop(loop, {[&](t_comin_entry_point ep, int domain, const std::string& datetime) {
                             host.run_entry_point(ep, domain, datetime);
                           },
                           [&] { host.finish(); }});
  return t_read;
}

int run(const Options& opt, const fc::ModelComms& comms) {
  const int rank = comms.rank, n_ranks = comms.n_ranks;
  const fc::StartupLog startup(rank);
  startup.stage("reading the run file " + opt.run_file);
  fr::ReplayRunConfig cfg = fr::load_replay_run_config(opt.run_file);
  if (opt.epochs > 0) cfg.epochs = opt.epochs;
  const std::vector<ch::PluginSpec> plugins = plugins_to_load(opt, cfg);
  const fr::Progress::Mode progress_mode = fr::Progress::parse_mode(opt.progress);

  // Every rank opens the files: the selection and dates must agree everywhere, and opening is
  // cheap.
  startup.stage("opening the input files (" + std::to_string(cfg.files.size()) +
                " name(s) or pattern(s)) and reading their time coordinates");
  fr::ReplayInput input(cfg);
  const int64_t n_steps = input.n_selected() * cfg.epochs;
  if (rank == 0)
    flog::info("input: " + std::to_string(input.files().size()) + " file(s), " + std::to_string(input.n_steps_total()) +
               " steps, " + std::to_string(input.n_selected()) + " selected (" + input.datetime(0) + " .. " +
               input.datetime(input.n_selected() - 1) + ", stride " + std::to_string(cfg.stride) + ") x " +
               std::to_string(cfg.epochs) + " epoch(s) = " + std::to_string(n_steps) + " replay steps");
  if (!opt.geometry.empty() && cfg.grid_type != "icon")
    throw finecast::ConfigError("--geometry is for ICON grids; " + cfg.path + " has grid.type " + cfg.grid_type);
  const ReplayGrid grid = cfg.grid_type == "icon" ? icon_grid(cfg, opt, input, rank, n_ranks, startup)
                                                  : latlon_grid(cfg, input, rank, n_ranks, startup);
  int n_owned = 0;
  for (int d : grid.domain.decomp_domain) n_owned += d == 0;
  flog::info("grid: " + std::to_string(input.n_values()) + " cells (" + cfg.grid_type + "); this rank owns " +
             std::to_string(n_owned) + " + " + std::to_string(grid.domain.glb_index.size() - n_owned) +
             " halo, nproma " + std::to_string(cfg.nproma) + ", decomposition " + cfg.decomposition);

  const std::string first = input.datetime(0), last = input.datetime(input.n_selected() - 1);
  ch::Host host(comms.model, {first, last, first, last}, {}, comms.comin);
  host.add_domain(grid.domain);
  std::vector<double*> vars;
  for (size_t v = 0; v < cfg.variables.size(); ++v) {
    const fc::VarAttributes& a = input.attributes(static_cast<int>(v));
    vars.push_back(host.add_variable(cfg.variables[v].name, 1, {0, a.units, a.standard_name, a.long_name, false}));
  }
  add_static_fields(host, cfg, input, grid, rank, startup);
  check_hold_out_mask(opt, grid, rank);

  for (const auto& p : plugins)
    if (rank == 0) flog::info("plugin '" + p.name + "': " + p.library + " (options '" + p.options + "')");
  startup.stage("loading " + std::to_string(plugins.size()) + " plugin(s) (primary constructors: configs)");
  host.load_plugins(plugins);
  startup.stage("plugin set-up (secondary constructors: grids, patches, models, checkpoints)");
  host.secondary_constructor();
  if (rank == 0) flog::info("start-up " + fmt::format("{:.2f}", startup.seconds()) + " s");

  const double t_loop = now();
  const double t_read = time_loop(host, cfg, input, grid.domain, vars, rank, progress_mode);
  const double t_total = now() - t_loop;
  double worst = 0;
  MPI_Reduce(&t_total, &worst, 1, MPI_DOUBLE, MPI_MAX, 0, comms.model);
  if (rank != 0) return 0;
  for (size_t v = 0; v < cfg.variables.size(); ++v)
    if (const int64_t bad = input.out_of_range(static_cast<int>(v)); bad > 0)
      flog::warning(std::to_string(bad) + " value(s) of '" + cfg.variables[v].var + "' outside its valid range (" +
                    input.valid_range_text(static_cast<int>(v)) + ") treated as missing in " + std::to_string(n_steps) +
                    " replay steps");
  flog::info("replayed " + std::to_string(n_steps) + " steps on " + std::to_string(n_ranks) + " rank(s) in " +
             fmt::format("{:.2f}", worst) + " s (" + fmt::format("{:.4f}", worst / std::max<int64_t>(1, n_steps)) +
             " s/step, of which reading the files on rank 0 " +
             fmt::format("{:.4f}", t_read / std::max<int64_t>(1, n_steps)) + " s/step)");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "finecast-replay: plays NetCDF fields through ComIn plugins (finecast's host library), "
      "decomposed\n"
      "over the MPI ranks like a host model. Run file keys: docs/offline.md.\n"
      "Example: mpiexec -n 2 --oversubscribe build/bin/finecast-replay configs/replay_tas.yaml "
      "--set device=cpu"};
  Options opt;
  finecast::cli::add_config(app, opt.run_file, "YAML replay run file (input files, grid, time range, plugins)");
  finecast::cli::add_set(app, opt.sets,
                         "KEY=VALUE appended to every plugin's options (finecast: a config override, e.g. "
                         "checkpoint.resume=DIR); PLUGIN:KEY=VALUE for one plugin only.");
  app.add_option("--hold-out", opt.hold_out,
                 "lat0,lat1,lon0,lon1 (the grid's own coordinates, degrees), or several boxes joined by ';': the "
                 "patches wholly inside one are not trained on; or FILE:VAR, a mask on the fine grid: the patches with "
                 "a non-zero cell are not (as finecast-eval --hold-out FILE:VAR). Their coarse values stay in their "
                 "neighbours' context (sets the plugins' train.hold_out)");
  app.add_option("--geometry", opt.geometry,
                 std::string(fc::kIconGeometryHelp) + "; also sets the plugins' grid.geometry (default: file)")
      ->check(CLI::IsMember({"file", "uniform"}));
  app.add_option("--epochs", opt.epochs, "override the run file's replay epochs")
      ->check(CLI::Range(1LL, fh::run_file::limits::kEpochs));  // the run file's bound
  app.add_option("--progress", opt.progress,
                 "auto (a bar when stdout and stderr are terminals, else lines) | bar | lines | none")
      ->check(CLI::IsMember({"auto", "bar", "lines", "none"}))
      ->capture_default_str();
  finecast::cli::add_log_level(app, opt.log_level);
  finecast::cli::add_version(app, "finecast-replay");
  return fc::mpi_main(argc, argv, "finecast-replay", app, opt.log_level,
                      [&](const fc::ModelComms& comms) { return run(opt, comms); });
}
