// SPDX-License-Identifier: BSD-3-Clause
// The conditional diffusion downscaler: options, training, sampling, checkpoints (torch-free API).
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "trainer/checkpoint.hpp"
#include "trainer/options.hpp"
#include "trainer/pause_gate.hpp"
#include "trainer/reducer.hpp"

namespace finecast::trainer {

/// n samples, row-major: context [n,C], fine [n,P], optional weights [n,P] (area weights of the
/// fine cells of each patch; rows are normalised to sum 1; nullptr = uniform). Not copied.
/// `time` [n] (optional) is each sample's time step (e.g. the host's output step number, larger
/// = more recent); the validation split holds out the samples of the most recent steps. Without
/// it, rows are taken to be in time order and each row is its own step.
struct DataView {
  const float* context = nullptr;
  const float* fine = nullptr;
  const float* weights = nullptr;
  int64_t n = 0;
  const int64_t* time = nullptr;
  /// Data-parallel training (set_reducer): each row's index among the rows of the whole group
  /// (`global_rows` of them, ordered by time first, as a single process would hold them), so
  /// that every member draws the same global batches and the group trains as one process would.
  const int64_t* global_row = nullptr;
  int64_t global_rows = 0;
};

/// What one train_epoch did.
struct EpochStats {
  double avg_loss = 0;          ///< mean loss over the good steps (0 when there were none)
  int64_t batches = 0;          ///< steps attempted
  int64_t bad_steps = 0;        ///< steps skipped for a NaN/Inf loss or gradient
  int64_t skipped_samples = 0;  ///< rows dropped because they held NaN/Inf
  double seconds = 0;           ///< wall time of the epoch
  int64_t step = 0;             ///< optimizer steps taken so far (all sessions)
  int64_t oom_backoffs = 0;     ///< out-of-memory back-offs (micro-batch halved) in this epoch
  bool budget_spent = false;    ///< train.max_seconds or max_steps ran out during this epoch (it ended early)
};

/// Where a train_session's wall time went, in seconds: its parts in the order they run, which
/// together make up SessionStats::seconds (up to microseconds of bookkeeping between them).
struct SessionAnatomy {
  double cleaning = 0;       ///< the rows as tensors, those holding NaN/Inf dropped
  double split = 0;          ///< the validation split (in a group: the group's row numbering too)
  double normalisation = 0;  ///< the statistics, and the normalised epoch tensors on the device
  double thread_tuning = 0;  ///< threads: auto's measurement (the first session only)
  double epochs = 0;         ///< the epochs (the sum of EpochStats::seconds; validation within them too)
  double validation = 0;     ///< scoring the held-out samples at the session's end
  double publishing = 0;     ///< the EMA weights to the sampling copy
  /// CPU seconds the training thread itself spent in the parts outside the epochs (its OpenMP
  /// threads not counted): against their wall time, how long the thread waited for a core.
  double cpu_outside_epochs = 0;
  /// The named parts together.
  double sum() const { return cleaning + split + normalisation + thread_tuning + epochs + validation + publishing; }
};

/// What one train_session did (one line per session in the log).
struct SessionStats {
  static constexpr double kNone = std::numeric_limits<double>::quiet_NaN();
  bool trained = false;  ///< false when early stopping had already stopped training
  std::vector<EpochStats> epochs;
  int64_t train_samples = 0, validation_samples = 0;
  int64_t validation_steps = 0;    ///< distinct time steps held out
  double validation_loss = kNone;  ///< diffusion loss of the EMA weights on the held-out samples
  double validation_crps = kNone;  ///< CRPS of a small ensemble, in the units of `fine`
  double score = kNone;            ///< the metric early stopping follows (validation_metric)
  bool improved = false;           ///< score is the best so far
  double best_score = kNone;
  int64_t best_step = -1;  ///< optimizer step of the best score
  int64_t sessions_without_improvement = 0;
  double lr_scale = 1.0;      ///< plateau reductions so far (product of plateau_factor)
  bool stopped = false;       ///< early stopping: later sessions do not train
  bool budget_spent = false;  ///< train.max_seconds or max_steps ran out in this session
  double budget_used = 0;     ///< seconds of the budget used so far (this session, or the run)
  int64_t budget_steps = 0;   ///< optimizer steps counted against train.max_steps (this session, or the run)
  int64_t planned_steps = 0;  ///< steps the session's epochs (or the run) would take, capped by max_steps
  /// This session's optimizer steps so far and planned (its epochs, capped by max_steps), set
  /// before each on_epoch call: the progress line's estimate of the time left.
  int64_t session_steps = 0, session_steps_planned = 0;
  /// What the session did that is worth a line of the log but is no warning (on_event's lines
  /// are): validation scores, a plateau reduction, early stopping, the step budget reached (the
  /// normal end of a step-budgeted run). Appended as they happen, so on_epoch sees them too.
  std::vector<std::string> notes;
  int64_t micro_batch = 0, accumulate = 1;  ///< after any out-of-memory back-off
  int train_threads = 0;                    ///< intra-op threads used (0 = not set by the trainer)
  double seconds = 0;
  SessionAnatomy anatomy;  ///< where `seconds` went
};

/// Where validation-driven training stands; stored in checkpoints.
struct ValidationRecord {
  double best_score = SessionStats::kNone;  ///< NaN until a session was validated
  int64_t best_step = -1;
  int64_t sessions_without_improvement = 0;
  int64_t sessions_since_reduction = 0;  ///< plateau counter
  double lr_scale = 1.0;
  bool stopped = false;
  int64_t sessions = 0;    ///< sessions run through train_session
  double budget_used = 0;  ///< training seconds counted against max_seconds (budget: run)
};

/// The conditional diffusion downscaler (pimpl; move-only). One thread trains; any number of
/// threads may call sample() concurrently with training.
class Downscaler {
 public:
  /// The state behind the interface: named here so the trainer's internal files can take it,
  /// defined in trainer/downscaler_impl.hpp (LibTorch; not installed). Outside the trainer it is
  /// an incomplete type: nothing can reach it.
  struct Impl;

