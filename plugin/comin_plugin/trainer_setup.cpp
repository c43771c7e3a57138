// SPDX-License-Identifier: BSD-3-Clause
#include "plugin/comin_plugin/trainer_setup.hpp"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "common/checkpoint_files.hpp"
#include "common/log.hpp"
#include "coupling/error.hpp"
#include "coupling/grid/context_stencil.hpp"
#include "coupling/grid/icon_hierarchy.hpp"
#include "plugin/comin_plugin/free_cpus.hpp"
#include "plugin/comin_plugin/mpi_reducer.hpp"
#include "plugin/comin_plugin/output_claim.hpp"
#include "plugin/comin_plugin/rank_layout.hpp"
#include "plugin/comin_plugin/resume.hpp"
#include "plugin/comin_plugin/trainer_module.hpp"

namespace finecast::plugin {
namespace {

bool is_directory(const std::string& path) {
  std::error_code ec;
  return std::filesystem::is_directory(path, ec);
}

/// Torch threads for the trainer: the config's value, else this node's cores divided by the
/// ranks running on it (the host's ranks keep their cores), at least 1.
int torch_threads(const Config& cfg, int ranks_on_node) {
  if (cfg.train.threads > 0) return cfg.train.threads;
  return std::max(1, node_cores() / std::max(1, ranks_on_node));
}

/// The cores the host's ranks leave this trainer: with CPUs of its own (an asynchronous trainer
/// moved to the node's CPUs that no rank may run on), those; else the node's cores less one per
/// host rank on it (an asynchronous session trains while its own rank steps too; a synchronous
/// one has its rank's core), at most the cores this process may run on (an MPI launcher that
/// binds each rank to a core leaves it one), at least 1.
int free_cores(const NodeLayout& layout, bool async) {
  if (async && !layout.free_cpus.empty()) return static_cast<int>(layout.free_cpus.size());
  const int ranks_on_node = layout.ranks;
  const int node = node_cores();
  int mine = node;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0) mine = std::max(1, CPU_COUNT(&set));
  const int left = node - std::max(1, ranks_on_node) + (async ? 0 : 1);
  return std::max(1, std::min(mine, left));
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
                                   int patch_size, const std::string& device, int threads, const NodeLayout& node) {
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
    to.max_threads = free_cores(node, cfg.train.async);
    if (cfg.train.async && !node.free_cpus.empty())
      log::info("train.threads auto: at most " + std::to_string(to.max_threads) + " thread(s): the CPU(s) " +
                cpu_list_text(node.free_cpus) + " this trainer takes of those no rank on this node is bound to");
    else
      log::info("train.threads auto: at most " + std::to_string(to.max_threads) + " thread(s): the core(s) " +
                std::to_string(node.ranks) + " host rank(s) on this node leave free of " +
                std::to_string(node_cores()) +
                (cfg.train.async ? " (train.async: the trainer's own rank steps meanwhile)" : ""));
  }
  std::string device_line;
  auto model = trainer_module().create_model(mo, to, device, cfg.sample.device, threads, device_line);
  log::info(device_line);
  model->limit_device_memory(cfg.train.device_memory_fraction);  // (CUDA only)
  return model;
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

}  // namespace

/// A trainer rank: grid, its share of the patches, device, model (fresh or resumed), buffer.
/// Collective over the trainer ranks.
std::unique_ptr<TrainerState> setup_trainer(PluginState& s, const HostFacts& facts, const NodeLayout& node) {
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
                       schema::name_of(t->conditioning.spec.patch.interpolant) + " interpolant"
             : cfg.patch.residual == Residual::kInterp
                 ? "the conservative " + schema::name_of(t->conditioning.spec.patch.interpolant) + " interpolant"
                 : std::string("the coarse value")) +
            (n_trainers > 1
                 ? "; " + std::to_string(n_trainers) + " trainer ranks, this one holds patches " +
                       std::to_string(t->first_patch) + "-" + std::to_string(t->first_patch + t->n_patches - 1)
                 : std::string()));
  if (t->map.limited_area.on) log::info("Grid " + cfg.grid.file + ": " + coupling::limited_area_text(t->map));

  check_memory(cfg, t->n_patches, C, P);

  // LibTorch's threads are set around finecast's own work only (the host's OpenMP count stays
  // as it is); the device line reports them. LibTorch is loaded here, on trainer ranks only.
  t->torch_threads = torch_threads(cfg, node.ranks);
  t->model = build_model(cfg, t->patch_options, C, static_cast<int>(P), trainer_device(cfg, c.trainers),
                         t->torch_threads, node);
  t->model->set_pause_gate(t->pause);
  // train.nice auto: a trainer on CPUs of its own has no host thread to yield to; one on the host's
  // cores yields them (nice 19), or the host's steps take up to twice as long (docs/performance.md).
  const bool own_cpus = cfg.train.async && !node.free_cpus.empty();
  const int nice = cfg.train.nice >= 0 ? cfg.train.nice : own_cpus ? 0 : 19;
  t->session.set_nice(nice);
  if (own_cpus) {
    t->session.set_cpus(node.free_cpus);
    log::info("train.free_cores: the training thread runs on CPU(s) " + cpu_list_text(node.free_cpus) +
              ", which no rank on this node is bound to (this rank's: the host's)" +
              (cfg.train.nice < 0 ? "; train.nice auto: 0" : ""));
  } else if (cfg.train.async && cfg.train.nice < 0) {
    log::info("train.nice auto: 19: the training thread shares this rank's CPUs with the host and yields them");
  }
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
    if (const auto found = checkpoint_files::checkpoints_newest_first(cfg.checkpoint.dir); !found.empty())
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

}  // namespace finecast::plugin
