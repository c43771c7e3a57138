// SPDX-License-Identifier: BSD-3-Clause
// Denoiser networks (internal, LibTorch): an MLP over flat patches and a small U-Net over k x k blocks.
#pragma once

#include <torch/torch.h>

#include <memory>

#include "trainer/downscaler.hpp"

namespace finecast::trainer::models {

/// A network that maps (noisy patch [B,P], normalised context [B,C], step [B] int64) to [B,P].
class Denoiser : public torch::nn::Module {
 public:
  virtual torch::Tensor forward(const torch::Tensor& x_t, const torch::Tensor& context, const torch::Tensor& t) = 0;
};

/// Sinusoidal embedding of the steps 0..T-1: [T, dim] (sin in the first half, cos in the second).
torch::Tensor sinusoidal_table(int64_t steps, int64_t dim);

/// The hidden activation `name` (silu | gelu | relu) applied to x.
torch::Tensor activation(const torch::Tensor& x, Activation act);

/// Checks the options that shape a network; throws std::invalid_argument naming the option.
void validate(const ModelOptions& options);

/// Builds the network that `options.arch` names. Its initial weights come from LibTorch's global
/// generator; callers that need determinism re-draw them with init_parameters.
std::shared_ptr<Denoiser> make_denoiser(const ModelOptions& options, const torch::Device& device);

/// Re-draws every parameter from U(-1/sqrt(fan_in), 1/sqrt(fan_in)) with `gen` (PyTorch's
/// default bounds for Linear and Conv), so initialisation is seeded without global state.
void init_parameters(torch::nn::Module& net, at::Generator& gen);

}  // namespace finecast::trainer::models
