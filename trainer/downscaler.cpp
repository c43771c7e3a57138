// SPDX-License-Identifier: BSD-3-Clause
// Training loop (flat-parameter AdamW, clipping, EMA, NaN recovery), normalisation, sampling,
// and the tensor side of checkpoints.
#include "trainer/downscaler.hpp"

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/Parallel.h>
#include <ATen/autocast_mode.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <stdexcept>

#include "common/atomic_file.hpp"
#include "common/h5.hpp"
#include "trainer/checkpoint_format.hpp"
#include "trainer/downscaler_impl.hpp"

namespace finecast::trainer {

namespace {

torch::Device parse_torch_device(const std::string& device) {
  try {
    torch::Device d(device == "cuda" ? std::string("cuda:0") : device);
    if (d.is_cuda() && !torch::cuda::is_available())
      throw std::invalid_argument("device \"" + device + "\": this LibTorch has no usable CUDA device");
    return d;
  } catch (const c10::Error& e) {
    throw std::invalid_argument("device \"" + device + "\" is not a LibTorch device string (cpu, cuda, cuda:N, mps)");
  }
}

void validate_train(const TrainOptions& t) {
  auto bad = [](const std::string& key, const std::string& why) { throw std::invalid_argument("train." + key + ": " + why); };
  if (t.batch_size < 1) bad("batch_size", "must be >= 1");
  if (!(t.lr > 0)) bad("lr", "must be > 0");
  if (t.weight_decay < 0) bad("weight_decay", "must be >= 0");
  if (t.warmup_steps < 0) bad("warmup_steps", "must be >= 0");
  if (t.decay_steps < 0) bad("decay_steps", "must be >= 0");
  if (t.min_lr_ratio < 0 || t.min_lr_ratio > 1) bad("min_lr_ratio", "must be in [0, 1]");
  if (t.ema_decay < 0 || t.ema_decay >= 1) bad("ema_decay", "must be in [0, 1)");
  if (t.max_bad_steps < 1) bad("max_bad_steps", "must be >= 1");
}

/// Makes every parameter of `net` a view of one flat buffer (returned), so that optimizer, EMA,
/// clipping and publishing are a handful of operations on contiguous memory.
torch::Tensor flatten_parameters(models::Denoiser& net, const torch::Device& device, std::vector<std::string>* names,
                                 std::vector<int64_t>* offsets, std::vector<std::vector<int64_t>>* shapes) {
  torch::NoGradGuard no_grad;
  const auto params = net.named_parameters(true);
  int64_t total = 0;
  for (const auto& p : params) total += p.value().numel();
  auto flat = torch::zeros({total}, torch::TensorOptions().dtype(torch::kFloat32).device(device));
  int64_t off = 0;
  for (const auto& p : params) {
    auto v = p.value();
    const int64_t n = v.numel();
    auto slot = flat.narrow(0, off, n).view(v.sizes());
    slot.copy_(v);
    v.set_data(slot);
    if (names) {
      names->push_back(p.key());
      offsets->push_back(off);
      shapes->push_back(v.sizes().vec());
    }
    off += n;
  }
  return flat;
}

/// Points each parameter's .grad at its slice of `grad`; backward then accumulates in place.
void attach_gradients(models::Denoiser& net, const torch::Tensor& grad) {
  int64_t off = 0;
  for (auto& p : net.parameters(true)) {
    const int64_t n = p.numel();
    p.mutable_grad() = grad.narrow(0, off, n).view(p.sizes());
    off += n;
  }
}

/// bf16 autocast for the forward pass on CUDA; the autocast state is thread-local.
class AutocastBf16 {
 public:
  explicit AutocastBf16(bool on) : on_(on) {
    if (!on_) return;
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 4)
    at::autocast::set_autocast_dtype(at::kCUDA, at::kBFloat16);
    at::autocast::set_autocast_enabled(at::kCUDA, true);
#else
    at::autocast::set_autocast_gpu_dtype(at::kBFloat16);
    at::autocast::set_enabled(true);
#endif
  }
  ~AutocastBf16() {
    if (!on_) return;
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 4)
    at::autocast::set_autocast_enabled(at::kCUDA, false);
#else
    at::autocast::set_enabled(false);
#endif
    at::autocast::clear_cache();
  }
  AutocastBf16(const AutocastBf16&) = delete;
  AutocastBf16& operator=(const AutocastBf16&) = delete;

