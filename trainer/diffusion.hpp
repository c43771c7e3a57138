// SPDX-License-Identifier: BSD-3-Clause
// Noise schedules, the learning-rate schedule, conservative projection and the samplers (internal).
#pragma once

#include <torch/torch.h>

#include <functional>
#include <string>
#include <vector>

#include "trainer/downscaler.hpp"
#include "trainer/step_coefficients.hpp"

namespace finecast::trainer::diffusion {

/// A discrete noise schedule of T steps, t = 0..T-1 (t = 0 is the least noisy).
struct Schedule {
  int64_t steps = 0;
  std::vector<double> beta, alpha_bar;
  /// DDPM posterior q(x_{t-1} | x_t, x_0) = N(c0[t] x_0 + ct[t] x_t, var[t]).
  std::vector<double> post_c0, post_ct, post_var;
  torch::Tensor sqrt_ab, sqrt_1mab;  ///< float32 [T] on the training device, for batched noising
  /// The boundaries between neighbouring steps' ln sigma_t (midpoints, [T-1]): a level below the
  /// first belongs to step 0, above the last to step T-1 (nearest_step, draw_timesteps); and the
  /// same as a float32 CPU tensor, for the log-normal draws of every training step.
  std::vector<double> log_sigma_mid;
  torch::Tensor log_sigma_mid_f;
};

/// beta_t linear from 1e-4 to 0.02, both scaled by 1000/T so that short schedules still end
/// near pure noise (Nichol & Dhariwal 2021).
std::vector<double> linear_betas(int64_t steps);
/// alpha_bar_t = f(t+1)/f(0), f(u) = cos((u/T + s)/(1 + s) * pi/2)^2, s = 0.008, with each
/// beta clipped to 0.999 (Nichol & Dhariwal 2021).
std::vector<double> cosine_alpha_bar(int64_t steps);
/// Builds a schedule.
Schedule make_schedule(NoiseSchedule kind, int64_t steps, const torch::Device& device);

/// Learning rate at optimizer step `step` (0-based): linear warm-up to lr, then cosine decay to
/// lr * min_lr_ratio over decay_steps, constant after.
double learning_rate(const TrainOptions& o, int64_t step);
/// With a time budget: the warm-up by steps, then the cosine decay over the fraction of the
/// budget used (`budget_fraction` in [0, 1]; negative = no budget: learning_rate(o, step)).
double learning_rate(const TrainOptions& o, int64_t step, double budget_fraction);
/// The fraction of a step budget (train.max_steps) that the cosine decay has covered after
/// `counted` of its steps, when its warm-up ends at `warm_end` of them: 0 until then, 1 at
/// max_steps.
double step_budget_fraction(const TrainOptions& o, int64_t counted, int64_t warm_end);

/// x minus its weighted row mean (w [B,P] rows summing to 1, or undefined = uniform).
torch::Tensor remove_mean(const torch::Tensor& x, const torch::Tensor& w);

/// Descending DDIM time steps floor(i*T/n), i = n-1..0 (DDIM's "leading" spacing; ends at 0).
std::vector<int64_t> ddim_timesteps(int64_t T, int64_t n);

/// The network as the samplers see it: (x_t [B,P], t) -> raw output (eps or v).
using NetFn = std::function<torch::Tensor(const torch::Tensor& x_t, int64_t t)>;

/// What the samplers need besides the network.
struct SamplerSetup {
  const Schedule* schedule = nullptr;
  bool v_objective = false;
  bool conservative = false;
  torch::Tensor weights;  ///< [B,P] or undefined (uniform); used when conservative
  double x0_clip = 20.0;  ///< bound on the x0 estimate in normalised units (stability at t ~ T)
  /// Pre-drawn N(0,1) noise [draws, B, P] on x's device, or undefined (draw from the generator).
  /// DDPM uses draw k at its k-th noisy update (k = 1..T-1); DDIM uses draw i+1 after step i.
  torch::Tensor noise;
  /// DDPM: the variance of each ancestral step, [T]; nullptr = the posterior's (schedule->post_var).
  /// A step that churn starts at t' > t uses the same law over its longer gap t' -> t-1: the
  /// forward variance 1 - alpha_bar_t' / alpha_bar_{t-1} when this points at schedule->beta, else
  /// the posterior's.
  const std::vector<double>* ddpm_var = nullptr;
  /// sample.churn (see churn_step); 0 = none, the samplers as without it, bit for bit.
  double churn = 0.0;
  /// With churn: pre-drawn N(0,1) noise [evaluations, B, P] on x's device (draw k re-noises before
  /// the k-th network evaluation), or undefined (draw from the generator).
  torch::Tensor churn_noise;
  /// On a GPU of a CUDA build, with pre-drawn noise: each step's update in one kernel
  /// (sampler_cuda.cu) instead of ~10 tensor operations, the same formulas. The captured sampler
  /// loop sets it (graphs::SampleGraphs); elsewhere the tensor form runs.
  bool fused_steps = false;
};

/// The step that churn raises step t to: the first t' > t with sigma_t' >= (1 + churn) sigma_t,
/// at most T-1 (sigma_t = sqrt((1 - alpha_bar_t) / alpha_bar_t)); t itself when churn <= 0 and at
/// t = 0 (the last step: the data is not churned, as EDM's S_tmin leaves out the lowest levels).
int64_t churn_step(const Schedule& s, int64_t t, double churn);

/// The variance of DDPM's ancestral steps that sample.ddpm_variance names: post_var or beta.
const std::vector<double>& ddpm_variance(const Schedule& s, DdpmVariance v);

/// ln sigma_t = ln sqrt((1 - alpha_bar_t) / alpha_bar_t) of every step (increasing in t).
std::vector<double> log_sigmas(const Schedule& s);
/// The step whose ln sigma_t is nearest ln `sigma` (sigma > 0; the lower step on a tie): the rule
/// by which draw_timesteps maps log-normal draws to steps.
int64_t nearest_step(const Schedule& s, double sigma);
/// `n` training diffusion steps (int64 [n], CPU) as train.noise_levels says: uniform draws
/// torch::randint(0, T) exactly; lognormal draws ln sigma ~ N(noise_log_mean, noise_log_std^2)
/// and takes the step with the nearest ln sigma_t; then a share mean_fraction of them (each drawn
/// apart) is replaced by nearest_step(mean_sigma).
torch::Tensor draw_timesteps(const TrainOptions& o, const Schedule& s, int64_t n, at::Generator& gen);

/// The steps of DDPM (t = T-1..0) with the ancestral variance `var` (schedule.post_var or
/// schedule.beta) and churn.
std::vector<StepCoefficients> ddpm_steps(const Schedule& s, const std::vector<double>& var, double churn);
/// The steps of DDIM over ddim_timesteps(T, steps) with eta and churn; the last returns x0.
std::vector<StepCoefficients> ddim_steps(const Schedule& s, int64_t steps, double eta, double churn);
/// The steps of the sampling `o` names (sampler, steps, eta, ddpm_variance, churn).
std::vector<StepCoefficients> sampler_steps(const Schedule& s, const SampleOptions& o);

/// The network's estimate of x0 from x_t and its raw output `out` at step t, as the samplers take
/// it: by s.v_objective, clipped to +-s.x0_clip, without its patch mean (s.weights) where
/// s.conservative.
torch::Tensor x0_estimate(const SamplerSetup& s, const torch::Tensor& x_t, const torch::Tensor& out, int64_t t);
/// DDPM ancestral sampling from x_T (noise) through all T steps; returns x_0. `gen` is needed
/// only when s.noise (or, with churn, s.churn_noise) is undefined. With churn, the step at t
/// evaluates the network at t' = churn_step(t) after re-noising x_t to t' and goes from t' to t-1
/// with the posterior q(x_{t-1} | x_t', x_0) (the variance's law over the gap t' -> t-1).
torch::Tensor ddpm_sample(const SamplerSetup& s, const NetFn& net, torch::Tensor x, at::Generator* gen = nullptr);
/// Deterministic DDIM (eta = 0) over ddim_timesteps(T, steps); returns x_0.
/// eta scales the noise added at each DDIM step: 0 is deterministic DDIM; 1 with steps = T draws
/// exactly what ddpm_sample draws (same posterior, same order of generator calls). Values in
/// between (and eta = 1 with fewer steps) keep more fine-scale variability than eta = 0.
/// `gen` is needed when eta > 0 (or churn > 0) and the noise is not pre-drawn. With churn, each
/// step re-noises x_t to t' = churn_step(t) and goes from t' to the next DDIM step.
torch::Tensor ddim_sample(const SamplerSetup& s, const NetFn& net, torch::Tensor x, int64_t steps, double eta = 0.0,
                          at::Generator* gen = nullptr);

}  // namespace finecast::trainer::diffusion
