// SPDX-License-Identifier: BSD-3-Clause
// Sampling: fine patches from coarse ones with the published weights on the sample device,
// through the fused CPU MLP sampler, a captured CUDA graph, or the eager samplers.
#include <ATen/Parallel.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>

#include "trainer/threads.hpp"
#include "trainer/downscaler.hpp"
#include "trainer/downscaler_impl.hpp"
#include "trainer/philox_fill.hpp"
#include "trainer/sample_graph.hpp"
#include "trainer/sampling_internal.hpp"
#include "trainer/thread_tuning.hpp"

namespace finecast::trainer {

namespace sampling {

namespace {

/// Pre-drawn noise of one internal batch stays below this (the DDPM noise of 16384 rows x 50
/// steps x 256 values would be 800 MiB); the batch is made smaller instead.
constexpr int64_t kNoiseBudgetBytes = 64ll << 20;

}  // namespace

int64_t churn_draws(const ModelOptions& mo, const SampleOptions& o) {
  if (o.churn <= 0) return 0;
  return o.sampler == Sampler::kDdpm ? mo.diffusion_steps : std::clamp<int64_t>(o.steps, 1, mo.diffusion_steps);
}

int64_t noise_draws(const ModelOptions& mo, const SampleOptions& o) {
  // The churn draws come last, so that the other draws are those of a sampling without churn.
  if (o.sampler == Sampler::kDdpm) return mo.diffusion_steps + churn_draws(mo, o);
  const int64_t n = std::clamp<int64_t>(o.steps, 1, mo.diffusion_steps);
  return (o.eta > 0 ? n : 1) + churn_draws(mo, o);
}

torch::Tensor noise_params(int64_t first_row, int64_t members, int64_t P, uint64_t seed) {
  auto params = torch::empty({2}, torch::TensorOptions().dtype(torch::kInt64));
  const uint64_t key = philox::key_of(seed);
  std::memcpy(params.data_ptr<int64_t>(), &key, sizeof key);  // the key's bits
  params.data_ptr<int64_t>()[1] = first_row * members * P;
  return params;
}

torch::Tensor noise(int64_t draws, int64_t first_row, int64_t rows, int64_t members, int64_t P, uint64_t seed) {
  const int64_t B = rows * members;
  auto out = torch::empty({draws, B * P}, torch::TensorOptions().dtype(torch::kFloat32));
  philox::fill_normal_draws(out, noise_params(first_row, members, P, seed), philox::kSamplingNoise);
  return out.view({draws, B, P});
}

torch::Tensor churn_noise(const ModelOptions& mo, const SampleOptions& o, const torch::Tensor& noise) {
  const int64_t k = churn_draws(mo, o);
  return k > 0 ? noise.narrow(0, noise.size(0) - k, k) : torch::Tensor();
}

namespace {

/// sample.recentre_sigma: the members `r` ([rows * M, P], normalised residuals on the CPU; `ctx`
/// and `w` as the sampler had them) moved onto the denoiser's estimate of their conditional
/// mean: each member noised to the step whose sigma is nearest `sigma`, the network's x0 estimate
/// there averaged over the members of its patch. If the members are draws of the model's
/// p(x0 | context), so are the noised ones of p(x_t | context), and the average of E[x0 | x_t,
/// context] over them estimates E[x0 | context] with less noise than the members' own mean.
torch::Tensor recentred(const Downscaler::Impl& im, const Model& m, const torch::Tensor& r, const torch::Tensor& ctx,
                        const torch::Tensor& w, int64_t first_row, int64_t rows, int64_t M, double sigma,
                        uint64_t seed) {
  const auto P = r.size(1), B = r.size(0);
  const int64_t t = diffusion::nearest_step(*m.schedule, sigma);
  const double a = std::sqrt(m.schedule->alpha_bar[t]), b = std::sqrt(1.0 - m.schedule->alpha_bar[t]);
  // Each member noised to step t with a stream of its own: the sampler's draws stay as they are.
  auto eps = torch::empty({B, P}, torch::TensorOptions().dtype(torch::kFloat32));
  philox::fill_normal_cpu(eps.data_ptr<float>(), B * P, philox::key_of(seed), 0, philox::kRecentreNoise,
                          static_cast<uint64_t>(first_row * M * P));
  diffusion::SamplerSetup setup;  // what the samplers' x0 estimate needs
  setup.schedule = m.schedule;
  setup.v_objective = im.mo.objective == Objective::kV;
  setup.conservative = im.mo.conservative;
  if (setup.conservative) eps = diffusion::remove_mean(eps, w);  // the model's residuals have zero patch mean
  const auto dev = m.device;
  setup.weights = w.defined() ? w.to(dev) : torch::Tensor();
  auto xt = (a * r + b * eps).to(dev);
  auto y = im.sample_net->forward(xt, ctx.to(dev), torch::full({B}, t, torch::dtype(torch::kInt64).device(dev)));
  if (setup.conservative) y = diffusion::remove_mean(y, setup.weights);  // as the samplers' network output
  auto x0 = diffusion::x0_estimate(setup, xt, y, t);
  auto estimate = x0.view({rows, M, P}).mean(1, true).to(torch::kCPU);
  auto members = r.view({rows, M, P});
  const double widen = std::sqrt(static_cast<double>(M) / static_cast<double>(M - 1));
  return (estimate + (members - members.mean(1, true)) * widen).reshape({B, P});
}

}  // namespace

void draw(const Downscaler::Impl& im, const Model& m, const float* context, const float* coarse, const float* weights,
          int64_t n, const SampleOptions& o, uint64_t seed, float* out,
          const std::function<void(int64_t, int64_t)>& progress) {
  const auto C = im.mo.context_size, P = im.mo.patch_size, M = o.members;
  const bool ddpm = o.sampler == Sampler::kDdpm, conservative = im.mo.conservative;
  const int64_t draws = noise_draws(im.mo, o);
  if (m.fused && o.churn > 0) throw std::invalid_argument("sample.churn: the fused MLP sampler has no churn");
  c10::InferenceMode inference;
  const NormApplied& norm = *m.norm;
  const auto& sc = *m.schedule;
  const auto steps = diffusion::sampler_steps(sc, o);
  // Bounded batches keep memory flat for whole fields (20,480 patches x 8 members).
  const int64_t by_noise = std::max<int64_t>(1, kNoiseBudgetBytes / (draws * P * 4) / M);
  // The fused path gains nothing from batches above a few thousand rows; its buffers stay small.
  const int64_t cap = m.fused ? 2048 : 16384;
  const int64_t rows_per_chunk = std::max<int64_t>(1, std::min<int64_t>(cap / M, by_noise));
  const auto cpu_f = torch::TensorOptions().dtype(torch::kFloat32);
  const torch::Tensor mean_cpu = norm.context_mean.to(torch::kCPU), std_cpu = norm.context_std.to(torch::kCPU);
  for (int64_t r0 = 0; r0 < n; r0 += rows_per_chunk) {
    const int64_t rows = std::min(rows_per_chunk, n - r0), B = rows * M;
    // Inputs on the CPU first: normalised context and weights, one row per member.
    auto ctx = C > 0 ? cpu_float(context + r0 * C, rows, C) : torch::zeros({rows, 0}, cpu_f);
    // sample.inflation_range: each patch's inflation from its raw context's excess over the range.
    torch::Tensor inflation;
    if (o.inflation_range != 0.0 && M > 1 && C > 0) {
      const auto excess = training_range_excess(ctx, norm);
      if (excess.defined()) inflation = o.inflation * torch::pow(1.0 + excess, o.inflation_range).view({rows, 1, 1});
    }
    if (o.clip_context) ctx = clip_to_training_range(ctx, norm, o.clip_margin);
    ctx = ((ctx - mean_cpu) / std_cpu).repeat_interleave(M, 0).contiguous();
    torch::Tensor w;
    if (weights)
      w = normalised_weights(cpu_float(weights + r0 * P, rows, P), "sample").repeat_interleave(M, 0).contiguous();
    auto cc = torch::from_blob(const_cast<float*>(coarse + r0), {rows, 1}, torch::kFloat32).repeat_interleave(M, 0);
    // All the noise of this batch: drawn inside a captured loop on the device, else here and
    // copied to the device at once.
    const bool graph = !m.fused && m.graphs && o.cuda_graphs;
    const auto noise = graph ? torch::Tensor() : sampling::noise(draws, r0, rows, M, P, seed);

    torch::Tensor r;  // normalised residual [B,P] (CPU)
    if (m.fused) {
      r = torch::empty({B, P}, cpu_f);
      fused::Mlp::SampleInputs in;
      in.b = B;
      in.context = ctx.data_ptr<float>();
      in.weights = w.defined() ? w.data_ptr<float>() : nullptr;
      in.noise = noise.data_ptr<float>();
      in.draws = draws;
      m.fused->sample(m.params, in, steps, ddpm, im.mo.objective == Objective::kV, conservative,
                      diffusion::SamplerSetup{}.x0_clip, r.data_ptr<float>());
      if (progress) progress(r0 + rows, n);  // one pass; no per-step progress on this path
    } else if (graph) {
      r = m.graphs->run(im, *m.net, o, ctx, w, noise_params(r0, M, P, seed), draws).to(torch::kCPU);
      if (progress) progress(r0 + rows, n);
    } else {
      const auto dev = m.device;
      auto ctx_d = ctx.to(dev);
      auto w_d = w.defined() ? w.to(dev) : torch::Tensor();
      auto noise_d = noise.to(dev);
      {
        diffusion::SamplerSetup setup;
        setup.schedule = &sc;
        setup.v_objective = im.mo.objective == Objective::kV;
        setup.conservative = conservative;
        setup.weights = w_d;
        setup.noise = noise_d;
        setup.ddpm_var = &diffusion::ddpm_variance(sc, o.ddpm_variance);
        setup.churn = o.churn;
        setup.churn_noise = churn_noise(im.mo, o, noise_d);
        std::vector<torch::Tensor> t_cache(static_cast<size_t>(im.mo.diffusion_steps));
        // Progress inside a batch: one network evaluation per sampler step.
        const auto evaluations = static_cast<int64_t>(steps.size());
        int64_t evaluated = 0;
        auto net = [&](const torch::Tensor& xt, int64_t t) {
          if (progress && evaluated > 0) progress(r0 + rows * evaluated / evaluations, n);
          ++evaluated;
          auto& tt = t_cache[static_cast<size_t>(t)];
          if (!tt.defined()) tt = torch::full({B}, t, torch::TensorOptions().dtype(torch::kInt64).device(dev));
          auto y = m.net->forward(xt, ctx_d, tt);
          return conservative ? diffusion::remove_mean(y, w_d) : y;
        };
        auto x = noise_d[0];
        if (conservative) x = diffusion::remove_mean(x, w_d);
        // The noise is pre-drawn: no generator.
        auto res = ddpm ? diffusion::ddpm_sample(setup, net, x) : diffusion::ddim_sample(setup, net, x, o.steps, o.eta);
        r = res.to(torch::kCPU);
      }
      if (progress) progress(r0 + rows, n);
    }
    if (o.recentre_sigma > 0 && M > 1) r = recentred(im, m, r, ctx, w, r0, rows, M, o.recentre_sigma, seed);
    if ((o.inflation != 1.0 || inflation.defined()) && M > 1) {
      // Deviations from each patch's ensemble mean, scaled: the mean (and with it every patch
      // mean of a conservative model) stays.
      auto rm = r.view({rows, M, P});
      auto mean = rm.mean(1, true);
      auto deviation = rm - mean;
      deviation = inflation.defined() ? deviation * inflation : deviation * o.inflation;
      r = (mean + deviation).reshape({B, P});
    }
    auto fine = cc + r * norm.residual_std;
    // Re-centre in the output precision so the weighted mean equals coarse to float rounding.
    if (conservative) fine = fine - patch_mean(fine, w).unsqueeze(1) + cc;
    auto host = fine.contiguous();
    std::memcpy(out + r0 * M * P, host.data_ptr<float>(), static_cast<size_t>(B * P) * sizeof(float));
  }
}

}  // namespace sampling

int64_t Downscaler::rows_beyond_training_range(const float* context, int64_t n, double margin) const {
  const auto& im = *impl_;
  const int64_t C = im.mo.context_size;
  if (n <= 0 || C == 0 || !context) return 0;
  std::lock_guard<std::mutex> lock(im.sample_mutex);
  const auto [lo, hi] = clip_bounds(im.sample_norm, margin);
  if (!lo.defined()) return 0;
  const auto ctx = cpu_float(context, n, C);
  return ((ctx < lo) | (ctx > hi)).any(1).sum().item<int64_t>();
}

void Downscaler::sample(const float* context, const float* coarse, const float* weights, int64_t n,
                        const SampleOptions& o, uint64_t seed, float* out,
                        const std::function<void(int64_t, int64_t)>& progress) const {
  const auto& im = *impl_;
  schema::check(sample_options_table(), o, "sample.");  // every value in its range
  if (n <= 0) return;
  const auto C = im.mo.context_size;
  if (!coarse || !out || (C > 0 && !context))
    throw std::invalid_argument("sample: context, coarse and out must not be null");

  std::lock_guard<std::mutex> lock(im.sample_mutex);
  sampling::Model m;
  m.device = im.sample_device;
  m.schedule = &im.sample_schedule;
  m.norm = &im.sample_norm;
  m.graphs = im.sample_graphs.get();
  if (im.sample_fused && o.churn <= 0) {
    m.fused = im.sample_fused.get();
    m.params = im.sample_flat.data_ptr<float>();
  } else {
    m.net = im.sample_net.get();  // churn: the module's eager sampler (the fused one has none)
  }
  // Threads of this (the calling) thread for the duration of the call.
  const int before = at::get_num_threads();
  int use = 0;
  if (o.threads > 0) use = static_cast<int>(o.threads);
  if (o.threads == -1)
    use = threads::tune_sampling(im, m, std::min<int64_t>(n, std::max<int64_t>(1, 16384 / o.members)), o);
  if (use > 0 && use != before) set_thread_count(use);
  try {
    sampling::draw(im, m, context, coarse, weights, n, o, seed, out, progress);
  } catch (...) {
    if (use > 0 && use != before) set_thread_count(before);
    throw;
  }
  if (use > 0 && use != before) set_thread_count(before);
}

}  // namespace finecast::trainer
