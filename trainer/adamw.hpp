// SPDX-License-Identifier: BSD-3-Clause
// AdamW + gradient clipping + weight EMA as one pass over the flat buffers (internal).
#pragma once

#include <torch/torch.h>

#include <cstdint>

#include "trainer/downscaler.hpp"

namespace finecast::trainer::adamw {

/// Hyper-parameters of one optimizer step (PyTorch's AdamW formulas).
struct StepParams {
  float grad_scale = 1, lr = 0, decay_factor = 1, beta1 = 0.9f, beta2 = 0.999f, eps = 1e-8f, bc1 = 1, bc2_sqrt = 1,
        ema_weight = 0;
  /// 1 - beta in double, then rounded (1.0f - 0.999f would be 4.7e-5 off, as torch's is not).
  float one_minus_beta1 = 0.1f, one_minus_beta2 = 0.001f;
};

/// The parameters of optimizer step `step` (0-based) at learning rate `lr`, with the clipping
/// scale for a gradient of norm `grad_norm` (torch.nn.utils.clip_grad_norm_: max / (norm + 1e-6)
/// when the norm exceeds the maximum) and the EMA weight with its warm-up.
StepParams step_params(const TrainOptions& o, int64_t step, double lr, double grad_norm);

/// p, m, v, e (the EMA) updated in place from gradient g, in one vectorised pass (CPU).
void update_cpu(float* p, const float* g, float* m, float* v, float* e, int64_t n, const StepParams& s);

/// ||g||_2 over a flat CPU buffer (double accumulation).
double norm_cpu(const float* g, int64_t n);

/// The same update as update_cpu with tensor operations on any device (eager).
void update_tensors(torch::Tensor& p, torch::Tensor& g, torch::Tensor& m, torch::Tensor& v, torch::Tensor& e,
                    torch::Tensor& denom, const StepParams& s);

/// The optimizer tail of a captured training step on the GPU (adamw_cuda.cu), everything read on
/// the device: the norm of g, the NaN/Inf check of it and of `loss` (a float scalar), clipping
/// by hyper's maximum, AdamW on p with moments m, v, the EMA e, and the step counted in `stats`
/// (loss sum, good, bad, current bad run, longest run). A bad step changes none of p, m, v, e.
/// `hyper`: float {lr, decay factor, step size, 1 / sqrt(bias correction 2), EMA weight, clip}
/// (graphs::StaticStep::Hyper). `partial`: a double scratch buffer of graph_update_partials()
/// elements. Two kernels; all on the current stream, so a graph captures them. CUDA builds only
/// (graphs::compiled()); elsewhere it throws.
void graph_update_cuda(torch::Tensor& p, const torch::Tensor& g, torch::Tensor& m, torch::Tensor& v, torch::Tensor& e,
                       const torch::Tensor& hyper, const torch::Tensor& loss, torch::Tensor& partial,
                       torch::Tensor& stats);
int64_t graph_update_partials();

}  // namespace finecast::trainer::adamw
