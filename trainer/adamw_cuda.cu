// SPDX-License-Identifier: BSD-3-Clause
// The tail of a captured training step on the GPU in two kernels (CUDA builds): the gradient's
// sum of squares in fixed partial sums, then one pass that takes the norm, checks the loss and
// norm for NaN/Inf, clips, applies AdamW and the weight EMA, and counts the step. As eager
// tensor operations (train_graph.cpp's StaticStep on the CPU) this tail is about 40 kernels.
// No LibTorch here: adamw.cpp launches these with plain pointers on the current stream.
#include <cuda_runtime.h>

#include <cstdint>

#include "trainer/cuda_block_sum.cuh"
#include "trainer/cuda_kernels.hpp"

namespace {

using finecast::trainer::cuda::block_sum;

constexpr int kThreads = 256;
/// Partial sums of the norm: a fixed count, so the sum's order and result do not depend on the
/// launch (about two blocks per multiprocessor of an H100/H200).
constexpr int kPartials = 264;

__global__ void sum_squares_kernel(const float* g, int64_t n, double* partial) {
  __shared__ double shared[kThreads];
  double acc = 0;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    const double x = g[i];
    acc += x * x;
  }
  const double total = block_sum<kThreads>(acc, shared);
  if (threadIdx.x == 0) partial[blockIdx.x] = total;
}

/// hyper: {lr, decay factor, step size (lr / bias correction 1), 1 / sqrt(bias correction 2),
/// EMA weight, clipping maximum} (StaticStep::Hyper's order). stats: loss sum, good steps, bad
/// steps, current run of bad steps, longest run.
__global__ void update_kernel(float* p, const float* g, float* m, float* v, float* e, int64_t n, const float* hyper,
                              const float* loss, const double* partial, float* stats) {
  __shared__ double shared[kThreads];
  double acc = 0;
  for (int j = static_cast<int>(threadIdx.x); j < kPartials; j += kThreads) acc += partial[j];
  // Every block sums the same partials in the same order: one norm for all.
  const float norm = static_cast<float>(sqrt(block_sum<kThreads>(acc, shared)));
  const float l = *loss;
  const bool ok = isfinite(l) && isfinite(norm);
  if (blockIdx.x == 0 && threadIdx.x == 0) {
    const float okf = ok ? 1.0f : 0.0f;
    stats[0] += ok ? l : 0.0f;
    stats[1] += okf;
    stats[2] += 1.0f - okf;
    stats[3] = (stats[3] + 1.0f) * (1.0f - okf);
    stats[4] = fmaxf(stats[4], stats[3]);
  }
  if (!ok) return;  // a bad step changes no weight and no moment
  const float decay = hyper[1], step_size = hyper[2], inv_bc2 = hyper[3], ema_weight = hyper[4], clip = hyper[5];
  // torch.nn.utils.clip_grad_norm_: scale by max / (norm + 1e-6) when the norm exceeds max (> 0).
  const float scale = clip > 0 && norm > clip ? clip / (norm + 1e-6f) : 1.0f;
  const float b1c = 0.1f, b2 = 0.999f, b2c = 0.001f;  // 1 - beta in double, rounded: as adamw.hpp
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    const float gi = g[i] * scale;
    const float mi = m[i] + b1c * (gi - m[i]);
    const float vi = b2 * v[i] + b2c * gi * gi;
    const float pi = p[i] * decay - step_size * mi / (sqrtf(vi) * inv_bc2 + 1e-8f);
    m[i] = mi;
    v[i] = vi;
    p[i] = pi;
    e[i] += ema_weight * (pi - e[i]);
  }
}

}  // namespace

int64_t finecast_adamw_graph_partials() { return kPartials; }

/// p weights, g gradient, m and v the moments, e the EMA; every parameter read on the device.
int finecast_adamw_graph_update_cuda(float* p, const float* g, float* m, float* v, float* e, int64_t n,
                                     const float* hyper, const float* loss, double* partial, float* stats,
                                     void* cuda_stream) {
  const auto stream = static_cast<cudaStream_t>(cuda_stream);
  sum_squares_kernel<<<kPartials, kThreads, 0, stream>>>(g, n, partial);
  cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess) return static_cast<int>(err);
  int64_t blocks = (n + kThreads - 1) / kThreads;
  if (blocks < 1) blocks = 1;
  if (blocks > 4096) blocks = 4096;  // grid-stride beyond
  update_kernel<<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(p, g, m, v, e, n, hyper, loss, partial, stats);
  return static_cast<int>(cudaGetLastError());
}
