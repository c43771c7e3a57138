// SPDX-License-Identifier: BSD-3-Clause
// The capturable training step and the driver that stages its inputs and replays it.
#include "trainer/train_graph.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "trainer/adamw.hpp"
#include "trainer/autocast.hpp"
#include "trainer/philox_fill.hpp"

namespace finecast::trainer::graphs {

namespace {

constexpr int kWarmupSteps = 3;
// adamw::graph_update_cuda reads the hyper-parameters in this order.
static_assert(StaticStep::kLr == 0 && StaticStep::kDecay == 1 && StaticStep::kStepSize == 2 &&
              StaticStep::kInvBc2 == 3 && StaticStep::kEmaWeight == 4 && StaticStep::kClip == 5);

}  // namespace

StaticStep::StaticStep(Downscaler::Impl& im, int64_t batch, bool weighted) : im_(im), batch_(batch) {
  const int64_t B = batch, P = im.mo.patch_size, C = im.mo.context_size;
  const int64_t floats = B * P + B * C + (weighted ? B * P : 0) + kHyper + B * P;
  const auto fo = torch::TensorOptions().dtype(torch::kFloat32).device(im.device);
  device_floats = torch::zeros({floats}, fo);
  device_noise = im.to.noise_generator == NoiseGenerator::kPhilox;
  device_longs = torch::zeros({B + 1}, torch::TensorOptions().dtype(torch::kInt64).device(im.device));
  int64_t off = 0;
  auto take = [&](int64_t n) {
    auto v = device_floats.narrow(0, off, n);
    off += n;
    return v;
  };
  x0 = take(B * P).view({B, P});
  ctx = take(B * C).view({B, C});
  if (weighted) w = take(B * P).view({B, P});
  hyper = take(kHyper);
  eps = take(B * P).view({B, P});
  t = device_longs.narrow(0, 0, B);
  noise_stream = device_longs.narrow(0, B, 1);
  statistics = torch::zeros({5}, fo);
  fused_update = im.cuda && im.fused_graph_update && compiled();  // a CUDA device and build
  if (fused_update)
    partial =
        torch::zeros({adamw::graph_update_partials()}, torch::TensorOptions().dtype(torch::kFloat64).device(im.device));
}

void StaticStep::reset_statistics() { statistics.zero_(); }

void StaticStep::run() {
  auto& im = im_;
  const bool v_obj = im.mo.objective == Objective::kV, conservative = im.mo.conservative, bf16 = im.to.bf16 && im.cuda;
  im.grad.zero_();
  if (device_noise) philox::fill_normal(eps, philox::key_of(im.to.seed), noise_stream, philox::kTrainingNoise);
  torch::Tensor loss;
  {
    auto e = conservative ? diffusion::remove_mean(eps, w) : eps;
    auto a = im.schedule.sqrt_ab.index_select(0, t).unsqueeze(1);
    auto s = im.schedule.sqrt_1mab.index_select(0, t).unsqueeze(1);
    auto x_t = torch::addcmul(a * x0, s, e);
    auto target = v_obj ? a * e - s * x0 : e;
    AutocastBf16 autocast(bf16);
    auto out = im.net->forward(x_t, ctx, t);
    if (bf16) out = out.to(torch::kFloat32);
    if (conservative) out = diffusion::remove_mean(out, w);
    loss = torch::mse_loss(out, target);
  }
  loss.backward();
  torch::NoGradGuard no_grad;
  loss = loss.detach();
  if (fused_update) {
    adamw::graph_update_cuda(im.flat, im.grad, im.exp_avg, im.exp_avg_sq, im.ema, hyper, loss, partial, statistics);
    return;
  }
  // The same tail as tensor operations (the CPU, and builds without the kernels).
  auto norm = im.grad.norm();
  auto ok = torch::isfinite(loss) & torch::isfinite(norm);
  auto okf = ok.to(torch::kFloat32);
  // clip_grad_norm_: scale by max / (norm + 1e-6) when the norm exceeds max (> 0).
  auto clip = hyper[kClip];
  auto scale = torch::where((clip > 0) & (norm > clip), clip / (norm + 1e-6), torch::ones_like(norm));
  auto g = torch::where(ok, im.grad * scale, torch::zeros_like(im.grad));
  const double b1 = 0.9, b2 = 0.999;
  auto m = im.exp_avg + (1.0 - b1) * (g - im.exp_avg);
  auto v = b2 * im.exp_avg_sq + (1.0 - b2) * g * g;
  auto denom = torch::sqrt(v) * hyper[kInvBc2] + 1e-8;
  auto p = im.flat * hyper[kDecay] - hyper[kStepSize] * m / denom;
  auto e = im.ema + hyper[kEmaWeight] * (p - im.ema);
  im.flat.copy_(torch::where(ok, p, im.flat));
  im.exp_avg.copy_(torch::where(ok, m, im.exp_avg));
  im.exp_avg_sq.copy_(torch::where(ok, v, im.exp_avg_sq));
  im.ema.copy_(torch::where(ok, e, im.ema));
  // statistics: loss sum, good, bad, current run of bad steps, longest run.
  auto st = statistics;
  st[0].add_(torch::where(ok, loss, torch::zeros_like(loss)));
  st[1].add_(okf);
  st[2].add_(1.0 - okf);
  st[3].copy_((st[3] + 1.0) * (1.0 - okf));
  st[4].copy_(torch::maximum(st[4], st[3]));
}

// ---------------------------------------------------------------------------------------------

TrainGraph::TrainGraph(Downscaler::Impl& im, int64_t batch, bool weighted)
    : im_(im),
      batch_(batch),
      weighted_(weighted),
      body_(im, batch, weighted),
      runner_(make_runner(im.device, kWarmupSteps)) {
  for (int s = 0; s < 2; ++s) {
    host_floats_[s] = runner_->host_buffer(body_.device_floats.numel(), torch::kFloat32);
    host_longs_[s] = runner_->host_buffer(batch + 1, torch::kInt64);
    host_copied_[s] = host_floats_[s].narrow(0, 0, body_.copied_floats());
  }
  device_copied_ = body_.device_floats.narrow(0, 0, body_.copied_floats());
}

void TrainGraph::set_data(const EpochTensors& data) {
  // Host copies for the row gathers, once per epoch (no copy when the data are on the CPU).
  data_r0_ = data.r0.to(torch::kCPU).contiguous();
  data_ctx_ = data.ctx.to(torch::kCPU).contiguous();
  data_w_ = data.w.defined() ? data.w.to(torch::kCPU).contiguous() : torch::Tensor();
  // Eager work of this epoch so far (the NaN-recovery copies, a checkpoint restore) comes first.
  runner_->follow_current_stream();
}

void TrainGraph::wait() { runner_->synchronize(); }

void TrainGraph::step(const StepDraws& d) {
  auto& im = im_;
  const int64_t B = batch_, P = im.mo.patch_size, C = im.mo.context_size;
  const int s = slot_;
  slot_ = 1 - slot_;
  runner_->wait_slot(s);  // the copy that last read this slot has finished
  float* f = host_floats_[s].data_ptr<float>();
  const int64_t* idx = d.idx.data_ptr<int64_t>();
  const float* r0 = data_r0_.data_ptr<float>();
  const float* ctx = data_ctx_.data_ptr<float>();
  const float* w = data_w_.defined() ? data_w_.data_ptr<float>() : nullptr;
  // Layout as in StaticStep: x0 | ctx | w | hyper | eps.
  float* x0p = f;
  float* cp = x0p + B * P;
  float* wp = cp + B * C;
  float* hp = wp + (weighted_ ? B * P : 0);
  float* ep = hp + StaticStep::kHyper;
  for (int64_t i = 0; i < B; ++i) {
    std::memcpy(x0p + i * P, r0 + idx[i] * P, static_cast<size_t>(P) * sizeof(float));
    if (C > 0) std::memcpy(cp + i * C, ctx + idx[i] * C, static_cast<size_t>(C) * sizeof(float));
    if (weighted_) std::memcpy(wp + i * P, w + idx[i] * P, static_cast<size_t>(P) * sizeof(float));
  }
  if (!body_.device_noise) std::memcpy(ep, d.eps.data_ptr<float>(), static_cast<size_t>(B * P) * sizeof(float));
  int64_t* longs = host_longs_[s].data_ptr<int64_t>();
  std::memcpy(longs, d.t.data_ptr<int64_t>(), static_cast<size_t>(B) * sizeof(int64_t));
  longs[B] = im.step;  // the Philox stream of this step's noise (train.noise_generator philox)
  // The hyper-parameters of this step, assuming the steps before it in the epoch were good.
  const double lr = im.current_lr();
  const adamw::StepParams sp = adamw::step_params(im.to, im.step, lr, 0.0);
  hp[StaticStep::kLr] = sp.lr;
  hp[StaticStep::kDecay] = sp.decay_factor;
  hp[StaticStep::kStepSize] = sp.lr / sp.bc1;
  hp[StaticStep::kInvBc2] = 1.0f / sp.bc2_sqrt;
  hp[StaticStep::kEmaWeight] = sp.ema_weight;
  hp[StaticStep::kClip] = static_cast<float>(im.to.grad_clip);
  runner_->copy_in(device_copied_, host_copied_[s], s);
  runner_->copy_in(body_.device_longs, host_longs_[s], s);
  runner_->run([this] { body_.run(); });
  ++im.step;
  ++steps_in_epoch_;
}

EpochResult TrainGraph::finish_epoch(const std::function<void(const std::string&)>& event) {
  auto& im = im_;
  EpochResult r;
  if (steps_in_epoch_ == 0) return r;
  runner_->synchronize();
  const auto st = body_.statistics.to(torch::kCPU);
  const float* s = st.data_ptr<float>();
  r.loss_sum = s[0];
  r.good = static_cast<int64_t>(std::llround(s[1]));
  r.bad = static_cast<int64_t>(std::llround(s[2]));
  const auto current_run = static_cast<int64_t>(std::llround(s[3]));
  const auto longest_run = static_cast<int64_t>(std::llround(s[4]));
  body_.reset_statistics();
  steps_in_epoch_ = 0;
  if (r.bad > 0) {
    im.step -= r.bad;  // counted as taken by step(); bad steps change no weight
    im.total_bad += r.bad;
    event("train_epoch: " + std::to_string(r.bad) + " graph-replayed steps skipped for a NaN/Inf loss or gradient");
    if (longest_run >= im.to.max_bad_steps) {
      torch::NoGradGuard no_grad;
      im.flat.copy_(im.good_flat);
      im.exp_avg.copy_(im.good_exp_avg);
      im.exp_avg_sq.copy_(im.good_exp_avg_sq);
      event("train_epoch: " + std::to_string(longest_run) +
            " bad steps in a row; restored the last good weights (from the start of this epoch)");
      im.consecutive_bad = 0;
    } else {
      im.consecutive_bad = current_run;
    }
  } else {
    im.consecutive_bad = 0;
  }
  return r;
}

TrainGraph* train_graph_for(Downscaler::Impl& im, const EpochTensors& data, int64_t global) {
  const bool weighted = data.w.defined();
  if (!im.train_graph || im.train_graph->batch() != global || im.train_graph->weighted() != weighted)
    im.train_graph = std::make_unique<TrainGraph>(im, global, weighted);
  im.train_graph->set_data(data);
  return im.train_graph.get();
}

}  // namespace finecast::trainer::graphs
