// SPDX-License-Identifier: BSD-3-Clause
// The sampling core shared by Downscaler::sample and the validation CRPS (internal).
#pragma once

#include <torch/torch.h>

#include <functional>

#include "trainer/data.hpp"
#include "trainer/diffusion.hpp"
#include "trainer/downscaler_impl.hpp"

namespace finecast::trainer::sampling {

/// The network a sampling uses: the fused CPU MLP over a flat parameter buffer, or a module.
struct Model {
  fused::Mlp* fused = nullptr;
  const float* params = nullptr;    ///< with `fused`
  models::Denoiser* net = nullptr;  ///< otherwise
  torch::Device device{torch::kCPU};
  const diffusion::Schedule* schedule = nullptr;
  const NormApplied* norm = nullptr;
  graphs::SampleGraphs* graphs = nullptr;  ///< CUDA graphs of the sampler loop, or null
};

/// Number of pre-drawn noise fields of one sampling: x_T plus one per noisy update (DDPM: T-1;
/// DDIM with eta > 0: one per step but the last; DDIM with eta = 0: none), then with churn one
/// per network evaluation (churn_draws), after the others.
int64_t noise_draws(const ModelOptions& mo, const SampleOptions& o);
/// The churn draws at the end of noise_draws: one per network evaluation (DDPM: T; DDIM: its
/// steps) when o.churn > 0, else 0.
int64_t churn_draws(const ModelOptions& mo, const SampleOptions& o);
/// The noise of rows [first_row, first_row + rows) of a sampling with `seed`: [draws, rows *
/// members, P] (CPU, float). Draw d is stream d of the Philox generator (philox.hpp) keyed by the
/// seed, for the purpose kSamplingNoise; element (row * members + member) * P + cell of the whole
/// sampling, so that a patch's noise does not depend on how the rows are batched.
torch::Tensor noise(int64_t draws, int64_t first_row, int64_t rows, int64_t members, int64_t P, uint64_t seed);
/// What philox::fill_normal_draws needs to draw that noise anywhere: int64 {key, first element}
/// (CPU).
torch::Tensor noise_params(int64_t first_row, int64_t members, int64_t P, uint64_t seed);
/// The churn part of pre-drawn noise [noise_draws, B, P] (undefined without churn).
torch::Tensor churn_noise(const ModelOptions& mo, const SampleOptions& o, const torch::Tensor& noise);

/// Draws o.members fine patches per row (see Downscaler::sample) with model `m`. The noise of
/// each internal batch is drawn at once ([draws, rows*members, P]): on the CPU, or on the device
/// inside a captured sampler loop (the same numbers).
void draw(const Downscaler::Impl& im, const Model& m, const float* context, const float* coarse, const float* weights,
          int64_t n, const SampleOptions& o, uint64_t seed, float* out,
          const std::function<void(int64_t, int64_t)>& progress);

}  // namespace finecast::trainer::sampling
