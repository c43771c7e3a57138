// SPDX-License-Identifier: BSD-3-Clause
// Noise and learning-rate schedules, the conservative projection, DDPM and DDIM samplers.
#include "trainer/diffusion.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#if FINECAST_HAVE_CUDA
#include <c10/cuda/CUDAStream.h>

#include "trainer/cuda_kernels.hpp"
#endif

namespace finecast::trainer::diffusion {

std::vector<double> linear_betas(int64_t steps) {
  const double scale = 1000.0 / static_cast<double>(steps);
  const double b0 = scale * 1e-4, b1 = std::min(scale * 0.02, 0.999);
  std::vector<double> beta(static_cast<size_t>(steps));
  for (int64_t i = 0; i < steps; ++i)
    beta[i] = b0 + (b1 - b0) * static_cast<double>(i) / static_cast<double>(steps - 1);
  return beta;
}

std::vector<double> cosine_alpha_bar(int64_t steps) {
  const double s = 0.008;
  auto f = [&](double u) {
    const double c = std::cos((u / static_cast<double>(steps) + s) / (1.0 + s) * M_PI / 2.0);
    return c * c;
  };
  std::vector<double> ab(static_cast<size_t>(steps));
  double prev = 1.0;
  for (int64_t i = 0; i < steps; ++i) {
    double beta = 1.0 - f(static_cast<double>(i + 1)) / f(static_cast<double>(i));
    beta = std::min(beta, 0.999);
    prev *= 1.0 - beta;
    ab[i] = prev;
  }
  return ab;
}

Schedule make_schedule(NoiseSchedule kind, int64_t steps, const torch::Device& device) {
  if (steps < 2) throw std::invalid_argument("model.diffusion_steps: must be >= 2");
  Schedule s;
  s.steps = steps;
  const auto n = static_cast<size_t>(steps);
  if (kind == NoiseSchedule::kLinear) {
    s.beta = linear_betas(steps);
    s.alpha_bar.resize(n);
    double p = 1.0;
    for (size_t i = 0; i < n; ++i) s.alpha_bar[i] = p *= 1.0 - s.beta[i];
  } else {
    s.alpha_bar = cosine_alpha_bar(steps);
    s.beta.resize(n);
    for (size_t i = 0; i < n; ++i) s.beta[i] = 1.0 - s.alpha_bar[i] / (i == 0 ? 1.0 : s.alpha_bar[i - 1]);
  }
  s.post_c0.resize(n);
  s.post_ct.resize(n);
  s.post_var.resize(n);
  std::vector<float> a(n), b(n);
  for (size_t i = 0; i < n; ++i) {
    const double ab = s.alpha_bar[i], ab_prev = i == 0 ? 1.0 : s.alpha_bar[i - 1];
    s.post_c0[i] = s.beta[i] * std::sqrt(ab_prev) / (1.0 - ab);
    s.post_ct[i] = (1.0 - ab_prev) * std::sqrt(1.0 - s.beta[i]) / (1.0 - ab);
    s.post_var[i] = s.beta[i] * (1.0 - ab_prev) / (1.0 - ab);
    a[i] = static_cast<float>(std::sqrt(ab));
    b[i] = static_cast<float>(std::sqrt(1.0 - ab));
  }
  s.sqrt_ab = torch::tensor(a).to(device);
  s.sqrt_1mab = torch::tensor(b).to(device);
  const std::vector<double> ls = log_sigmas(s);
  s.log_sigma_mid.resize(n - 1);
  for (size_t i = 0; i + 1 < n; ++i) s.log_sigma_mid[i] = 0.5 * (ls[i] + ls[i + 1]);
  s.log_sigma_mid_f = torch::tensor(std::vector<float>(s.log_sigma_mid.begin(), s.log_sigma_mid.end()));
  return s;
}

double learning_rate(const TrainOptions& o, int64_t step) {
  if (o.warmup_steps > 0 && step < o.warmup_steps)
    return o.lr * static_cast<double>(step + 1) / static_cast<double>(o.warmup_steps);
  const int64_t d = step - std::max<int64_t>(o.warmup_steps, 0);
  if (o.decay_steps <= 0 || d >= o.decay_steps) return o.lr * o.min_lr_ratio;
  const double progress = static_cast<double>(d) / static_cast<double>(o.decay_steps);
  const double cosine = 0.5 * (1.0 + std::cos(M_PI * progress));
  return o.lr * (o.min_lr_ratio + (1.0 - o.min_lr_ratio) * cosine);
}

double learning_rate(const TrainOptions& o, int64_t step, double budget_fraction) {
  if (budget_fraction < 0.0 || (o.warmup_steps > 0 && step < o.warmup_steps)) return learning_rate(o, step);
  const double progress = std::min(1.0, budget_fraction);
  const double cosine = 0.5 * (1.0 + std::cos(M_PI * progress));
  return o.lr * (o.min_lr_ratio + (1.0 - o.min_lr_ratio) * cosine);
}

double step_budget_fraction(const TrainOptions& o, int64_t counted, int64_t warm_end) {
  const int64_t span = o.max_steps - warm_end;
  if (span <= 0) return 1.0;
  return std::clamp(static_cast<double>(counted - warm_end) / static_cast<double>(span), 0.0, 1.0);
}

const std::vector<double>& ddpm_variance(const Schedule& s, DdpmVariance v) {
  return v == DdpmVariance::kBeta ? s.beta : s.post_var;
}

std::vector<double> log_sigmas(const Schedule& s) {
  std::vector<double> out(s.alpha_bar.size());
  for (size_t i = 0; i < out.size(); ++i) out[i] = 0.5 * std::log((1.0 - s.alpha_bar[i]) / s.alpha_bar[i]);
  return out;
}

int64_t nearest_step(const Schedule& s, double sigma) {
  const std::vector<double>& mid = s.log_sigma_mid;
  return std::lower_bound(mid.begin(), mid.end(), std::log(sigma)) - mid.begin();
}

torch::Tensor draw_timesteps(const TrainOptions& o, const Schedule& s, int64_t n, at::Generator& gen) {
  const auto long_cpu = torch::TensorOptions().dtype(torch::kInt64);
  torch::Tensor t;
  if (o.noise_levels == NoiseLevels::kUniform) {
    t = torch::randint(0, s.steps, {n}, gen, long_cpu);
  } else {
    const auto draws =
        torch::randn({n}, gen, torch::TensorOptions().dtype(torch::kFloat32)) * o.noise_log_std + o.noise_log_mean;
    t = torch::searchsorted(s.log_sigma_mid_f, draws).to(torch::kInt64);
  }
  // Drawn after the levels, so that without mean_fraction the generator's sequence is what it was.
  if (o.mean_fraction > 0) {
    const auto at_mean = torch::rand({n}, gen, torch::TensorOptions().dtype(torch::kFloat32)) < o.mean_fraction;
    t = torch::where(at_mean, torch::full_like(t, nearest_step(s, o.mean_sigma)), t);
  }
  return t;
}

torch::Tensor remove_mean(const torch::Tensor& x, const torch::Tensor& w) {
  if (!w.defined()) return x - x.mean(1, true);
  return x - (x * w).sum(1, true);
}

std::vector<int64_t> ddim_timesteps(int64_t T, int64_t n) {
  n = std::clamp<int64_t>(n, 1, T);
  // "Leading" spacing of the DDIM paper: t = floor(i T / n), i = n-1 .. 0. Starting below T-1
  // matters for eps prediction: at t = T-1 of a cosine schedule sqrt(alpha_bar) ~ 1e-3, so the
  // x0 implied by the noise estimate is noise amplified a thousandfold, which DDIM's large
  // steps carry into the sample (DDPM's small steps damp it).
  std::vector<int64_t> ts;
  for (int64_t i = n - 1; i >= 0; --i) ts.push_back(i * T / n);
  return ts;
}

int64_t churn_step(const Schedule& s, int64_t t, double churn) {
  // Not at the last step (t = 0, to the data), as EDM's S_tmin leaves out the lowest levels: it
  // returns the x0 estimate itself, whose variance a raised level would only shrink.
  if (churn <= 0 || t == 0) return t;
  auto sigma2 = [&](int64_t u) { return (1.0 - s.alpha_bar[u]) / s.alpha_bar[u]; };
  const double target = (1.0 + churn) * (1.0 + churn) * sigma2(t);
  // The network knows only the schedule's steps, so the raised level is rounded up to one of them.
  int64_t u = t + 1;
  while (u < s.steps - 1 && sigma2(u) < target) ++u;
  return std::min(u, s.steps - 1);
}

namespace {

/// The step from t evaluated at u = churn_step(t): the estimates' a, b and churn's re-noising by
/// q(x_u | x_t) = N(sqrt(ab_u/ab_t) x_t, (1 - ab_u/ab_t) I).
StepCoefficients evaluated_at(const Schedule& s, int64_t t, double churn) {
  StepCoefficients c;
  c.t = t;
  c.u = churn_step(s, t, churn);
  c.a = std::sqrt(s.alpha_bar[c.u]);
  c.b = std::sqrt(1.0 - s.alpha_bar[c.u]);
  if (c.u != t) {
    const double r = s.alpha_bar[c.u] / s.alpha_bar[t];
    c.keep = std::sqrt(r);
    c.renoise = std::sqrt(1.0 - r);
  }
  return c;
}

}  // namespace

std::vector<StepCoefficients> ddpm_steps(const Schedule& s, const std::vector<double>& var, double churn) {
  std::vector<StepCoefficients> steps;
  for (int64_t t = s.steps - 1; t >= 0; --t) {
    StepCoefficients c = evaluated_at(s, t, churn);
    const int64_t u = c.u;
    if (u == t) {
      c.x0_coef = s.post_c0[t];
      c.x_coef = s.post_ct[t];
      if (t > 0) c.z_coef = std::sqrt(var[t]);
    } else {
      // q(x_{t-1} | x_u, x_0) over the gap u -> t-1 (the DDPM posterior's formulas with
      // alpha_bar_u / alpha_bar_{t-1} in place of 1 - beta_t); the variance's law over the gap:
      // the forward one where `var` is beta, else the posterior's.
      const double ab = s.alpha_bar[u], ab_prev = t > 0 ? s.alpha_bar[t - 1] : 1.0;
      const double gap = 1.0 - ab / ab_prev;
      c.x0_coef = std::sqrt(ab_prev) * gap / (1.0 - ab);
      c.x_coef = std::sqrt(1.0 - gap) * (1.0 - ab_prev) / (1.0 - ab);
      if (t > 0) c.z_coef = std::sqrt(&var == &s.beta ? gap : gap * (1.0 - ab_prev) / (1.0 - ab));
    }
    steps.push_back(c);
  }
  return steps;
}

std::vector<StepCoefficients> ddim_steps(const Schedule& s, int64_t n, double eta, double churn) {
  const auto ts = ddim_timesteps(s.steps, n);
  std::vector<StepCoefficients> steps;
  for (size_t i = 0; i < ts.size(); ++i) {
    StepCoefficients c = evaluated_at(s, ts[i], churn);
    if (i + 1 < ts.size()) {
      const double ab = s.alpha_bar[c.u], ab_prev = s.alpha_bar[ts[i + 1]];
      // Song et al. (2021), eq. 16: sigma = eta * sqrt((1 - ab_prev) / (1 - ab)) * sqrt(1 - ab / ab_prev).
      const double sigma = eta * std::sqrt((1.0 - ab_prev) / (1.0 - ab)) * std::sqrt(1.0 - ab / ab_prev);
      c.x0_coef = std::sqrt(ab_prev);
      c.eps_coef = std::sqrt(std::max(0.0, 1.0 - ab_prev - sigma * sigma));
      c.z_coef = sigma;
    }
    steps.push_back(c);
  }
  return steps;
}

std::vector<StepCoefficients> sampler_steps(const Schedule& s, const SampleOptions& o) {
  if (o.sampler == Sampler::kDdpm) return ddpm_steps(s, ddpm_variance(s, o.ddpm_variance), o.churn);
  return ddim_steps(s, o.steps, o.eta, o.churn);
}

namespace {

/// (x0, eps) estimates from the network output at the step's u.
std::pair<torch::Tensor, torch::Tensor> estimates(const SamplerSetup& s, const torch::Tensor& x,
                                                  const torch::Tensor& out, const StepCoefficients& c) {
  const double a = c.a, b = c.b;
  torch::Tensor x0, eps;
  if (s.v_objective) {
    x0 = a * x - b * out;
    eps = b * x + a * out;
  } else {
    x0 = (x - b * out) / a;
    eps = out;
  }
  if (s.x0_clip > 0) {
    // A clipped x0 must give back the eps that is consistent with it, or DDIM drifts.
    auto clipped = x0.clamp(-s.x0_clip, s.x0_clip);
    if (s.conservative) clipped = remove_mean(clipped, s.weights);
    eps = (x - a * clipped) / b;
    x0 = clipped;
  } else if (s.conservative) {
    x0 = remove_mean(x0, s.weights);
  }
  return {x0, eps};
}

}  // namespace

torch::Tensor x0_estimate(const SamplerSetup& s, const torch::Tensor& x_t, const torch::Tensor& out, int64_t t) {
  return estimates(s, x_t, out, evaluated_at(*s.schedule, t, 0.0)).first;
}

namespace {

/// Draw `k` of `noise`, or a fresh one from `gen`, without its mean where conservative.
torch::Tensor noise_of(const SamplerSetup& s, const torch::Tensor& noise, int64_t k, const torch::Tensor& x,
                       at::Generator* gen) {
  auto z = noise.defined()
               ? noise[k]
               : torch::randn(x.sizes(), *gen, torch::TensorOptions().dtype(torch::kFloat32)).to(x.device());
  if (s.conservative) z = remove_mean(z, s.weights);
  return z;
}

/// Churn before evaluation `k`: x re-noised from t to u (in place of x).
void churn(const SamplerSetup& s, torch::Tensor& x, const StepCoefficients& c, int64_t k, at::Generator* gen) {
  if (c.u == c.t) return;
  if (!s.churn_noise.defined() && gen == nullptr)
    throw std::invalid_argument("sample.churn: needs a generator or pre-drawn churn noise");
  x = c.keep * x + c.renoise * noise_of(s, s.churn_noise, k, x, gen);
}

}  // namespace

namespace {

/// SamplerSetup::fused_steps applies to x (its conditions; a CUDA tensor means a CUDA build).
bool fused(const SamplerSetup& s, const torch::Tensor& x) {
  return s.fused_steps && x.is_cuda() && s.noise.defined() && x.dim() == 2 && x.scalar_type() == torch::kFloat32;
}

/// One step's update in one kernel: x0_coef x0 + x_coef x + eps_coef eps + z_coef z (z may be
/// undefined), or x0 where `last`; the arithmetic of estimates() and the samplers.
torch::Tensor fused_step(const SamplerSetup& s, const torch::Tensor& x, const torch::Tensor& out,
                         const StepCoefficients& c, const torch::Tensor& z, bool last) {
#if FINECAST_HAVE_CUDA
  const auto xc = x.contiguous(), oc = out.to(torch::kFloat32).contiguous();
  const auto zc = z.defined() ? z.contiguous() : torch::Tensor();
  const bool weighted = s.conservative && s.weights.defined();
  const auto wc = weighted ? s.weights.to(torch::kFloat32).contiguous() : torch::Tensor();
  auto next = torch::empty_like(xc);
  const auto f = [](double v) { return static_cast<float>(v); };
  const int err = finecast_sampler_step_cuda(
      xc.data_ptr<float>(), oc.data_ptr<float>(), zc.defined() ? zc.data_ptr<float>() : nullptr,
      weighted ? wc.data_ptr<float>() : nullptr, next.data_ptr<float>(), xc.size(0), xc.size(1), f(c.a), f(c.b),
      f(c.x0_coef), f(c.x_coef), f(c.eps_coef), zc.defined() ? f(c.z_coef) : 0.0f, f(s.x0_clip), s.v_objective ? 1 : 0,
      s.conservative ? 1 : 0, last ? 1 : 0, c10::cuda::getCurrentCUDAStream(x.device().index()).stream());
  if (err != 0)
    throw std::runtime_error("sampler: the fused step's CUDA kernel did not launch (error " + std::to_string(err) +
                             ")");
  return next;
#else
  (void)s, (void)x, (void)out, (void)c, (void)z, (void)last;
  throw std::runtime_error("sampler: this build has no fused step kernel");
#endif
}

}  // namespace

torch::Tensor ddpm_sample(const SamplerSetup& s, const NetFn& net, torch::Tensor x, at::Generator* gen) {
  if (gen == nullptr && !s.noise.defined())
    throw std::invalid_argument("ddpm_sample: needs a generator or pre-drawn noise");
  const Schedule& sc = *s.schedule;
  const auto steps = ddpm_steps(sc, s.ddpm_var ? *s.ddpm_var : sc.post_var, s.churn);
  const bool one_kernel = fused(s, x);
  int64_t draw = 1, k = 0;
  for (const StepCoefficients& c : steps) {
    churn(s, x, c, k++, gen);
    if (one_kernel) {
      x = fused_step(s, x, net(x, c.u), c, c.t > 0 ? s.noise[draw++] : torch::Tensor(), false);
      continue;
    }
    auto x0 = estimates(s, x, net(x, c.u), c).first;
    auto mean = c.x0_coef * x0 + c.x_coef * x;
    if (c.t > 0) mean.add_(noise_of(s, s.noise, draw++, x, gen), c.z_coef);
    x = mean;
  }
  return x;
}

torch::Tensor ddim_sample(const SamplerSetup& s, const NetFn& net, torch::Tensor x, int64_t steps, double eta,
                          at::Generator* gen) {
  const Schedule& sc = *s.schedule;
  if (eta > 0 && gen == nullptr && !s.noise.defined())
    throw std::invalid_argument("ddim_sample: eta > 0 needs a generator or pre-drawn noise");
  if (s.churn > 0 && gen == nullptr && !s.churn_noise.defined())
    throw std::invalid_argument("ddim_sample: churn > 0 needs a generator or pre-drawn churn noise");
  const auto table = ddim_steps(sc, steps, eta, s.churn);
  const bool one_kernel = fused(s, x);
  for (size_t i = 0; i < table.size(); ++i) {
    const StepCoefficients& c = table[i];
    churn(s, x, c, static_cast<int64_t>(i), gen);
    if (one_kernel) {
      const bool last = i + 1 == table.size();
      x = fused_step(s, x, net(x, c.u), c,
                     !last && c.z_coef > 0 ? s.noise[static_cast<int64_t>(i) + 1] : torch::Tensor(), last);
      if (last) return x;
      continue;
    }
    auto [x0, eps] = estimates(s, x, net(x, c.u), c);
    if (i + 1 == table.size()) return x0;
    x = c.x0_coef * x0 + c.eps_coef * eps;
    if (c.z_coef > 0) x.add_(noise_of(s, s.noise, static_cast<int64_t>(i) + 1, x, gen), c.z_coef);
  }
  return x;
}

}  // namespace finecast::trainer::diffusion
