// SPDX-License-Identifier: BSD-3-Clause
// The fused AdamW step (CPU loop and device tensor form).
#include "trainer/adamw.hpp"

#include <ATen/Parallel.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include "trainer/simd.hpp"

#if FINECAST_HAVE_CUDA
#include <c10/cuda/CUDAStream.h>

#include "trainer/cuda_kernels.hpp"
#endif

namespace finecast::trainer::adamw {

namespace {

FINECAST_CLONES
void update_range(float* p, const float* g, float* m, float* v, float* e, int64_t begin, int64_t end, StepParams s) {
  const float b1c = s.one_minus_beta1, b2c = s.one_minus_beta2, step_size = s.lr / s.bc1, inv_bc2 = 1.0f / s.bc2_sqrt;
  for (int64_t i = begin; i < end; ++i) {
    const float gi = g[i] * s.grad_scale;
    const float mi = m[i] + b1c * (gi - m[i]);
    const float vi = s.beta2 * v[i] + b2c * gi * gi;
    m[i] = mi;
    v[i] = vi;
    const float pi = p[i] * s.decay_factor - step_size * mi / (std::sqrt(vi) * inv_bc2 + s.eps);
    p[i] = pi;
    e[i] += s.ema_weight * (pi - e[i]);
  }
}

FINECAST_CLONES
double sumsq_range(const float* g, int64_t begin, int64_t end) {
  // 16 independent float lanes (the compiler keeps them in one vector register; a single
  // accumulator would be summed in order, one element at a time), flushed to double per block.
  constexpr int kLanes = 16;
  double total = 0;
  int64_t i = begin;
  while (i + kLanes <= end) {
    float acc[kLanes] = {};
    const int64_t block_end = std::min(end, i + 4096) - kLanes + 1;
    for (; i < block_end; i += kLanes)
      for (int l = 0; l < kLanes; ++l) acc[l] += g[i + l] * g[i + l];
    for (int l = 0; l < kLanes; ++l) total += acc[l];
  }
  for (; i < end; ++i) total += static_cast<double>(g[i]) * g[i];
  return total;
}

}  // namespace

StepParams step_params(const TrainOptions& o, int64_t step, double lr, double grad_norm) {
  const int64_t k = step + 1;  // 1-based step for the bias corrections, as in PyTorch
  const double b1 = 0.9, b2 = 0.999;
  StepParams p;
  p.grad_scale =
      o.grad_clip > 0 && grad_norm > o.grad_clip ? static_cast<float>(o.grad_clip / (grad_norm + 1e-6)) : 1.0f;
  p.lr = static_cast<float>(lr);
  p.decay_factor = static_cast<float>(1.0 - lr * o.weight_decay);
  p.beta1 = static_cast<float>(b1);
  p.beta2 = static_cast<float>(b2);
  p.one_minus_beta1 = static_cast<float>(1.0 - b1);
  p.one_minus_beta2 = static_cast<float>(1.0 - b2);
  p.eps = 1e-8f;
  p.bc1 = static_cast<float>(1.0 - std::pow(b1, static_cast<double>(k)));
  p.bc2_sqrt = static_cast<float>(std::sqrt(1.0 - std::pow(b2, static_cast<double>(k))));
  // EMA warm-up: early weights are far from converged, so average over fewer steps at first.
  const double decay = std::min(o.ema_decay, (1.0 + static_cast<double>(step)) / (10.0 + static_cast<double>(step)));
  p.ema_weight = static_cast<float>(1.0 - decay);
  return p;
}

void update_cpu(float* p, const float* g, float* m, float* v, float* e, int64_t n, const StepParams& s) {
  at::parallel_for(0, n, 65536, [&](int64_t begin, int64_t end) { update_range(p, g, m, v, e, begin, end, s); });
}

double norm_cpu(const float* g, int64_t n) {
  // Fixed chunks summed in order: the same result for any thread count.
  constexpr int64_t kChunk = 65536;
  const int64_t chunks = std::max<int64_t>(1, (n + kChunk - 1) / kChunk);
  std::vector<double> part(static_cast<size_t>(chunks), 0.0);
  at::parallel_for(0, chunks, 1, [&](int64_t c0, int64_t c1) {
    for (int64_t c = c0; c < c1; ++c) part[c] = sumsq_range(g, c * kChunk, std::min(n, (c + 1) * kChunk));
  });
  double total = 0;
  for (double x : part) total += x;
  return std::sqrt(total);
}

void update_tensors(torch::Tensor& p, torch::Tensor& g, torch::Tensor& m, torch::Tensor& v, torch::Tensor& e,
                    torch::Tensor& denom, const StepParams& s) {
  torch::NoGradGuard no_grad;
  if (s.grad_scale != 1.0f) g.mul_(s.grad_scale);
  p.mul_(s.decay_factor);
  m.lerp_(g, s.one_minus_beta1);
  v.mul_(s.beta2).addcmul_(g, g, s.one_minus_beta2);
  torch::sqrt_out(denom, v).div_(s.bc2_sqrt).add_(s.eps);
  p.addcdiv_(m, denom, -static_cast<double>(s.lr) / s.bc1);
  e.lerp_(p, s.ema_weight);
}

int64_t graph_update_partials() {
#if FINECAST_HAVE_CUDA
  return finecast_adamw_graph_partials();
#else
  return 0;
#endif
}

void graph_update_cuda(torch::Tensor& p, const torch::Tensor& g, torch::Tensor& m, torch::Tensor& v, torch::Tensor& e,
                       const torch::Tensor& hyper, const torch::Tensor& loss, torch::Tensor& partial,
                       torch::Tensor& stats) {
#if FINECAST_HAVE_CUDA
  const int64_t n = p.numel();
  for (const torch::Tensor* t : std::initializer_list<const torch::Tensor*>{&p, &g, &m, &v, &e, &hyper, &loss, &stats})
    if (!t->is_cuda() || t->scalar_type() != torch::kFloat32 || !t->is_contiguous() || t->device() != p.device())
      throw std::invalid_argument("adamw::graph_update_cuda: every tensor must be contiguous float on one CUDA device");
  if (g.numel() != n || m.numel() != n || v.numel() != n || e.numel() != n || hyper.numel() < 6 || loss.numel() != 1 ||
      stats.numel() != 5)
    throw std::invalid_argument("adamw::graph_update_cuda: sizes differ");
  if (!partial.is_cuda() || partial.scalar_type() != torch::kFloat64 || partial.numel() != graph_update_partials())
    throw std::invalid_argument("adamw::graph_update_cuda: partial must hold graph_update_partials() doubles");
  const int err = finecast_adamw_graph_update_cuda(
      p.data_ptr<float>(), g.data_ptr<float>(), m.data_ptr<float>(), v.data_ptr<float>(), e.data_ptr<float>(), n,
      hyper.data_ptr<float>(), loss.data_ptr<float>(), partial.data_ptr<double>(), stats.data_ptr<float>(),
      c10::cuda::getCurrentCUDAStream(p.device().index()).stream());
  if (err != 0)
    throw std::runtime_error("adamw::graph_update_cuda: the CUDA kernels did not launch (error " + std::to_string(err) +
                             ")");
#else
  (void)p, (void)g, (void)m, (void)v, (void)e, (void)hyper, (void)loss, (void)partial, (void)stats;
  throw std::runtime_error("adamw::graph_update_cuda: this build has no CUDA kernels");
#endif
}

}  // namespace finecast::trainer::adamw