  /// Builds the model on `device` ("cpu", "cuda", "cuda:N", "mps"); throws std::invalid_argument
  /// naming a bad option.
  Downscaler(const ModelOptions& model, const TrainOptions& train, const std::string& device);
  /// Trains on `device` and samples on `sample_device` (publish() copies the weights across in
  /// memory; "" = the training device).
  Downscaler(const ModelOptions& model, const TrainOptions& train, const std::string& device,
             const std::string& sample_device);
  Downscaler(Downscaler&&) noexcept;
  Downscaler& operator=(Downscaler&&) noexcept;
  ~Downscaler();

  /// Accumulates per-feature statistics of the context and the scalar residual statistics
  /// (fine minus coarse). Rows holding NaN/Inf are ignored. train_epoch calls it itself once
  /// when no statistics exist yet.
  void update_normalisation(const DataView& data);

  /// One pass over `data` in a seeded random order. `on_event` receives one line per notable
  /// event (bad step, restore of the last good weights, dropped rows, bf16 ignored).
  EpochStats train_epoch(const DataView& data, const std::function<void(const std::string&)>& on_event = {});

  /// Trains data-parallel with the group of `reducer` (nullptr: alone). Every member then calls
  /// train_session with its own rows (DataView::global_row set) at the same time; the members
  /// draw the same global batches, each computes the gradient of the rows it holds, the
  /// gradients and losses are summed across the group, and every member takes the same step, so
  /// the weights stay identical and equal (to rounding) those of one process holding all rows.
  /// Normalisation statistics and validation scores are summed across the group too.
  void set_reducer(std::shared_ptr<Reducer> reducer);

  /// A gate another thread may hold (the plugin while it samples on the cores a background
  /// session trains on): training waits before each optimizer step while it is held. nullptr: none.
  void set_pause_gate(std::shared_ptr<PauseGate> gate);

