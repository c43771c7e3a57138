// SPDX-License-Identifier: BSD-3-Clause
// The MLP denoiser on the CPU as a few CBLAS calls into buffers allocated once (internal).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "trainer/downscaler.hpp"
#include "trainer/packed_gemm.hpp"
#include "trainer/step_coefficients.hpp"

namespace finecast::trainer::fused {

/// The activations of the MLP (and U-Net) hidden layers. gelu is the tanh approximation
/// (torch::gelu(x, "tanh")), whose derivative needs no erf.

/// True when this build links a CBLAS (the OpenBLAS LibTorch uses), so the fused path exists.
bool compiled();

/// Where the MLP's tensors lie in the flat parameter buffer (offsets in floats).
struct Layout {
  std::vector<int64_t> weight, bias;  ///< hidden layers 0..depth-1, then the output layer
};

/// What a training or validation pass reads for the whole epoch (host memory, row-major).
struct EpochInputs {
  const float* x0 = nullptr;         ///< [n,P] normalised residuals
  const float* context = nullptr;    ///< [n,C] normalised context
  const float* weights = nullptr;    ///< [n,P] rows summing to 1, or nullptr (uniform)
  const float* sqrt_ab = nullptr;    ///< [T]
  const float* sqrt_1mab = nullptr;  ///< [T]
};

/// One micro-batch: rows of the epoch, their steps, and raw standard-normal noise.
struct MicroBatch {
  int64_t b = 0;
  const int64_t* idx = nullptr;  ///< [b] rows of EpochInputs
  const int64_t* t = nullptr;    ///< [b] diffusion steps
  const float* eps = nullptr;    ///< [b,P] N(0,1) draws; the weighted mean is removed here when conservative
};

/// Forward and backward of the MLP denoiser (noising, concatenation, layers, conservative MSE
/// loss) written as sgemm calls plus one fused pass per layer; the reference is LibTorch
/// autograd on models::make_denoiser (tests/trainer/test_fused.cpp). Not thread-safe: one
/// object per thread of use. Buffers grow to the largest batch seen and are then reused.
class Mlp {
 public:
  Mlp(const ModelOptions& model, Layout layout, const float* step_table);

  /// One micro-batch of a training step. Writes (overwrite) or adds (!overwrite) the gradient of
  /// loss_scale * sum of squared errors into `grad`; returns that micro-batch's sum of squared
  /// errors. With loss_scale = 1 / (global batch * P) the accumulated gradient is the gradient
  /// of the mean loss over the global batch. grad == nullptr: forward and loss only.
  double train_micro(const float* params, float* grad, const EpochInputs& in, const MicroBatch& mb, double loss_scale,
                     bool overwrite);

  /// The raw network output (eps or v) for given inputs: x_t [b,P], context [b,C], t [b] -> out
  /// [b,P].
  void forward(const float* params, const float* x_t, const float* context, const int64_t* t, int64_t b, float* out);

  /// What the fused samplers need per batch.
  struct SampleInputs {
    int64_t b = 0;
    const float* context = nullptr;  ///< [b,C] normalised
    const float* weights = nullptr;  ///< [b,P] rows summing to 1, or nullptr
    const float* noise = nullptr;    ///< [draws, b, P] pre-drawn N(0,1); draw 0 is x_T
    int64_t draws = 0;
  };
  /// The whole DDPM or DDIM loop over `steps` (diffusion::sampler_steps, without churn: the
  /// coefficients diffusion::ddpm_sample / ddim_sample step with, and the same conservative
  /// projection and x0 clipping); x0 [b,P] receives the normalised residual. Noise draw k
  /// (k >= 1) is used at the k-th noisy update, in loop order.
  void sample(const float* params, const SampleInputs& in, const std::vector<diffusion::StepCoefficients>& steps,
              bool ddpm, bool v_objective, bool conservative, double x0_clip, float* x0);

 private:
  void ensure(int64_t b, bool derivatives);
  /// The hidden layers from layer 0's product already in z_, then the output product in y_
  /// (without its bias). Layer 0 adds `bias0` (default: its bias) and `row0` ([b,H] or nullptr);
  /// fills h_ (activations) and, when `derivative`, d_ (their derivatives).
  /// `packed`: the products use packed_ (sampling) instead of sgemm on `params`.
  void hidden_layers(const float* params, int64_t b, bool derivative, const float* bias0, const float* row0,
                     bool packed = false);

  ModelOptions mo_;
  Layout layout_;
  const float* table_;
  Activation act_;
  int64_t C_, P_, E_, H_, D_, in_;
  int64_t cap_ = 0;
  std::vector<float> x_, tgt_;             ///< [b,in] layer-0 input, [b,P] target
  std::vector<std::vector<float>> h_, d_;  ///< per hidden layer: activation, derivative [b,H]
  std::vector<float> z_, y_, dy_, g0_,
      g1_;  ///< scratch [b,H], out [b,P], dout [b,P], ping-pong [b,H]
  std::vector<double> row_sse_;
  std::vector<float> emb_;            ///< [H] step-embedding term of layer 0 (sampling)
  std::vector<PackedWeight> packed_;  ///< sampling: layer 0's x_t columns, hidden layers 1.., output
};

}  // namespace finecast::trainer::fused