 private:
  bool on_;
};

/// Hyper-parameters of one optimizer step.
struct StepParams {
  float grad_scale, lr, decay_factor, beta1, beta2, eps, bc1, bc2_sqrt, ema_weight;
};

/// AdamW (PyTorch's formulas) + gradient scaling + EMA in one pass over memory (CPU).
void fused_update_cpu(float* p, const float* g, float* m, float* v, float* e, int64_t n, const StepParams& s) {
  at::parallel_for(0, n, 32768, [&](int64_t begin, int64_t end) {
    const float b1c = 1.0f - s.beta1, b2c = 1.0f - s.beta2, step_size = s.lr / s.bc1, inv_bc2 = 1.0f / s.bc2_sqrt;
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
  });
}

torch::Tensor cpu_float(const float* data, int64_t rows, int64_t cols) {
  return torch::from_blob(const_cast<float*>(data), {rows, cols}, torch::kFloat32);
}

/// Rows normalised to sum 1; throws when a row has a negative or zero-sum weight.
torch::Tensor normalised_weights(const torch::Tensor& w, const char* who) {
  if ((w < 0).any().item<bool>()) throw std::invalid_argument(std::string(who) + ": weights must be >= 0");
  auto sum = w.sum(1, true);
  if ((sum <= 0).any().item<bool>()) throw std::invalid_argument(std::string(who) + ": every weights row needs a positive sum");
  return w / sum;
}

/// The inputs of one epoch after dropping non-finite rows: context, fine, weights (or undefined).
struct CleanData {
  torch::Tensor context, fine, weights;
  int64_t dropped = 0;
};

CleanData clean(const DataView& d, int64_t C, int64_t P, const char* who) {
  if (d.n < 0) throw std::invalid_argument(std::string(who) + ": n must be >= 0");
  if (d.n > 0 && (!d.fine || (C > 0 && !d.context)))
    throw std::invalid_argument(std::string(who) + ": context and fine must not be null");
  CleanData c;
  c.context = C > 0 ? cpu_float(d.context, d.n, C) : torch::zeros({d.n, 0});
  c.fine = cpu_float(d.fine, d.n, P);
  auto ok = torch::isfinite(c.fine).all(1);
  if (C > 0) ok = ok & torch::isfinite(c.context).all(1);
  if (d.weights) {
    c.weights = cpu_float(d.weights, d.n, P);
    ok = ok & torch::isfinite(c.weights).all(1);
  }
  const int64_t good = ok.sum().item<int64_t>();
  if (good < d.n) {
    auto idx = ok.nonzero().squeeze(1);
    c.context = c.context.index_select(0, idx);
    c.fine = c.fine.index_select(0, idx);
    if (c.weights.defined()) c.weights = c.weights.index_select(0, idx);
    c.dropped = d.n - good;
  }
  if (c.weights.defined()) c.weights = normalised_weights(c.weights, who);
  return c;
}

torch::Tensor patch_mean(const torch::Tensor& fine, const torch::Tensor& w) {
  return w.defined() ? (fine * w).sum(1) : fine.mean(1);
}

}  // namespace

// ---------------------------------------------------------------------------------------------
Downscaler::Impl::Impl(const ModelOptions& m, const TrainOptions& t, const std::string& dev)
    : mo(m), to(t), device(parse_torch_device(dev)) {
  models::validate(mo);
  validate_train(to);
  cuda = device.is_cuda();
  if (cuda && device.index() < 0) device = torch::Device(torch::kCUDA, 0);
  schedule = diffusion::make_schedule(mo.schedule, mo.diffusion_steps, device);
  gen = at::make_generator<at::CPUGeneratorImpl>(to.seed);

  net = models::make_denoiser(mo, torch::kCPU);
  models::init_parameters(*net, gen);
  net->to(device);
  flat = flatten_parameters(*net, device, &names, &offsets, &shapes);
  grad = torch::zeros_like(flat);
  attach_gradients(*net, grad);
  exp_avg = torch::zeros_like(flat);
  exp_avg_sq = torch::zeros_like(flat);
  denom = torch::zeros_like(flat);
  ema = flat.clone();

  sample_net = models::make_denoiser(mo, device);
  sample_flat = flatten_parameters(*sample_net, device, nullptr, nullptr, nullptr);
  sample_flat.copy_(ema);
  norm = derive_norm();
  sample_norm = norm;
}