  /// A training session: holds out the most recent `validation` fraction of time steps,
  /// accumulates normalisation statistics on the rest, trains `epochs` epochs on it, scores
  /// the EMA weights on the held-out part (loss, CRPS), applies early stopping and plateau
  /// reduction, keeps the best state when keep_best, and publishes. Once early stopping has
  /// stopped training, returns at once with trained = false. `on_event` gets one line per
  /// event worth a warning (thread choice, out-of-memory back-off, ...; validation scores, plateau
  /// and early stopping are SessionStats::notes); `on_epoch` gets the session's stats after each
  /// epoch (its epochs so far, train_samples, notes), as it goes, and during train.crps_steps
  /// (after the epochs) with each of its progress notes.
  SessionStats train_session(const DataView& data, int64_t epochs,
                             const std::function<void(const std::string&)>& on_event = {},
                             const std::function<void(const SessionStats&)>& on_epoch = {});
  /// Validation-driven state (best score, early stopping, learning-rate scale).
  const ValidationRecord& validation_record() const;
  /// Current micro-batch and accumulation (batch_size and accumulate unless an out-of-memory
  /// back-off halved the micro-batch).
  int64_t micro_batch() const;
  int64_t accumulation() const;

  /// Copies the current EMA weights and normalisation to the sampling copy (thread-safe).
  /// train_epoch does not call it; the caller publishes at the end of a training session.
  void publish();

  /// Draws members fine patches per row from the last published weights; safe while another
  /// thread trains. coarse [n] is each patch's coarse value; weights [n,P] or nullptr;
  /// out [n, members, P]. Deterministic for a given seed on CPU.
  /// `progress(rows_done, n)`, when given, is called at every sampler step (rows_done counts the
  /// finished part of the current batch pro rata) and after each internal batch of rows (bounded
  /// batches keep memory flat; 16384 / members rows each), for progress lines.
  void sample(const float* context, const float* coarse, const float* weights, int64_t n, const SampleOptions& options,
              uint64_t seed, float* out,
              const std::function<void(int64_t rows_done, int64_t rows)>& progress = {}) const;

  /// How many of the n context rows ([n, C]) have a feature beyond its training range widened by
  /// `margin` times its width (the bounds sample.clip_context holds the network's input to): the
  /// patches on which the model would extrapolate. 0 for checkpoints that keep no range.
  int64_t rows_beyond_training_range(const float* context, int64_t n, double margin) const;

  /// Writes an HDF5 checkpoint atomically (temporary file in the same directory, flushed, renamed).
  /// `groups`: typed attribute groups stored with it (CheckpointGroups), in the same atomic write.
  void save_checkpoint(const std::string& path, const std::map<std::string, std::string>& metadata = {},
                       const CheckpointGroups& groups = {}) const;
  /// Builds a Downscaler from a checkpoint's options and state, on `device` (sampling on
  /// `sample_device`, "" = the same).
  static Downscaler load_checkpoint(const std::string& path, const std::string& device,
                                    const std::string& sample_device = "");
  /// Writes the state kept at the best validation score (keep_best) as a checkpoint; false
  /// when there is none.
  bool save_best_checkpoint(const std::string& path, const std::map<std::string, std::string>& metadata = {},
                            const CheckpointGroups& groups = {}) const;
  /// Optimizer step of the kept best state, or -1.
  int64_t best_state_step() const;
  /// Loads a checkpoint into this object; throws CheckpointError naming every incompatibility
  /// (architecture, shapes, missing tensors, format version). On error this object is unchanged.
  void restore(const std::string& path);
  /// The user metadata stored with a checkpoint.
  static std::map<std::string, std::string> checkpoint_metadata(const std::string& path);

  int64_t step() const;
  int64_t parameter_count() const;
  const ModelOptions& model_options() const;
  const TrainOptions& train_options() const;
  /// The LibTorch device string in use, e.g. "cpu" or "cuda:0".
  std::string device() const;
  /// The device sample() runs on.
  std::string sample_device() const;
  /// Which training path train_epoch uses: "fused-cpu", "autograd" or "autograd+cuda-graphs".
  std::string training_path() const;
  /// One line per threads: auto measurement so far (training and sampling), for the log.
  std::vector<std::string> thread_choices() const;
  /// Learning rate used at optimizer step `step` (warm-up, then cosine decay, times the
  /// plateau reductions so far).
  double learning_rate(int64_t step) const;

 private:
  friend struct DownscalerInternals;  // white-box access for the trainer's own tests
  explicit Downscaler(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

/// Sets LibTorch's intra-op thread count (process-wide).
void set_torch_threads(int n);

}  // namespace finecast::trainer
