// SPDX-License-Identifier: BSD-3-Clause
#include "trainer/philox_fill.hpp"

#include <ATen/Parallel.h>

#include <stdexcept>
#include <string>

#if FINECAST_HAVE_CUDA
#include <c10/cuda/CUDAStream.h>
extern "C" int finecast_philox_normal_cuda(float* out, int64_t n, uint64_t key, const int64_t* stream, uint32_t purpose,
                                           void* cuda_stream);
#endif

namespace finecast::trainer::philox {

uint64_t key_of(uint64_t seed) {
  // splitmix64: neighbouring seeds give unrelated keys.
  uint64_t z = seed + 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

void fill_normal_cpu(float* out, int64_t n, uint64_t key, uint64_t stream, Purpose purpose) {
  at::parallel_for(0, n, 16384, [&](int64_t begin, int64_t end) {
    for (int64_t e = begin; e < end; ++e) out[e] = normal_at(key, stream, purpose, static_cast<uint64_t>(e));
  });
}

void fill_normal(torch::Tensor& out, uint64_t key, const torch::Tensor& stream, Purpose purpose) {
  if (out.scalar_type() != torch::kFloat32 || !out.is_contiguous())
    throw std::invalid_argument("philox::fill_normal: out must be a contiguous float tensor");
  if (stream.scalar_type() != torch::kInt64 || stream.numel() != 1 || stream.device() != out.device())
    throw std::invalid_argument("philox::fill_normal: stream must be one int64 on out's device");
  if (out.is_cuda()) {
#if FINECAST_HAVE_CUDA
    const int err =
        finecast_philox_normal_cuda(out.data_ptr<float>(), out.numel(), key, stream.data_ptr<int64_t>(), purpose,
                                    c10::cuda::getCurrentCUDAStream(out.device().index()).stream());
    if (err != 0)
      throw std::runtime_error("philox::fill_normal: the CUDA kernel did not launch (error " + std::to_string(err) +
                               ")");
    return;
#else
    throw std::runtime_error("philox::fill_normal: this build has no CUDA kernel");
#endif
  }
  fill_normal_cpu(out.data_ptr<float>(), out.numel(), key, static_cast<uint64_t>(stream.item<int64_t>()), purpose);
}

bool cuda_compiled() {
#if FINECAST_HAVE_CUDA
  return true;
#else
  return false;
#endif
}

}  // namespace finecast::trainer::philox