torch::Tensor Downscaler::Impl::view(const torch::Tensor& buf, size_t i) const {
  int64_t n = 1;
  for (auto d : shapes[i]) n *= d;
  return buf.narrow(0, offsets[i], n).view(shapes[i]);
}

NormApplied Downscaler::Impl::derive_norm() const {
  NormApplied a;
  const auto C = mo.context_size;
  std::vector<float> mean(static_cast<size_t>(C), 0.0f), sd(static_cast<size_t>(C), 1.0f);
  if (sums.context_count > 0) {
    for (int64_t i = 0; i < C; ++i) {
      const double mu = sums.context_sum[i] / sums.context_count;
      const double var = std::max(0.0, sums.context_sumsq[i] / sums.context_count - mu * mu);
      mean[i] = static_cast<float>(mu);
      // A constant feature (std ~ 0) is centred but not scaled, instead of blowing up.
      const double s = std::sqrt(var);
      sd[i] = static_cast<float>(s > 1e-6 * std::max(1.0, std::abs(mu)) ? s : 1.0);
    }
  }
  a.context_mean = torch::tensor(mean, torch::kFloat32).to(device);
  a.context_std = torch::tensor(sd, torch::kFloat32).to(device);
  if (sums.residual_count > 0) {
    const double s = std::sqrt(sums.residual_sumsq / sums.residual_count);
    a.residual_std = s > 1e-12 ? s : 1.0;
  }
  return a;
}

// ---------------------------------------------------------------------------------------------
Downscaler::Downscaler(const ModelOptions& model, const TrainOptions& train, const std::string& device)
    : impl_(std::make_unique<Impl>(model, train, device)) {}
