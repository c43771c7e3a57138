// SPDX-License-Identifier: BSD-3-Clause
// Validation loss and CRPS on held-out samples; early stopping, plateau and the best state.
#include "trainer/validation.hpp"

#include <ATen/CPUGeneratorImpl.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <utility>

#include "trainer/flat_parameters.hpp"
#include "trainer/sampling_internal.hpp"

namespace finecast::trainer::validation {

namespace {

constexpr uint64_t kValidationSeed = 0x9E3779B97F4A7C15ULL;  // mixed into train.seed: fixed draws

/// The network with the EMA weights, for the autograd path.
models::Denoiser& eval_net(Downscaler::Impl& im) {
  torch::NoGradGuard no_grad;
  if (!im.eval_net) {
    im.eval_net = models::make_denoiser(im.mo, im.device);
    im.eval_flat = flatten_parameters(*im.eval_net, im.device, nullptr, nullptr, nullptr);
  }
  im.eval_flat.copy_(im.ema);
  return *im.eval_net;
}

double held_out_loss(Downscaler::Impl& im, const EpochTensors& v) {
  torch::NoGradGuard no_grad;
  const int64_t n = v.n, P = im.mo.patch_size, T = im.mo.diffusion_steps;
  auto gen = at::make_generator<at::CPUGeneratorImpl>(im.to.seed ^ kValidationSeed);
  const auto t_all = torch::randint(0, T, {n}, gen, torch::TensorOptions().dtype(torch::kInt64));
  const auto eps_all = torch::randn({n, P}, gen, torch::TensorOptions().dtype(torch::kFloat32));
  const auto idx_all = torch::arange(n, torch::TensorOptions().dtype(torch::kInt64));
  // Forward passes only, but on a device the chunk stays near the training micro-batch's memory.
  const int64_t kChunk = im.fused_mlp ? 1024 : std::clamp<int64_t>(2 * im.micro_batch, 1, 1024);
  double sse = 0;
  if (im.fused_mlp) {
    fused::EpochInputs in;
    in.x0 = v.r0.data_ptr<float>();
    in.context = v.ctx.data_ptr<float>();
    in.weights = v.w.defined() ? v.w.data_ptr<float>() : nullptr;
    in.sqrt_ab = im.schedule.sqrt_ab.data_ptr<float>();
    in.sqrt_1mab = im.schedule.sqrt_1mab.data_ptr<float>();
    for (int64_t s = 0; s < n; s += kChunk) {
      fused::MicroBatch mb;
      mb.b = std::min(kChunk, n - s);
      mb.idx = idx_all.data_ptr<int64_t>() + s;
      mb.t = t_all.data_ptr<int64_t>() + s;
      mb.eps = eps_all.data_ptr<float>() + s * P;
      sse += im.fused_mlp->train_micro(im.ema.data_ptr<float>(), nullptr, in, mb, 1.0, true);
    }
  } else {
    auto& net = eval_net(im);
    const bool v_obj = im.mo.objective == Objective::kV;
    for (int64_t s = 0; s < n; s += kChunk) {
      const int64_t b = std::min(kChunk, n - s);
      auto idx = idx_all.narrow(0, s, b).to(im.device);
      auto t = t_all.narrow(0, s, b).to(im.device);
      auto eps = eps_all.narrow(0, s, b).to(im.device);
      auto wb = v.w.defined() ? v.w.index_select(0, idx) : torch::Tensor();
      auto x0 = v.r0.index_select(0, idx);
      if (im.mo.conservative) eps = diffusion::remove_mean(eps, wb);
      auto a = im.schedule.sqrt_ab.index_select(0, t).unsqueeze(1);
      auto sd = im.schedule.sqrt_1mab.index_select(0, t).unsqueeze(1);
      auto out = net.forward(torch::addcmul(a * x0, sd, eps), v.ctx.index_select(0, idx), t);
      if (im.mo.conservative) out = diffusion::remove_mean(out, wb);
      auto target = v_obj ? a * eps - sd * x0 : eps;
      sse += (out - target).pow(2).sum().item<double>();
    }
  }
  return sse / (static_cast<double>(n) * static_cast<double>(P));
}

/// CRPS (both estimators) and spread/RMSE of a small ensemble on the held-out samples.
Scores held_out_crps(Downscaler::Impl& im, const CleanData& held_out) {
  const int64_t n = held_out.fine.size(0), P = im.mo.patch_size, C = im.mo.context_size;
  const int64_t m = std::min(n, im.to.validation_max_samples), M = im.to.validation_members;
  // Evenly spaced rows over the held-out steps.
  std::vector<int64_t> rows(static_cast<size_t>(m));
  for (int64_t i = 0; i < m; ++i) rows[static_cast<size_t>(i)] = i * n / m;
  auto idx = torch::tensor(rows, torch::kInt64);
  const auto fine = held_out.fine.index_select(0, idx).contiguous();
  const auto ctx = held_out.context.index_select(0, idx).contiguous();
  const auto w = held_out.weights.defined() ? held_out.weights.index_select(0, idx).contiguous() : torch::Tensor();
  const auto coarse = patch_mean(fine, w).contiguous();

  sampling::Model model;
  model.device = im.device;
  model.schedule = &im.schedule;
  model.norm = &im.norm;
  if (im.fused_mlp) {
    model.fused = im.fused_mlp.get();
    model.params = im.ema.data_ptr<float>();
  } else {
    model.net = &eval_net(im);
  }
  SampleOptions so;
  so.sampler = Sampler::kDdim;
  so.steps = 10;
  so.members = M;
  so.cuda_graphs = false;
  std::vector<float> out(static_cast<size_t>(m * M * P));
  sampling::draw(im, model, C > 0 ? ctx.data_ptr<float>() : nullptr, coarse.data_ptr<float>(),
                 w.defined() ? w.data_ptr<float>() : nullptr, m, so, im.to.seed ^ kValidationSeed, out.data(), {});
  const float* y = fine.data_ptr<float>();
  double total = 0, total_fair = 0, var = 0, sq_err = 0;
  std::vector<float> ens(static_cast<size_t>(M));
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < P; ++j) {
      double mean = 0;
      for (int64_t k = 0; k < M; ++k) {
        ens[static_cast<size_t>(k)] = out[(i * M + k) * P + j];
        mean += ens[static_cast<size_t>(k)];
      }
      mean /= static_cast<double>(M);
      for (float x : ens) var += (x - mean) * (x - mean) / static_cast<double>(M - 1);
      sq_err += (mean - y[i * P + j]) * (mean - y[i * P + j]);
      total += crps(ens, y[i * P + j]);
      total_fair += crps_fair(ens, y[i * P + j]);
    }
  const double values = static_cast<double>(m) * static_cast<double>(P);
  Scores s;
  s.crps = total / values;
  s.crps_fair = total_fair / values;
  s.spread_ratio = sq_err > 0 ? std::sqrt(var / sq_err) : SessionStats::kNone;
  return s;
}

/// mean|X - y| and sum over ordered i < j of |X_i - X_j| (from the sorted members).
std::pair<double, double> crps_terms(std::vector<float>& x, double y) {
  const auto M = static_cast<int64_t>(x.size());
  std::sort(x.begin(), x.end());
  double abs_err = 0, spread = 0;
  for (int64_t i = 0; i < M; ++i) {
    abs_err += std::abs(x[static_cast<size_t>(i)] - y);
    // sum over pairs |x_i - x_j| = 2 sum_i (2i - M + 1) x_(i), i 0-based.
    spread += (2.0 * static_cast<double>(i) - static_cast<double>(M) + 1.0) * x[static_cast<size_t>(i)];
  }
  return {abs_err / static_cast<double>(M), spread};
}

}  // namespace

