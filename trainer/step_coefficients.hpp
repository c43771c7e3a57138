// SPDX-License-Identifier: BSD-3-Clause
// The one table of a sampling's per-step coefficients (internal, torch-free): diffusion.cpp
// computes it (sampler_steps) and the eager samplers, the fused MLP sampler and the exported
// TorchScript sampler all step with it, so their arithmetic is the same by construction.
#pragma once

#include <cstdint>

namespace finecast::trainer::diffusion {

/// One step of DDPM or DDIM from step t: the network is evaluated at u (t, or with churn the
/// raised step churn_step(t) that x is first re-noised to), giving x0 = a x - b out, eps = b x +
/// a out (v objective; eps: x0 = (x - b out) / a, eps = out); the update is then
/// x' = x0_coef x0 + x_coef x + eps_coef eps + z_coef z for the step's noise z (none where
/// z_coef is 0, and at DDPM's t = 0). Every value is the double the samplers multiply with.
struct StepCoefficients {
  int64_t t = 0, u = 0;
  double a = 1, b = 0;
  double x0_coef = 0, x_coef = 0, eps_coef = 0, z_coef = 0;
  /// Churn (u > t): x_u = keep x_t + renoise z' before the evaluation.
  double keep = 1, renoise = 0;
};

}  // namespace finecast::trainer::diffusion
