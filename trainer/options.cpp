// SPDX-License-Identifier: BSD-3-Clause
// The trainer's option tables: each key, its range or names and its comment, declared once.
#include "trainer/options.hpp"

#include <algorithm>
#include <limits>
#include <sstream>

#include "common/error.hpp"

namespace finecast::trainer {

const schema::Names<Arch>& names(Arch) {
#define FINECAST_ARCH_NAME(id, arch_name) {Arch::id, #arch_name},
  static const schema::Names<Arch> n{FINECAST_DENOISERS(FINECAST_ARCH_NAME)};
#undef FINECAST_ARCH_NAME
  return n;
}
const schema::Names<Activation>& names(Activation) {
  static const schema::Names<Activation> n{
      {Activation::kSilu, "silu"}, {Activation::kGelu, "gelu"}, {Activation::kRelu, "relu"}};
  return n;
}
const schema::Names<NoiseSchedule>& names(NoiseSchedule) {
  static const schema::Names<NoiseSchedule> n{{NoiseSchedule::kLinear, "linear"}, {NoiseSchedule::kCosine, "cosine"}};
  return n;
}
const schema::Names<Objective>& names(Objective) {
  static const schema::Names<Objective> n{{Objective::kV, "v"}, {Objective::kEps, "eps"}};
  return n;
}
const schema::Names<Sampler>& names(Sampler) {
  static const schema::Names<Sampler> n{{Sampler::kDdpm, "ddpm"}, {Sampler::kDdim, "ddim"}};
  return n;
}
const schema::Names<DdpmVariance>& names(DdpmVariance) {
  static const schema::Names<DdpmVariance> n{{DdpmVariance::kPosterior, "posterior"}, {DdpmVariance::kBeta, "beta"}};
  return n;
}
const schema::Names<NoiseLevels>& names(NoiseLevels) {
  static const schema::Names<NoiseLevels> n{{NoiseLevels::kUniform, "uniform"}, {NoiseLevels::kLognormal, "lognormal"}};
  return n;
}
const schema::Names<ValidationMetric>& names(ValidationMetric) {
  static const schema::Names<ValidationMetric> n{
      {ValidationMetric::kLoss, "loss"}, {ValidationMetric::kCrps, "crps"}, {ValidationMetric::kCrpsFair, "crps_fair"}};
  return n;
}
const schema::Names<ValidationSplit>& names(ValidationSplit) {
  static const schema::Names<ValidationSplit> n{{ValidationSplit::kTime, "time"},
                                                {ValidationSplit::kPatches, "patches"}};
  return n;
}

const schema::Names<NoiseGenerator>& names(NoiseGenerator) {
  static const schema::Names<NoiseGenerator> n{{NoiseGenerator::kCpu, "cpu"}, {NoiseGenerator::kPhilox, "philox"}};
  return n;
}

const schema::Names<BudgetScope>& names(BudgetScope) {
  static const schema::Names<BudgetScope> n{{BudgetScope::kSession, "session"}, {BudgetScope::kRun, "run"}};
  return n;
}

namespace {
constexpr long long kMax = std::numeric_limits<int>::max();
constexpr long long kMax64 = std::numeric_limits<int64_t>::max();
constexpr double kInf = std::numeric_limits<double>::infinity();
}  // namespace

const schema::Table<ModelOptions>& model_options_table() {
  using M = ModelOptions;
  using namespace schema;
  // A resume compares every row but the TorchScript file's path (the embedded module's hash is
  // compared instead, checkpoint_io.cpp); an option that shapes only one denoiser's network (the
  // `own_options` of its registry entry, trainer/denoisers/: the MLP's width and depth, the
  // U-Net's channels and attention) only between two models of that architecture. This library
  // is torch-free and cannot ask the registry, so the two architectures are named here.
  const auto mlp = [](const M& m) { return m.arch == Arch::kMlp; };
  const auto unet = [](const M& m) { return m.arch == Arch::kUnet; };
  static const Table<M> t = [&] {
    Table<M> s;
    s.push_back(
        choice("arch", &M::arch,
               "denoiser: mlp; unet (square latlon blocks); graph (ICON triangles: convolutions over the patch's "
               "edge-neighbour graph); torchscript (your own module: model.file)")
            .compared_on_resume());
    s.push_back(integer("context_size", &M::context_size, 0, 1 << 20, "context values per patch (from the coupling)")
                    .only_in(Scope::kCheckpoint)
                    .compared_on_resume());
    s.push_back(integer("patch_size", &M::patch_size, 1, 1 << 26, "fine values per patch (from the grid)")
                    .only_in(Scope::kCheckpoint)
                    .compared_on_resume());
    s.push_back(integer("static_channels", &M::static_channels, 0, 1024,
                        "fine covariate fields at the end of the context (from patch.static)")
                    .only_in(Scope::kCheckpoint)
                    .compared_on_resume());
    s.push_back(integer("hidden", &M::hidden, 1, 16384, "MLP hidden width (at most 16384: 1 GiB of weights a layer)")
                    .compared_on_resume()
                    .applies_when(mlp));
    s.push_back(integer("depth", &M::depth, 1, 64, "MLP hidden layers").compared_on_resume().applies_when(mlp));
    s.push_back(
        integer("time_embedding", &M::time_embedding, 2, 4096, "size of the sinusoidal diffusion-step embedding")
            .compared_on_resume());
    s.push_back(choice("activation", &M::activation, "hidden activation: silu | gelu (tanh approximation) | relu")
                    .compared_on_resume());
    s.push_back(
        integer("unet_channels", &M::unet_channels, 1, 1024, "U-Net and graph denoiser base channels (at most 1024)")
            .compared_on_resume()
            .applies_when(unet));
    s.push_back(boolean("attention", &M::attention, "unet: self-attention at the lowest resolution")
                    .compared_on_resume()
                    .applies_when(unet));
    s.push_back(
        integer("diffusion_steps", &M::diffusion_steps, 2, 100000, "diffusion steps (training and DDPM sampling)")
            .compared_on_resume());
    s.push_back(choice("schedule", &M::schedule, "noise schedule: linear | cosine").compared_on_resume());
    s.push_back(choice("objective", &M::objective,
                       "v | eps (eps prediction blows samples up with 50 cosine steps; docs/training.md)")
                    .compared_on_resume());
    s.push_back(
        boolean("conservative", &M::conservative, "every sampled patch's (area-weighted) mean equals its coarse value")
            .compared_on_resume());
    s.push_back(text("file", &M::file,
                     "torchscript: the denoiser's TorchScript file, forward(x_t [B,P], t [B] int64, context [B,C]) "
                     "-> [B,P] (embedded in checkpoints)"));
    return s;
  }();
  return t;
}

const schema::Table<TrainOptions>& train_options_table() {
  using T = TrainOptions;
  using namespace schema;
  static const Table<T> t = [] {
    Table<T> s;
    s.push_back(integer("batch_size", &T::batch_size, 1, 1 << 20, "minibatch size (at most 2^20)"));
    s.push_back(real("lr", &T::lr, 0.0, kInf, "peak learning rate (AdamW)", true));
    s.push_back(real("weight_decay", &T::weight_decay, 0.0, 1000.0,
                     "AdamW's decoupled weight decay: each step scales the weights by 1 - lr x weight_decay"));
    s.push_back(integer("warmup_steps", &T::warmup_steps, 0, kMax, "linear learning-rate warm-up (optimizer steps)"));
    s.push_back(
        integer("decay_steps", &T::decay_steps, 1, kMax, "cosine decay length after warm-up (optimizer steps)"));
    s.push_back(real("min_lr_ratio", &T::min_lr_ratio, 0.0, 1.0, "final learning rate as a fraction of lr"));
    s.push_back(
        real("grad_clip", &T::grad_clip, 0.0, 1e9, "largest gradient norm (clipped above it); 0 = no clipping"));
    s.push_back(
        real("ema_decay", &T::ema_decay, 0.0, 1.0, "decay of the weight average used for sampling", false, true));
    s.push_back(boolean("mixed_precision", &T::bf16, "bf16 autocast (CUDA only)").was("bf16"));
    s.push_back(integer("max_bad_steps", &T::max_bad_steps, 1, kMax,
                        "consecutive NaN/Inf losses before restoring the last good weights"));
    s.push_back(
        unsigned64("seed", &T::seed, "the trainer's generator (the config's seed)").only_in(Scope::kCheckpoint));
    s.push_back(integer("accumulate", &T::accumulate, 1, 65536,
                        "micro-batches per optimizer step (global batch = batch_size x accumulate; at most 65536)"));
    s.push_back(real("validation", &T::validation, 0.0, 1.0,
                     "fraction held out for validation (0 = none): of the buffered steps (the most recent) or of the "
                     "samples (validation_split)",
                     false, true));
    s.push_back(
        choice("validation_split", &T::validation_split,
               "time | patches: hold out the most recent steps, or a seeded subset of the samples (one-step data)"));
    s.push_back(integer("validation_every", &T::validation_every, 0, kMax,
                        "also validate every N optimizer steps within a session (0 = at its end only)"));
    s.push_back(integer("validation_members", &T::validation_members, 0, 4096,
                        "ensemble members of the validation CRPS (0 = no CRPS, else >= 2)"));
    s.push_back(integer("validation_max_samples", &T::validation_max_samples, 1, 1 << 24,
                        "held-out samples the CRPS scores at most (at most 2^24)"));
    s.push_back(choice("validation_metric", &T::validation_metric,
                       "loss | crps | crps_fair: what early_stop, plateau and keep_best follow"));
    s.push_back(integer("early_stop", &T::early_stop, 0, kMax,
                        "validations (sessions) without a better score before training stops (0 = never)"));
    s.push_back(integer("plateau", &T::plateau, 0, kMax,
                        "sessions without a better score before the learning rate drops (0 = never)"));
    s.push_back(real("plateau_factor", &T::plateau_factor, 0.0, 1.0, "learning-rate factor per plateau", true, true));
    s.push_back(real("plateau_min_scale", &T::plateau_min_scale, 0.0, 1.0, "the learning rate's smallest scale", true));
    s.push_back(
        boolean("keep_best", &T::keep_best, "also keep the checkpoint of the best validation score (ckpt_best.h5)"));
    s.push_back(integer("max_device_memory", &T::max_device_memory, 0, kMax64,
                        "bytes a micro-batch may use on the device; above it the micro-batch halves (0 = no limit)"));
    s.push_back(boolean("force_autograd", &T::force_autograd,
                        "train the MLP through autograd even where the fused CPU path applies"));
    s.push_back(
        integer_or_auto("threads", &T::threads, 4096,
                        "torch threads on the trainer rank: auto (measured), N, or 0 = cores / ranks on the node"));
    s.push_back(integer("max_threads", &T::max_threads, 0, 4096, "upper end of threads: auto (0 = all cores)"));
    s.push_back(boolean("cuda_graphs", &T::cuda_graphs, "capture the training step in a CUDA graph (CUDA only)"));
    s.push_back(choice("noise_generator", &T::noise_generator,
                       "the training noise: cpu (the trainer's CPU generator, copied to the device each step) | "
                       "philox (counter-based Philox4x32-10, drawn where the step runs: on CUDA inside the captured "
                       "step; the same stream on CPU and GPU)"));
    s.push_back(
        real("max_seconds", &T::max_seconds, 0.0, kInf,
             "training wall-time budget in seconds (0 = none); the cosine decay then runs over it, not decay_steps"));
    s.push_back(integer("max_steps", &T::max_steps, 0, kMax64,
                        "optimizer-step budget (0 = none); the cosine decay then runs over it, not decay_steps"));
    s.push_back(choice("budget", &T::budget,
                       "what max_seconds and max_steps cover: session (each session, in situ) | run (all sessions of "
                       "the run)"));
    s.push_back(choice("noise_levels", &T::noise_levels,
                       "diffusion step of each training sample: uniform | lognormal (ln sigma_t ~ N(noise_log_mean, "
                       "noise_log_std^2), EDM)"));
    s.push_back(real("noise_log_mean", &T::noise_log_mean, -20.0, 20.0, "noise_levels lognormal: mean of ln sigma"));
    s.push_back(real("noise_log_std", &T::noise_log_std, 0.0, 20.0,
                     "noise_levels lognormal: standard deviation of ln sigma", true));
    s.push_back(real("mean_fraction", &T::mean_fraction, 0.0, 1.0,
                     "share of training samples at the step nearest mean_sigma, where the denoiser estimates the "
                     "conditional mean (0 = none; docs/training.md)"));
    s.push_back(real("mean_sigma", &T::mean_sigma, 1e-3, 1e4,
                     "mean_fraction: the noise level sigma_t of those samples (sample.recentre_sigma's)", true));
    s.push_back(real("context_noise", &T::context_noise, 0.0, 100.0,
                     "std of the Gaussian noise added to the normalised context in training (0 = none)"));
    s.push_back(integer("crps_steps", &T::crps_steps, 0, kMax,
                        "fine-tune the sampling weights for N optimizer steps on the fair CRPS of sampled members "
                        "at each session's end (0 = none; docs/training.md)"));
    s.push_back(integer("crps_members", &T::crps_members, 2, 1024, "crps_steps: members per sample (at least 2)"));
    s.push_back(integer("crps_sampler_steps", &T::crps_sampler_steps, 1, 1000,
                        "crps_steps: steps of the deterministic DDIM sampler the members are drawn (and "
                        "differentiated) through; sample with the same (sample.sampler ddim, sample.steps)"));
    s.push_back(real("crps_lr", &T::crps_lr, 0.0, kInf, "crps_steps: the fine-tuning's constant learning rate", true));
    s.push_back(boolean("crps_held_out", &T::crps_held_out,
                        "crps_steps: fine-tune on the held-out part (train.validation) instead of the training part"));
    return s;
  }();
  return t;
}

const schema::Table<SampleOptions>& sample_options_table() {
  using S = SampleOptions;
  using namespace schema;
  static const Table<S> t = [] {
    Table<S> s;
    s.push_back(integer("members", &S::members, 1, 4096,
                        "ensemble members per sampling (at most 4096; the memory they need is checked at start-up)"));
    s.push_back(choice("sampler", &S::sampler, "ddpm (all diffusion steps) | ddim"));
    s.push_back(integer("steps", &S::steps, 1, 100000, "ddim steps"));
    s.push_back(real("eta", &S::eta, 0.0, 1.0,
                     "ddim noise per step: 0 deterministic, 1 ancestral (sharper fine scales; docs/evaluation.md)"));
    s.push_back(choice("ddpm_variance", &S::ddpm_variance,
                       "ddpm step variance: posterior (beta~_t) | beta (beta_t: larger, more spread)"));
    s.push_back(real("inflation", &S::inflation, 0.0, 100.0,
                     "post-hoc spread inflation: each member's deviation from the ensemble mean times this (1 = none; "
                     "fit it on data that is not scored)"));
    s.push_back(real("inflation_range", &S::inflation_range, 0.0, 10.0,
                     "per-patch inflation beyond the training range: a patch's deviations times inflation * (1 + "
                     "e)^inflation_range, e = how far its context lies beyond the training range (the largest over "
                     "its features, in units of the range's width; 0 inside) (0 = the same for every patch)"));
    s.push_back(real("churn", &S::churn, 0.0, 10.0,
                     "EDM churn: re-noise each step's x_t to the first step whose sigma is at least (1 + churn) "
                     "times its own, then step from there (0 = none; docs/training.md)"));
    s.push_back(real("recentre_sigma", &S::recentre_sigma, 0.0, kInf,
                     "move each patch's members onto the denoiser's estimate of their mean at the step whose "
                     "noise level is nearest this sigma, instead of their own mean (0 = none; docs/training.md)"));
    s.push_back(boolean("clip_context", &S::clip_context,
                        "hold each context feature of the network to the range it had in training (the base still "
                        "sees the raw covariates), widened by clip_margin: no far extrapolation in a feature"));
    s.push_back(real("clip_margin", &S::clip_margin, 0.0, 100.0,
                     "with clip_context: how far beyond its training range a feature may go, as a fraction of the "
                     "range's width at each end (0: at the range)"));
    s.push_back(integer_or_auto("threads", &S::threads, 4096,
                                "torch threads of sampling: auto (measured), N, or 0 = as training"));
    s.push_back(integer("max_threads", &S::max_threads, 0, 4096, "upper end of threads: auto (0 = all cores)"));
    s.push_back(boolean("cuda_graphs", &S::cuda_graphs, "capture the sampler loop in a CUDA graph (CUDA only)"));
    return s;
  }();
  return t;
}

std::string sampling_text(const SampleOptions& so) {
  std::ostringstream text;  // numbers with 6 significant digits: 2.346, 3
  text << schema::name_of(so.sampler);
  if (so.sampler == Sampler::kDdim) text << " " << so.steps << " steps";
  if (so.sampler == Sampler::kDdim && so.eta > 0) text << ", eta " << so.eta;
  if (so.sampler == Sampler::kDdpm && so.ddpm_variance != DdpmVariance::kPosterior)
    text << ", variance " << schema::name_of(so.ddpm_variance);
  if (so.churn > 0) text << ", churn " << so.churn;
  if (so.recentre_sigma > 0) text << ", recentred at sigma " << so.recentre_sigma;
  if (so.inflation != 1.0) text << ", inflation " << so.inflation;
  if (so.inflation_range != 0.0) text << ", inflation beyond the training range x (1 + e)^" << so.inflation_range;
  if (!so.clip_context)
    text << ", context not clipped";
  else if (so.clip_margin != SampleOptions{}.clip_margin)
    text << ", context clipped at margin " << so.clip_margin;
  return text.str();
}

std::string beyond_training_range_text(int64_t beyond, int64_t patches, const SampleOptions& so) {
  std::ostringstream text;
  text << beyond << " of " << patches << " patches have a context feature beyond the training range widened by "
       << so.clip_margin << " of its width: "
       << (so.clip_context ? "the network's input is held at those bounds there (sample.clip_context)"
                           : "the network extrapolates there (sample.clip_context false)");
  return text.str();
}

SampleOptions overridden(SampleOptions base, const SampleOverrides& given) {
  const auto set = [&base](const std::string& key, const std::string& text) {
    const auto& table = sample_options_table();
    const auto f = std::find_if(table.begin(), table.end(), [&key](const auto& row) { return row.key == key; });
    if (f == table.end()) throw InternalError("trainer::overridden: sample_options_table() has no row " + key);
    std::string flag = "--" + key;
    std::replace(flag.begin(), flag.end(), '_', '-');
    try {
      f->set(base, text);
    } catch (const schema::BadValue& e) {
      throw schema::BadValue(flag + " " + e.what());
    }
  };
  if (given.sampler) set("sampler", *given.sampler);
  if (given.steps) set("steps", std::to_string(*given.steps));
  if (given.eta) set("eta", schema::format_real(*given.eta));
  if (given.ddpm_variance) set("ddpm_variance", *given.ddpm_variance);
  if (given.inflation) set("inflation", schema::format_real(*given.inflation));
  if (given.inflation_range) set("inflation_range", schema::format_real(*given.inflation_range));
  if (given.churn) set("churn", schema::format_real(*given.churn));
  if (given.recentre_sigma) set("recentre_sigma", schema::format_real(*given.recentre_sigma));
  if (given.clip_context) set("clip_context", *given.clip_context ? "true" : "false");
  if (given.clip_margin) set("clip_margin", schema::format_real(*given.clip_margin));
  return base;
}

}  // namespace finecast::trainer