double crps(std::vector<float> x, double y) {
  if (x.empty()) return SessionStats::kNone;
  const double m = static_cast<double>(x.size());
  const auto [abs_err, pairs] = crps_terms(x, y);
  return abs_err - pairs / (m * m);
}

std::string score_text(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.5g", v);
  return buf;
}

double crps_fair(std::vector<float> x, double y) {
  if (x.size() < 2) return SessionStats::kNone;
  const double m = static_cast<double>(x.size());
  const auto [abs_err, pairs] = crps_terms(x, y);
  return abs_err - pairs / (m * (m - 1));
}

Scores score(Downscaler::Impl& im, const CleanData& held_out, const std::function<void(const std::string&)>& note) {
  Scores s;
  if (held_out.fine.size(0) == 0) return s;
  const EpochTensors v = normalise(held_out, im.norm, im.device);
  s.loss = held_out_loss(im, v);
  if (im.to.validation_members >= 2) {
    const Scores e = held_out_crps(im, held_out);
    s.crps = e.crps;
    s.crps_fair = e.crps_fair;
    s.spread_ratio = e.spread_ratio;
  }
  note("validation: " + std::to_string(v.n) + " held-out samples at step " + std::to_string(im.step) + "; loss " +
       score_text(s.loss) +
       (std::isnan(s.crps)
            ? std::string()
            : ", CRPS " + score_text(s.crps) + ", fair CRPS " + score_text(s.crps_fair) + ", spread/RMSE " +
                  score_text(s.spread_ratio) + " (" + std::to_string(im.to.validation_members) + " members)"));
  return s;
}

bool record(Downscaler::Impl& im, double score, const std::function<void(const std::string&)>& note) {
  auto& v = im.validation;
  if (std::isnan(score)) return false;
  const bool improved = std::isnan(v.best_score) || score < v.best_score;
  if (improved) {
    v.best_score = score;
    v.best_step = im.step;
    v.sessions_without_improvement = 0;
    v.sessions_since_reduction = 0;
    if (im.to.keep_best) im.best = im.capture_state();
    return true;
  }
  ++v.sessions_without_improvement;
  ++v.sessions_since_reduction;
  const std::string metric = "validation " + name(im.to.validation_metric);
  if (im.to.plateau > 0 && v.sessions_since_reduction >= im.to.plateau && v.lr_scale > im.to.plateau_min_scale) {
    v.lr_scale = std::max(im.to.plateau_min_scale, v.lr_scale * im.to.plateau_factor);
    v.sessions_since_reduction = 0;
    note("plateau: " + metric + " not better than " + score_text(v.best_score) + " for " +
         std::to_string(v.sessions_without_improvement) + " sessions; learning rate scaled to " +
         score_text(v.lr_scale) + " of the schedule");
  }
  if (im.to.early_stop > 0 && v.sessions_without_improvement >= im.to.early_stop) {
    v.stopped = true;
    note("early stopping: " + metric + " not better than " + score_text(v.best_score) + " (step " +
         std::to_string(v.best_step) + ") for " + std::to_string(v.sessions_without_improvement) +
         " sessions; training stops");
  }
  return false;
}

}  // namespace finecast::trainer::validation
