// SPDX-License-Identifier: BSD-3-Clause
// The Downscaler's state (internal, LibTorch): flat parameter buffers, optimizer, EMA, statistics.
#pragma once

#include <torch/torch.h>

#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "trainer/data.hpp"
#include "trainer/diffusion.hpp"
#include "trainer/downscaler.hpp"
#include "trainer/fused_mlp.hpp"
#include "trainer/models.hpp"

namespace finecast::trainer {

namespace graphs {
class TrainGraph;
class SampleGraphs;
}  // namespace graphs

/// Everything a checkpoint holds besides the options: the optimizer-side state of the trainer.
/// Also the form of the state kept at the best validation score (keep_best), on the CPU.
struct TrainState {
  torch::Tensor flat, ema, exp_avg, exp_avg_sq;  ///< [N]
  NormSums sums;
  torch::Tensor rng_state;  ///< uint8 CPU generator state
  int64_t step = 0, consecutive_bad = 0, total_bad = 0;
  ValidationRecord validation;
};

struct Downscaler::Impl {
  ModelOptions mo;
  TrainOptions to;
  torch::Device device{torch::kCPU};
  torch::Device sample_device{torch::kCPU};
  bool cuda = false;
  diffusion::Schedule schedule;
  at::Generator gen;  ///< CPU generator: noise, steps, shuffling; its state goes into checkpoints

  std::shared_ptr<models::Denoiser> net;  ///< trained network; parameters are views of `flat`
  std::vector<std::string> names;         ///< parameter names, in `flat` order
  std::vector<int64_t> offsets;           ///< start of each parameter in `flat`
  std::vector<std::vector<int64_t>> shapes;
  torch::Tensor flat, grad, exp_avg, exp_avg_sq, ema, denom;  ///< [N] on the device
  torch::Tensor good_flat, good_exp_avg, good_exp_avg_sq;     ///< last good state (NaN recovery)

  int64_t step = 0;             ///< optimizer steps taken
  int64_t consecutive_bad = 0;  ///< NaN/Inf steps in a row
  int64_t total_bad = 0;

  NormSums sums;
  NormApplied norm;  ///< derived from `sums` at the start of each epoch

  /// The fused CPU path for the MLP (null where it does not apply or is switched off).
  std::unique_ptr<fused::Mlp> fused_mlp;
  torch::Tensor step_table_cpu;  ///< the MLP's sinusoidal table the fused path reads

  /// Micro-batch and accumulation now in use (an out-of-memory back-off halves / doubles them).
  int64_t micro_batch = 0, accumulate = 1;
  ValidationRecord validation;
  std::optional<TrainState> best;  ///< keep_best: the state at the best validation score
  int train_threads = 0;           ///< intra-op threads chosen for training (0 = not set)
  /// train.max_seconds: when the running session's training began, and the budget used before it
  /// (the run's, with budget: run). Inactive when to.max_seconds == 0.
  std::chrono::steady_clock::time_point budget_start{};
  double budget_before = 0.0;
  bool budget_active = false;
  /// Seconds of the budget used so far (0 without a budget).
  double budget_used() const {
    return budget_active
               ? budget_before + std::chrono::duration<double>(std::chrono::steady_clock::now() - budget_start).count()
               : 0.0;
  }
  /// train.max_steps: the optimizer step its count starts from (the session's first step, or 0
  /// with budget: run) and where the warm-up within it ends. Inactive when to.max_steps == 0.
  int64_t budget_step0 = 0;
  int64_t budget_warm_end = 0;
  bool step_budget_active = false;
  /// Optimizer steps counted against max_steps so far.
  int64_t budget_steps() const { return step - budget_step0; }
  /// train.max_seconds or train.max_steps is spent: no further optimizer step in this session.
  bool budget_reached() const {
    return (budget_active && budget_used() >= to.max_seconds) || (step_budget_active && budget_steps() >= to.max_steps);
  }
  /// The learning rate of the next optimizer step (warm-up, decay by steps or over the budget,
  /// plateau reductions).
  double current_lr() const;

  /// Network with the EMA weights for validation (autograd path), parameters views of eval_flat.
  std::shared_ptr<models::Denoiser> eval_net;
  torch::Tensor eval_flat;

  /// CUDA graph of the training step (null on the CPU or when switched off).
  std::unique_ptr<graphs::TrainGraph> train_graph;
  bool train_graph_failed = false;  ///< a capture or replay failed: eager from then on
  /// The captured step's optimizer tail as two CUDA kernels (adamw::graph_update_cuda) rather
  /// than ~40 tensor operations, where the build has them; off only for benchmarks (side by side).
  bool fused_graph_update = true;
  /// Tests: run the graph paths (staging, static step, device-side checks) on any device,
  /// eagerly where no CUDA graph can be captured.
  bool force_graph_path = false;

  /// The sampling copy: its own network on sample_device whose parameters are views of `sample_flat`.
  mutable std::mutex sample_mutex;
  std::shared_ptr<models::Denoiser> sample_net;
  torch::Tensor sample_flat;
  NormApplied sample_norm;
  diffusion::Schedule sample_schedule;            ///< on sample_device
  std::unique_ptr<fused::Mlp> sample_fused;       ///< fused sampler (MLP on a CPU sample device)
  mutable std::map<int64_t, int> sample_threads;  ///< threads: auto choices per batch size
  mutable std::mutex log_mutex;
  mutable std::vector<std::string> thread_log;  ///< one line per threads: auto measurement
  std::unique_ptr<graphs::SampleGraphs> sample_graphs;

  Impl(const ModelOptions& m, const TrainOptions& t, const std::string& device, const std::string& sample_device);
  ~Impl();
  /// Tensor `i` of a flat buffer, shaped like parameter i.
  torch::Tensor view(const torch::Tensor& flat_buffer, size_t i) const;
  NormApplied derive_norm() const { return derive_normalisation(sums, mo.context_size, device); }
  /// The fused MLP layout of the flat buffer (by parameter name).
  fused::Layout fused_layout() const;
  std::shared_ptr<Reducer> reducer;  ///< data-parallel group (null: training alone)
  std::shared_ptr<PauseGate> pause;  ///< held by another thread: wait before the next step (null: none)

  /// A copy of the training state on the CPU, and its inverse.
  TrainState capture_state() const;
  void apply_state(const TrainState& s);
};

/// The only way to the state behind a Downscaler from outside it (Downscaler befriends it);
/// internal like this header, which is not installed.
struct DownscalerInternals {
  static Downscaler::Impl& of(Downscaler& d) { return *d.impl_; }
  static const Downscaler::Impl& of(const Downscaler& d) { return *d.impl_; }
};

/// The state behind `d` (weights, optimizer moments, generator), for the trainer's white-box
/// tests: a restore must leave the weights bitwise equal, a resumed run must follow the same
/// trajectory, and so on.
inline auto& internals(Downscaler& d) { return DownscalerInternals::of(d); }
inline const auto& internals(const Downscaler& d) { return DownscalerInternals::of(d); }

}  // namespace finecast::trainer
