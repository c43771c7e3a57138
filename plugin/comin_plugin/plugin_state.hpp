// SPDX-License-Identifier: BSD-3-Clause
// The plugin's state. ComIn callbacks take no arguments, so it is reached through one accessor;
// it is split into parts by lifetime and use (the run's settings and phase / every rank from the
// secondary constructor / the trainer rank: its share of the patches, the model, the samples /
// counters), and the step functions take the parts they use. Its phase is an explicit state
// machine (phase.hpp). It is created in comin_main and released completely at EP_DESTRUCTOR,
// before the host finalises MPI.
#pragma once

#include <mpi.h>

#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "comin.h"
#include "common/file_lock.hpp"
#include "coupling/buffer/rolling_buffer.hpp"
#include "coupling/grid/patch_map.hpp"
#include "coupling/grid/patches.hpp"
#include "coupling/io/ensemble_writer.hpp"
#include "coupling/mpi/record_gather.hpp"
#include "coupling/mpi/redistribution.hpp"
#include "coupling/mpi/owned_cells.hpp"
#include "plugin/comin_plugin/conditioning.hpp"
#include "plugin/comin_plugin/device_reader.hpp"
#include "plugin/comin_plugin/faults.hpp"
#include "plugin/comin_plugin/output.hpp"
#include "plugin/comin_plugin/phase.hpp"
#include "plugin/comin_plugin/schedule.hpp"
#include "plugin/comin_plugin/trainer_module.hpp"
#include "plugin/comin_plugin/training_session.hpp"
#include "plugin/config.hpp"

