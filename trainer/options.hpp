// SPDX-License-Identifier: BSD-3-Clause
// The trainer's options (model, optimisation, sampling), their enumerated values with names
// (parsed once, printed by name), and their option tables (common/schema.hpp): the one
// declaration of each key that the plugin's config, checkpoints and the resolved dump share.
// Torch-free, in its own small library (libfinecast_options), so that the config and every
// host rank can use it without loading LibTorch.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "common/schema.hpp"
#include "trainer/denoisers/list.hpp"

namespace finecast::trainer {

/// The denoiser architectures (model.arch): those of trainer/denoisers/list.hpp, in its order.
#define FINECAST_ARCH_ENUMERATOR(id, arch_name) id,
enum class Arch { FINECAST_DENOISERS(FINECAST_ARCH_ENUMERATOR) };
#undef FINECAST_ARCH_ENUMERATOR
enum class Activation { kSilu, kGelu, kRelu };
enum class NoiseSchedule { kLinear, kCosine };
enum class Objective { kEps, kV };
enum class Sampler { kDdpm, kDdim };
enum class DdpmVariance { kPosterior, kBeta };
enum class NoiseLevels { kUniform, kLognormal };
enum class ValidationMetric { kLoss, kCrps, kCrpsFair };
enum class ValidationSplit { kTime, kPatches };
enum class BudgetScope { kSession, kRun };
enum class NoiseGenerator { kCpu, kPhilox };

const schema::Names<Arch>& names(Arch);
const schema::Names<Activation>& names(Activation);
const schema::Names<NoiseSchedule>& names(NoiseSchedule);
const schema::Names<Objective>& names(Objective);
const schema::Names<Sampler>& names(Sampler);
const schema::Names<DdpmVariance>& names(DdpmVariance);
const schema::Names<NoiseLevels>& names(NoiseLevels);
const schema::Names<ValidationMetric>& names(ValidationMetric);
const schema::Names<ValidationSplit>& names(ValidationSplit);
const schema::Names<BudgetScope>& names(BudgetScope);
const schema::Names<NoiseGenerator>& names(NoiseGenerator);

/// "mlp", "cosine", ...: the name of any of the enums above.
template <class E>
std::string name(E value) {
  return schema::name_of(value);
}

/// The model part of the config; stored in every checkpoint and checked on load. Every key is
/// declared once, in model_options_table() (trainer/options.cpp).
struct ModelOptions {
  Arch arch = Arch::kMlp;
  int64_t context_size = 7;  ///< C: context values per patch
  int64_t patch_size = 256;  ///< P: fine values per patch (unet: a square k*k, k even; graph: 4^m, m >= 2)
  /// The last static_channels * P context values are fine fields on the patch (the static
  /// covariates' anomalies): the U-Net and the graph denoiser take them as input channels, the
  /// MLP as more inputs. Derived by the run.
  int64_t static_channels = 0;
  int64_t hidden = 256;                       ///< MLP width
  int64_t depth = 3;                          ///< MLP hidden layers (C=7, P=256: 281K parameters)
  int64_t time_embedding = 64;                ///< size of the sinusoidal step embedding
  Activation activation = Activation::kSilu;  ///< gelu: the tanh approximation
  int64_t unet_channels = 32;                 ///< U-Net and graph denoiser base channels
  bool attention = false;                     ///< unet only: self-attention over the tokens of the lowest resolution
  int64_t diffusion_steps = 50;               ///< T
  NoiseSchedule schedule = NoiseSchedule::kCosine;
  /// v: well-conditioned DDIM/DDPM with few steps (docs/plugin.md); eps: the noise itself
  Objective objective = Objective::kV;
  bool conservative = true;  ///< every sample's weighted patch mean equals the coarse value
  /// arch torchscript: the TorchScript file of the denoiser (docs/training.md, "Your own denoiser").
  std::string file;
  /// arch torchscript: the module's bytes, read from `file` when the model is built, or from the
  /// checkpoint that embeds them (so resuming and finecast-downscale need no file). Not an option.
  std::shared_ptr<const std::string> torchscript;
};

/// Optimisation settings; not part of the model, but stored in checkpoints for the record.
/// Declared once in train_options_table().
struct TrainOptions {
  int64_t batch_size = 16;
  double lr = 1e-3;             ///< peak learning rate (AdamW)
  double weight_decay = 1e-4;   ///< AdamW decoupled weight decay
  int64_t warmup_steps = 100;   ///< linear warm-up from lr/warmup_steps to lr
  int64_t decay_steps = 10000;  ///< cosine decay from lr to lr*min_lr_ratio after the warm-up
  double min_lr_ratio = 0.1;
  double grad_clip = 1.0;      ///< max global gradient norm; <= 0 disables clipping
  double ema_decay = 0.999;    ///< EMA of the weights used for sampling
  bool bf16 = false;           ///< bf16 autocast; honoured on CUDA only (ignored, with an event, on CPU)
  int64_t max_bad_steps = 10;  ///< consecutive NaN/Inf steps before the last good weights are restored
  uint64_t seed = 42;          ///< seeds the trainer's own generator (noise, steps, shuffling)

