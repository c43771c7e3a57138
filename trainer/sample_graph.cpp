// SPDX-License-Identifier: BSD-3-Clause
// Captured sampler loops.
#include "trainer/sample_graph.hpp"

#include <cstring>
#include <vector>

#include "trainer/philox_fill.hpp"
#include "trainer/sampling_internal.hpp"

namespace finecast::trainer::graphs {

namespace {

void stage(torch::Tensor& host, const torch::Tensor& src) {
  std::memcpy(host.data_ptr(), src.contiguous().data_ptr(), static_cast<size_t>(src.numel()) * src.element_size());
}

}  // namespace

torch::Tensor SampleGraphs::run(const Downscaler::Impl& im, models::Denoiser& net, const SampleOptions& o,
                                const torch::Tensor& ctx, const torch::Tensor& w, const torch::Tensor& noise_params,
                                int64_t draws) {
  const int64_t B = ctx.size(0), P = im.mo.patch_size;
  const std::string key = std::to_string(B) + "/" + name(o.sampler) + "/" + std::to_string(o.steps) + "/" +
                          std::to_string(o.eta) + "/" + name(o.ddpm_variance) + "/" + std::to_string(o.churn) + "/" +
                          (w.defined() ? "w" : "u") + "/" + std::to_string(draws) + (fused_steps ? "/f" : "/t");
  auto it = entries_.find(key);
  if (it == entries_.end()) {
    Entry e;
    e.runner = make_runner(device_, /*warmup=*/1);
    const auto fo = torch::TensorOptions().dtype(torch::kFloat32).device(device_);
    e.host_ctx = e.runner->host_buffer(ctx.numel(), torch::kFloat32).view(ctx.sizes());
    e.ctx = torch::empty(ctx.sizes(), fo);
    if (w.defined()) {
      e.host_w = e.runner->host_buffer(w.numel(), torch::kFloat32).view(w.sizes());
      e.w = torch::empty(w.sizes(), fo);
    }
    e.host_params = e.runner->host_buffer(2, torch::kInt64);
    e.params = torch::empty({2}, torch::TensorOptions().dtype(torch::kInt64).device(device_));
    e.noise = torch::empty({draws, B, P}, fo);
    e.out = torch::empty({B, P}, fo);
    it = entries_.emplace(key, std::move(e)).first;
  }
  Entry& e = it->second;
  last_ = &e;
  e.runner->follow_current_stream();  // the weights publish() wrote
  e.runner->wait_slot(0);
  stage(e.host_ctx, ctx);
  if (w.defined()) stage(e.host_w, w);
  stage(e.host_params, noise_params);
  e.runner->copy_in(e.ctx, e.host_ctx, 0);
  if (w.defined()) e.runner->copy_in(e.w, e.host_w, 0);
  e.runner->copy_in(e.params, e.host_params, 0);

  const bool conservative = im.mo.conservative, ddpm = o.sampler == Sampler::kDdpm;
  const diffusion::Schedule* sc = &im.sample_schedule;
  e.runner->run([&] {
    auto flat_noise = e.noise.view({draws, B * P});
    philox::fill_normal_draws(flat_noise, e.params, philox::kSamplingNoise);
    diffusion::SamplerSetup setup;
    setup.schedule = sc;
    setup.v_objective = im.mo.objective == Objective::kV;
    setup.conservative = conservative;
    setup.weights = e.w;
    setup.noise = e.noise;
    setup.ddpm_var = &diffusion::ddpm_variance(*sc, o.ddpm_variance);
    setup.churn = o.churn;
    setup.churn_noise = sampling::churn_noise(im.mo, o, e.noise);  // a view of the static noise
    setup.fused_steps = fused_steps;
    std::vector<torch::Tensor> t_cache(static_cast<size_t>(im.mo.diffusion_steps));
    auto fn = [&](const torch::Tensor& xt, int64_t t) {
      auto& tt = t_cache[static_cast<size_t>(t)];
      if (!tt.defined()) tt = torch::full({B}, t, torch::TensorOptions().dtype(torch::kInt64).device(device_));
      auto y = net.forward(xt, e.ctx, tt);
      return conservative ? diffusion::remove_mean(y, e.w) : y;
    };
    auto x = e.noise[0];
    if (conservative) x = diffusion::remove_mean(x, e.w);
    // The noise is drawn above: no generator.
    auto r = ddpm ? diffusion::ddpm_sample(setup, fn, x) : diffusion::ddim_sample(setup, fn, x, o.steps, o.eta);
    e.out.copy_(r);
  });
  e.runner->synchronize();
  return e.out.clone();  // the static output is overwritten by the next call
}

std::unique_ptr<SampleGraphs> make_sample_graphs(const torch::Device& device) {
  if (!compiled() || !device.is_cuda()) return nullptr;
  return std::make_unique<SampleGraphs>(device);
}

}  // namespace finecast::trainer::graphs