namespace finecast::plugin {

/// One host variable the plugin reads or writes, and where this rank's owned cells sit in it.
struct HostField {
  std::string name;
  int level = 0;  ///< 1-based level of a 3-D variable (1 = model top); 0 = a 2-D variable
  int datatype = COMIN_VAR_DATATYPE_DOUBLE;
  t_comin_var_handle* handle = nullptr;
  coupling::OwnedCells owned;
};

/// Who this rank is among finecast's ranks: finecast's communicator, the trainer ranks, this
/// rank's place among them and their communicators. What the trainers' collectives need.
struct Ranks {
  MPI_Comm comm = MPI_COMM_NULL;  ///< duplicate of the host or plugin communicator
  int rank = 0, size = 1;
  std::vector<int> trainer_ranks;  ///< ranks of `comm` that train, in trainer order (train.ranks)
  int trainer_index = -1;          ///< this rank's place among them; -1 = not a trainer
  bool is_trainer = false;
  bool is_lead = false;               ///< trainer 0 (coupling.trainer_rank): writes outputs and checkpoints
  MPI_Comm trainers = MPI_COMM_NULL;  ///< trainer ranks: the per-step collectives among them
  MPI_Comm training = MPI_COMM_NULL;  ///< trainer ranks: the sessions' gradient sums (the training thread)
};

/// Every rank, from the secondary constructor to EP_DESTRUCTOR: its ranks (the base), the host's
/// variables and the redistribution of their owned cells to the trainer ranks.
struct CouplingState : Ranks {
  bool external = false;            ///< this process is a finecast-trainer, not a host rank (external.hpp)
  bool announces = false;           ///< the host rank that tells the finecast-trainer processes the host's events
  MPI_Comm events = MPI_COMM_NULL;  ///< that rank and the finecast-trainer processes (none without them)
  std::vector<HostField> fields;    ///< input_count(config): fields, orography, static (none: external)
  HostField write_back;             ///< sample.write_back (handle null when unused)
  std::unique_ptr<coupling::Redistribution> redist;  ///< owned cells <-> the trainers' patch slots
  int64_t n_owned = 0;
  std::vector<float> local_values;       ///< [n_inputs][n_owned] packed per step
  std::vector<float> write_back_values;  ///< [n_owned] received at write-back steps
  bool static_gathered = false;          ///< the static inputs (orography) were sent
  /// coupling.device_fields in use: the fields are read from the host's device copies (null:
  /// through comin_var_get_ptr); staging holds one field's copied region.
  std::unique_ptr<DeviceReader> device;
  std::vector<double> staging;
  CouplingState() = default;
  CouplingState(const CouplingState&) = delete;
  CouplingState& operator=(const CouplingState&) = delete;
  ~CouplingState();
};

// A trainer rank's state comes in three parts, so that each step function (trainer_work.hpp)
// names the parts it reads or writes. They are bases of TrainerState: its members keep their
// names (t.buffer, t.model, t.output).

/// A trainer's share of the grid: the patch topology, this trainer's patches, their values of the
/// latest step, their conditioning, the rolling buffer, and the NaN/Inf host values seen.
struct TrainerShare {
  coupling::PatchMap map;                           ///< every patch of the grid (the topology)
  int64_t first_patch = 0, n_patches = 0;           ///< this trainer's patches
  std::vector<int> trainer_patches, trainer_first;  ///< per trainer: its patch count and first patch
  coupling::PatchMap shard;                         ///< this trainer's patches as a map of their own (slots)
  std::vector<int64_t> slot_cells;                  ///< global fine cell of each slot
  coupling::PatchOptions patch_options;
  /// patch.regression_refit: patch_options with the fits of the step before the latest, which the
  /// latest step's patches are sampled on (their base, and patch.global_blend's target); unset
  /// when the latest step was not refitted (then patch_options).
  std::optional<coupling::PatchOptions> sampling_options;
  std::vector<float> slot_values;       ///< [n_inputs][n_slots]: the fields per step, the static inputs once
  std::vector<float> all_coarse;        ///< [n_vars][n_coarse]: every patch's coarse means (from all trainers)
  std::vector<float> all_static_means;  ///< [n_static][n_coarse]: every patch's covariate means (once)
  coupling::Patches patches;            ///< this trainer's patches of the latest step (also what sampling uses)
  ConditioningState conditioning;       ///< static covariates (normalised, on the slots), held-out patches
  std::vector<uint8_t> train_valid;     ///< the step's valid patches less the held-out ones: what the buffer keeps
  std::unique_ptr<coupling::RollingBuffer> buffer;  ///< this trainer's patches
  /// Per field of `fields`, NaN/Inf host values: of the latest step (this trainer's, then summed
  /// over the trainers), and over the run so far (values, steps with any, steps with nothing else).
  std::vector<int64_t> nonfinite_step, nonfinite_values, nonfinite_steps, all_nonfinite_steps;
  bool scales_checked = false;  ///< the fields' magnitude and spread were checked (the run's first step)
};

/// The model (the same on every trainer rank), its training session, its checkpoints, and the
/// work owed to it.
struct TrainerModel {
  std::unique_ptr<Model> model;               ///< from the trainer module (LibTorch)
  TrainingSession session;                    ///< joined before the model it trains is released
  std::shared_ptr<trainer::Reducer> reducer;  ///< the trainers' gradient sums (train.ranks > 1)
  /// Held while this rank samples during a background session: the session waits before its next
  /// step, so the sampler has the cores (or the device) to itself.
  std::shared_ptr<trainer::PauseGate> pause = std::make_shared<trainer::PauseGate>();
  int torch_threads = 1;         ///< LibTorch threads for this rank's training and sampling
  std::string resumed_from;      ///< checkpoint the run started from ("" = fresh)
  std::string resumed_datetime;  ///< model time at which that checkpoint was written
  std::string last_checkpoint;   ///< the latest checkpoint written in this run
  Work owed;                     ///< a session or checkpoint owed from an earlier step (schedule.hpp)
  bool fresh_weights = false;    ///< a session finished (or a trained model was resumed) after the latest sampling
  /// The coupling step through which the sampled weights have seen the buffer: the step at which
  /// the latest collected session took its snapshot (a resumed model: the checkpoint's step).
  /// A sampling at a later step is of data the model has not trained on (sample.calibration).
  long long trained_through = -1;
  long long session_through = -1;  ///< the same for the session in flight
};

/// What a sampling makes: the drawn ensemble of this trainer's patches, its mean (write-back),
/// and on the lead the NetCDF output and what describes it.
struct TrainerOutput {
  coupling::OutputGrid output_grid;                   ///< the fine grid, for the NetCDF output (lead)
  coupling::VarAttributes output_attrs;               ///< units/long_name of the downscaled field
  coupling::WriterOptions output_options;             ///< format, compression, time origin (config output.*)
  std::map<std::string, std::string> output_globals;  ///< title, source, institution (config output.*)
  std::string command;                                ///< the host's command line (the output's history)
  FileLock output_lock;                               ///< the lead's "<sample.output>.lock", held to the end
  std::unique_ptr<Output> output;                     ///< the lead's, opened at the first sampling
  int64_t output_chunk = 0;                           ///< cells per piece of a record sent to the lead
  std::unique_ptr<coupling::RecordGather> gather;     ///< the slots' samples to the lead, piece by piece
  std::vector<float> samples;                         ///< [n_patches][members][P] scratch
  std::vector<float> slot_mean;                       ///< [n_slots]: the ensemble mean for write-back
  int64_t masked = 0;                                 ///< this trainer's samples masked at the last sampling
  /// This trainer's patches drawn at the last sampling, and those of them whose context has a
  /// feature beyond the training range widened by sample.clip_margin.
  int64_t drawn_patches = 0, beyond_range = 0;
  /// sample.calibration prequential (trainer_work.hpp): the run's sums so far, the inflation the
  /// last sampling used, and that sampling's sums on this trainer's patches.
  double calibration_e2 = 0.0, calibration_s2 = 0.0, inflation_used = 1.0;
  double sampling_e2 = 0.0, sampling_s2 = 0.0;
};

/// A trainer rank only: its share of the patches and their buffer, the model (the same on every
/// trainer rank) and the training session, the samples and, on the lead, the output. Destroyed
/// in that order reversed: the output, then the model and session, then the patches and buffer.
struct TrainerState : TrainerShare, TrainerModel, TrainerOutput {
  TrainerState() = default;
  TrainerState(const TrainerState&) = delete;
  TrainerState& operator=(const TrainerState&) = delete;
  /// Joins a running session first: its thread uses the model.
  ~TrainerState();
};

/// Wall-clock seconds spent per activity, for the summary at EP_DESTRUCTOR.
struct Timers {
  double gather = 0;         ///< pack + collective gather (every rank)
  double patches = 0;        ///< coarsening, patch extraction, buffer insert (trainer rank)
  double train_wait = 0;     ///< time the host waited for training (sync mode, or final join)
  double sample = 0;         ///< sampling + output + write-back
  double sample_draw = 0;    ///< of which drawing the ensembles (trainer ranks)
  double sample_output = 0;  ///< of which the NetCDF output (trainer ranks)
  long long sampled = 0;     ///< samplings this run drew (those above; a resumed run's count starts anew)
  double checkpoint = 0;
};

/// Counters of the run (every rank).
struct RunStats {
  long long calls = 0;  ///< calls of the coupling entry point on our domain
  long long steps = 0;  ///< coupling steps done (every `coupling.every`-th call)
  long long sessions = 0;
  long long samplings = 0;
  std::string datetime;  ///< model time of the latest coupling step
  Timers timers;
  AnatomySums anatomy;  ///< where the sessions' time went (trainer ranks)
  /// The run's pace: its first coupling step (stats.steps then; a resumed run counts on from the
  /// checkpoint's) and when it began, for the log's estimates of when work falls due.
  long long first_step = 0;
  std::chrono::steady_clock::time_point first_step_at;
};

/// The run's configuration and identity, from comin_main (finecast-trainer: from the host's
/// first rank); read only from the secondary constructor on.
struct RunSettings {
  explicit RunSettings(Config c);
  Config config;
  int plugin_id = 0;    ///< ComIn's id of this plugin instance
  int coupling_ep = 0;  ///< ComIn id of config.coupling.entry_point
  int host_rank = 0;
  std::string options;  ///< the plugin's options string (config path and overrides)
  /// The resolved config as YAML (to_yaml): what the host's first rank sends finecast-trainer,
  /// and whose hash (config_hash) checkpoints record.
  std::string config_text;
  Faults faults;  ///< testing.fault: where to fail on purpose
};

/// This rank's phase (phase.hpp), moved with the transitions a user should notice logged.
class RunPhase {
 public:
  Phase phase() const { return phase_.current(); }
  /// Moves to `to` (the table of allowed transitions is in phase.cpp); logs `why` for the
  /// phases a user should notice (failed, stopped, ready).
  void transition(Phase to, const std::string& why = "");

