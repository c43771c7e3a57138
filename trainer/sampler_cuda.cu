// SPDX-License-Identifier: BSD-3-Clause
// One sampler step's update in one kernel (CUDA builds): from x and the network's output, the x0
// and eps estimates (v or eps objective, x0 clipped with the eps consistent with it, without
// their patch means where the model is conservative), then x' = x0_coef x0 + x_coef x + eps_coef
// eps + z_coef z, or x0 at DDIM's last step: the formulas of diffusion.cpp's estimates() and
// samplers, which take about ten tensor kernels per step (more where conservative). One block
// per patch (row). No LibTorch here: diffusion.cpp launches it on the current stream.
#include <cuda_runtime.h>

#include <cstdint>

#include "trainer/cuda_block_sum.cuh"
#include "trainer/cuda_kernels.hpp"

namespace {

using finecast::trainer::cuda::block_sum;

constexpr int kThreads = 128;

struct Step {
  float a, b, x0_coef, x_coef, eps_coef, z_coef, clip;
  int v_objective, conservative, last;
};

__device__ float x0_of(const Step& c, float x, float out) {
  const float x0 = c.v_objective ? c.a * x - c.b * out : (x - c.b * out) / c.a;
  return c.clip > 0 ? fminf(fmaxf(x0, -c.clip), c.clip) : x0;
}

/// x, out, next: [rows, P]; z: [rows, P] or null; w: normalised weights [rows, P] or null (the
/// plain mean).
__global__ void step_kernel(const float* x, const float* out, const float* z, const float* w, float* next, int64_t P,
                            Step c) {
  __shared__ float shared[kThreads];
  const int64_t row = blockIdx.x;
  const float* xr = x + row * P;
  const float* outr = out + row * P;
  const float* zr = z ? z + row * P : nullptr;
  const float* wr = w ? w + row * P : nullptr;
  float* nr = next + row * P;
  // Patch means of x0 and z (the model's residuals have none where it is conservative).
  float mean_x0 = 0, mean_z = 0;
  if (c.conservative) {
    float sx = 0, sz = 0;
    for (int64_t j = threadIdx.x; j < P; j += kThreads) {
      const float wj = wr ? wr[j] : 1.0f;
      sx += wj * x0_of(c, xr[j], outr[j]);
      if (zr) sz += wj * zr[j];
    }
    const float scale = wr ? 1.0f : 1.0f / static_cast<float>(P);
    mean_x0 = block_sum<kThreads>(sx, shared) * scale;
    if (zr) mean_z = block_sum<kThreads>(sz, shared) * scale;
  }
  for (int64_t j = threadIdx.x; j < P; j += kThreads) {
    const float xj = xr[j], oj = outr[j];
    const float x0 = x0_of(c, xj, oj) - mean_x0;
    if (c.last) {
      nr[j] = x0;
      continue;
    }
    // Only the terms the step has, in the samplers' order (a zero coefficient times an unused
    // estimate could be 0 * inf).
    float r = c.x0_coef * x0;
    if (c.x_coef != 0) r += c.x_coef * xj;
    if (c.eps_coef != 0) {
      const float eps = c.clip > 0 ? (xj - c.a * x0) / c.b : (c.v_objective ? c.b * xj + c.a * oj : oj);
      r += c.eps_coef * eps;
    }
    if (zr) r += c.z_coef * (zr[j] - mean_z);
    nr[j] = r;
  }
}

}  // namespace

/// next = the step's update of x (see above); z is the step's noise.
int finecast_sampler_step_cuda(const float* x, const float* out, const float* z, const float* w, float* next,
                               int64_t rows, int64_t P, float a, float b, float x0_coef, float x_coef, float eps_coef,
                               float z_coef, float clip, int v_objective, int conservative, int last,
                               void* cuda_stream) {
  if (rows <= 0 || P <= 0) return 0;
  if (rows > 2147483647) return static_cast<int>(cudaErrorInvalidValue);
  const Step c{a, b, x0_coef, x_coef, eps_coef, z_coef, clip, v_objective, conservative, last};
  step_kernel<<<static_cast<unsigned>(rows), kThreads, 0, static_cast<cudaStream_t>(cuda_stream)>>>(x, out, z, w, next,
                                                                                                    P, c);
  return static_cast<int>(cudaGetLastError());
}
