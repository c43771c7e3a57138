// SPDX-License-Identifier: BSD-3-Clause
// The Downscaler's state (internal, LibTorch): flat parameter buffers, optimizer, EMA, statistics.
#pragma once

#include <torch/torch.h>

#include <mutex>
#include <string>
#include <vector>

#include "trainer/diffusion.hpp"
#include "trainer/downscaler.hpp"
#include "trainer/models.hpp"

namespace finecast::trainer {

/// Running sums behind the normalisation; doubles so that many sessions accumulate exactly enough.
struct NormSums {
  double context_count = 0;
  std::vector<double> context_sum, context_sumsq;  ///< [C]
  double residual_count = 0, residual_sumsq = 0;   ///< residuals have zero weighted patch mean
};

/// Normalisation as applied: context (x - mean) / std per feature, residual r / std.
struct NormApplied {
  torch::Tensor context_mean, context_std;  ///< float32 [C] on the device
  double residual_std = 1.0;
};

struct Downscaler::Impl {
  ModelOptions mo;
  TrainOptions to;
  torch::Device device{torch::kCPU};
  bool cuda = false;
  diffusion::Schedule schedule;
  at::Generator gen;  ///< CPU generator: noise, steps, shuffling; its state goes into checkpoints

  std::shared_ptr<models::Denoiser> net;         ///< trained network; parameters are views of `flat`
  std::vector<std::string> names;                ///< parameter names, in `flat` order
  std::vector<int64_t> offsets;                  ///< start of each parameter in `flat`
  std::vector<std::vector<int64_t>> shapes;
  torch::Tensor flat, grad, exp_avg, exp_avg_sq, ema, denom;  ///< [N] on the device
  torch::Tensor good_flat, good_exp_avg, good_exp_avg_sq;     ///< last good state (NaN recovery)

  int64_t step = 0;             ///< optimizer steps taken
  int64_t consecutive_bad = 0;  ///< NaN/Inf steps in a row
  int64_t total_bad = 0;

  NormSums sums;
  NormApplied norm;  ///< derived from `sums` at the start of each epoch

  /// The sampling copy: its own network whose parameters are views of `sample_flat`.
  mutable std::mutex sample_mutex;
  std::shared_ptr<models::Denoiser> sample_net;
  torch::Tensor sample_flat;
  NormApplied sample_norm;

  Impl(const ModelOptions& m, const TrainOptions& t, const std::string& device);
  /// Tensor `i` of a flat buffer, shaped like parameter i.
  torch::Tensor view(const torch::Tensor& flat_buffer, size_t i) const;
  NormApplied derive_norm() const;
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