  /// Micro-batches of batch_size per optimizer step (global batch = batch_size * accumulate).
  int64_t accumulate = 1;
  /// Fraction of the most recent time steps of a session's data held out for validation
  /// (train_session; 0 = none). Needs DataView::time, or rows in time order.
  double validation = 0.0;
  /// How the validation fraction is drawn: time = the most recent time steps; patches = a seeded
  /// subset of the samples themselves (each sample by a hash of its values and train.seed, so the
  /// same sample is held out in every session and on any number of trainer ranks). patches is
  /// for data with one or few time steps, where a split by time cannot hold anything out.
  ValidationSplit validation_split = ValidationSplit::kTime;
  /// Validate every this many optimizer steps within a session (at the end of the epoch that
  /// reaches it) as well as at the session's end; 0 = only at the session's end. Early stopping
  /// and plateau then count validations, not sessions.
  int64_t validation_every = 0;
  /// Ensemble members drawn (DDIM, 10 steps) per held-out sample for the validation CRPS; 0 = no CRPS.
  int64_t validation_members = 4;
  /// The CRPS uses at most this many held-out samples (evenly spaced); the loss uses all.
  int64_t validation_max_samples = 256;
  /// The score that early stopping, plateau and keep_best follow.
  ValidationMetric validation_metric = ValidationMetric::kLoss;
  /// Sessions without a better validation score before training stops for good; 0 = never.
  int64_t early_stop = 0;
  /// Sessions without a better validation score before the learning rate is multiplied by
  /// plateau_factor (again after each further `plateau` sessions); 0 = never.
  int64_t plateau = 0;
  double plateau_factor = 0.5;      ///< in (0, 1)
  double plateau_min_scale = 0.01;  ///< the learning-rate scale never goes below this
  /// Keep a copy of the state at the best validation score; save_checkpoint_in_dir writes it as
  /// ckpt_best.h5 beside the periodic checkpoints.
  bool keep_best = false;
  /// Bytes a training micro-batch may use on the device; an estimate above it takes the
  /// out-of-memory path (halve the micro-batch, accumulate twice as many). 0 = no limit.
  int64_t max_device_memory = 0;
  /// Train with LibTorch autograd even where the fused CPU path applies (MLP on the CPU).
  bool force_autograd = false;
  /// Intra-op threads of the training thread: 0 = leave the process setting (set_torch_threads),
  /// -1 = auto (measured with 1..max_threads at the first session, the fastest kept), N = N.
  int64_t threads = 0;
  int64_t max_threads = 0;  ///< upper end of the auto search; 0 = the hardware's cores
  /// On CUDA, capture the training step in a CUDA graph and replay it (full batches, after the
  /// first eager steps of a session); off = eager on every step.
  bool cuda_graphs = true;
  /// The training noise: cpu = the trainer's CPU generator, copied to the device each step;
  /// philox = the counter-based Philox4x32-10 stream (trainer/philox.hpp), drawn where the step
  /// runs (on CUDA inside the captured step, no copy); either is the same on CPU and GPU.
  NoiseGenerator noise_generator = NoiseGenerator::kCpu;
  /// Training wall-time budget in seconds (0 = none): training stops between optimizer steps
  /// once it is spent, and the learning rate's cosine decay (after the warm-up) runs over it
  /// instead of over decay_steps.
  double max_seconds = 0.0;
  /// Optimizer-step budget (0 = none): training stops once this many optimizer steps were taken
  /// (in the session, or in the run with budget: run), and the cosine decay after the warm-up
  /// runs over it instead of over decay_steps. Unlike max_seconds, it does not depend on the
  /// machine's load; with both, whichever runs out first ends training and the decay follows
  /// the further advanced of the two.
  int64_t max_steps = 0;
  /// What max_seconds and max_steps cover: each session (in situ), or every session of the run
  /// together (offline; the time used is kept in checkpoints, the steps are the model's step).
  BudgetScope budget = BudgetScope::kSession;
  /// How the diffusion step of each training sample is drawn: uniform over 0..T-1, or
  /// lognormal: sigma_t = sqrt((1 - alpha_bar_t) / alpha_bar_t) log-normal (EDM, Karras et al.
  /// 2022), each draw taken to the step whose log sigma_t is nearest (issue 26).
  NoiseLevels noise_levels = NoiseLevels::kUniform;
  double noise_log_mean = -1.2;  ///< lognormal: mean of ln sigma (EDM's P_mean)
  double noise_log_std = 1.2;    ///< lognormal: standard deviation of ln sigma (EDM's P_std)
  /// The share of training samples taken to the step nearest mean_sigma instead (0 = none): the
  /// denoiser's estimate there is the conditional mean that sample.recentre_sigma reads, which
  /// log-normal levels around noise_log_mean train rarely (issue 43).
  double mean_fraction = 0.0;
  double mean_sigma = 16.0;  ///< mean_fraction: the noise level (sigma_t) of those samples
  /// Noise augmentation of the conditioning: N(0, context_noise^2) added to every normalised
  /// context value of every training sample (0 = none; issue 26).
  double context_noise = 0.0;
  /// Fine-tuning of the sampling weights at the end of every session that trained (issue 43):
  /// crps_steps optimizer steps on the fair CRPS of crps_members members per sample, drawn by
  /// deterministic DDIM with crps_sampler_steps steps and differentiated through the sampler,
  /// at the constant learning rate crps_lr. 0 steps = none. The members are then meant to be
  /// drawn the same way (sample.sampler ddim, sample.steps = crps_sampler_steps, sample.eta 0).
  int64_t crps_steps = 0;
  int64_t crps_members = 4;
  int64_t crps_sampler_steps = 10;
  double crps_lr = 1e-4;
  /// Fine-tune on the session's held-out part (train.validation) instead of its training part:
  /// members scored where the network did not learn, so that the spread learns its
  /// generalisation error too. Needs train.validation > 0.
  bool crps_held_out = false;
};

/// How sample() draws. Declared once in sample_options_table().
struct SampleOptions {
  Sampler sampler = Sampler::kDdim;  ///< ddpm: ancestral, all T steps; ddim: `steps` steps
  int64_t steps = 10;                ///< DDIM steps (ignored by ddpm)
  int64_t members = 8;               ///< ensemble members per patch, drawn in one batch
  double eta = 0.0;                  ///< ddim noise: 0 deterministic .. 1 ancestral (ddpm-like); in [0, 1]
  /// ddpm: the variance of each ancestral step: the posterior's beta~_t (the lower bound of Ho
  /// et al. 2020, exact for a point distribution of the data) or beta_t (the upper bound, exact
  /// for N(0, 1) data: more spread).
  DdpmVariance ddpm_variance = DdpmVariance::kPosterior;
  /// Post-hoc spread inflation: every member's deviation from the ensemble mean of its patch is
  /// multiplied by this (1 = none). The ensemble mean and the patch means stay; fit it on data
  /// that is not scored (docs/evaluation.md, "Calibration"; issue 26).
  double inflation = 1.0;
  /// Inflation per patch by how far its context lies beyond the training range: a patch's
  /// deviations are multiplied by inflation * (1 + e)^inflation_range, where e is
  /// Downscaler::training_range_excess (0 inside the range; the largest excess over the context's
  /// features, in units of each feature's range width). 0 = one inflation for every patch. Where
  /// the network is asked about contexts it never saw, its error grows more than its spread
  /// (docs/evaluation.md, "Regions of one's own: the mountains").
  double inflation_range = 0.0;
  /// Churn (the stochastic sampler of EDM, Karras et al. 2022) on the discrete schedule: before
  /// each network evaluation at step t, x_t is re-noised to the first step t' > t whose sigma is
  /// at least (1 + churn) sigma_t (at most T-1) by the forward process's exact marginal
  /// q(x_t' | x_t), and the step is taken from t' (0 = none; docs/training.md, "Churn in the sampler").
  double churn = 0.0;
  /// Recentring (0 = none): each patch's members are moved onto the denoiser's estimate of their
  /// conditional mean instead of keeping their own mean, which carries the sampling noise of M
  /// draws. Each member is noised to the step whose sigma is nearest this value, the network's x0
  /// estimate there is averaged over the members (Tweedie's formula; its noise falls with the
  /// sigma, as v / (v + sigma^2) for a residual of variance v), and the members keep their
  /// deviations, scaled by sqrt(M / (M - 1)) so that their expected spread is that of M
  /// independent draws. One more network evaluation per member (docs/training.md).
  double recentre_sigma = 0.0;
  /// Hold each context feature near the range it had in the training data (within clip_margin)
  /// before the network sees it; the base, which the residual is added to, still sees the raw
  /// covariates. A network asked about surfaces far higher than any it was trained on
  /// extrapolates badly (docs/training.md, "Holding the context near its training range").
  /// Checkpoints from before the range was kept sample unclipped.
  bool clip_context = true;
  /// How far beyond its training range a feature may go under clip_context, as a fraction of the
  /// range's width at each end (0: at the range).
  double clip_margin = 0.25;
  /// Intra-op threads of the calling thread while it samples: 0 = leave as is, -1 = auto (measured
  /// with 1..max_threads at the first call of a given batch size, then remembered), N = N.
  int64_t threads = 0;
  int64_t max_threads = 0;  ///< upper end of the auto search; 0 = the hardware's cores
  /// On CUDA, capture the sampler loop (all steps, noise pre-drawn and copied once) in a CUDA
  /// graph per batch shape and replay it.
  bool cuda_graphs = true;
};

/// The sampling options a command line gives (trainer/sample_flags.hpp), each unset unless given;
/// the others come from elsewhere (the checkpoint's /sampling: finecast-downscale, finecast-export).
struct SampleOverrides {
  std::optional<std::string> sampler;        ///< ddim | ddpm (sample.sampler)
  std::optional<int64_t> steps;              ///< ddim steps (sample.steps)
  std::optional<double> eta;                 ///< ddim noise per step, 0 deterministic .. 1 ancestral (sample.eta)
  std::optional<std::string> ddpm_variance;  ///< ddpm step variance: posterior | beta (sample.ddpm_variance)
  std::optional<double> inflation;           ///< post-hoc spread inflation (sample.inflation)
  std::optional<double> inflation_range;     ///< its growth beyond the training range (sample.inflation_range)
  std::optional<double> churn;               ///< EDM churn of the sampler (sample.churn)
  std::optional<double> recentre_sigma;      ///< the denoiser's mean estimate (sample.recentre_sigma)
  std::optional<bool> clip_context;          ///< the context held to its training range (sample.clip_context)
  std::optional<double> clip_margin;         ///< how far beyond it (sample.clip_margin)
};

/// `base` with every option of `given` set through its row of sample_options_table() (the row's
/// checks); throws schema::BadValue naming the flag: "--ddpm-variance must be one of ...".
SampleOptions overridden(SampleOptions base, const SampleOverrides& given);

/// The sampling options as a phrase ("ddpm, inflation 2.346", "ddim 10 steps"): what the logs and
/// the outputs' finecast_sampling attribute say; defaults (posterior variance, eta 0, churn 0,
/// recentre_sigma 0, inflation 1) are left out.
std::string sampling_text(const SampleOptions& sampling);

/// What the logs say of a sampling's patches whose context leaves the training range widened by
/// sample.clip_margin (Downscaler::rows_beyond_training_range) and what the sampler did there:
/// "3 of 18 patches have a context feature beyond the training range widened by 0.25 of its
/// width: the network's input is held at those bounds there (sample.clip_context)".
std::string beyond_training_range_text(int64_t beyond, int64_t patches, const SampleOptions& sampling);

/// The checkpoint group (trainer::CheckpointGroups) in which the plugin records how it samples:
/// schema::to_record(sample_options_table(), its sample.*). finecast-downscale and finecast-export
/// take their defaults from it (read_checkpoint_sampling).
inline constexpr const char* kSamplingGroup = "sampling";

/// Every option of the model; context_size and patch_size are derived by the run (checkpoint
/// only).
const schema::Table<ModelOptions>& model_options_table();
/// Every option of the optimisation; seed comes from the config's top-level seed (checkpoint
/// only).
const schema::Table<TrainOptions>& train_options_table();
/// Every option of sample().
const schema::Table<SampleOptions>& sample_options_table();

}  // namespace finecast::trainer
