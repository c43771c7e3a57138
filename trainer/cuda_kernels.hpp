// SPDX-License-Identifier: BSD-3-Clause
// The entry points of finecast's CUDA kernels (internal): defined in philox_cuda.cu, adamw_cuda.cu
// and sampler_cuda.cu (library finecast_trainer_cuda, CUDA builds only: graphs::compiled()), and
// called with plain pointers and the current stream by philox_fill.cpp, adamw.cpp and
// diffusion.cpp. Both sides include this header, so their signatures cannot drift apart. Each
// returns the cudaError_t of its launches. No LibTorch here.
#pragma once

#include <cstdint>

extern "C" {

/// out[0, n) = elements [0, n) of the Philox normal draw (key, *stream, purpose), the stream read
/// on the device.
int finecast_philox_normal_cuda(float* out, int64_t n, uint64_t key, const int64_t* stream, uint32_t purpose,
                                void* cuda_stream);

/// out[d * n + i] = element params[1] + i of draw (params[0] as the key, stream d, purpose) for d <
/// draws: the sampler's noise, key and first element read on the device.
int finecast_philox_normal_draws_cuda(float* out, int64_t draws, int64_t n, const int64_t* params, uint32_t purpose,
                                      void* cuda_stream);

/// The number of doubles the `partial` buffer of finecast_adamw_graph_update_cuda holds.
int64_t finecast_adamw_graph_partials();

/// One optimizer step of a captured training step over flat buffers of n floats (adamw.hpp,
/// graph_update_cuda).
int finecast_adamw_graph_update_cuda(float* p, const float* g, float* m, float* v, float* e, int64_t n,
                                     const float* hyper, const float* loss, double* partial, float* stats,
                                     void* cuda_stream);

/// One sampler step's update of `rows` patches of P values (diffusion.cpp, fused_step); z and w
/// may be null.
int finecast_sampler_step_cuda(const float* x, const float* out, const float* z, const float* w, float* next,
                               int64_t rows, int64_t P, float a, float b, float x0_coef, float x_coef, float eps_coef,
                               float z_coef, float clip, int v_objective, int conservative, int last,
                               void* cuda_stream);

}  // extern "C"
