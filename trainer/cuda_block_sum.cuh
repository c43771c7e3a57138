// SPDX-License-Identifier: BSD-3-Clause
// A block-wide sum for finecast's CUDA kernels (internal; included by the .cu files only).
#pragma once

namespace finecast::trainer::cuda {

/// The sum of v over a block of kThreads threads (a power of two) in a fixed tree order, so the
/// same inputs always give the same sum; every thread gets it. `shared` holds kThreads values.
template <int kThreads, class T>
__device__ T block_sum(T v, T* shared) {
  shared[threadIdx.x] = v;
  __syncthreads();
  for (int stride = kThreads / 2; stride > 0; stride >>= 1) {
    if (static_cast<int>(threadIdx.x) < stride) shared[threadIdx.x] += shared[threadIdx.x + stride];
    __syncthreads();
  }
  const T total = shared[0];
  __syncthreads();  // shared may be reused after this
  return total;
}

}  // namespace finecast::trainer::cuda
