// SPDX-License-Identifier: BSD-3-Clause
// Pieces of the training loop shared by training, validation, thread tuning and the CUDA graph
// path (internal).
#pragma once

#include <torch/torch.h>

#include <functional>
#include <stdexcept>
#include <string>

#include "trainer/data.hpp"
#include "trainer/downscaler.hpp"
#include "trainer/downscaler_impl.hpp"

namespace finecast::trainer {

/// Checks TrainOptions; throws std::invalid_argument naming the key ("train.<key>: ...").
void validate_train_options(const TrainOptions& t);

/// A rough upper estimate of the device memory one training micro-batch of `b` samples needs:
/// parameters, gradient, optimizer and EMA buffers, plus the activations autograd keeps and the
/// backward pass's temporaries. Used only to honour train.max_device_memory.
int64_t estimate_batch_bytes(const ModelOptions& mo, int64_t parameters, int64_t b);

/// What the train.max_device_memory check throws: handled exactly like a CUDA out-of-memory error.
class DeviceMemoryLimit : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// True for a CUDA (or other device) out-of-memory error and for DeviceMemoryLimit.
bool is_out_of_memory(const std::exception& e);

/// The random inputs of one optimizer step, drawn from the trainer's CPU generator in a fixed
/// order (steps, then noise) for the whole global batch, so micro-batching does not change them.
struct StepDraws {
  torch::Tensor idx;        ///< int64 [b] (CPU) rows of the epoch tensors
  torch::Tensor t;          ///< int64 [b] (CPU)
  torch::Tensor eps;        ///< float [b,P] (CPU) raw N(0,1)
  torch::Tensor ctx_noise;  ///< float [b,C] (CPU) raw N(0,1) for train.context_noise, or undefined
  int64_t rows = 0;         ///< rows of the whole step (data-parallel: all members); 0 = b
};

/// Forward + backward of one global batch (split into micro-batches of im.micro_batch) into
/// im.grad; returns the mean loss and the gradient norm. Throws on out-of-memory (real or by
/// the memory limit) before any state but im.grad changed.
struct LossAndNorm {
  double loss = 0, norm = 0;
};
LossAndNorm forward_backward(Downscaler::Impl& im, const EpochTensors& data, const StepDraws& d);

/// The AdamW + EMA update after a good step at the current im.step (learning rate scaled by
/// the plateau factor); increments im.step.
void apply_update(Downscaler::Impl& im, double grad_norm);

/// One pass over `data` (the core of train_epoch; normalised tensors already on the device).
EpochStats run_epoch(Downscaler::Impl& im, const EpochTensors& data,
                     const std::function<void(const std::string&)>& event);

/// train.crps_steps: fine-tunes the EMA (sampling) weights on the fair CRPS of members drawn by
/// DDIM through the network (crps_finetune.cpp); training's own weights and optimizer state are
/// left as they were. Adds a note to `st`, and calls `progress` every tenth of the steps.
/// Nothing when train.crps_steps is 0.
void crps_finetune(Downscaler::Impl& im, const EpochTensors& e, SessionStats& st,
                   const std::function<void(const std::string&)>& progress);

/// Whether the fused CPU MLP path trains this model.
bool uses_fused(const Downscaler::Impl& im);

/// How a training step runs.
enum class TrainPath {
  kEager,  ///< autograd
  kFused,  ///< the fused CPU MLP (fused_mlp.cpp)
  kGraph,  ///< the whole step captured in a CUDA graph (train_graph.cpp; eagerly with im.force_graph_path)
};

/// Whether the fused CPU path runs a model of `mo` on `device`: its architecture has one, the
/// build has a CBLAS, and train.force_autograd is off. Sampling on that device uses it then;
/// training also needs train.context_noise off (train_path).
bool fused_runs(const ModelOptions& mo, const TrainOptions& to, const torch::Device& device);

/// The one choice of the training path. Without an epoch (global = 0): the path the model takes
/// (training_path(); the constructor builds the fused trainer for kFused). For an epoch of steps
/// of `global` rows: kGraph only with one micro-batch per step, training alone (not `group`,
/// data-parallel), and within train.max_device_memory; eager otherwise.
TrainPath train_path(const Downscaler::Impl& im, int64_t global = 0, bool group = false);

}  // namespace finecast::trainer
