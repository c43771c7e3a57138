// SPDX-License-Identifier: BSD-3-Clause
// The Philox normal draws on the GPU (CUDA builds): the kernels compute each element with the
// same function as the CPU (philox.hpp). No LibTorch here: philox_fill.cpp launches them on the
// current stream with plain pointers.
#include <cuda_runtime.h>

#include <cstdint>

#include "trainer/cuda_kernels.hpp"
#include "trainer/philox.hpp"

namespace {

/// The draw's stream number is read on the device, so a captured graph draws new noise at each
/// replay when the host updates it.
__global__ void normal_kernel(float* out, int64_t n, uint64_t key, const int64_t* stream, uint32_t purpose) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n)
    out[i] =
        finecast::trainer::philox::normal_at(key, static_cast<uint64_t>(*stream), purpose, static_cast<uint64_t>(i));
}

}  // namespace

int finecast_philox_normal_cuda(float* out, int64_t n, uint64_t key, const int64_t* stream, uint32_t purpose,
                                void* cuda_stream) {
  if (n <= 0) return 0;
  constexpr int kThreads = 256;
  const auto blocks = static_cast<unsigned>((n + kThreads - 1) / kThreads);
  normal_kernel<<<blocks, kThreads, 0, static_cast<cudaStream_t>(cuda_stream)>>>(out, n, key, stream, purpose);
  return static_cast<int>(cudaGetLastError());
}

namespace {

/// out[d * n + i] = element first + i of draw d (the sampler's noise: one stream per draw).
/// The key and `first` are read on the device (params[0], params[1]), so a captured sampler
/// draws the noise of another seed or another batch of rows at each replay.
__global__ void draws_kernel(float* out, int64_t draws, int64_t n, const int64_t* params, uint32_t purpose) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const int64_t d = blockIdx.y;
  if (i >= n || d >= draws) return;
  const auto key = static_cast<uint64_t>(params[0]), first = static_cast<uint64_t>(params[1]);
  out[d * n + i] = finecast::trainer::philox::normal_at(key, static_cast<uint64_t>(d), purpose, first + i);
}

}  // namespace

int finecast_philox_normal_draws_cuda(float* out, int64_t draws, int64_t n, const int64_t* params, uint32_t purpose,
                                      void* cuda_stream) {
  if (n <= 0 || draws <= 0) return 0;
  if (draws > 65535) return static_cast<int>(cudaErrorInvalidValue);  // gridDim.y
  constexpr int kThreads = 256;
  const dim3 blocks(static_cast<unsigned>((n + kThreads - 1) / kThreads), static_cast<unsigned>(draws));
  draws_kernel<<<blocks, kThreads, 0, static_cast<cudaStream_t>(cuda_stream)>>>(out, draws, n, params, purpose);
  return static_cast<int>(cudaGetLastError());
}
