// SPDX-License-Identifier: BSD-3-Clause
// The Philox normal draw on the GPU (CUDA builds): the kernel computes each element with the
// same function as the CPU (philox.hpp). No LibTorch here: philox.cpp launches it on the
// current stream with plain pointers.
#include <cuda_runtime.h>

#include <cstdint>

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

/// Fills out[0, n) with elements [0, n) of the draw; returns the cudaError_t of the launch.
extern "C" int finecast_philox_normal_cuda(float* out, int64_t n, uint64_t key, const int64_t* stream, uint32_t purpose,
                                           void* cuda_stream) {
  if (n <= 0) return 0;
  constexpr int kThreads = 256;
  const auto blocks = static_cast<unsigned>((n + kThreads - 1) / kThreads);
  normal_kernel<<<blocks, kThreads, 0, static_cast<cudaStream_t>(cuda_stream)>>>(out, n, key, stream, purpose);
  return static_cast<int>(cudaGetLastError());
}
