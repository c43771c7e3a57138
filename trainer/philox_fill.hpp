// SPDX-License-Identifier: BSD-3-Clause
// Fills tensors with the Philox normal draw (philox.hpp) on the CPU or, in CUDA builds, on the
// GPU by a kernel that reads the draw's stream number on the device (graph-capturable).
#pragma once

#include <torch/torch.h>

#include <cstdint>

#include "trainer/philox.hpp"

namespace finecast::trainer::philox {

/// The generator's key for a run's seed (train.seed), so that two seeds share no stream.
uint64_t key_of(uint64_t seed);

/// out (float, contiguous, CPU or CUDA): elements [0, out.numel()) of the draw (key, stream,
/// purpose). `stream`: an int64 scalar tensor on out's device; on CUDA it is read by the kernel
/// when it runs, so the host may change it between replays of a captured graph.
void fill_normal(torch::Tensor& out, uint64_t key, const torch::Tensor& stream, Purpose purpose);

/// The same into host memory, for a stream known on the host: out[i] = normal_at(key, stream,
/// purpose, first + i) for i < n, in parallel and on vectors (to the float, except where a
/// double lies within an ulp or two of a float rounding boundary: philox_fill.cpp).
void fill_normal_cpu(float* out, int64_t n, uint64_t key, uint64_t stream, Purpose purpose, uint64_t first = 0);

/// The sampler's noise, [draws, n] (float, contiguous, CPU or CUDA): row d holds elements
/// [first, first + n) of the draw (key, stream d, purpose), as fill_normal_cpu writes them.
/// `params`: int64 {key, first} on out's device, read by the kernel when it runs (the key's bits
/// as an int64), so a captured sampler loop draws the noise of the seed and rows staged for
/// each replay.
void fill_normal_draws(torch::Tensor& out, const torch::Tensor& params, Purpose purpose);

}  // namespace finecast::trainer::philox