 private:
  PhaseMachine phase_;
};

/// The whole plugin state of this process, in parts: the run's settings and phase (the bases),
/// the coupling (every rank), the trainer (trainer ranks) and the run's counters.
class PluginState : public RunSettings, public RunPhase {
 public:
  explicit PluginState(Config config);
  PluginState(const PluginState&) = delete;
  PluginState& operator=(const PluginState&) = delete;
  ~PluginState();

  // ---- from the secondary constructor ----
  std::unique_ptr<CouplingState> coupling;
  std::unique_ptr<TrainerState> trainer;  ///< trainer rank only
  RunStats stats;

  bool is_trainer() const { return coupling && coupling->is_trainer; }
  bool is_lead() const { return coupling && coupling->is_lead; }

  /// Releases everything in a stated order: the trainer state (its session thread is joined,
  /// the output published, the model and buffer freed), then the coupling state (the redistribution,
  /// then the communicator). Called at EP_DESTRUCTOR; idempotent.
  void release();
};

/// The live state of this process; InternalError when there is none.
PluginState& plugin_state();
/// Whether a state exists (comin_main ran and EP_DESTRUCTOR has not yet released it).
bool has_plugin_state();
/// Creates the state (comin_main); a second one in one process is a ConfigError.
PluginState& create_plugin_state(Config config);
/// Destroys the state (end of EP_DESTRUCTOR).
void destroy_plugin_state();

}  // namespace finecast::plugin