Downscaler::Downscaler(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Downscaler::Downscaler(Downscaler&&) noexcept = default;
Downscaler& Downscaler::operator=(Downscaler&&) noexcept = default;
Downscaler::~Downscaler() = default;

int64_t Downscaler::step() const { return impl_->step; }
int64_t Downscaler::parameter_count() const { return impl_->flat.numel(); }
const ModelOptions& Downscaler::model_options() const { return impl_->mo; }
const TrainOptions& Downscaler::train_options() const { return impl_->to; }
std::string Downscaler::device() const { return impl_->device.str(); }
double Downscaler::learning_rate(int64_t step) const { return diffusion::learning_rate(impl_->to, step); }

void set_torch_threads(int n) {
  if (n > 0) torch::set_num_threads(n);
}

void Downscaler::update_normalisation(const DataView& data) {
  auto& im = *impl_;
  torch::NoGradGuard no_grad;
  const auto C = im.mo.context_size, P = im.mo.patch_size;
  CleanData c = clean(data, C, P, "update_normalisation");
  const int64_t n = c.fine.size(0);
  if (n == 0) return;
  auto& s = im.sums;
  if (s.context_sum.empty()) {
    s.context_sum.assign(static_cast<size_t>(C), 0.0);
    s.context_sumsq.assign(static_cast<size_t>(C), 0.0);
  }
  auto ctx = c.context.to(torch::kFloat64);
  auto csum = ctx.sum(0), csq = (ctx * ctx).sum(0);
  for (int64_t i = 0; i < C; ++i) {
    s.context_sum[i] += csum[i].item<double>();
    s.context_sumsq[i] += csq[i].item<double>();
  }
  s.context_count += static_cast<double>(n);
  auto fine = c.fine.to(torch::kFloat64);
  auto w = c.weights.defined() ? c.weights.to(torch::kFloat64) : torch::Tensor();
  auto res = fine - patch_mean(fine, w).unsqueeze(1);
  s.residual_sumsq += (res * res).sum().item<double>();
  s.residual_count += static_cast<double>(res.numel());
}

EpochStats Downscaler::train_epoch(const DataView& data, const std::function<void(const std::string&)>& on_event) {
  auto& im = *impl_;
  const auto t0 = std::chrono::steady_clock::now();
  auto event = [&](const std::string& s) {
    if (on_event) on_event(s);
  };
  EpochStats st;
  const auto C = im.mo.context_size, P = im.mo.patch_size;
  if (im.sums.context_count == 0 && im.sums.residual_count == 0) update_normalisation(data);
  im.norm = im.derive_norm();

  torch::Tensor ctx, r0, w;
  int64_t n = 0;
  {
    torch::NoGradGuard no_grad;
    CleanData c = clean(data, C, P, "train_epoch");
    if (c.dropped > 0) event("train_epoch: dropped " + std::to_string(c.dropped) + " of " + std::to_string(data.n) +
                             " samples holding NaN/Inf");
    st.skipped_samples = c.dropped;
    n = c.fine.size(0);
    w = c.weights;
    auto coarse = patch_mean(c.fine, w).unsqueeze(1);
    r0 = ((c.fine - coarse) / im.norm.residual_std).to(im.device).contiguous();
    ctx = ((c.context.to(im.device) - im.norm.context_mean) / im.norm.context_std).contiguous();
    if (w.defined()) w = w.to(im.device).contiguous();
    im.good_flat = im.flat.clone();
    im.good_exp_avg = im.exp_avg.clone();
    im.good_exp_avg_sq = im.exp_avg_sq.clone();
  }
  if (n == 0) {
    st.step = im.step;
    return st;
  }
  const bool bf16 = im.to.bf16 && im.cuda;
  if (im.to.bf16 && !im.cuda) event("train.bf16 is honoured on CUDA only; training in float32 on " + im.device.str());

  const auto long_cpu = torch::TensorOptions().dtype(torch::kInt64);
  const auto float_cpu = torch::TensorOptions().dtype(torch::kFloat32);
  auto perm = torch::randperm(n, im.gen, long_cpu).to(im.device);
  const int64_t B = im.to.batch_size, T = im.mo.diffusion_steps;
  const bool v_obj = im.mo.objective == "v", conservative = im.mo.conservative;
  double loss_sum = 0;
  int64_t good = 0;

  for (int64_t start = 0; start < n; start += B) {
    const int64_t b = std::min(B, n - start);
    auto idx = perm.narrow(0, start, b);
    auto t_cpu = torch::randint(0, T, {b}, im.gen, long_cpu);
    auto eps = torch::randn({b, P}, im.gen, float_cpu);
    auto t = im.cuda ? t_cpu.to(im.device, /*non_blocking=*/true) : t_cpu;
    if (im.cuda) eps = eps.to(im.device, true);
    auto wb = w.defined() ? w.index_select(0, idx) : torch::Tensor();
    auto x0 = r0.index_select(0, idx);
    auto cb = ctx.index_select(0, idx);
    if (conservative) eps = diffusion::remove_mean(eps, wb);
    auto a = im.schedule.sqrt_ab.index_select(0, t).unsqueeze(1);
    auto s = im.schedule.sqrt_1mab.index_select(0, t).unsqueeze(1);
    auto x_t = torch::addcmul(a * x0, s, eps);
    auto target = v_obj ? a * eps - s * x0 : eps;

    im.grad.zero_();
    torch::Tensor loss;
    {
      AutocastBf16 autocast(bf16);
      auto out = im.net->forward(x_t, cb, t);
      if (bf16) out = out.to(torch::kFloat32);
      if (conservative) out = diffusion::remove_mean(out, wb);
      loss = torch::mse_loss(out, target);
    }
    loss.backward();
    ++st.batches;

    // Loss and gradient norm in one device-to-host copy (on CUDA one wait per step, not two).
    const auto both = torch::stack({loss.detach().to(torch::kFloat32), im.grad.norm()}).to(torch::kCPU);
    const double loss_v = both[0].item<double>(), norm = both[1].item<double>();
    if (!std::isfinite(loss_v) || !std::isfinite(norm)) {
      ++st.bad_steps;
      ++im.total_bad;
      ++im.consecutive_bad;
      event("train_epoch: step " + std::to_string(im.step) + " skipped: loss " + std::to_string(loss_v) +
            ", gradient norm " + std::to_string(norm) + " (" + std::to_string(im.consecutive_bad) + " in a row)");
      if (im.consecutive_bad >= im.to.max_bad_steps) {
        torch::NoGradGuard no_grad;
        im.flat.copy_(im.good_flat);
        im.exp_avg.copy_(im.good_exp_avg);
        im.exp_avg_sq.copy_(im.good_exp_avg_sq);
        event("train_epoch: " + std::to_string(im.consecutive_bad) +
              " bad steps in a row; restored the last good weights (from the start of this epoch)");
        im.consecutive_bad = 0;
      }
      continue;
    }
    im.consecutive_bad = 0;
    loss_sum += loss_v;
    ++good;

    const int64_t k = im.step + 1;  // 1-based step for the bias corrections, as in PyTorch
    const double lr = diffusion::learning_rate(im.to, im.step);
    const double b1 = 0.9, b2 = 0.999;
    StepParams p;
    p.grad_scale = im.to.grad_clip > 0 && norm > im.to.grad_clip ? static_cast<float>(im.to.grad_clip / (norm + 1e-6)) : 1.0f;
    p.lr = static_cast<float>(lr);
    p.decay_factor = static_cast<float>(1.0 - lr * im.to.weight_decay);
    p.beta1 = static_cast<float>(b1);
    p.beta2 = static_cast<float>(b2);
    p.eps = 1e-8f;
    p.bc1 = static_cast<float>(1.0 - std::pow(b1, static_cast<double>(k)));
    p.bc2_sqrt = static_cast<float>(std::sqrt(1.0 - std::pow(b2, static_cast<double>(k))));
    // EMA warm-up: early weights are far from converged, so average over fewer steps at first.
    const double decay = std::min(im.to.ema_decay, (1.0 + static_cast<double>(im.step)) / (10.0 + static_cast<double>(im.step)));
    p.ema_weight = static_cast<float>(1.0 - decay);
    {
      torch::NoGradGuard no_grad;
      if (!im.cuda) {
        fused_update_cpu(im.flat.data_ptr<float>(), im.grad.data_ptr<float>(), im.exp_avg.data_ptr<float>(),
                         im.exp_avg_sq.data_ptr<float>(), im.ema.data_ptr<float>(), im.flat.numel(), p);
      } else {
        if (p.grad_scale != 1.0f) im.grad.mul_(p.grad_scale);
        im.flat.mul_(p.decay_factor);
        im.exp_avg.lerp_(im.grad, 1.0 - b1);
        im.exp_avg_sq.mul_(b2).addcmul_(im.grad, im.grad, 1.0 - b2);
        torch::sqrt_out(im.denom, im.exp_avg_sq).div_(p.bc2_sqrt).add_(p.eps);
        im.flat.addcdiv_(im.exp_avg, im.denom, -lr / p.bc1);
        im.ema.lerp_(im.flat, p.ema_weight);
      }
    }
    ++im.step;
  }
  st.avg_loss = good > 0 ? loss_sum / static_cast<double>(good) : 0.0;
  st.step = im.step;
  st.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return st;
}

void Downscaler::publish() {
  auto& im = *impl_;
  torch::NoGradGuard no_grad;
  NormApplied n = im.derive_norm();
  std::lock_guard<std::mutex> lock(im.sample_mutex);
  im.sample_flat.copy_(im.ema);
  im.sample_norm = n;
}

void Downscaler::sample(const float* context, const float* coarse, const float* weights, int64_t n,
                        const SampleOptions& o, uint64_t seed, float* out,
                        const std::function<void(int64_t, int64_t)>& progress) const {
  const auto& im = *impl_;
  if (o.sampler != "ddpm" && o.sampler != "ddim")
    throw std::invalid_argument("sample.sampler: must be ddpm or ddim, got \"" + o.sampler + "\"");
  if (o.members < 1) throw std::invalid_argument("sample.members: must be >= 1");
  if (o.sampler == "ddim" && o.steps < 1) throw std::invalid_argument("sample.steps: must be >= 1");
  if (!(o.eta >= 0.0 && o.eta <= 1.0))
    throw std::invalid_argument("sample.eta: must be in [0, 1], got " + std::to_string(o.eta));
  if (n <= 0) return;
  const auto C = im.mo.context_size, P = im.mo.patch_size, M = o.members;
  if (!coarse || !out || (C > 0 && !context)) throw std::invalid_argument("sample: context, coarse and out must not be null");

  c10::InferenceMode inference;
  std::lock_guard<std::mutex> lock(im.sample_mutex);
  auto gen = at::make_generator<at::CPUGeneratorImpl>(seed);
  const auto& norm = im.sample_norm;
  // Bounded batches keep memory flat for whole fields (20,480 patches x 8 members).
  const int64_t rows_per_chunk = std::max<int64_t>(1, 16384 / M);
  for (int64_t r0 = 0; r0 < n; r0 += rows_per_chunk) {
    const int64_t rows = std::min(rows_per_chunk, n - r0), B = rows * M;
    auto ctx = C > 0 ? cpu_float(context + r0 * C, rows, C).to(im.device) : torch::zeros({rows, 0}, torch::TensorOptions().device(im.device));
    ctx = ((ctx - norm.context_mean) / norm.context_std).repeat_interleave(M, 0).contiguous();
    auto cc = torch::from_blob(const_cast<float*>(coarse + r0), {rows, 1}, torch::kFloat32).to(im.device).repeat_interleave(M, 0);
    torch::Tensor w;
    if (weights) w = normalised_weights(cpu_float(weights + r0 * P, rows, P), "sample").to(im.device).repeat_interleave(M, 0).contiguous();
    auto x = torch::randn({B, P}, gen, torch::TensorOptions().dtype(torch::kFloat32)).to(im.device);
    if (im.mo.conservative) x = diffusion::remove_mean(x, w);

    diffusion::SamplerSetup setup;
    setup.schedule = &im.schedule;
    setup.v_objective = im.mo.objective == "v";
    setup.conservative = im.mo.conservative;
    setup.weights = w;
    std::vector<torch::Tensor> t_cache(static_cast<size_t>(im.mo.diffusion_steps));
    // Progress inside a batch: one network evaluation per sampler step.
    const int64_t evaluations = o.sampler == "ddpm" ? im.mo.diffusion_steps : std::min(o.steps, im.mo.diffusion_steps);
    int64_t evaluated = 0;
    auto net = [&](const torch::Tensor& xt, int64_t t) {
      if (progress && evaluated > 0) progress(r0 + rows * evaluated / evaluations, n);
      ++evaluated;
      auto& tt = t_cache[static_cast<size_t>(t)];
      if (!tt.defined()) tt = torch::full({B}, t, torch::TensorOptions().dtype(torch::kInt64).device(im.device));
      auto y = im.sample_net->forward(xt, ctx, tt);
      return im.mo.conservative ? diffusion::remove_mean(y, w) : y;
    };
    auto r = o.sampler == "ddpm" ? diffusion::ddpm_sample(setup, net, x, gen) : diffusion::ddim_sample(setup, net, x, o.steps, o.eta, &gen);
    auto fine = cc + r * norm.residual_std;
    // Re-centre in the output precision so the weighted mean equals coarse to float rounding.
    if (im.mo.conservative) fine = fine - patch_mean(fine, w).unsqueeze(1) + cc;
    auto host = fine.to(torch::kCPU).contiguous();
    std::memcpy(out + r0 * M * P, host.data_ptr<float>(), static_cast<size_t>(B * P) * sizeof(float));
    if (progress) progress(r0 + rows, n);
  }
}

// ---------------------------------------------------------------------------------------------
// Checkpoints: tensors as CPU float32 datasets by parameter name.

void Downscaler::save_checkpoint(const std::string& path, const std::map<std::string, std::string>& metadata) const {
  const auto& im = *impl_;
  AtomicFile out(path, ErrorCode::kCheckpoint);
  {
    h5::File f = h5::File::create(out.tmp_path(), format::kCheckpointReporting);
    f.set_attr("/", "format", std::string(kCheckpointFormatName));
    f.set_attr("/", "format_version", static_cast<int64_t>(kCheckpointFormatVersion));
    f.set_attr("/", "step", im.step);
    f.set_attr("/", "consecutive_bad_steps", im.consecutive_bad);
    f.set_attr("/", "total_bad_steps", im.total_bad);
    f.set_attr("/", "parameter_count", im.flat.numel());
    f.set_attr("/", "written_on_device", im.device.str());
    format::write_model_options(f, im.mo);
    format::write_train_options(f, im.to);
    torch::NoGradGuard no_grad;
    const std::pair<const char*, const torch::Tensor*> buffers[] = {
        {"model", &im.flat}, {"ema", &im.ema}, {"optimizer/exp_avg", &im.exp_avg}, {"optimizer/exp_avg_sq", &im.exp_avg_sq}};
    for (const auto& [group, buf] : buffers) {
      const auto host = buf->to(torch::kCPU).contiguous();
      f.create_group(group);
      for (size_t i = 0; i < im.names.size(); ++i) {
        const auto v = im.view(host, i).contiguous();
        f.write(std::string(group) + "/" + im.names[i], h5::Type::kFloat32, v.data_ptr<float>(), im.shapes[i]);
      }
    }
    f.set_attr("optimizer", "kind", std::string("adamw"));
    f.set_attr("optimizer", "step", im.step);
    const auto& s = im.sums;
    const int64_t C = im.mo.context_size;
    std::vector<double> csum = s.context_sum, csq = s.context_sumsq;
    csum.resize(static_cast<size_t>(C), 0.0);
    csq.resize(static_cast<size_t>(C), 0.0);
    f.create_group("normalisation");
    f.write("normalisation/context_count", h5::Type::kFloat64, &s.context_count, {});
    f.write("normalisation/context_sum", h5::Type::kFloat64, csum.data(), {C});
    f.write("normalisation/context_sumsq", h5::Type::kFloat64, csq.data(), {C});
    f.write("normalisation/residual_count", h5::Type::kFloat64, &s.residual_count, {});
    f.write("normalisation/residual_sumsq", h5::Type::kFloat64, &s.residual_sumsq, {});
    const auto state = im.gen.get_state().contiguous();
    f.write("rng/state", h5::Type::kUInt8, state.data_ptr<uint8_t>(), {state.numel()});
    f.set_attr("rng", "kind", std::string("pytorch-cpu-mt19937"));
    f.create_group("metadata");
    for (const auto& [k, v] : metadata) f.set_attr("metadata", k, v);
    f.close();
  }
  out.commit();
}

void Downscaler::restore(const std::string& path) {
  auto& im = *impl_;
  if (!std::filesystem::exists(path)) throw CheckpointError(path + ": no such checkpoint file");
  h5::File f = h5::File::open_read(path, format::kCheckpointReporting);
  format::check_header(f);
  const ModelOptions file_mo = format::read_model_options(f);
  const std::string diff = format::describe_differences(file_mo, im.mo);
  if (!diff.empty()) throw CheckpointError(path + ": incompatible with this model: " + diff);

  // Every problem with the tensors at once, so one run tells the user everything that differs.
  std::vector<std::string> problems;
  for (const char* group : {"model", "ema", "optimizer/exp_avg", "optimizer/exp_avg_sq"}) {
    if (!f.exists(group)) {
      problems.push_back("group /" + std::string(group) + " is missing");
      continue;
    }
    auto stored = f.children(group);
    for (size_t i = 0; i < im.names.size(); ++i) {
      const std::string name = std::string(group) + "/" + im.names[i];
      auto it = std::find(stored.begin(), stored.end(), im.names[i]);
      if (it == stored.end()) {
        problems.push_back("missing tensor /" + name);
        continue;
      }
      stored.erase(it);
      const auto info = f.info(name);
      if (info.shape != im.shapes[i] || info.type != h5::Type::kFloat32) {
        auto fmt = [](const std::vector<int64_t>& s) {
          std::string o = "[";
          for (size_t j = 0; j < s.size(); ++j) o += (j ? "," : "") + std::to_string(s[j]);
          return o + "]";
        };
        problems.push_back("/" + name + " is " + h5::type_name(info.type) + fmt(info.shape) + ", the model expects float32" +
                           fmt(im.shapes[i]));
      }
    }
    for (const auto& extra : stored) problems.push_back("unexpected tensor /" + std::string(group) + "/" + extra);
  }
  const int64_t C = im.mo.context_size;
  for (const char* ds : {"normalisation/context_count", "normalisation/context_sum", "normalisation/context_sumsq",
                         "normalisation/residual_count", "normalisation/residual_sumsq", "rng/state"})
    if (!f.exists(ds)) problems.push_back("missing dataset /" + std::string(ds));
  if (!problems.empty()) {
    std::string msg = path + ": does not fit this model:";
    for (const auto& p : problems) msg += "\n  - " + p;
    throw CheckpointError(msg);
  }

  // Read everything into staging buffers first, so a failure leaves this object unchanged.
  const int64_t N = im.flat.numel();
  std::vector<torch::Tensor> staged;
  for (const char* group : {"model", "ema", "optimizer/exp_avg", "optimizer/exp_avg_sq"}) {
    auto host = torch::empty({N}, torch::kFloat32);
    for (size_t i = 0; i < im.names.size(); ++i) {
      auto v = im.view(host, i);
      f.read(std::string(group) + "/" + im.names[i], h5::Type::kFloat32, v.data_ptr<float>(), v.numel());
    }
    staged.push_back(host);
  }
  NormSums sums;
  sums.context_sum.resize(static_cast<size_t>(C));
  sums.context_sumsq.resize(static_cast<size_t>(C));
  f.read("normalisation/context_count", h5::Type::kFloat64, &sums.context_count, 1);
  f.read("normalisation/context_sum", h5::Type::kFloat64, sums.context_sum.data(), C);
  f.read("normalisation/context_sumsq", h5::Type::kFloat64, sums.context_sumsq.data(), C);
  f.read("normalisation/residual_count", h5::Type::kFloat64, &sums.residual_count, 1);
  f.read("normalisation/residual_sumsq", h5::Type::kFloat64, &sums.residual_sumsq, 1);
  const auto state_info = f.info("rng/state");
  auto state = torch::empty({state_info.numel()}, torch::kUInt8);
  f.read("rng/state", h5::Type::kUInt8, state.data_ptr<uint8_t>(), state.numel());
  const int64_t step = f.attr_int("/", "step");
  const int64_t bad = f.has_attr("/", "consecutive_bad_steps") ? f.attr_int("/", "consecutive_bad_steps") : 0;
  const int64_t total_bad = f.has_attr("/", "total_bad_steps") ? f.attr_int("/", "total_bad_steps") : 0;
  auto gen = at::make_generator<at::CPUGeneratorImpl>(0);
  try {
    gen.set_state(state);
  } catch (const c10::Error& e) {
    throw CheckpointError(path + ": /rng/state is not a valid generator state (" + std::to_string(state.numel()) + " bytes)");
  }

  torch::NoGradGuard no_grad;
  im.flat.copy_(staged[0]);
  im.ema.copy_(staged[1]);
  im.exp_avg.copy_(staged[2]);
  im.exp_avg_sq.copy_(staged[3]);
  im.sums = std::move(sums);
  im.gen = gen;
  im.step = step;
  im.consecutive_bad = bad;
  im.total_bad = total_bad;
  im.norm = im.derive_norm();
  publish();
}

Downscaler Downscaler::load_checkpoint(const std::string& path, const std::string& device) {
  if (!std::filesystem::exists(path)) throw CheckpointError(path + ": no such checkpoint file");
  ModelOptions mo;
  TrainOptions to;
  {
    h5::File f = h5::File::open_read(path, format::kCheckpointReporting);
    format::check_header(f);
    mo = format::read_model_options(f);
    to = format::read_train_options(f);
  }
  try {
    models::validate(mo);
    validate_train(to);
  } catch (const std::invalid_argument& e) {
    throw CheckpointError(path + ": the stored options are invalid: " + e.what());
  }
  Downscaler d(mo, to, device);
  d.restore(path);
  return d;
}

std::map<std::string, std::string> Downscaler::checkpoint_metadata(const std::string& path) {
  return read_checkpoint_metadata(path);
}

}  // namespace finecast::trainer
