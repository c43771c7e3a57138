// SPDX-License-Identifier: BSD-3-Clause
// train.crps_steps: fine-tuning the sampling weights on a proper score of sampled members (the
// fair CRPS), through the deterministic DDIM sampler they are then drawn with (issue 43 item 1).
#include <ATen/CPUGeneratorImpl.h>

#include <chrono>
#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "trainer/adamw.hpp"
#include "trainer/diffusion.hpp"
#include "trainer/downscaler_impl.hpp"
#include "trainer/training_internal.hpp"
#include "trainer/validation.hpp"

namespace finecast::trainer {

namespace {

constexpr uint64_t kCrpsSeed = 0xC4B5F17E5EEDULL;  // mixed into train.seed: the fine-tuning's own draws

/// The fair CRPS (unbiased in the number of members) of members [B,M,P] against y [B,P], averaged
/// over the values (area-weighted within each sample when w [B,P] is given).
torch::Tensor fair_crps(const torch::Tensor& members, const torch::Tensor& y, const torch::Tensor& w) {
  const int64_t M = members.size(1);
  auto abs_err = (members - y.unsqueeze(1)).abs().mean(1);
  // Every ordered pair i != j once (the diagonal is 0): E|X - X'| is their sum / (M (M - 1)).
  auto pairs = (members.unsqueeze(1) - members.unsqueeze(2)).abs().sum({1, 2});
  auto crps = abs_err - pairs / (2.0 * static_cast<double>(M) * static_cast<double>(M - 1));
  if (!w.defined()) return crps.mean();
  return ((crps * w).sum(1) / w.sum(1)).mean();
}

/// The mean of losses[first, last).
double mean_of(const std::vector<double>& losses, size_t first, size_t last) {
  double sum = 0;
  for (size_t i = first; i < last; ++i) sum += losses[i];
  return last > first ? sum / static_cast<double>(last - first) : 0.0;
}

}  // namespace

void crps_finetune(Downscaler::Impl& im, const EpochTensors& e, SessionStats& st,
                   const std::function<void(const std::string&)>& progress) {
  const TrainOptions& to = im.to;
  const int64_t steps = to.crps_steps, M = to.crps_members, P = im.mo.patch_size;
  if (steps <= 0) return;
  const auto t0 = std::chrono::steady_clock::now();
  const int64_t B = std::min<int64_t>(to.batch_size, e.n);
  // The optimizer of the fine-tuning: AdamW from fresh moments at a constant learning rate, no
  // weight average (ema_decay 0: the EMA follows the weights), clipping as in training.
  TrainOptions ft = to;
  ft.ema_decay = 0.0;
  torch::Tensor online, m, v, denom;
  {
    torch::NoGradGuard no_grad;
    online = im.flat.clone();  // training's own weights come back afterwards
    im.flat.copy_(im.ema);     // the fine-tuning starts from the sampling weights
    m = torch::zeros_like(im.flat);
    v = torch::zeros_like(im.flat);
    denom = torch::empty_like(im.flat);
  }
  const int group = im.reducer ? im.reducer->size() : 1;
  auto gen = at::make_generator<at::CPUGeneratorImpl>(to.seed ^ kCrpsSeed ^ (static_cast<uint64_t>(im.step) << 20) ^
                                                      static_cast<uint64_t>(im.reducer ? im.reducer->rank() : 0));
  const auto cpu_i64 = torch::TensorOptions().dtype(torch::kInt64);
  const auto cpu_f32 = torch::TensorOptions().dtype(torch::kFloat32);
  diffusion::SamplerSetup setup;
  setup.schedule = &im.schedule;
  setup.v_objective = im.mo.objective == Objective::kV;
  setup.conservative = im.mo.conservative;
  std::vector<double> losses;  // of the good steps
  int64_t skipped = 0;
  const size_t tenth = static_cast<size_t>(std::max<int64_t>(1, steps / 10));
  auto last_tenth = [&] { return mean_of(losses, losses.size() - std::min(losses.size(), tenth), losses.size()); };
  for (int64_t k = 0; k < steps; ++k) {
    im.grad.zero_();
    double loss_value = 0;
    if (B > 0) {
      auto idx = torch::randint(0, e.n, {B}, gen, cpu_i64).to(im.device);
      auto rep = idx.repeat_interleave(M);
      auto ctx = e.ctx.index_select(0, rep);
      setup.weights = e.w.defined() ? e.w.index_select(0, rep) : torch::Tensor();
      auto x = torch::randn({B * M, P}, gen, cpu_f32).to(im.device);
      if (setup.conservative) x = diffusion::remove_mean(x, setup.weights);
      const diffusion::NetFn net = [&](const torch::Tensor& x_t, int64_t t) {
        return im.net->forward(x_t, ctx, torch::full({B * M}, t, torch::TensorOptions(cpu_i64).device(im.device)));
      };
      auto members = diffusion::ddim_sample(setup, net, x, to.crps_sampler_steps).view({B, M, P});
      auto loss = fair_crps(members, e.r0.index_select(0, idx), e.w.defined() ? e.w.index_select(0, idx) : e.w);
      (loss / static_cast<double>(group)).backward();
      loss_value = loss.item<double>();
    }
    if (im.reducer) {
      im.reducer->sum(im.grad.data_ptr<float>(), im.grad.numel());
      double l[2] = {loss_value, B > 0 ? 1.0 : 0.0};
      im.reducer->sum(l, 2);
      loss_value = l[1] > 0 ? l[0] / l[1] : 0.0;
    }
    const double norm = im.grad.norm().item<double>();
    if (!std::isfinite(loss_value) || !std::isfinite(norm)) {
      ++skipped;
      continue;
    }
    adamw::StepParams p = adamw::step_params(ft, k, to.crps_lr, norm);
    adamw::update_tensors(im.flat, im.grad, m, v, im.ema, denom, p);
    losses.push_back(loss_value);
    if (static_cast<size_t>(k + 1) % tenth == 0 && progress)
      progress("crps fine-tuning: step " + std::to_string(k + 1) + " of " + std::to_string(steps) +
               ", fair CRPS (normalised) " + validation::score_text(last_tenth()));
  }
  {
    torch::NoGradGuard no_grad;
    im.ema.copy_(im.flat);  // exactly the fine-tuned weights: what samples, is checkpointed and published
    im.flat.copy_(online);
  }
  im.grad.zero_();
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  st.notes.push_back("crps fine-tuning: " + std::to_string(steps) + " steps of " + std::to_string(B) + " x " +
                     std::to_string(M) + " members (DDIM " + std::to_string(to.crps_sampler_steps) +
                     "), fair CRPS (normalised) " +
                     validation::score_text(mean_of(losses, 0, std::min(losses.size(), tenth))) +
                     " in the first tenth, " + validation::score_text(last_tenth()) + " in the last" +
                     (skipped ? "; " + std::to_string(skipped) + " non-finite steps skipped" : "") + " (" +
                     validation::score_text(seconds) + " s)");
}

}  // namespace finecast::trainer
