// SPDX-License-Identifier: BSD-3-Clause
// Start-up of the plugin: config, host fields, communicator, and on the trainer rank the grid,
// the model and the buffer. Everything that can be checked before the first time step is. The
// parts: host_fields (the host's variables), rank_layout (trainer ranks, placement),
// trainer_setup (a trainer rank's grid, model, buffer) and resume (checkpoint.resume).
#include "plugin/comin_plugin/setup.hpp"

#include <algorithm>
#include <filesystem>
#include <vector>

#include "common/log.hpp"
#include "coupling/error.hpp"
#include "plugin/comin_plugin/comin_library.hpp"
#include "plugin/comin_plugin/guard.hpp"
#include "plugin/comin_plugin/host_api.hpp"
#include "plugin/comin_plugin/host_fields.hpp"
#include "plugin/comin_plugin/output_claim.hpp"
#include "plugin/comin_plugin/plugin_state.hpp"
#include "plugin/comin_plugin/rank_layout.hpp"
#include "plugin/comin_plugin/trainer_setup.hpp"

namespace finecast::plugin {
namespace {

/// What a start-up failure is reported as (agree_or_stop).
const char* const kSetup = "EP_SECONDARY_CONSTRUCTOR";

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
  // Collective, so before the trainer-only part.
  const NodeLayout node = node_layout(c.comm, c.is_trainer && cfg.train.async && cfg.train.free_cores);
  if (c.trainer_ranks.size() == 1) {
    // One trainer's set-up has no collective inside: its failure (grid file, device, checkpoint)
    // is agreed on too. A group's members wait for each other in theirs, so a failure there
    // stops the run at once (guard), reported by each failing trainer.
    agree_or_stop(c.comm, c.is_trainer ? failure_of([&] { s.trainer = setup_trainer(s, facts, node); }) : "", kSetup);
  } else if (c.is_trainer) {
    s.trainer = setup_trainer(s, facts, node);
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
