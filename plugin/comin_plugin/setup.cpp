// SPDX-License-Identifier: BSD-3-Clause
// Start-up of the plugin: config, host fields, communicator, and on the trainer rank the grid,
// the model and the buffer. Everything that can be checked before the first time step is.
#include "plugin/comin_plugin/setup.hpp"

#include <sched.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <optional>
#include <thread>
#include <tuple>

#include <cmath>

#include "coupling/error.hpp"
#include "coupling/io/cf_time.hpp"
#include "coupling/grid/context_stencil.hpp"
#include "coupling/grid/icon_hierarchy.hpp"
#include "common/log.hpp"
#include "plugin/comin_plugin/external.hpp"
#include "plugin/comin_plugin/guard.hpp"
#include "plugin/comin_plugin/comin_library.hpp"
#include "plugin/comin_plugin/host_api.hpp"
#include "plugin/comin_plugin/mpi_reducer.hpp"
#include "plugin/comin_plugin/output.hpp"
#include "plugin/comin_plugin/output_claim.hpp"
#include "plugin/comin_plugin/placement.hpp"
#include "plugin/comin_plugin/plugin_state.hpp"
#include "plugin/comin_plugin/trainer_work.hpp"

namespace finecast::plugin {
namespace {

/// What a start-up failure is reported as (agree_or_stop).
const char* const kSetup = "EP_SECONDARY_CONSTRUCTOR";

/// The long_name finecast gives its write-back variable: how the plugin recognises its own
/// variable (a host that hands over an existing field instead keeps that field's metadata).
std::string write_back_marker(const Config& cfg) { return "finecast ensemble mean of " + target_field(cfg); }

bool is_directory(const std::string& path) {
  struct stat st {};
  return stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

bool is_file(const std::string& path) {
  struct stat st {};
  return stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
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

/// This node's cores (at least 1).
int node_cores() { return static_cast<int>(std::max(1u, std::thread::hardware_concurrency())); }

/// Torch threads for the trainer: the config's value, else this node's cores divided by the
/// ranks running on it (the host's ranks keep their cores), at least 1.
int torch_threads(const Config& cfg, int ranks_on_node) {
  if (cfg.train.threads > 0) return cfg.train.threads;
  return std::max(1, node_cores() / std::max(1, ranks_on_node));
}

/// The cores the host's ranks leave this trainer: the node's cores less one per host rank on it
/// (an asynchronous session trains while its own rank steps too; a synchronous one has its
/// rank's core), at most the cores this process may run on (an MPI launcher that binds each rank
/// to a core leaves it one), at least 1.
int free_cores(int ranks_on_node, bool async) {
  const int node = node_cores();
  int mine = node;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0) mine = std::max(1, CPU_COUNT(&set));
  const int left = node - std::max(1, ranks_on_node) + (async ? 0 : 1);
  return std::max(1, std::min(mine, left));
}

/// A host variable the plugin reads or writes. The variable list is checked first, so that an
/// unknown name gets finecast's message (the host's variables listed) instead of ComIn's abort.
HostField get_field(const Config& cfg, const std::string& name, int level, int domain, t_comin_entry_point ep, int flag,
                    const std::string& key) {
  if (!host_has_variable(name, domain))
    throw ConfigError(cfg.source + ": " + key + ": the host has no variable \"" + name + "\" on domain " +
                      std::to_string(domain) + " (its variables there: " + host_variable_names(domain) + ")");
  HostField f;
  f.name = name;
  f.level = level;
  f.datatype = int_metadata(name, domain, "datatype", COMIN_VAR_DATATYPE_DOUBLE);
  if (f.datatype != COMIN_VAR_DATATYPE_DOUBLE && f.datatype != COMIN_VAR_DATATYPE_FLOAT)
    throw ConfigError(cfg.source + ": " + key + ": host variable \"" + name +
                      "\" holds integers; finecast couples floating-point fields");
  f.handle = comin_var_get(1, &ep, descriptor(name, domain), flag);
  if (!f.handle) throw ConfigError(cfg.source + ": " + key + ": the host did not hand out variable \"" + name + "\"");
  return f;
}

/// The number of levels of a host variable (the extent of its LEVEL dimension; 1 = 2-D).
int level_count(const int shape[5], const int sem[5]) {
  for (int i = 0; i < 5; ++i)
    if (sem[i] == COMIN_DIM_SEMANTICS_LEVEL) return shape[i];
  return 1;
}

void locate_owned_cells(const Config& cfg, HostField& f, int domain, const std::string& key) {
  const int nproma = comin_descrdata_get_global_nproma();
  const int n_local = comin_descrdata_get_domain_cells_ncells(domain);
  const int* glb = nullptr;
  const int* decomp = nullptr;
  int shape3[3] = {0, 0, 0};  // the getters write the whole Fortran shape
  comin_descrdata_get_domain_cells_glb_index(domain, &glb, shape3);
  comin_descrdata_get_domain_cells_decomp_domain(domain, &decomp, shape3);
  int shape[5], sem[5];
  comin_var_get_shape(f.handle, shape);
  var_dim_semantics(f.handle, f.name, sem);
  const int nlev = level_count(shape, sem);
  // A 3-D variable is read at one level, which the config must name: level index 0 would be
  // ICON's model top, almost never what a user means.
  if (nlev > 1 && f.level == 0)
    throw ConfigError(cfg.source + ": " + key + ": host variable \"" + f.name + "\" has " + std::to_string(nlev) +
                      " levels; name one, e.g. {name: " + f.name + ", level: " + std::to_string(nlev) +
                      "} (1 = model top, " + std::to_string(nlev) + " = lowest)");
  if (f.level > nlev)
    throw ConfigError(cfg.source + ": " + key + ": host variable \"" + f.name + "\" has " +
                      (nlev == 1 ? std::string("no levels (it is 2-D)") : std::to_string(nlev) + " levels") +
                      ", level " + std::to_string(f.level) + " does not exist");
  f.owned = coupling::owned_cells(shape, sem, nproma, n_local, decomp, glb, std::max(f.level - 1, 0));
}

/// Creates `dir` (and its parents) when it is missing, saying so, and creates and removes a file
/// in it: a place that cannot be written (no permission, a read-only file system, a file where a
/// directory belongs) fails at start-up naming the key, not at the first checkpoint or sampling
/// hours later. (access(W_OK) alone says yes to root on a read-only mount.)
void ensure_directory(const Config& cfg, const std::string& dir_in, const std::string& key) {
  const std::string dir = dir_in.empty() ? "." : dir_in;
  auto refuse = [&](const std::string& why) {
    throw ConfigError(cfg.source + ": " + key + ": " + why + " (" + dir + ")");
  };
  std::error_code ec;
  if (!std::filesystem::exists(dir, ec)) {
    std::filesystem::create_directories(dir, ec);
    if (ec) refuse("cannot create the directory: " + ec.message());
    log::info(key + ": created the directory " + std::filesystem::absolute(dir, ec).string());
  } else if (!is_directory(dir)) {
    refuse("not a directory");
  }
  std::string probe = (std::filesystem::path(dir) / ".finecast_write_test_XXXXXX").string();
  const int fd = mkstemp(probe.data());
  if (fd < 0) refuse(std::string("cannot write in the directory: ") + std::strerror(errno));
  ::close(fd);
  ::unlink(probe.c_str());
}

/// sample.output: its directory as above, and no directory where the file goes.
void ensure_output_file(const Config& cfg, const std::string& path, const std::string& key) {
  if (path.empty() || path.back() == '/' || is_directory(path))
    throw ConfigError(cfg.source + ": " + key + ": " + path + " is a directory; name the NetCDF file to write");
  ensure_directory(cfg, std::filesystem::path(path).parent_path().string(), key);
}

/// The grid and its patches, the map prepared for the context of the conditioning spec and the
/// held-out patches (train.hold_out, in the grid's own coordinates); the lead also the output's
/// description of the grid. Returns the cells of a grid row (lat-lon; 1 on ICON): pieces of
/// output records are whole rows.
int64_t read_grid(const Config& cfg, TrainerState& t, bool lead) {
  coupling::ConditioningGrid grid = coupling::read_conditioning_grid(t.conditioning.spec, cfg.source + ": grid", lead);
  setup_conditioning(cfg, grid, t.conditioning);
  t.map = std::move(grid.map);
  t.conditioning.spec.patch_size = t.map.patch_size;
  if (lead) t.output_grid = std::move(grid.output);
  return grid.row_cells;
}

std::unique_ptr<Model> build_model(const Config& cfg, const coupling::PatchOptions& options, int context_size,
                                   int patch_size, const std::string& device, int threads, int ranks_on_node) {
  // The config's model and train sections are the trainer's options; the run adds what it
  // derives (context and patch size from the grid and fields, the covariate channels) and the seed.
  trainer::ModelOptions mo = cfg.model;
  mo.context_size = context_size;
  mo.patch_size = patch_size;
  mo.static_channels = coupling::static_channels(options);
  trainer::TrainOptions to = cfg.train;
  to.seed = cfg.seed;
  if (to.threads == -1 && to.max_threads == 0) {
    // threads: auto measures 1..N threads at the first session: N is what the host leaves free.
    to.max_threads = free_cores(ranks_on_node, cfg.train.async);
    log::info("train.threads auto: at most " + std::to_string(to.max_threads) + " thread(s): the core(s) " +
              std::to_string(ranks_on_node) + " host rank(s) on this node leave free of " +
              std::to_string(node_cores()) +
              (cfg.train.async ? " (train.async: the trainer's own rank steps meanwhile)" : ""));
  }
  std::string device_line;
  auto model = trainer_module().create_model(mo, to, device, cfg.sample.device, threads, device_line);
  log::info(device_line);
  model->limit_device_memory(cfg.train.device_memory_fraction);  // (CUDA only)
  return model;
}

/// Whether model time `a` is later than `b`, by their calendar fields (the host's and the
/// checkpoint's texts may differ in form); nullopt when one of them is no date.
std::optional<bool> later_than(const std::string& a, const std::string& b) {
  coupling::DateTime x, y;
  if (!coupling::parse_datetime(a, x) || !coupling::parse_datetime(b, y)) return std::nullopt;
  return std::tie(x.year, x.month, x.day, x.hour, x.minute, x.second) >
         std::tie(y.year, y.month, y.day, y.hour, y.minute, y.second);
}

/// The host's restart time: ComIn's run_start when the run starts later than the experiment
/// (ICON's restarted chunks; finecast-host's chunks after the first), "" for a run that starts
/// the experiment (finecast-replay, ComIn's replay tool, a first chunk).
std::string host_restart_time(const HostFacts& facts) {
  return later_than(facts.run_start, facts.exp_start).value_or(false) ? facts.run_start : std::string();
}

/// The buffer snapshot written with checkpoint `path` (optimizer step `step`), all its parts,
/// read for this trainer's patches; null when there is none beside the checkpoint. Throws when
/// it is damaged.
std::unique_ptr<coupling::RollingBuffer> read_paired_buffer(const Config& cfg, const TrainerState& t,
                                                            const std::string& path, long long step) {
  const std::string parent = std::filesystem::path(path).parent_path().string();
  const std::string dir = parent.empty() ? "." : parent;
  if (!is_file(buffer_path_for_step(dir, step))) return nullptr;
  // The parts of the trainer ranks that wrote it (any number of them), re-sharded to this
  // trainer's patches.
  std::vector<std::string> parts{buffer_path_for_step(dir, step)};
  for (int k = 1; is_file(buffer_part_path(dir, step, k)); ++k) parts.push_back(buffer_part_path(dir, step, k));
  return std::make_unique<coupling::RollingBuffer>(
      coupling::RollingBuffer::load_h5_range(parts, cfg.buffer.capacity, t.first_patch, t.n_patches,
                                             t.buffer->context_size(), t.buffer->patch_size(), t.map.n_coarse));
}

/// The conditioning checkpoint `path` was trained with, when it is this run's: a model resumes
/// only with the conditioning it was trained on, the same grid type, patch size, fields (names
/// and units), context and residual (restore checks the architecture and shapes). ConfigError
/// naming each difference otherwise.
coupling::StoredSpec resumable_conditioning(const Config& cfg, const TrainerState& t, const std::string& path,
                                            const std::map<std::string, std::string>& meta) {
  coupling::StoredSpec stored =
      coupling::read_spec(trainer_module().checkpoint_group(path, coupling::kConditioningGroup), meta, path);
  if (const std::string d = coupling::resume_differences(stored, t.conditioning.spec, cfg.source); !d.empty())
    throw ConfigError(cfg.source + ": checkpoint.resume: checkpoint " + path +
                      " was trained with another conditioning (" + d +
                      "); resume it with the config it was trained with, or start fresh (checkpoint.resume: \"\")");
  return stored;
}

/// A checkpoint to resume from, with its buffer snapshot when it was read already.
struct ResumeSource {
  std::string checkpoint;                           ///< "" = a fresh start
  bool buffer_read = false;                         ///< `buffer` is the paired snapshot (null: none)
  std::unique_ptr<coupling::RollingBuffer> buffer;  ///< for this trainer's patches
};

/// "" when checkpoint `path` (optimizer step `step`) and its buffer snapshot are intact on every
/// trainer rank (the snapshot, read for this trainer's patches, goes to `source`); else why not.
/// Collective over the trainer ranks: a damaged chunk of the snapshot may lie in one trainer's
/// patches only, and all of them must resume from the same pair.
std::string check_resume_pair(const Config& cfg, const TrainerState& t, MPI_Comm trainers, const std::string& path,
                              long long step, ResumeSource& source) {
  std::string why;
  try {
    trainer_module().verify_checkpoint(path);
  } catch (const std::exception& e) {
    why = std::string("skipping invalid checkpoint: ") + e.what();
  }
  // A checkpoint of another grid or conditioning is refused for what it is (the same on every
  // trainer rank), before its buffer snapshot, whose shapes differ too, is taken for damaged.
  if (why.empty()) resumable_conditioning(cfg, t, path, trainer_module().checkpoint_metadata(path));
  if (why.empty() && cfg.checkpoint.buffer) {
    try {
      source.buffer = read_paired_buffer(cfg, t, path, step);
      source.buffer_read = true;
    } catch (const GridError& e) {
      why = "skipping checkpoint " + path + ": its buffer snapshot is of another grid (" + e.what() +
            "; checkpoint.buffer: false resumes the model without it)";
    } catch (const std::exception& e) {
      why = "skipping checkpoint " + path + ": its buffer snapshot is damaged (" + e.what() + ")";
    }
  }
  int mine = why.empty() ? 0 : 1, any = 0;
  CHECK_MPI(MPI_Allreduce(&mine, &any, 1, MPI_INT, MPI_MAX, trainers));
  if (any && why.empty())
    why = "skipping checkpoint " + path + ": another trainer rank cannot read its buffer snapshot";
  return why;
}

/// The checkpoint checkpoint.resume names: a file; the newest usable one of a directory; with
/// "auto" or "auto-or-fresh" the newest usable one in checkpoint.dir that is not later than the
/// host's restart time (a fresh start when there is no checkpoint). Usable: the checkpoint and its
/// buffer snapshot are intact; an older pair takes the place of a damaged one. When checkpoints
/// exist but none is usable, "auto" is an error naming each and why, "auto-or-fresh" a fresh
/// start with a warning. Collective over the trainer ranks.
ResumeSource choose_resume_source(const Config& cfg, const TrainerState& t, MPI_Comm trainers, const HostFacts& facts) {
  const std::string& resume = cfg.checkpoint.resume;
  const bool automatic = resume == "auto" || resume == "auto-or-fresh";
  ResumeSource source;
  if (!automatic && !is_directory(resume)) {  // a file: that one (restore() names its problems)
    source.checkpoint = resume;
    return source;
  }
  const std::string dir = automatic ? cfg.checkpoint.dir : resume;
  const std::string restart = automatic ? host_restart_time(facts) : std::string();
  struct Candidate {
    long long step;
    std::string path, datetime;
  };
  std::vector<Candidate> candidates;
  std::vector<std::string> rejected;
  for (const auto& [step, path] : trainer_module().checkpoints_newest_first(dir)) {
    std::string datetime;
    try {
      const auto meta = trainer_module().checkpoint_metadata(path);
      if (auto it = meta.find("datetime"); it != meta.end()) datetime = it->second;
    } catch (const std::exception& e) {
      rejected.push_back(std::string("skipping invalid checkpoint: ") + e.what());
      log::warning(rejected.back());
      continue;
    }
    if (!restart.empty() && later_than(datetime, restart).value_or(false)) {
      // A future the host does not follow (it restarts from an earlier restart file): kept.
      rejected.push_back(path + " holds model time " + datetime + ", later than the host's restart time " + restart +
                         ": left alone");
      log::info("checkpoint.resume: " + resume + ": " + rejected.back());
      continue;
    }
    candidates.push_back({step, path, datetime});
  }
  // After a restart from an earlier time, the newest model time (not the highest optimizer step)
  // is where the host goes on; checkpoints without a model time come last.
  if (!restart.empty()) {
    auto key = [](const Candidate& c) {
      coupling::DateTime d;
      const bool known = coupling::parse_datetime(c.datetime, d);
      return std::make_tuple(known, d.year, d.month, d.day, d.hour, d.minute, d.second, c.step);
    };
    std::stable_sort(candidates.begin(), candidates.end(),
                     [&](const Candidate& a, const Candidate& b) { return key(a) > key(b); });
  }
  for (const Candidate& c : candidates) {
    std::string why = check_resume_pair(cfg, t, trainers, c.path, c.step, source);
    if (why.empty()) {
      source.checkpoint = c.path;
      if (!restart.empty() && later_than(restart, c.datetime).value_or(false))
        log::warning("checkpoint.resume: " + resume + ": the newest usable checkpoint, " + c.path +
                     ", holds model time " + c.datetime + ", earlier than the host's restart time " + restart +
                     ": the buffer lacks the steps between");
      return source;
    }
    rejected.push_back(why);
    log::warning(why);
  }
  source = ResumeSource();
  if (rejected.empty()) {
    if (!automatic) throw ConfigError(cfg.source + ": checkpoint.resume: no checkpoint in directory " + resume);
    log::info("checkpoint.resume: " + resume + ": no valid checkpoint in " + dir + ": a fresh start");
    return source;
  }
  std::string list;
  for (const auto& why : rejected) list += "\n  " + why;
  const std::string what = "checkpoint.resume: " + resume + ": no usable checkpoint in " + dir +
                           (restart.empty() ? std::string() : " at or before the host's restart time " + restart) +
                           " (" + std::to_string(rejected.size()) + " rejected):" + list;
  if (resume == "auto-or-fresh") {
    log::warning(what + "\na fresh start (checkpoint.resume: auto-or-fresh)");
    return source;
  }
  throw ConfigError(cfg.source + ": " + what +
                    (automatic ? "\n(checkpoint.resume: auto-or-fresh starts fresh instead)" : std::string()));
}

/// checkpoint.resume: the model from the checkpoint, the buffer from the snapshot written with
/// it, and the run's counters, so that a chain of runs continues where the last one stopped.
void resume(PluginState& s, TrainerState& t, ResumeSource source) {
  const Config& cfg = s.config;
  const std::string& path = source.checkpoint;
  const auto meta = trainer_module().checkpoint_metadata(path);
  const coupling::StoredSpec stored = resumable_conditioning(cfg, t, path, meta);
  t.model->restore(path);  // checks architecture, shapes and version against this config
  auto number = [&](const char* key) {
    auto it = meta.find(key);
    return it == meta.end() ? 0LL : std::stoll(it->second);
  };
  s.stats.sessions = number("sessions");
  s.stats.steps = number("coupling_steps");
  s.stats.samplings = number("samplings");
  if (auto it = meta.find("datetime"); it != meta.end()) t.resumed_datetime = it->second;
  // The static covariates keep the normalisation the model was trained with, and the residual
  // the regression base it learned the residual of.
  if (stored.has("patch.static_norm") && !cfg.patch.statics.empty())
    t.conditioning.spec.static_norms = stored.spec.static_norms;
  if (!stored.spec.regression.empty() && cfg.patch.residual == Residual::kRegression)
    t.patch_options.regression = stored.spec.regression;
  t.resumed_from = path;
  log::info("Resumed from " + path + " (optimizer step " + std::to_string(t.model->step()) + ", " +
            std::to_string(s.stats.sessions) + " training sessions and " + std::to_string(s.stats.steps) +
            " coupling steps so far" + (t.resumed_datetime.empty() ? "" : ", model time " + t.resumed_datetime) + ")");
  if (cfg.checkpoint.buffer) {
    const std::string dir = std::filesystem::path(path).parent_path().string();
    const std::string paired = buffer_path_for_step(dir.empty() ? "." : dir, t.model->step());
    const std::string legacy = (dir.empty() ? std::string(".") : dir) + "/buffer.h5";
    if (!source.buffer_read) source.buffer = read_paired_buffer(cfg, t, path, t.model->step());
    if (source.buffer) {
      *t.buffer = std::move(*source.buffer);
      int parts = 1;
      while (is_file(buffer_part_path(dir.empty() ? "." : dir, t.model->step(), parts))) ++parts;
      log::info("Resumed the rolling buffer from " + paired +
                (parts > 1 ? " (" + std::to_string(parts) + " parts)" : std::string()) + ": " +
                std::to_string(t.buffer->steps()) + " steps");
    } else if (is_file(legacy)) {
      *t.buffer = coupling::RollingBuffer::load_h5_range({legacy}, cfg.buffer.capacity, t.first_patch, t.n_patches,
                                                         t.buffer->context_size(), t.buffer->patch_size());
      log::warning("Resumed the rolling buffer from " + legacy + " (" + std::to_string(t.buffer->steps()) +
                   " steps), written by an older finecast without a link to the checkpoint: it may be older or "
                   "newer than " +
                   path);
    } else {
      log::warning("No buffer snapshot " + paired + " beside the checkpoint: the buffer starts empty");
    }
  }
  // A checkpoint written before the first session holds an untrained model: keep buffering.
  t.fresh_weights = s.stats.sessions > 0;
  // The step count goes on from the checkpoint, so sessions fall due on the same steps as in one
  // long run; a session that was due when the last run ended runs at once.
  t.owed.train = number("training_due") != 0 && t.buffer->steps() >= cfg.train.min_steps;
}

/// The CUDA devices this process may use by CUDA_VISIBLE_DEVICES (-1: not set, all of them).
int visible_cuda_devices() {
  const char* env = std::getenv("CUDA_VISIBLE_DEVICES");
  if (env == nullptr) return -1;
  const std::string list = env;
  if (list.empty() || list == "NoDevFiles") return 0;
  return static_cast<int>(std::count(list.begin(), list.end(), ',')) + 1;
}

/// The device of this trainer rank: with several trainer ranks on CUDA, each takes a GPU of its
/// node (train.gpu_ids, or 0, 1, ... in the order of the trainer ranks on the node). A rank that
/// sees one GPU only (scripts/slurm/bind_gpu.sh gives each rank its own) uses that one, cuda:0.
std::string trainer_device(const Config& cfg, MPI_Comm trainers) {
  if (cfg.train.ranks == 1 || (cfg.device != "cuda" && cfg.device != "auto")) return cfg.device;
  MPI_Comm node;
  CHECK_MPI(MPI_Comm_split_type(trainers, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node));
  int local = 0;
  MPI_Comm_rank(node, &local);
  MPI_Comm_free(&node);
  const int visible = visible_cuda_devices();
  if (!cfg.train.gpu_ids.empty()) {
    if (local >= static_cast<int>(cfg.train.gpu_ids.size()))
      throw ConfigError(cfg.source + ": train.gpu_ids lists " + std::to_string(cfg.train.gpu_ids.size()) +
                        " device(s), but trainer rank " + std::to_string(local) + " of a node needs one more");
    const int id = cfg.train.gpu_ids[static_cast<size_t>(local)];
    if (visible >= 0 && id >= visible)
      throw ConfigError(cfg.source + ": train.gpu_ids gives this trainer rank GPU " + std::to_string(id) +
                        ", but CUDA_VISIBLE_DEVICES=" + std::getenv("CUDA_VISIBLE_DEVICES") + " lets it see " +
                        std::to_string(visible) +
                        " (with scripts/slurm/bind_gpu.sh every rank sees only its own: "
                        "leave train.gpu_ids empty)");
    return "cuda:" + std::to_string(id);
  }
  if (visible == 1) return cfg.device == "cuda" ? "cuda:0" : cfg.device;
  return cfg.device == "cuda" ? "cuda:" + std::to_string(local) : cfg.device;
}

/// The rolling buffer and the sampled members of this trainer's patches must fit in the node's
/// memory: a config asking for more is refused before anything is allocated (it once grew a rank
/// until the kernel killed it), naming the keys.
void check_memory(const Config& cfg, int64_t n_patches, int64_t C, int64_t P) {
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  if (pages <= 0 || page <= 0) return;
  const double node = static_cast<double>(pages) * static_cast<double>(page);
  // The buffer, and the sessions' copy of it (context, fine values, weights, two row indices),
  // which is kept from set-up on.
  const double rows = static_cast<double>(cfg.buffer.capacity) * static_cast<double>(n_patches);
  const double buffer = rows * static_cast<double>(C + P + 1) * 4.0 + rows * static_cast<double>(C + 2 * P + 4) * 4.0;
  const double members =
      static_cast<double>(cfg.sample.members) * static_cast<double>(n_patches) * static_cast<double>(P) * 4.0;
  if (buffer + members <= node) return;
  auto gb = [](double bytes) { return std::to_string(bytes / 1e9).substr(0, 6) + " GB"; };
  throw ConfigError(
      cfg.source + ": buffer.capacity " + std::to_string(cfg.buffer.capacity) + " and sample.members " +
      std::to_string(cfg.sample.members) + " need " + gb(buffer) + " (buffer and the sessions' copy of it) + " +
      gb(members) + " (members) on this trainer rank for its " + std::to_string(n_patches) +
      " patches, more than this node's memory (" + gb(node) + "): lower them, or add trainer ranks (train.ranks)");
}

/// A trainer rank: grid, its share of the patches, device, model (fresh or resumed), buffer.
/// Collective over the trainer ranks.
std::unique_ptr<TrainerState> setup_trainer(PluginState& s, const HostFacts& facts, int ranks_on_node) {
  const Config& cfg = s.config;
  const CouplingState& c = *s.coupling;
  auto t = std::make_unique<TrainerState>();
  if (c.is_lead) {
    ensure_output_file(cfg, cfg.sample.output, "sample.output");
    t->output_lock = lock_output(cfg);
  }
  ensure_directory(cfg, cfg.checkpoint.dir, "checkpoint.dir");
  t->conditioning.spec = conditioning_spec(cfg, facts.target.units);
  const int64_t row_cells = read_grid(cfg, *t, c.is_lead);
  if (t->map.n_fine != facts.n_global)
    throw GridError(cfg.source + ": grid.file " + cfg.grid.file + " has " + std::to_string(t->map.n_fine) +
                    " cells, but the host's domain " + std::to_string(cfg.coupling.domain) + " (of " +
                    std::to_string(facts.n_dom) + ") has " + std::to_string(facts.n_global));
  t->output_attrs = facts.target;
  t->output_options.format =
      cfg.output.format == OutputFormat::kCdf5 ? coupling::OutputFormat::kCdf5 : coupling::OutputFormat::kNetcdf4;
  t->output_options.deflate = cfg.output.deflate;
  t->output_options.time_origin = facts.exp_start;
  for (const auto& [name, value] :
       {std::pair{"title", cfg.output.title}, {"source", cfg.output.source}, {"institution", cfg.output.institution}})
    if (!value.empty()) t->output_globals[name] = value;

  // This trainer's patches: contiguous, balanced ranges in trainer order.
  const int n_trainers = static_cast<int>(c.trainer_ranks.size());
  const int64_t n_coarse = t->map.n_coarse, P = t->map.patch_size;
  for (int k = 0; k < n_trainers; ++k) {
    t->trainer_first.push_back(static_cast<int>(n_coarse * k / n_trainers));
    t->trainer_patches.push_back(static_cast<int>(n_coarse * (k + 1) / n_trainers - n_coarse * k / n_trainers));
  }
  t->first_patch = t->trainer_first[static_cast<size_t>(c.trainer_index)];
  t->n_patches = t->trainer_patches[static_cast<size_t>(c.trainer_index)];
  t->shard = coupling::shard_map(t->map, t->first_patch, t->n_patches);
  t->slot_cells.assign(t->map.fine_of_patch.begin() + t->first_patch * P,
                       t->map.fine_of_patch.begin() + (t->first_patch + t->n_patches) * P);
  // Output records travel to the lead in pieces of at most ~1M cells (whole grid rows).
  t->output_chunk = std::max<int64_t>(row_cells, ((int64_t{1} << 20) / row_cells) * row_cells);

  t->patch_options = coupling::patch_options(t->conditioning.spec);
  const int n_vars = static_cast<int>(cfg.fields.size());
  const int C = coupling::context_size(t->map, n_vars, t->patch_options);
  log::info("Patches: " + std::to_string(n_coarse) + " coarse cells of " + std::to_string(P) +
            " fine cells; context of " + std::to_string(C) + " values (" + std::to_string(n_vars) + " field(s) x " +
            std::to_string(1 + coupling::ring_count(t->map, cfg.patch.context_rings)) + " coarse cells" +
            (cfg.patch.statics.empty() ? std::string()
                                       : ", " + std::to_string(cfg.patch.statics.size()) + " static covariate(s)") +
            "); the model learns fine minus " +
            (cfg.patch.residual == Residual::kRegression
                 ? "the regression on the static covariates over the conservative " +
                       schema::name_of(t->conditioning.spec.interpolant) + " interpolant"
             : cfg.patch.residual == Residual::kInterp
                 ? "the conservative " + schema::name_of(t->conditioning.spec.interpolant) + " interpolant"
                 : std::string("the coarse value")) +
            (n_trainers > 1
                 ? "; " + std::to_string(n_trainers) + " trainer ranks, this one holds patches " +
                       std::to_string(t->first_patch) + "-" + std::to_string(t->first_patch + t->n_patches - 1)
                 : std::string()));
  if (t->map.limited_area.on) log::info("Grid " + cfg.grid.file + ": " + coupling::limited_area_text(t->map));

  check_memory(cfg, t->n_patches, C, P);

  // LibTorch's threads are set around finecast's own work only (the host's OpenMP count stays
  // as it is); the device line reports them. LibTorch is loaded here, on trainer ranks only.
  t->torch_threads = torch_threads(cfg, ranks_on_node);
  t->model = build_model(cfg, t->patch_options, C, static_cast<int>(P), trainer_device(cfg, c.trainers),
                         t->torch_threads, ranks_on_node);
  t->model->set_pause_gate(t->pause);
  t->session.set_nice(cfg.train.nice);
  if (n_trainers > 1) {
    t->reducer = std::make_shared<MpiReducer>(c.training);
    t->model->set_reducer(t->reducer);
    // The other trainer ranks wait in the failed session's gradient sums: the run cannot go on.
    MPI_Comm comm = c.comm;
    t->session.on_group_failure([comm](const std::string& what) {
      log::error("a training session failed on this trainer rank (" + what +
                 "); with train.ranks > 1 the others wait in the session's collectives, so the run is aborted");
      MPI_Abort(comm, 1);
    });
  }

  std::vector<float> weights(t->shard.fine_weight.begin(), t->shard.fine_weight.end());
  t->buffer = std::make_unique<coupling::RollingBuffer>(cfg.buffer.capacity, t->n_patches, C, static_cast<int>(P),
                                                        std::move(weights));
  // The sessions' copy of the buffer, allocated now rather than in the first session's step.
  t->session.reserve(static_cast<int64_t>(cfg.buffer.capacity) * t->n_patches, C, static_cast<int>(P));
  t->command = facts.command;
  if (!cfg.checkpoint.resume.empty()) {
    if (ResumeSource source = choose_resume_source(cfg, *t, c.trainers, facts); !source.checkpoint.empty())
      resume(s, *t, std::move(source));
  } else if (c.is_lead && !host_restart_time(facts).empty()) {
    // A restarted chunk of the host that trains from scratch beside its predecessor's
    // checkpoints: the setting a restart chain forgot, most likely.
    if (const auto found = trainer_module().checkpoints_newest_first(cfg.checkpoint.dir); !found.empty())
      log::warning("the host restarts at " + host_restart_time(facts) + " (a later chunk of its experiment), and " +
                   cfg.checkpoint.dir + " holds " + std::to_string(found.size()) + " checkpoint(s) (the newest " +
                   found.front().second +
                   "), but checkpoint.resume is empty: finecast trains from scratch. Set checkpoint.resume: auto "
                   "to continue where the chunk before stopped");
  }
  log::info(t->buffer->describe());
  t->slot_values.resize(static_cast<size_t>(input_count(cfg)) * t->slot_cells.size());
  t->all_coarse.resize(static_cast<size_t>(n_vars * n_coarse));
  return t;
}

/// coupling.device_fields: the CUDA driver when this rank reads the fields from the host's device
/// copies, else null (auto on a host without a device or a rank without the driver; off).
std::unique_ptr<DeviceReader> device_reader(const Config& cfg) {
  const DeviceFields mode = cfg.coupling.device_fields;
  if (mode == DeviceFields::kOff) return nullptr;
  std::string why;
  std::unique_ptr<DeviceReader> reader;
  if (!comin_descrdata_get_global_has_device())
    why = "the host has no device (ComIn's has_device is false)";
  else
    reader = DeviceReader::open(why);
  if (!reader && mode == DeviceFields::kOn)
    throw ConfigError(cfg.source + ": coupling.device_fields: on, but " + why +
                      " (auto falls back to host access; off always uses it)");
  return reader;
}

/// With device fields: every field has a device copy; rank 0 says what a step copies.
void report_device_fields(const Config& cfg, const CouplingState& c) {
  int64_t per_step = 0, once = 0, whole = 0;
  for (size_t i = 0; i < c.fields.size(); ++i) {
    const HostField& f = c.fields[i];
    if (comin_var_get_device_ptr(f.handle) == nullptr)
      throw ConfigError(cfg.source + ": coupling.device_fields: host variable \"" + f.name +
                        "\" has no device copy; set coupling.device_fields: off");
    const int64_t element = f.datatype == COMIN_VAR_DATATYPE_FLOAT ? sizeof(float) : sizeof(double);
    int shape[5];
    comin_var_get_shape(f.handle, shape);
    (i < cfg.fields.size() ? per_step : once) += f.owned.region.elements() * element;
    whole += int64_t{shape[0]} * shape[1] * shape[2] * shape[3] * shape[4] * element;
  }
  if (c.rank != 0) return;
  log::info("coupling.device_fields: reading " + std::to_string(c.fields.size()) +
            " field(s) from the host's device copies (COMIN_FLAG_DEVICE): " + std::to_string(per_step / 1024) +
            " KiB a coupling step on this rank, + " + std::to_string(once / 1024) +
            " KiB of static fields once; host access would have ComIn copy " + std::to_string(whole / 1024) +
            " KiB of whole fields to the host before every callback");
}

void couple_fields(PluginState& s) {
  const Config& cfg = s.config;
  CouplingState& c = *s.coupling;
  const int jg = cfg.coupling.domain;
  const auto ep = static_cast<t_comin_entry_point>(s.coupling_ep);
  c.device = device_reader(cfg);
  // With the device copies, ComIn copies none of these fields to the host before each callback.
  const int read = c.device ? COMIN_FLAG_READ | COMIN_FLAG_DEVICE : COMIN_FLAG_READ;
  for (size_t i = 0; i < cfg.fields.size(); ++i)
    c.fields.push_back(
        get_field(cfg, cfg.fields[i], i < cfg.field_levels.size() ? cfg.field_levels[i] : 0, jg, ep, read, "fields"));
  if (!cfg.patch.orography.empty())
    c.fields.push_back(get_field(cfg, cfg.patch.orography, 0, jg, ep, read, "patch.orography"));
  for (const auto& name : cfg.patch.statics)  // gathered once, like the orography
    c.fields.push_back(get_field(cfg, name, 0, jg, ep, read, "patch.static"));

  const size_t first_static = cfg.fields.size() + (cfg.patch.orography.empty() ? 0 : 1);
  for (size_t i = 0; i < c.fields.size(); ++i)
    locate_owned_cells(cfg, c.fields[i], jg,
                       i < cfg.fields.size() ? "fields"
                       : i < first_static    ? "patch.orography"
                                             : "patch.static");
  for (const auto& f : c.fields)
    if (f.owned.global_index != c.fields.front().owned.global_index)
      throw ConfigError(cfg.source + ": host variable \"" + f.name + "\" is not a cell field like \"" +
                        c.fields.front().name + "\" (different owned cells)");
  if (c.device) report_device_fields(cfg, c);
  if (!cfg.sample.write_back.empty()) {
    c.write_back = get_field(cfg, cfg.sample.write_back, 0, jg, ep, COMIN_FLAG_WRITE, "sample.write_back");
    // Only into finecast's own variable: a host that handed over one of its fields instead
    // (it keeps that field's metadata) would see a prognostic field overwritten.
    if (text_metadata(cfg.sample.write_back, jg, "long_name") != write_back_marker(cfg))
      throw ConfigError(cfg.source + ": sample.write_back: \"" + cfg.sample.write_back +
                        "\" is one of the host's own fields; write-back goes into a new variable that finecast "
                        "creates (choose a name the host does not have, e.g. " +
                        target_field(cfg) + "_finecast)");
    locate_owned_cells(cfg, c.write_back, jg, "sample.write_back");
  }
}

/// A rank's placement as it travels (fixed size, plain bytes).
struct Record {
  char node[MPI_MAX_PROCESSOR_NAME + 1];
  char visible[256];
  char device[128];
  int trainer;
  int external;
};

void copy_text(char* out, size_t size, const std::string& text) {
  std::memset(out, 0, size);
  std::memcpy(out, text.data(), std::min(size - 1, text.size()));
}

/// Collective over the plugin's communicator, after the trainers built their models: every rank
/// sends its placement to the lead trainer, which logs placement_report.
void report_placement(const PluginState& s) {
  const CouplingState& c = *s.coupling;
  Record mine{};
  char node[MPI_MAX_PROCESSOR_NAME + 1] = {0};
  int length = 0;
  CHECK_MPI(MPI_Get_processor_name(node, &length));
  copy_text(mine.node, sizeof mine.node, std::string(node, static_cast<size_t>(length)));
  const char* visible = std::getenv("CUDA_VISIBLE_DEVICES");
  copy_text(mine.visible, sizeof mine.visible, visible != nullptr ? visible : "*");
  copy_text(mine.device, sizeof mine.device, s.trainer ? s.trainer->model->device_identity() : "");
  mine.trainer = c.trainer_index;
  mine.external = c.external ? 1 : 0;
  const int lead = c.trainer_ranks.front();
  std::vector<Record> all(static_cast<size_t>(c.rank == lead ? c.size : 0));
  const int bytes = static_cast<int>(sizeof mine);
  CHECK_MPI(MPI_Gather(&mine, bytes, MPI_BYTE, all.data(), bytes, MPI_BYTE, lead, c.comm));
  if (c.rank != lead) return;
  std::vector<RankPlacement> ranks;
  for (const Record& r : all) ranks.push_back({r.node, r.visible, r.device, r.trainer, r.external != 0});
  const PlacementReport report = placement_report(ranks, s.config.train.device_memory_fraction);
  for (const std::string& line : report.info) log::info(line);
  for (const std::string& line : report.warnings) log::warning(line);
}

/// The trainer ranks: the first at coupling.trainer_rank, the others spread evenly over the
/// communicator (across nodes) or packed after it; with train.placement external the
/// finecast-trainer processes. The configuration errors of the layout name the keys.
void choose_trainers(const Config& cfg, const PluginComm& pc, CouplingState& c) {
  const int n_external = static_cast<int>(pc.external_ranks.size());
  const std::string comm = schema::name_of(cfg.coupling.communicator) + " communicator";
  if (cfg.train.placement == Placement::kExternal) {
    if (n_external == 0)
      throw ConfigError(cfg.source +
                        ": train.placement external, but no finecast-trainer process joined the plugin's "
                        "communicator; start them in the host's job with the comm name of the host's plugin list, "
                        "e.g. mpiexec -n 4 finecast-host run.yaml : -n " +
                        std::to_string(cfg.train.ranks) + " finecast-trainer --comm finecast");
    if (n_external != cfg.train.ranks)
      throw ConfigError(cfg.source + ": train.ranks is " + std::to_string(cfg.train.ranks) + " but " +
                        std::to_string(n_external) +
                        " finecast-trainer process(es) joined the plugin's communicator (train.placement external: "
                        "every finecast-trainer process is a trainer rank)");
    c.trainer_ranks = pc.external_ranks;
  } else {
    if (n_external > 0)
      throw ConfigError(cfg.source + ": " + std::to_string(n_external) +
                        " finecast-trainer process(es) joined the plugin's communicator, but train.placement is " +
                        schema::name_of(cfg.train.placement) + "; set train.placement: external");
    if (cfg.coupling.trainer_rank >= c.size)
      throw ConfigError(cfg.source + ": coupling.trainer_rank is " + std::to_string(cfg.coupling.trainer_rank) +
                        " but the " + comm + " has " + std::to_string(c.size) + " ranks");
    if (cfg.train.ranks > c.size)
      throw ConfigError(cfg.source + ": train.ranks is " + std::to_string(cfg.train.ranks) + " but the " + comm +
                        " has " + std::to_string(c.size) + " ranks");
    for (int k = 0; k < cfg.train.ranks; ++k) {
      const int offset =
          cfg.train.placement == Placement::kPacked ? k : static_cast<int>(int64_t{k} * c.size / cfg.train.ranks);
      c.trainer_ranks.push_back((cfg.coupling.trainer_rank + offset) % c.size);
    }
  }
  const auto me = std::find(c.trainer_ranks.begin(), c.trainer_ranks.end(), c.rank);
  c.trainer_index = me == c.trainer_ranks.end() ? -1 : static_cast<int>(me - c.trainer_ranks.begin());
  c.is_trainer = c.trainer_index >= 0;
  c.is_lead = c.trainer_index == 0;
}

}  // namespace

void check_mpi_thread_level(const Config& cfg, bool external_process) {
  if (!cfg.train.async || cfg.train.ranks == 1) return;
  // Which processes hold the trainer ranks: the host's, or finecast-trainer's (which initialises
  // MPI itself, with MPI_THREAD_MULTIPLE). Only a group of trainer ranks makes MPI calls on its
  // training threads (the gradient sums); one trainer rank makes none there, so any thread level
  // will do (docs/plugin.md).
  if ((cfg.train.placement == Placement::kExternal) != external_process) return;
  int provided = MPI_THREAD_SINGLE;
  CHECK_MPI(MPI_Query_thread(&provided));
  if (provided >= MPI_THREAD_MULTIPLE) return;
  static const char* const kLevels[] = {"MPI_THREAD_SINGLE", "MPI_THREAD_FUNNELED", "MPI_THREAD_SERIALIZED"};
  const char* level = provided >= MPI_THREAD_SINGLE && provided <= MPI_THREAD_SERIALIZED
                          ? kLevels[provided - MPI_THREAD_SINGLE]
                          : "a level below MPI_THREAD_MULTIPLE";
  throw ConfigError(cfg.source + ": train.ranks " + std::to_string(cfg.train.ranks) +
                    " with train.async: true: the trainer ranks sum their gradients over MPI on their training "
                    "threads while the host's thread makes its own MPI calls, which needs MPI_THREAD_MULTIPLE, but "
                    "this process's MPI was initialised with " +
                    level +
                    (external_process ? std::string("; set train.async: false")
                                      : std::string("; set train.placement: external (finecast-trainer processes "
                                                    "initialise MPI themselves, so they train asynchronously under "
                                                    "any host; docs/scaling.md), or train.async: false, or "
                                                    "train.ranks: 1")));
}

std::string buffer_path_for_step(const std::string& dir, long long step) {
  char name[40];
  std::snprintf(name, sizeof name, "buffer_%08lld.h5", step);
  return (std::filesystem::path(dir) / name).string();
}

t_comin_entry_point primary_constructor() {
  const int id = comin_current_get_plugin_id();
  // A plugin list that names this library twice gets one library (dlopen shares it) with one
  // state: a second instance would overwrite the first's.
  if (has_plugin_state())
    throw ConfigError("finecast is listed twice in the host's plugin list (plugins " +
                      std::to_string(plugin_state().plugin_id) + " and " + std::to_string(id) +
                      "); one finecast instance runs per process: couple several fields through one config's "
                      "`fields`");
  const int host_rank = comin_parallel_get_host_mpi_rank();
  log::configure(host_rank, log::Level::kInfo, host_rank == 0);

  const std::string options = fortran_string(comin_current_get_plugin_options);
  std::vector<std::string> overrides = split_options(options);
  const std::string path = overrides.empty() ? std::string() : overrides.front();
  if (!overrides.empty()) overrides.erase(overrides.begin());
  if (path.empty())
    throw ConfigError(
        "the plugin options must be the path of finecast's YAML config, optionally followed by "
        "key.path=value overrides (e.g. options = \"configs/demo.yaml device=cpu\"); got none");
  PluginState& s = create_plugin_state(load_config(path, overrides));
  s.plugin_id = id;
  s.host_rank = host_rank;
  s.options = options;
  s.config_text = to_yaml(s.config);
  const Config& cfg = s.config;
  log::configure(host_rank, cfg.log.level, cfg.log.all_ranks || host_rank == 0);
  s.coupling_ep = entry_point_id(cfg.coupling.entry_point);
  if (!cfg.sample.write_back.empty()) {
    // finecast's own 2-D variable, exclusively: nobody else writes it, and it never is one of
    // the host's fields (a requested variable is 3-D unless zaxis_id says otherwise).
    const t_comin_var_descriptor d = descriptor(cfg.sample.write_back, cfg.coupling.domain);
    comin_var_request_add(d, true);
    comin_metadata_set_integer(d, "zaxis_id", COMIN_ZAXIS_2D);
    comin_metadata_set_integer(d, "datatype", COMIN_VAR_DATATYPE_DOUBLE);
    // Not a tracer. ICON takes false when unset; ComIn 0.2's comin_replay reads the key of every
    // requested variable and stops the run (std::out_of_range) when a plugin did not set it.
    comin_metadata_set_logical(d, "tracer", false);
    comin_metadata_set_character(d, "long_name", write_back_marker(cfg).c_str());
  }
  return static_cast<t_comin_entry_point>(s.coupling_ep);
}

HostFacts host_facts(const PluginState& s) {
  const Config& cfg = s.config;
  const int jg = cfg.coupling.domain;
  if (jg > comin_descrdata_get_global_n_dom())
    throw ConfigError(cfg.source + ": coupling.domain is " + std::to_string(jg) + " but the host has " +
                      std::to_string(comin_descrdata_get_global_n_dom()) + " domain(s)");
  HostFacts facts;
  facts.options = s.options;
  facts.config = s.config_text;
  std::error_code ec;
  facts.working_dir = std::filesystem::current_path(ec).string();
  facts.n_global = comin_descrdata_get_domain_cells_ncells_global(jg);
  facts.n_dom = comin_descrdata_get_global_n_dom();
  facts.exp_start = fortran_string(comin_descrdata_get_simulation_interval_exp_start);
  facts.run_start = fortran_string(comin_descrdata_get_simulation_interval_run_start);
  facts.command = process_command_line();
  // The downscaled field's description, as the host gives it in its metadata. An unknown field
  // is named with the host's variables when the fields are coupled (couple_fields).
  const std::string& field = target_field(cfg);
  if (!host_has_variable(field, jg)) return facts;
  facts.target.units = text_metadata(field, jg, "units");
  facts.target.standard_name = text_metadata(field, jg, "standard_name");
  facts.target.long_name = text_metadata(field, jg, "long_name");
  if (facts.target.long_name.empty()) facts.target.long_name = field;
  return facts;
}

void secondary_constructor() {
  PluginState& s = plugin_state();
  const int base = s.config.coupling.communicator == CommunicatorKind::kPlugin ? comin_parallel_get_plugin_mpi_comm()
                                                                               : comin_parallel_get_host_mpi_comm();
  PluginComm pc = join_plugin_comm(MPI_Comm_f2c(base), false);
  HostFacts facts;
  // A failure here is agreed on with every rank's checks in setup_coupling (one report).
  const std::string failure = failure_of([&] {
    check_mpi_thread_level(s.config, false);
    facts = host_facts(s);
  });
  share_host_facts(pc, facts);
  setup_coupling(s, std::move(pc), facts, failure);
}

void setup_coupling(PluginState& s, PluginComm pc, const HostFacts& facts, const std::string& earlier_failure) {
  const Config& cfg = s.config;
  s.coupling = std::make_unique<CouplingState>();
  CouplingState& c = *s.coupling;
  c.comm = pc.comm;
  c.events = pc.events;
  c.rank = pc.rank;
  c.size = pc.size;
  c.external = std::find(pc.external_ranks.begin(), pc.external_ranks.end(), pc.rank) != pc.external_ranks.end();
  c.announces = !pc.external_ranks.empty() && pc.rank == pc.host_root;
  // The checks every rank makes (the same config, the same host): local work, agreed on before
  // the first collective, so that an error is reported once with the ranks it happened on.
  std::string failure = earlier_failure;
  if (failure.empty())
    failure = failure_of([&] {
      check_output_place(cfg);  // before any file is touched (the host's inputs are read by now)
      choose_trainers(cfg, pc, c);
      if (!c.external) couple_fields(s);  // a finecast-trainer reads no host variable and owns no cell
    });
  agree_or_stop(c.comm, failure, kSetup);
  CHECK_MPI(MPI_Comm_split(c.comm, c.is_trainer ? 0 : MPI_UNDEFINED, c.trainer_index, &c.trainers));
  if (c.is_trainer) {
    CHECK_MPI(MPI_Comm_set_errhandler(c.trainers, MPI_ERRORS_RETURN));
    CHECK_MPI(MPI_Comm_dup(c.trainers, &c.training));
  }
  log::configure(c.rank, cfg.log.level, cfg.log.all_ranks || c.is_lead);

  static const std::vector<int64_t> kNoCells;
  const std::vector<int64_t>& owned = c.external ? kNoCells : c.fields.front().owned.global_index;
  c.n_owned = static_cast<int64_t>(owned.size());
  c.local_values.resize(static_cast<size_t>(input_count(cfg)) * static_cast<size_t>(c.n_owned));
  const int ranks_on_node = ranks_on_this_node(c.comm);  // collective, so before the trainer-only part
  if (c.trainer_ranks.size() == 1) {
    // One trainer's set-up has no collective inside: its failure (grid file, device, checkpoint)
    // is agreed on too. A group's members wait for each other in theirs, so a failure there
    // stops the run at once (guard), reported by each failing trainer.
    agree_or_stop(c.comm, c.is_trainer ? failure_of([&] { s.trainer = setup_trainer(s, facts, ranks_on_node); }) : "",
                  kSetup);
  } else if (c.is_trainer) {
    s.trainer = setup_trainer(s, facts, ranks_on_node);
  }
  report_placement(s);
  // A resumed run counts on from the checkpoint's coupling step, which only the trainers read:
  // every rank runs the schedule (schedule.hpp) on the same count, or a sampling with write-back
  // would wait for ranks that do not sample at that step (once a deadlock in ICON's restart).
  long long counters[3] = {s.stats.steps, s.stats.sessions, s.stats.samplings};
  CHECK_MPI(MPI_Bcast(counters, 3, MPI_LONG_LONG, c.trainer_ranks.front(), c.comm));
  s.stats.steps = counters[0];
  s.stats.sessions = counters[1];
  s.stats.samplings = counters[2];
  // Where every owned cell goes: the trainer rank owning its patch (collective over all ranks).
  c.redist = std::make_unique<coupling::Redistribution>(
      c.comm, owned, c.is_trainer ? s.trainer->slot_cells : std::vector<int64_t>{}, facts.n_global);
  // The samples' way back: the trainers' slots to the lead (rank 0 of c.trainers), a piece at a time.
  if (c.is_trainer)
    s.trainer->gather = std::make_unique<coupling::RecordGather>(c.trainers, s.trainer->slot_cells, facts.n_global,
                                                                 s.trainer->output_chunk);
  s.transition(Phase::kCoupled);
  // A resumed trained model samples from the first step on: every rank learns that from the first
  // step's agreement; the trainer knows it now.
  if (s.trainer && !s.trainer->resumed_from.empty() && s.stats.sessions > 0) s.transition(Phase::kReady);
  // Which ComIn the plugin runs against (0.2 in ICON 2024.x, 0.3 in 2025.x): comin_library.hpp.
  if (!c.external) log::info("Host: " + comin_library().describe());
  std::string trainers;
  for (int r : c.trainer_ranks) trainers += (trainers.empty() ? "" : ",") + std::to_string(r);
  log::info("Coupling " + std::to_string(cfg.fields.size()) + " field(s) at " + cfg.coupling.entry_point +
            (cfg.coupling.every > 1 ? " every " + std::to_string(cfg.coupling.every) + " calls" : "") + " of domain " +
            std::to_string(cfg.coupling.domain) + " of " + std::to_string(facts.n_dom) + " (grid " + cfg.grid.file +
            ", " + std::to_string(facts.n_global) + " cells) on " +
            std::to_string(c.size - static_cast<int>(pc.external_ranks.size())) + " host rank(s); trainer rank" +
            (c.trainer_ranks.size() > 1 ? "s " : " ") + trainers +
            (pc.external_ranks.empty() ? std::string() : " (finecast-trainer processes)") +
            (cfg.train.async ? " (asynchronous training)" : " (synchronous training)"));
}

}  // namespace finecast::plugin
