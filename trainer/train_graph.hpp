// SPDX-License-Identifier: BSD-3-Clause
// The whole training step in a form a CUDA graph can capture, and its driver (internal).
#pragma once

#include <torch/torch.h>

#include <functional>
#include <memory>
#include <string>

#include "trainer/cuda_graphs.hpp"
#include "trainer/data.hpp"
#include "trainer/downscaler_impl.hpp"
#include "trainer/training_internal.hpp"

namespace finecast::trainer::graphs {

/// One optimizer step (noising, forward, loss, backward, gradient norm, clipping, AdamW, EMA,
/// NaN/Inf check, loss statistics) with every input in fixed device tensors, every
/// hyper-parameter a device scalar, and no host synchronisation: a step with a non-finite loss
/// or gradient changes no weight, only the device-side counters. Eager on any device.
class StaticStep {
 public:
  StaticStep(Downscaler::Impl& im, int64_t batch, bool weighted);
  /// The body: reads the inputs below, updates im's buffers and the statistics.
  void run();
  void reset_statistics();

  // Inputs (views into two device buffers, filled by one copy each per step).
  torch::Tensor device_floats, device_longs;
  torch::Tensor x0, ctx, w, hyper, eps;  ///< [B,P], [B,C], [B,P] or undefined, [kHyper], [B,P]
  torch::Tensor t;                       ///< int64 [B]
  /// train.noise_generator philox: eps is drawn in the step on the device from this int64 scalar
  /// (the optimizer step), and device_floats is copied in without it (copied_floats()).
  bool device_noise = false;
  torch::Tensor noise_stream;
  /// loss sum, good steps, bad steps, current bad run, longest bad run (float [5], device).
  torch::Tensor statistics;
  /// On a GPU of a CUDA build: the tail after backward in two kernels (adamw::graph_update_cuda),
  /// with its scratch buffer of partial sums; else tensor operations.
  bool fused_update = false;
  torch::Tensor partial;

  enum Hyper { kLr, kDecay, kStepSize, kInvBc2, kEmaWeight, kClip, kHyper };
  int64_t floats_per_step() const { return device_floats.numel(); }
  /// The leading floats the host fills and copies each step (all but eps with device noise).
  int64_t copied_floats() const { return device_floats.numel() - (device_noise ? eps.numel() : 0); }

 private:
  Downscaler::Impl& im_;
  int64_t batch_;
};

/// What the graph path did in an epoch (read back once, at its end).
struct EpochResult {
  double loss_sum = 0;
  int64_t good = 0, bad = 0;
};

/// Drives StaticStep through a Runner: per step the host gathers the batch's rows from the
/// epoch's data into one of two pinned staging slots (while the device still computes the
/// previous step), enqueues its copy and replays the graph. The optimizer step counter advances
/// on the host assuming each step is good; finish_epoch corrects it for the bad ones and applies
/// the NaN/Inf recovery (so within an epoch with bad steps the learning-rate schedule runs up
/// to that many steps ahead; without bad steps it equals the eager path).
class TrainGraph {
 public:
  TrainGraph(Downscaler::Impl& im, int64_t batch, bool weighted);
  int64_t batch() const { return batch_; }
  bool weighted() const { return weighted_; }
  bool accepts(int64_t b) const { return b == batch_; }
  /// The epoch's data (copied to the host once per epoch when it lives on the device).
  void set_data(const EpochTensors& data);
  void step(const StepDraws& d);
  /// Waits until every replayed step has finished (before eager work on the same buffers).
  void wait();
  EpochResult finish_epoch(const std::function<void(const std::string&)>& event);
  bool captured() const { return runner_->captured(); }
  /// Whether the step's tail is the two CUDA kernels (StaticStep::fused_update).
  bool fused_update() const { return body_.fused_update; }
  Runner& runner() { return *runner_; }  ///< for benchmarks (graph size, replay time)

 private:
  Downscaler::Impl& im_;
  int64_t batch_;
  bool weighted_;
  StaticStep body_;
  std::unique_ptr<Runner> runner_;
  torch::Tensor host_floats_[2], host_longs_[2];
  torch::Tensor device_copied_, host_copied_[2];  ///< the copied parts of device_floats, host_floats_
  int slot_ = 0;
  int64_t steps_in_epoch_ = 0;
  torch::Tensor data_r0_, data_ctx_, data_w_;  ///< host copies of the epoch's data
};

/// The graph for this epoch's steps of `global` rows (made, or the last one when it fits), where
/// train_path (training_internal.hpp) chose TrainPath::kGraph for them.
TrainGraph* train_graph_for(Downscaler::Impl& im, const EpochTensors& data, int64_t global);

}  // namespace finecast::trainer::graphs
