// SPDX-License-Identifier: BSD-3-Clause
// The whole sampler loop captured as a CUDA graph per batch shape, its noise drawn inside the
// graph by the Philox kernel (internal).
#pragma once

#include <torch/torch.h>

#include <map>
#include <memory>
#include <string>

#include "trainer/cuda_graphs.hpp"
#include "trainer/downscaler_impl.hpp"

namespace finecast::trainer::graphs {

/// One captured sampler loop per (batch, sampler, steps, eta, weighted); the first call of a
/// shape runs eagerly (warm-up), the second captures, later calls replay.
class SampleGraphs {
 public:
  explicit SampleGraphs(const torch::Device& device) : device_(device) {}
  /// The normalised residual [B,P] on the device, from host (CPU) inputs: normalised context
  /// [B,C], weights [B,P] or undefined, and the noise's parameters (sampling::noise_params, int64
  /// {key, first}). Each input reaches the device in one asynchronous copy from pinned memory;
  /// the `draws` noise fields [draws,B,P] are drawn on the device, in the graph, and equal
  /// sampling::noise's.
  torch::Tensor run(const Downscaler::Impl& im, models::Denoiser& net, const SampleOptions& o, const torch::Tensor& ctx,
                    const torch::Tensor& w, const torch::Tensor& noise_params, int64_t draws);
  size_t shapes() const { return entries_.size(); }
  /// Each step's update in one kernel (diffusion::SamplerSetup::fused_steps); off only for
  /// benchmarks (side by side with the tensor form). Part of a captured loop's shape.
  bool fused_steps = true;
  /// The runner of the shape the last run() used (null before any): for benchmarks.
  Runner* last_runner() { return last_ ? last_->runner.get() : nullptr; }

 private:
  struct Entry {
    std::unique_ptr<Runner> runner;
    torch::Tensor host_ctx, host_w, host_params;  ///< pinned staging
    torch::Tensor ctx, w, params, noise, out;     ///< static device tensors
  };
  torch::Device device_;
  std::map<std::string, Entry> entries_;
  Entry* last_ = nullptr;
};

/// SampleGraphs for a sample device where CUDA graphs can be captured, else null.
std::unique_ptr<SampleGraphs> make_sample_graphs(const torch::Device& device);

}  // namespace finecast::trainer::graphs
