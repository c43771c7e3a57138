// SPDX-License-Identifier: BSD-3-Clause
// The ComIn life cycle of finecast: comin_main (primary constructor), the secondary
// constructor, the coupling entry point, and the destructor. Each callback is a thin shell
// around guard(); the work is in the functions above it.
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <cstdio>
#include <cstring>
#include <sstream>
#include <thread>

#include "comin.h"
#include "coupling/error.hpp"
#include "coupling/grid/icon_grid.hpp"
#include "coupling/grid/icon_hierarchy.hpp"
#include "coupling/grid/latlon_grid.hpp"
#include "common/log.hpp"
#include "plugin/comin_plugin/guard.hpp"
#include "plugin/comin_plugin/plugin_context.hpp"
#include "trainer/checkpoint.hpp"
#include "trainer/device.hpp"

namespace finecast::plugin {

PluginContext& plugin_context() {
  static PluginContext ctx;
  return ctx;
}

namespace {

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

std::string fortran_string(void (*get)(char const**, int*)) {
  const char* val = nullptr;
  int len = 0;
  get(&val, &len);  // not NUL-terminated: use the length
  return val && len > 0 ? std::string(val, static_cast<size_t>(len)) : std::string();
}

t_comin_var_descriptor descriptor(const std::string& name, int domain) {
  t_comin_var_descriptor d{};
  if (name.size() > COMIN_MAX_LEN_VAR_NAME) throw ConfigError("variable name too long for ComIn: \"" + name + "\"");
  std::memcpy(d.name, name.data(), name.size());
  d.id = domain;
  return d;
}

std::string host_variable_names() {
  std::string names;
  for (auto* it = comin_var_get_descr_list_head(); it; it = comin_var_get_descr_list_next(it)) {
    t_comin_var_descriptor d{};
    comin_var_get_descr_list_var_desc(it, &d);
    names += (names.empty() ? "" : ", ") + std::string(d.name) + "@" + std::to_string(d.id);
  }
  return names.empty() ? "none" : names;
}

bool is_directory(const std::string& path) {
  struct stat st {};
  return stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

/// Ranks of `comm` on this node. Collective: every rank must call it.
int ranks_on_this_node(MPI_Comm comm) {
  MPI_Comm node;
  CHECK_MPI(MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node));
  int local = 1;
  MPI_Comm_size(node, &local);
  MPI_Comm_free(&node);
  return local;
}

/// Torch threads for the trainer: the config's value, else this node's cores divided by the
/// ranks running on it (the host's ranks keep their cores), at least 1.
int torch_threads(const Config& cfg, int ranks_on_node) {
  if (cfg.train.threads > 0) return cfg.train.threads;
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  return std::max(1, cores / std::max(1, ranks_on_node));
}

// ---------------------------------------------------------------------------------------------
// Set-up
// ---------------------------------------------------------------------------------------------

/// Reads the options string: "CONFIG.yaml [key.path=value ...]".
void primary_constructor() {
  PluginContext& ctx = plugin_context();
  ctx.host_rank = comin_parallel_get_host_mpi_rank();
  log::configure(ctx.host_rank, log::Level::kInfo, ctx.host_rank == 0);

  std::istringstream options(fortran_string(comin_current_get_plugin_options));
  std::string path, item;
  std::vector<std::string> overrides;
  options >> path;
  while (options >> item) overrides.push_back(item);
  if (path.empty())
    throw ConfigError("the plugin options must be the path of finecast's YAML config, optionally followed by "
                      "key.path=value overrides (e.g. options = \"configs/demo.yaml device=cpu\"); got none");
  ctx.config = load_config(path, overrides);
  const Config& cfg = ctx.config;
  log::configure(ctx.host_rank, log::parse_level(cfg.log.level), cfg.log.all_ranks || ctx.host_rank == 0);

  ctx.coupling_ep = entry_point_id(cfg.coupling.entry_point);
  if (!cfg.sample.write_back.empty()) comin_var_request_add(descriptor(cfg.sample.write_back, cfg.coupling.domain), false);
}

HostField get_field(const std::string& name, int domain, t_comin_entry_point ep, int flag, const std::string& key) {
  HostField f;
  f.name = name;
  f.handle = comin_var_get(1, &ep, descriptor(name, domain), flag);
  if (!f.handle)
    throw ConfigError(plugin_context().config.source + ": " + key + ": the host has no variable \"" + name +
                      "\" on domain " + std::to_string(domain) + " (host variables: " + host_variable_names() + ")");
  return f;
}

void locate_owned_cells(HostField& f, int domain) {
  const int nproma = comin_descrdata_get_global_nproma();
  const int n_local = comin_descrdata_get_domain_cells_ncells(domain);
  const int* glb = nullptr;
  const int* decomp = nullptr;
  int shape3[3] = {0, 0, 0};  // the getters write the whole Fortran shape
  comin_descrdata_get_domain_cells_glb_index(domain, &glb, shape3);
  comin_descrdata_get_domain_cells_decomp_domain(domain, &decomp, shape3);
  int shape[5], sem[5];
  comin_var_get_shape(f.handle, shape);
  comin_var_get_dim_semantics(f.handle, sem);
  f.owned = coupling::owned_cells(shape, sem, nproma, n_local, decomp, glb, 0);
}

/// Creates `dir` (and its parents) now, so that an unwritable place fails before the run.
void ensure_directory(const std::string& dir, const std::string& key) {
  if (dir.empty()) return;
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec || access(dir.c_str(), W_OK) != 0)
    throw ConfigError(plugin_context().config.source + ": " + key + ": cannot create or write to directory " + dir +
                      (ec ? " (" + ec.message() + ")" : ""));
}

/// Trainer rank: grid, patch map, device, model (fresh or resumed), buffer.
void setup_trainer(PluginContext& ctx, int64_t n_global, int ranks_on_node) {
  const Config& cfg = ctx.config;
  ensure_directory(std::filesystem::path(cfg.sample.output).parent_path().string(), "sample.output");
  ensure_directory(cfg.checkpoint.dir, "checkpoint.dir");
  if (cfg.grid.type == "icon") {
    coupling::IconGrid grid = coupling::read_icon_grid(cfg.grid.file);
    ctx.map = coupling::icon_patch_map(grid, cfg.grid.coarse_level);
    ctx.output_grid = coupling::OutputGrid::icon(grid.clon, grid.clat);
  } else {
    const std::string var = cfg.grid.variable.empty() ? cfg.fields.front() : cfg.grid.variable;
    coupling::LatLonGrid grid = coupling::read_latlon_grid(cfg.grid.file, var);
    ctx.map = coupling::latlon_patch_map(grid, cfg.grid.block);
    ctx.output_grid = coupling::OutputGrid::latlon(grid.lat, grid.lon);
  }
  if (ctx.map.n_fine != n_global)
    throw GridError(cfg.source + ": grid.file " + cfg.grid.file + " has " + std::to_string(ctx.map.n_fine) +
                    " cells, but the host's domain " + std::to_string(cfg.coupling.domain) + " has " +
                    std::to_string(n_global));
  ctx.output_attrs.long_name = cfg.fields.front();  // ComIn's subset carries no units or long names

  ctx.patch_options.static_features = cfg.patch.static_features;
  ctx.patch_options.orography = !cfg.patch.orography.empty();
  const int n_vars = static_cast<int>(cfg.fields.size());
  const int C = coupling::context_size(ctx.map, n_vars, ctx.patch_options);
  const int P = ctx.map.patch_size;
  log::info("Patches: " + std::to_string(ctx.map.n_coarse) + " coarse cells of " + std::to_string(P) +
            " fine cells; context of " + std::to_string(C) + " values");

  trainer::set_torch_threads(torch_threads(cfg, ranks_on_node));  // before the device line, which reports them
  const trainer::DeviceChoice device = trainer::select_device(cfg.device);
  log::info(device.log_line());

  trainer::ModelOptions mo;
  mo.arch = cfg.model.arch;
  mo.context_size = C;
  mo.patch_size = P;
  mo.hidden = cfg.model.hidden;
  mo.depth = cfg.model.depth;
  mo.time_embedding = cfg.model.time_embedding;
  mo.unet_channels = cfg.model.unet_channels;
  mo.diffusion_steps = cfg.model.diffusion_steps;
  mo.schedule = cfg.model.schedule;
  mo.objective = cfg.model.objective;
  mo.conservative = cfg.model.conservative;
  trainer::TrainOptions to;
  to.batch_size = cfg.train.batch_size;
  to.lr = cfg.train.lr;
  to.weight_decay = cfg.train.weight_decay;
  to.warmup_steps = cfg.train.warmup_steps;
  to.decay_steps = cfg.train.decay_steps;
  to.min_lr_ratio = cfg.train.min_lr_ratio;
  to.grad_clip = cfg.train.grad_clip;
  to.ema_decay = cfg.train.ema_decay;
  to.bf16 = cfg.train.mixed_precision;
  to.max_bad_steps = cfg.train.max_bad_steps;
  to.seed = cfg.seed;
  ctx.model = std::make_unique<trainer::Downscaler>(mo, to, device.torch_device);

  std::vector<float> weights(ctx.map.fine_weight.begin(), ctx.map.fine_weight.end());
  ctx.buffer = std::make_unique<coupling::RollingBuffer>(cfg.buffer.capacity, ctx.map.n_coarse, C, P, std::move(weights));

  if (!cfg.checkpoint.resume.empty()) {
    std::string path = cfg.checkpoint.resume;
    if (is_directory(path)) {
      auto newest = trainer::newest_valid_checkpoint(path, [](const std::string& why) { log::warning(why); });
      if (!newest) throw ConfigError(cfg.source + ": checkpoint.resume: no valid checkpoint in directory " + path);
      path = *newest;
    }
    ctx.model->restore(path);  // checks architecture, shapes and version against this config
    const auto meta = trainer::Downscaler::checkpoint_metadata(path);
    if (auto it = meta.find("sessions"); it != meta.end()) ctx.sessions = std::stoll(it->second);
    ctx.model_ready = ctx.unsampled_weights = true;
    ctx.resumed_from = path;
    log::info("Resumed from " + path + " (optimizer step " + std::to_string(ctx.model->step()) + ", " +
              std::to_string(ctx.sessions) + " training sessions so far)");
    const std::string dir = path.substr(0, path.find_last_of('/') == std::string::npos ? 0 : path.find_last_of('/'));
    const std::string buffer_file = (dir.empty() ? std::string(".") : dir) + "/buffer.h5";
    struct stat st {};
    if (cfg.checkpoint.buffer && stat(buffer_file.c_str(), &st) == 0) {
      *ctx.buffer = coupling::RollingBuffer::load_h5(buffer_file, cfg.buffer.capacity, ctx.map.n_coarse, C, P);
      log::info("Resumed the rolling buffer from " + buffer_file + ": " + std::to_string(ctx.buffer->steps()) + " steps");
    }
  }
  log::info(ctx.buffer->describe());
  ctx.global_values.resize(static_cast<size_t>(ctx.n_inputs()) * static_cast<size_t>(n_global));
  for (size_t v = 0; v < cfg.fields.size(); ++v) ctx.field_pointers.push_back(ctx.global_values.data() + v * n_global);
}

void secondary_constructor() {
  PluginContext& ctx = plugin_context();
  const Config& cfg = ctx.config;
  const int base = cfg.coupling.communicator == "plugin" ? comin_parallel_get_plugin_mpi_comm()
                                                           : comin_parallel_get_host_mpi_comm();
  CHECK_MPI(MPI_Comm_dup(MPI_Comm_f2c(base), &ctx.comm));
  MPI_Comm_rank(ctx.comm, &ctx.rank);
  MPI_Comm_size(ctx.comm, &ctx.size);
  if (cfg.coupling.trainer_rank >= ctx.size)
    throw ConfigError(cfg.source + ": coupling.trainer_rank is " + std::to_string(cfg.coupling.trainer_rank) +
                      " but the " + cfg.coupling.communicator + " communicator has " + std::to_string(ctx.size) + " ranks");
  ctx.is_trainer = ctx.rank == cfg.coupling.trainer_rank;
  log::configure(ctx.rank, log::parse_level(cfg.log.level), cfg.log.all_ranks || ctx.is_trainer);

  const int jg = cfg.coupling.domain;
  if (jg > comin_descrdata_get_global_n_dom())
    throw ConfigError(cfg.source + ": coupling.domain is " + std::to_string(jg) + " but the host has " +
                      std::to_string(comin_descrdata_get_global_n_dom()) + " domain(s)");
  const auto ep = static_cast<t_comin_entry_point>(ctx.coupling_ep);
  for (const auto& name : cfg.fields) ctx.fields.push_back(get_field(name, jg, ep, COMIN_FLAG_READ, "fields"));
  if (!cfg.patch.orography.empty())
    ctx.fields.push_back(get_field(cfg.patch.orography, jg, ep, COMIN_FLAG_READ, "patch.orography"));
  for (auto& f : ctx.fields) locate_owned_cells(f, jg);
  for (const auto& f : ctx.fields)
    if (f.owned.global_index != ctx.fields.front().owned.global_index)
      throw ConfigError(cfg.source + ": host variable \"" + f.name + "\" is not a cell field like \"" +
                        ctx.fields.front().name + "\" (different owned cells)");
  if (!cfg.sample.write_back.empty()) {
    ctx.write_back = get_field(cfg.sample.write_back, jg, ep, COMIN_FLAG_WRITE, "sample.write_back");
    locate_owned_cells(ctx.write_back, jg);
  }

  const int64_t n_global = comin_descrdata_get_domain_cells_ncells_global(jg);
  ctx.gatherer = std::make_unique<coupling::Gatherer>(ctx.comm, cfg.coupling.trainer_rank,
                                                      ctx.fields.front().owned.global_index, n_global);
  ctx.local_values.resize(static_cast<size_t>(ctx.n_inputs()) * static_cast<size_t>(ctx.gatherer->n_owned()));
  const int ranks_on_node = ranks_on_this_node(ctx.comm);  // collective, so before the trainer-only part
  if (ctx.is_trainer) setup_trainer(ctx, n_global, ranks_on_node);
  log::info("Coupling " + std::to_string(cfg.fields.size()) + " field(s) at " + cfg.coupling.entry_point +
            (cfg.coupling.every > 1 ? " every " + std::to_string(cfg.coupling.every) + " calls" : "") + " on " +
            std::to_string(ctx.size) + " rank(s); trainer rank " + std::to_string(cfg.coupling.trainer_rank) +
            (cfg.train.async ? " (asynchronous training)" : " (synchronous training)"));
}

// ---------------------------------------------------------------------------------------------
// Per coupling step
// ---------------------------------------------------------------------------------------------

void save_checkpoint(PluginContext& ctx) {
  const auto t0 = Clock::now();
  const Config& cfg = ctx.config;
  const std::string path = trainer::save_checkpoint_in_dir(
      *ctx.model, cfg.checkpoint.dir, cfg.checkpoint.keep,
      {{"sessions", std::to_string(ctx.sessions)}, {"coupling_steps", std::to_string(ctx.steps)},
       {"datetime", ctx.datetime}, {"config", cfg.source}, {"fields", cfg.fields.front()}});
  if (cfg.checkpoint.buffer) ctx.buffer->save_h5(cfg.checkpoint.dir + "/buffer.h5");
  ctx.timers.checkpoint += seconds_since(t0);
  log::info("Checkpoint written: " + path + " (optimizer step " + std::to_string(ctx.model->step()) + ")");
  ctx.checkpoint_due = false;
}

void start_training_session(PluginContext& ctx) {
  const Config& cfg = ctx.config;
  Snapshot snap;
  ctx.buffer->snapshot(snap.context, snap.fine, snap.weights);
  snap.n = ctx.buffer->samples();
  ++ctx.sessions;
  log::progress("Training session " + std::to_string(ctx.sessions) + " at " + ctx.datetime + ": " +
                std::to_string(ctx.buffer->steps()) + " steps in buffer = " + std::to_string(snap.n) + " samples");
  const auto t0 = Clock::now();
  ctx.session.start(*ctx.model, std::move(snap), cfg.train.epochs, cfg.train.async, ctx.sessions);
  if (!cfg.train.async) {
    ctx.timers.train_wait += seconds_since(t0);
    if (ctx.session.collect()) ctx.model_ready = ctx.unsampled_weights = true;
  }
  ctx.training_due = false;
}

/// Trainer rank: patches, buffer, training sessions, checkpoints.
void trainer_step(PluginContext& ctx) {
  const Config& cfg = ctx.config;
  if (ctx.session.collect()) ctx.model_ready = ctx.unsampled_weights = true;  // rethrows the error of a failed session

  const auto t0 = Clock::now();
  const int64_t n_fine = ctx.map.n_fine;
  const float* orography = ctx.patch_options.orography ? ctx.global_values.data() + cfg.fields.size() * n_fine : nullptr;
  coupling::extract_patches(ctx.map, ctx.field_pointers, orography, ctx.patch_options, ctx.patches);
  ctx.buffer->push(ctx.datetime, ctx.patches.context.data(), ctx.patches.fine.data(), ctx.patches.valid.data());
  if (ctx.patches.n_invalid > 0)
    log::debug(std::to_string(ctx.patches.n_invalid) + " patch(es) with missing values excluded at " + ctx.datetime);
  ctx.timers.patches += seconds_since(t0);

  // A due checkpoint goes first: when sessions run back to back, the gap between two of them
  // is the only moment the model is not being trained.
  if (cfg.checkpoint.every > 0 && ctx.steps % cfg.checkpoint.every == 0) ctx.checkpoint_due = true;
  if (ctx.checkpoint_due && ctx.model_ready && !ctx.session.in_flight()) save_checkpoint(ctx);

  if (ctx.steps % cfg.train.every == 0 && ctx.buffer->steps() >= cfg.train.min_steps) ctx.training_due = true;
  if (ctx.training_due && !ctx.session.in_flight()) start_training_session(ctx);
}

/// Samples the latest coarse field (trainer rank), writes the NetCDF output and, when
/// configured, the ensemble mean into the host variable (collective then).
void sample_step(PluginContext& ctx, bool write_back) {
  const Config& cfg = ctx.config;
  const auto t0 = Clock::now();
  int ready = ctx.is_trainer && ctx.model_ready ? 1 : 0;
  if (write_back) CHECK_MPI(MPI_Bcast(&ready, 1, MPI_INT, cfg.coupling.trainer_rank, ctx.comm));
  if (ctx.is_trainer) {
    if (!ready) {
      log::progress("Sampling at " + ctx.datetime + " skipped: no trained model yet");
    } else {
      const int64_t n = ctx.map.n_coarse, P = ctx.map.patch_size, members = cfg.sample.members;
      ctx.samples.resize(static_cast<size_t>(n * members * P));
      trainer::SampleOptions so;
      so.sampler = cfg.sample.sampler;
      so.steps = cfg.sample.steps;
      so.eta = cfg.sample.eta;
      so.members = members;
      ctx.model->sample(ctx.patches.context.data(), ctx.patches.coarse.data(), ctx.patches.weights.data(), n, so,
                        cfg.seed + 7919 * static_cast<uint64_t>(ctx.samplings + 1), ctx.samples.data());
      if (!ctx.output)
        ctx.output = std::make_unique<Output>(cfg.sample.output, ctx.map, ctx.output_grid, cfg.fields.front(),
                                              ctx.output_attrs, static_cast<int>(members),
                                              ctx.resumed_from.empty() ? "none (trained in this run)" : ctx.resumed_from);
      ctx.output->write(ctx.datetime, ctx.samples.data(), ctx.patches.coarse.data(), ctx.global_values.data(),
                        ctx.ensemble_mean);
      ++ctx.samplings;
      ctx.unsampled_weights = false;
      log::progress("Sampled " + std::to_string(members) + " member(s) at " + ctx.datetime + " (" + cfg.sample.sampler +
                    ") in " + std::to_string(seconds_since(t0)).substr(0, 5) + " s");
    }
  }
  if (write_back && ready) {
    std::vector<float> local(static_cast<size_t>(ctx.gatherer->n_owned()));
    ctx.gatherer->scatter(ctx.is_trainer ? ctx.ensemble_mean.data() : nullptr, local.data());
    double* field = comin_var_get_ptr_double(ctx.write_back.handle);
    if (!field) throw InternalError("sample.write_back: no data pointer for host variable " + cfg.sample.write_back);
    coupling::unpack(local.data(), ctx.write_back.owned, field);
  }
  ctx.timers.sample += seconds_since(t0);
}

void coupling_step() {
  PluginContext& ctx = plugin_context();
  const Config& cfg = ctx.config;
  if (ctx.stopped || ++ctx.calls % cfg.coupling.every != 0) return;

  // Under on_error: disable a failed rank must not leave the others waiting in a collective:
  // all ranks agree to stop here, at the start of a step.
  int failed = ctx.failed ? 1 : 0, any_failed = 0;
  CHECK_MPI(MPI_Allreduce(&failed, &any_failed, 1, MPI_INT, MPI_MAX, ctx.comm));
  if (any_failed) {
    ctx.stopped = true;
    if (ctx.is_trainer) ctx.session.wait();
    log::warning("finecast stopped at " + fortran_string(comin_current_get_datetime) + " after an error (on_error: disable)");
    return;
  }

  ++ctx.steps;
  ctx.datetime = fortran_string(comin_current_get_datetime);
  const auto t0 = Clock::now();
  const int64_t n_owned = ctx.gatherer->n_owned();
  // The orography (last input) is static: gathered with the first step only.
  const int n_gather = ctx.steps == 1 ? ctx.n_inputs() : static_cast<int>(cfg.fields.size());
  for (int f = 0; f < n_gather; ++f) {
    const double* data = comin_var_get_ptr_double(ctx.fields[f].handle);
    if (!data) throw InternalError("no data pointer for host variable " + ctx.fields[f].name);
    coupling::pack(data, ctx.fields[f].owned, ctx.local_values.data() + f * n_owned);
  }
  ctx.gatherer->gather(n_gather, ctx.local_values.data(), ctx.is_trainer ? ctx.global_values.data() : nullptr);
  ctx.timers.gather += seconds_since(t0);

  if (ctx.is_trainer) trainer_step(ctx);
  if (cfg.sample.every > 0 && ctx.steps % cfg.sample.every == 0) sample_step(ctx, !cfg.sample.write_back.empty());
}

void destructor() {
  PluginContext& ctx = plugin_context();
  const Config& cfg = ctx.config;
  if (ctx.is_trainer && !ctx.stopped && !ctx.failed) {
    const auto t0 = Clock::now();
    ctx.session.wait();
    ctx.timers.train_wait += seconds_since(t0);
    if (ctx.session.collect()) ctx.model_ready = ctx.unsampled_weights = true;
    // The run ends with a sampling of the final weights, unless the latest one already used them.
    // At the model time of the last sampling it replaces that record (the output writer keeps one
    // record per time).
    if (ctx.steps > 0 && ctx.model_ready && (cfg.sample.every == 0 || ctx.unsampled_weights)) {
      if (ctx.output && ctx.output->last_datetime() == ctx.datetime)
        log::info("Final weights: sampling " + ctx.datetime + " again; the record of the last sampling is replaced");
      sample_step(ctx, false);
    }
    if (ctx.model_ready) save_checkpoint(ctx);
    if (ctx.output) {
      ctx.output->close();
      log::info("Output written: " + ctx.output->path());
    }
  }
  if (ctx.is_trainer) {
    char line[400];
    std::snprintf(line, sizeof line,
                  "Summary: %lld coupling steps, %lld training sessions, %lld samplings; seconds in gather %.3f, "
                  "patches+buffer %.3f, waiting for training %.3f, sampling+output %.3f, checkpoints %.3f",
                  ctx.steps, ctx.sessions, ctx.samplings, ctx.timers.gather, ctx.timers.patches, ctx.timers.train_wait,
                  ctx.timers.sample, ctx.timers.checkpoint);
    log::info(line);
  }
  ctx.gatherer.reset();
  if (ctx.comm != MPI_COMM_NULL) MPI_Comm_free(&ctx.comm);
}

}  // namespace
}  // namespace finecast::plugin

// ---------------------------------------------------------------------------------------------
// The C boundary: nothing below lets an exception through.
// ---------------------------------------------------------------------------------------------

namespace fp = finecast::plugin;

namespace {
void secondary_constructor_callback() { fp::guard_startup("EP_SECONDARY_CONSTRUCTOR", fp::secondary_constructor); }
void coupling_callback() { fp::guard(fp::plugin_context().config.coupling.entry_point.c_str(), fp::coupling_step); }
void destructor_callback() { fp::guard("EP_DESTRUCTOR", fp::destructor); }
}  // namespace

/// The primary constructor ComIn calls once per rank after loading the plugin.
extern "C" __attribute__((visibility("default"))) void comin_main(void) {
  fp::guard_startup("comin_main", [] {
    fp::primary_constructor();
    comin_callback_register(EP_SECONDARY_CONSTRUCTOR, secondary_constructor_callback);
    comin_callback_register(static_cast<t_comin_entry_point>(fp::plugin_context().coupling_ep), coupling_callback);
    comin_callback_register(EP_DESTRUCTOR, destructor_callback);
  });
}
