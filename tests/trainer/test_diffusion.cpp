// SPDX-License-Identifier: BSD-3-Clause
// Schedules against their closed forms, samplers against a Gaussian oracle, models, device choice.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "trainer/device.hpp"
#include "trainer/diffusion.hpp"
#include "trainer/downscaler.hpp"
#include "trainer/models.hpp"

namespace ft = finecast::trainer;
namespace fd = finecast::trainer::diffusion;

TEST(Schedule, LinearMatchesClosedForm) {
  const auto s = fd::make_schedule(ft::NoiseSchedule::kLinear, 50, torch::kCPU);
  ASSERT_EQ(s.beta.size(), 50u);
  // 1000/T scaling: beta_0 = 20 * 1e-4, beta_{T-1} = 20 * 0.02.
  EXPECT_NEAR(s.beta.front(), 2e-3, 1e-15);
  EXPECT_NEAR(s.beta.back(), 0.4, 1e-15);
  EXPECT_NEAR(s.beta[25] - s.beta[24], (0.4 - 2e-3) / 49.0, 1e-15);
  double prod = 1.0;
  for (int t = 0; t < 50; ++t) {
    prod *= 1.0 - s.beta[t];
    EXPECT_NEAR(s.alpha_bar[t], prod, 1e-14);
  }
  EXPECT_LT(s.alpha_bar.back(), 1e-4);  // ends near pure noise
}

TEST(Schedule, CosineMatchesClosedForm) {
  const auto s = fd::make_schedule(ft::NoiseSchedule::kCosine, 50, torch::kCPU);
  auto f = [](double t) { return std::pow(std::cos((t / 50.0 + 0.008) / 1.008 * M_PI / 2.0), 2); };
  for (int t = 0; t < 49; ++t) EXPECT_NEAR(s.alpha_bar[t], f(t + 1) / f(0), 1e-12) << "t = " << t;
  // The last beta is clipped at 0.999 instead of reaching 1.
  EXPECT_NEAR(s.beta.back(), 0.999, 1e-12);
  for (int t = 1; t < 50; ++t) EXPECT_LT(s.alpha_bar[t], s.alpha_bar[t - 1]);
  EXPECT_FLOAT_EQ(s.sqrt_ab[10].item<float>(), static_cast<float>(std::sqrt(s.alpha_bar[10])));
  EXPECT_FLOAT_EQ(s.sqrt_1mab[10].item<float>(), static_cast<float>(std::sqrt(1 - s.alpha_bar[10])));
}

TEST(Schedule, PosteriorCoefficientsReproduceTheForwardProcess) {
  // If x_t ~ q(x_t | x_0), the posterior mean must satisfy E[x_{t-1}] = sqrt(ab_{t-1}) x_0, i.e.
  // c0 + ct * sqrt(ab_t) = sqrt(ab_{t-1}); and the variances must add up the same way.
  const auto s = fd::make_schedule(ft::NoiseSchedule::kCosine, 30, torch::kCPU);
  for (int t = 1; t < 30; ++t) {
    const double ab = s.alpha_bar[t], abp = s.alpha_bar[t - 1];
    EXPECT_NEAR(s.post_c0[t] + s.post_ct[t] * std::sqrt(ab), std::sqrt(abp), 1e-12);
    EXPECT_NEAR(s.post_ct[t] * s.post_ct[t] * (1 - ab) + s.post_var[t], 1 - abp, 1e-12);
  }
}

TEST(Schedule, LearningRateWarmupAndCosineDecay) {
  ft::TrainOptions o;
  o.lr = 1e-3;
  o.warmup_steps = 10;
  o.decay_steps = 100;
  o.min_lr_ratio = 0.1;
  EXPECT_DOUBLE_EQ(fd::learning_rate(o, 0), 1e-4);
  EXPECT_DOUBLE_EQ(fd::learning_rate(o, 9), 1e-3);
  EXPECT_DOUBLE_EQ(fd::learning_rate(o, 10), 1e-3);
  EXPECT_NEAR(fd::learning_rate(o, 60), 1e-3 * (0.1 + 0.9 * 0.5), 1e-15);  // half way: cos = 0
  EXPECT_DOUBLE_EQ(fd::learning_rate(o, 110), 1e-4);
  EXPECT_DOUBLE_EQ(fd::learning_rate(o, 100000), 1e-4);
}

TEST(Schedule, DdimTimesteps) {
  EXPECT_EQ(fd::ddim_timesteps(50, 10), (std::vector<int64_t>{45, 40, 35, 30, 25, 20, 15, 10, 5, 0}));
  EXPECT_EQ(fd::ddim_timesteps(50, 3), (std::vector<int64_t>{33, 16, 0}));
  EXPECT_EQ(fd::ddim_timesteps(50, 1), (std::vector<int64_t>{0}));
  EXPECT_EQ(fd::ddim_timesteps(5, 50).size(), 5u);  // never more steps than the schedule has
}

TEST(Diffusion, RemoveMeanHonoursWeights) {
  auto x = torch::tensor({{1.0f, 2.0f, 3.0f, 6.0f}});
  auto w = torch::tensor({{0.5f, 0.25f, 0.25f, 0.0f}});
  auto y = fd::remove_mean(x, w);
  EXPECT_NEAR((y * w).sum().item<float>(), 0.0f, 1e-6);
  EXPECT_NEAR(y[0][3].item<float>(), 6.0f - 1.75f, 1e-6);
  EXPECT_NEAR(fd::remove_mean(x, torch::Tensor()).mean().item<float>(), 0.0f, 1e-6);
}

TEST(Diffusion, NoisingMatchesClosedForm) {
  // x_t = sqrt(ab) x0 + sqrt(1-ab) eps, so for fixed x0 the mean is sqrt(ab) x0 and the variance 1-ab.
  const auto s = fd::make_schedule(ft::NoiseSchedule::kLinear, 50, torch::kCPU);
  auto gen = at::make_generator<at::CPUGeneratorImpl>(3);
  const int64_t n = 200000, t = 20;
  auto eps = torch::randn({n}, gen);
  auto x_t = s.sqrt_ab[t] * 2.0 + s.sqrt_1mab[t] * eps;
  EXPECT_NEAR(x_t.mean().item<double>(), 2.0 * std::sqrt(s.alpha_bar[t]), 0.01);
  EXPECT_NEAR(x_t.var().item<double>(), 1.0 - s.alpha_bar[t], 0.01);
}

namespace {

/// The exact noise predictor for data x0 ~ N(mu, sigma^2) per dimension:
/// E[eps | x_t] = s (x_t - a mu) / (a^2 sigma^2 + s^2).
struct GaussianOracle {
  const fd::Schedule* s;
  double mu, sigma;
  bool v = false;
  torch::Tensor operator()(const torch::Tensor& x, int64_t t) const {
    const double a = std::sqrt(s->alpha_bar[t]), b = std::sqrt(1 - s->alpha_bar[t]);
    auto eps = b * (x - a * mu) / (a * a * sigma * sigma + b * b);
    if (!v) return eps;
    auto x0 = (x - b * eps) / a;
    return a * eps - b * x0;  // v = sqrt(ab) eps - sqrt(1-ab) x0
  }
};

}  // namespace

class SamplerOracle : public ::testing::TestWithParam<std::tuple<ft::NoiseSchedule, ft::Sampler, bool>> {};

TEST_P(SamplerOracle, DrawsTheKnownGaussian) {
  const auto [schedule, sampler, v] = GetParam();
  // T = 1000 makes the discretisation error of both samplers negligible against the tolerance,
  // so a wrong coefficient anywhere shows up as a wrong mean or spread.
  const auto s = fd::make_schedule(schedule, 1000, torch::kCPU);
  GaussianOracle oracle{&s, 1.5, 0.5, v};
  fd::SamplerSetup setup;
  setup.schedule = &s;
  setup.v_objective = v;
  auto gen = at::make_generator<at::CPUGeneratorImpl>(11);
  auto x = torch::randn({4000, 8}, gen);
  auto out =
      sampler == ft::Sampler::kDdpm ? fd::ddpm_sample(setup, oracle, x, &gen) : fd::ddim_sample(setup, oracle, x, 100);
  EXPECT_NEAR(out.mean().item<double>(), 1.5, 0.02);
  EXPECT_NEAR(out.std().item<double>(), 0.5, 0.02);
  // A sampler that ignored the network would give mean ~0, std ~1: the tolerances exclude it.
}

INSTANTIATE_TEST_SUITE_P(All, SamplerOracle,
                         ::testing::Values(std::make_tuple(ft::NoiseSchedule::kCosine, ft::Sampler::kDdpm, false),
                                           std::make_tuple(ft::NoiseSchedule::kCosine, ft::Sampler::kDdim, false),
                                           std::make_tuple(ft::NoiseSchedule::kLinear, ft::Sampler::kDdpm, false),
                                           std::make_tuple(ft::NoiseSchedule::kLinear, ft::Sampler::kDdim, true),
                                           std::make_tuple(ft::NoiseSchedule::kCosine, ft::Sampler::kDdpm, true)));

TEST(Models, ReferenceMlpSizeAndShapes) {
  ft::ModelOptions o;  // C = 7, P = 256, width 256, depth 3, embedding 64
  auto net = finecast::trainer::models::make_denoiser(o, torch::kCPU);
  int64_t n = 0;
  for (const auto& p : net->parameters()) n += p.numel();
  EXPECT_EQ(n, (256 + 7 + 64) * 256 + 256 + 2 * (256 * 256 + 256) + 256 * 256 + 256);
  auto y = net->forward(torch::zeros({5, 256}), torch::zeros({5, 7}), torch::zeros({5}, torch::kInt64));
  EXPECT_EQ(y.sizes(), (std::vector<int64_t>{5, 256}));
}

TEST(Models, UNetShapesAndValidation) {
  ft::ModelOptions o;
  o.arch = finecast::trainer::Arch::kUnet;
  o.patch_size = 64;
  o.unet_channels = 8;
  auto net = finecast::trainer::models::make_denoiser(o, torch::kCPU);
  auto y = net->forward(torch::randn({3, 64}), torch::randn({3, 7}), torch::tensor({0, 10, 49}));
  EXPECT_EQ(y.sizes(), (std::vector<int64_t>{3, 64}));
  o.patch_size = 60;
  try {
    finecast::trainer::models::make_denoiser(o, torch::kCPU);
    FAIL() << "a non-square patch must be refused by the unet";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("model.patch_size"), std::string::npos) << e.what();
  }
  // Names are parsed once, by the option table: an unknown one never reaches the model.
  const auto& arch = ft::model_options_table().front();
  ASSERT_EQ(arch.key, "arch");
  try {
    arch.set(o, "transformer");
    FAIL() << "an unknown architecture must be refused";
  } catch (const finecast::schema::BadValue& e) {
    EXPECT_STREQ(e.what(), "must be one of mlp, unet, graph, torchscript, got \"transformer\"");
  }
}

TEST(Models, SinusoidalTable) {
  auto t = finecast::trainer::models::sinusoidal_table(50, 8);
  EXPECT_EQ(t.sizes(), (std::vector<int64_t>{50, 8}));
  EXPECT_FLOAT_EQ(t[0][0].item<float>(), 0.0f);             // sin(0)
  EXPECT_FLOAT_EQ(t[0][4].item<float>(), 1.0f);             // cos(0)
  EXPECT_NEAR(t[7][0].item<float>(), std::sin(7.0), 1e-6);  // frequency 1 in the first column
}

// ---- device selection through an injectable probe ----

namespace {
ft::DeviceProbe fake_probe(int cuda, bool mps) {
  ft::DeviceProbe p;
  p.cuda_device_count = [cuda] { return cuda; };
  p.mps_available = [mps] { return mps; };
  p.cuda_device_name = [](int i) { return i == 0 ? std::string("NVIDIA A100-SXM4-40GB") : std::string(); };
  p.cuda_device_memory_gib = [](int i) { return i == 0 ? 40.0 : 0.0; };
  p.cpu_threads = [] { return 2; };
  return p;
}
}  // namespace

TEST(Device, AutoPrefersCudaThenMpsThenCpu) {
  auto c = ft::select_device(ft::parse_device("auto"), fake_probe(2, true));
  EXPECT_EQ(c.torch_device, "cuda:0");
  EXPECT_EQ(c.log_line(), "Using device: CUDA - NVIDIA A100-SXM4-40GB (40 GiB)");
  EXPECT_EQ(ft::select_device(ft::parse_device("auto"), fake_probe(0, true)).torch_device, "mps");
  auto cpu = ft::select_device(ft::parse_device("auto"), fake_probe(0, false));
  EXPECT_EQ(cpu.torch_device, "cpu");
  EXPECT_NE(cpu.description.find("2 threads"), std::string::npos) << cpu.description;
}

TEST(Device, ExplicitRequestsAreHonouredOrRefused) {
  EXPECT_EQ(ft::select_device(ft::parse_device("cuda:1"), fake_probe(2, false)).torch_device, "cuda:1");
  EXPECT_EQ(ft::select_device(ft::parse_device("cpu"), fake_probe(2, true)).torch_device, "cpu");
  try {
    ft::select_device(ft::parse_device("cuda"), fake_probe(0, false));
    FAIL() << "cuda without a GPU must throw";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("no CUDA device"), std::string::npos) << e.what();
  }
  EXPECT_THROW(ft::select_device(ft::parse_device("cuda:2"), fake_probe(2, false)), std::runtime_error);
  EXPECT_THROW(ft::select_device(ft::parse_device("mps"), fake_probe(1, false)), std::runtime_error);
  EXPECT_THROW(ft::parse_device("gpu"), std::invalid_argument);
  EXPECT_THROW(ft::parse_device("cuda:x"), std::invalid_argument);
}

TEST(Device, RealProbeOnThisMachine) {
  // The Debian LibTorch has no CUDA: an explicit cuda request must fail with the clear error.
  if (torch::cuda::is_available()) GTEST_SKIP() << "this machine has CUDA";
  EXPECT_THROW(ft::select_device("cuda"), std::runtime_error);
  EXPECT_EQ(ft::select_device("auto").torch_device, "cpu");
}

TEST(Sampler, DdimWithEtaOneOverAllStepsIsDdpm) {
  // Song et al.'s sigma with eta = 1 is the DDPM posterior std, and the generator is called in the
  // same order, so the two samplers must agree to rounding from the same start and seed.
  const auto s = fd::make_schedule(ft::NoiseSchedule::kCosine, 50, torch::kCPU);
  GaussianOracle oracle{&s, 1.5, 0.5, true};
  fd::SamplerSetup setup;
  setup.schedule = &s;
  setup.v_objective = true;
  auto start_gen = at::make_generator<at::CPUGeneratorImpl>(4);
  const auto x = torch::randn({64, 16}, start_gen);
  auto g1 = at::make_generator<at::CPUGeneratorImpl>(5), g2 = at::make_generator<at::CPUGeneratorImpl>(5);
  const auto ddpm = fd::ddpm_sample(setup, oracle, x.clone(), &g1);
  const auto ddim1 = fd::ddim_sample(setup, oracle, x.clone(), 50, 1.0, &g2);
  EXPECT_LT((ddpm - ddim1).abs().max().item<double>(), 1e-4);
  // eta = 0 is the deterministic sampler, which differs from the ancestral draw.
  const auto ddim0 = fd::ddim_sample(setup, oracle, x.clone(), 50);
  EXPECT_GT((ddpm - ddim0).abs().max().item<double>(), 0.1);
  auto g3 = at::make_generator<at::CPUGeneratorImpl>(5);
  const auto ddim0_gen = fd::ddim_sample(setup, oracle, x.clone(), 50, 0.0, &g3);
  EXPECT_TRUE(torch::equal(ddim0, ddim0_gen)) << "eta = 0 must not draw noise";
  EXPECT_THROW(fd::ddim_sample(setup, oracle, x.clone(), 10, 0.5), std::invalid_argument);
}

TEST(Sampler, DdpmVarianceBetaKeepsTheSpreadThatThePosteriorLoses) {
  // For data x0 ~ N(0, 1) every marginal of the forward process is N(0, 1), and the exact reverse
  // step has the variance beta_t (Ho et al. 2020): ancestral sampling with beta_t draws N(0, 1)
  // even with 50 steps, while the posterior's beta~_t (exact only for a point distribution)
  // loses spread. Without the choice (ddpm_var unset) the sampler is the posterior one, bit for bit.
  const auto s = fd::make_schedule(ft::NoiseSchedule::kCosine, 50, torch::kCPU);
  GaussianOracle oracle{&s, 0.0, 1.0, true};
  fd::SamplerSetup setup;
  setup.schedule = &s;
  setup.v_objective = true;
  auto start = at::make_generator<at::CPUGeneratorImpl>(3);
  const auto x = torch::randn({4000, 8}, start);
  auto sample = [&](const std::vector<double>* var) {
    setup.ddpm_var = var;
    auto g = at::make_generator<at::CPUGeneratorImpl>(9);
    return fd::ddpm_sample(setup, oracle, x.clone(), &g);
  };
  const auto plain = sample(nullptr);
  const auto posterior = sample(&fd::ddpm_variance(s, ft::DdpmVariance::kPosterior));
  const auto beta = sample(&fd::ddpm_variance(s, ft::DdpmVariance::kBeta));
  EXPECT_TRUE(torch::equal(plain, posterior));
  // 32,000 draws: the std is known to about 0.4%; the posterior's deficit here is 3-4%.
  EXPECT_NEAR(beta.std().item<double>(), 1.0, 0.01);
  EXPECT_LT(posterior.std().item<double>(), 0.975);
  EXPECT_GT(beta.std().item<double>() - posterior.std().item<double>(), 0.02);
  EXPECT_EQ(&fd::ddpm_variance(s, ft::DdpmVariance::kBeta), &s.beta);
}

namespace {

/// An MLP small enough to sample in milliseconds (context 3, patches of 16, 20 steps).
ft::ModelOptions tiny_mlp() {
  ft::ModelOptions mo;
  mo.context_size = 3;
  mo.patch_size = 16;
  mo.hidden = 16;
  mo.depth = 1;
  mo.diffusion_steps = 20;
  return mo;
}

/// The members that the fused CPU sampler and the module's (eager) sampler draw for `so` from
/// tiny_mlp() (both Downscalers start from the same weights), 3 values of context a patch.
struct PathSamples {
  std::vector<float> fused, eager;
};
PathSamples sample_both_paths(const ft::SampleOptions& so, const std::vector<float>& ctx,
                              const std::vector<float>& coarse, uint64_t seed) {
  const ft::ModelOptions mo = tiny_mlp();
  ft::TrainOptions eager_to;
  eager_to.force_autograd = true;  // the MLP on the CPU samples through the fused path unless forced
  ft::Downscaler fused(mo, ft::TrainOptions{}, "cpu"), eager(mo, eager_to, "cpu");
  const auto n = static_cast<int64_t>(coarse.size());
  PathSamples out{std::vector<float>(static_cast<size_t>(n * so.members * mo.patch_size)), {}};
  out.eager = out.fused;
  fused.sample(ctx.data(), coarse.data(), nullptr, n, so, seed, out.fused.data());
  eager.sample(ctx.data(), coarse.data(), nullptr, n, so, seed, out.eager.data());
  return out;
}

/// Each member's mean over its patch of P values (members [patch][member][P]) is its patch's coarse value.
void expect_patch_means(const std::vector<float>& members, const std::vector<float>& coarse, int64_t M, int64_t P) {
  for (size_t c = 0; c < coarse.size(); ++c)
    for (int64_t m = 0; m < M; ++m) {
      double patch = 0;
      for (int64_t p = 0; p < P; ++p) patch += members[(static_cast<int64_t>(c) * M + m) * P + p] / double(P);
      EXPECT_NEAR(patch, coarse[c], 1e-4) << "each member keeps its patch mean: patch " << c << " member " << m;
    }
}

}  // namespace

TEST(Sampler, DdpmVarianceReachesTheFusedAndTheEagerSampler) {
  const std::vector<float> ctx(2 * 3, 0.3f), coarse(2, 1.f);
  ft::SampleOptions so;
  so.members = 4;
  so.sampler = ft::Sampler::kDdpm;
  const auto post = sample_both_paths(so, ctx, coarse, 1);
  so.ddpm_variance = ft::DdpmVariance::kBeta;
  const auto beta = sample_both_paths(so, ctx, coarse, 1);
  EXPECT_NE(post.fused, beta.fused) << "ddpm_variance must reach the fused sampler";
  for (size_t i = 0; i < beta.fused.size(); ++i) ASSERT_NEAR(beta.fused[i], beta.eager[i], 1e-4) << i;
}

TEST(Sampler, InflationScalesTheDeviationsFromTheEnsembleMeanOnly) {
  ft::ModelOptions mo;
  mo.context_size = 3;
  mo.patch_size = 16;
  mo.hidden = 16;
  mo.depth = 1;
  mo.diffusion_steps = 10;
  ft::Downscaler ds(mo, ft::TrainOptions{}, "cpu");
  const int64_t n = 3, M = 4, P = 16;
  std::vector<float> ctx(n * 3, 0.2f), coarse{1.f, -2.f, 5.f}, plain(n * M * P), wide(plain.size());
  ft::SampleOptions so;
  so.members = M;
  so.sampler = ft::Sampler::kDdpm;
  ds.sample(ctx.data(), coarse.data(), nullptr, n, so, 3, plain.data());
  so.inflation = 2.5;
  ds.sample(ctx.data(), coarse.data(), nullptr, n, so, 3, wide.data());
  double spread = 0;
  for (int64_t c = 0; c < n; ++c)
    for (int64_t p = 0; p < P; ++p) {
      double mean = 0, mean_wide = 0;
      for (int64_t m = 0; m < M; ++m) mean += plain[(c * M + m) * P + p] / double(M);
      for (int64_t m = 0; m < M; ++m) mean_wide += wide[(c * M + m) * P + p] / double(M);
      ASSERT_NEAR(mean_wide, mean, 1e-4) << "the ensemble mean must stay";
      for (int64_t m = 0; m < M; ++m) {
        const double d = plain[(c * M + m) * P + p] - mean;
        ASSERT_NEAR(wide[(c * M + m) * P + p] - mean, 2.5 * d, 1e-4);
        spread += d * d;
      }
    }
  EXPECT_GT(spread, 1e-3) << "the members must differ for the test to mean anything";
  expect_patch_means(wide, coarse, M, P);
}

TEST(Sampler, RecentringMovesTheEnsembleMeanAndKeepsTheWidenedDeviations) {
  // sample.recentre_sigma draws its noise from a stream of its own: the members before recentring
  // are those of a plain sampling with the same seed, and recentring moves each patch's members
  // by one common shift (the ensemble mean changes) and widens their deviations from their mean
  // by sqrt(M / (M - 1)), on the fused and on the eager path alike.
  const int64_t n = 3, M = 4, P = 16;
  const std::vector<float> ctx(n * 3, 0.2f), coarse{1.f, -2.f, 5.f};
  ft::SampleOptions so;
  so.members = M;
  so.sampler = ft::Sampler::kDdpm;
  const std::vector<float> plain = sample_both_paths(so, ctx, coarse, 3).fused;
  so.recentre_sigma = 16.0;
  const auto both = sample_both_paths(so, ctx, coarse, 3);
  const std::vector<float>& moved = both.fused;
  for (size_t i = 0; i < moved.size(); ++i) ASSERT_NEAR(moved[i], both.eager[i], 1e-4) << i;
  const double widen = std::sqrt(double(M) / double(M - 1));
  double shift = 0;
  for (int64_t c = 0; c < n; ++c)
    for (int64_t p = 0; p < P; ++p) {
      double mean = 0, mean_moved = 0;
      for (int64_t m = 0; m < M; ++m) mean += plain[(c * M + m) * P + p] / double(M);
      for (int64_t m = 0; m < M; ++m) mean_moved += moved[(c * M + m) * P + p] / double(M);
      shift += std::abs(mean_moved - mean);
      for (int64_t m = 0; m < M; ++m)
        ASSERT_NEAR(moved[(c * M + m) * P + p] - mean_moved, widen * (plain[(c * M + m) * P + p] - mean), 1e-4);
    }
  EXPECT_GT(shift / double(n * P), 1e-3) << "recentring must move the ensemble mean";
  expect_patch_means(moved, coarse, M, P);
}

TEST(Sampler, ChurnSamplesAnMlpThroughItsModule) {
  // The fused CPU sampler of the MLP has no churn: with churn the MLP samples through its module,
  // as a Downscaler that never takes the fused path does.
  const std::vector<float> ctx(2 * 3, 0.3f), coarse(2, 1.f);
  ft::SampleOptions so;
  so.members = 4;
  so.sampler = ft::Sampler::kDdpm;
  const std::vector<float> plain = sample_both_paths(so, ctx, coarse, 1).fused;
  so.churn = 0.5;
  const auto churned = sample_both_paths(so, ctx, coarse, 1);
  EXPECT_NE(plain, churned.fused) << "churn must reach the MLP's sampling";
  EXPECT_EQ(churned.fused, churned.eager);
}

TEST(Sampler, NearestStepIsTheStepOfTheNearestLogSigma) {
  // sample.recentre_sigma's step: each step's own sigma gives that step, a level just below or
  // above the midpoint between two steps' ln sigma the lower or the upper, and levels beyond the
  // schedule its ends.
  const auto s = fd::make_schedule(ft::NoiseSchedule::kCosine, 50, torch::kCPU);
  const std::vector<double> ls = fd::log_sigmas(s);
  for (int64_t t = 0; t < 50; ++t) EXPECT_EQ(fd::nearest_step(s, std::exp(ls[t])), t);
  for (int64_t t = 0; t + 1 < 50; ++t) {
    const double mid = 0.5 * (ls[t] + ls[t + 1]), gap = 1e-6 * (ls[t + 1] - ls[t]);
    EXPECT_EQ(fd::nearest_step(s, std::exp(mid - gap)), t);
    EXPECT_EQ(fd::nearest_step(s, std::exp(mid + gap)), t + 1);
  }
  EXPECT_EQ(fd::nearest_step(s, 1e-9), 0);
  EXPECT_EQ(fd::nearest_step(s, 1e9), 49);
}

TEST(Sampler, ChurnStepIsTheFirstStepWithTheRaisedNoiseLevel) {
  const auto s = fd::make_schedule(ft::NoiseSchedule::kCosine, 50, torch::kCPU);
  auto sigma = [&](int64_t t) { return std::sqrt((1 - s.alpha_bar[t]) / s.alpha_bar[t]); };
  for (int64_t t = 0; t < 50; ++t) EXPECT_EQ(fd::churn_step(s, t, 0.0), t);
  for (const double c : {0.05, 0.3, 1.0}) {
    EXPECT_EQ(fd::churn_step(s, 0, c), 0) << "the last step is not churned";
    for (int64_t t = 1; t < 49; ++t) {
      const int64_t u = fd::churn_step(s, t, c);
      ASSERT_GT(u, t) << "churn " << c;
      ASSERT_LE(u, 49);
      if (u < 49) {
        EXPECT_GE(sigma(u), (1 + c) * sigma(t)) << "t " << t << " churn " << c;
      }
      if (u > t + 1) {
        EXPECT_LT(sigma(u - 1), (1 + c) * sigma(t)) << "the first such step, t " << t;
      }
      EXPECT_GE(fd::churn_step(s, t, 2 * c), u) << "more churn, a higher step";
    }
    EXPECT_EQ(fd::churn_step(s, 49, c), 49) << "nothing above the last step";
  }
}

TEST(Sampler, ChurnZeroIsTheSamplerWithoutItBitForBit) {
  // Churn 0 must not touch x, the noise or the steps, even with churn noise at hand.
  const auto s = fd::make_schedule(ft::NoiseSchedule::kCosine, 20, torch::kCPU);
  GaussianOracle oracle{&s, 0.3, 0.7, true};
  auto g = at::make_generator<at::CPUGeneratorImpl>(21);
  const auto noise = torch::randn({20, 32, 8}, g), churn_noise = torch::randn({20, 32, 8}, g);
  for (const bool ddpm : {true, false}) {
    fd::SamplerSetup setup;
    setup.schedule = &s;
    setup.v_objective = true;
    setup.noise = noise;
    auto run = [&] {  // no generator: every draw must come from the pre-drawn noise
      return ddpm ? fd::ddpm_sample(setup, oracle, noise[0].clone())
                  : fd::ddim_sample(setup, oracle, noise[0].clone(), 8, 0.5);
    };
    const auto plain = run();
    setup.churn_noise = churn_noise;
    EXPECT_TRUE(torch::equal(run(), plain)) << (ddpm ? "ddpm" : "ddim");
    setup.churn = 0.5;
    EXPECT_FALSE(torch::equal(run(), plain)) << (ddpm ? "ddpm" : "ddim") << ": churn must change the draw";
  }
}

TEST(Sampler, ChurnFollowsTheVarianceOfGaussianDataWithTheExactDenoiser) {
  // For N(0, 1) data the exact denoiser is linear (x0 = sqrt(ab_t) x_t), so the variance of x
  // through a churned sampling has a closed-form recursion: re-noising t -> u gives
  // v_u = r v + 1 - r (r = ab_u / ab_t); a DDPM step u -> t-1 keeps the forward process's mean
  // (factor sqrt(ab_u / ab_{t-1})) and adds its variance (beta: 1 - ab_u / ab_{t-1}, exact, so v
  // stays 1 whatever the churn; posterior: less); a DDIM step u -> s multiplies x by
  // sqrt(ab_s ab_u) + sqrt((1 - ab_s)(1 - ab_u)). The samples must follow it: a wrong re-noising
  // coefficient, a wrong step or gap or posterior over the longer gap shows up here.
  const auto s = fd::make_schedule(ft::NoiseSchedule::kCosine, 50, torch::kCPU);
  const auto& ab = s.alpha_bar;
  GaussianOracle oracle{&s, 0.0, 1.0, true};
  auto start = at::make_generator<at::CPUGeneratorImpl>(3);
  const auto x = torch::randn({4000, 8}, start);  // 32,000 draws: the std to about 0.4%
  auto renoise = [&](double v, int64_t t, int64_t u) { return u == t ? v : ab[u] / ab[t] * v + 1 - ab[u] / ab[t]; };
  auto ddpm_std = [&](double c, bool beta) {
    double v = 1;
    for (int64_t t = 49; t >= 0; --t) {
      const int64_t u = fd::churn_step(s, t, c);
      v = renoise(v, t, u);
      if (t == 0) return std::sqrt(ab[u] * v);
      const double abp = ab[t - 1], gap = 1 - ab[u] / abp;
      v = (1 - gap) * v + (beta ? gap : gap * (1 - abp) / (1 - ab[u]));
    }
    return 0.0;
  };
  auto ddim_std = [&](double c, int64_t steps) {
    const auto ts = fd::ddim_timesteps(50, steps);
    double v = 1;
    for (size_t i = 0; i < ts.size(); ++i) {
      const int64_t u = fd::churn_step(s, ts[i], c);
      v = renoise(v, ts[i], u);
      if (i + 1 == ts.size()) return std::sqrt(ab[u] * v);
      const double k = std::sqrt(ab[ts[i + 1]] * ab[u]) + std::sqrt((1 - ab[ts[i + 1]]) * (1 - ab[u]));
      v *= k * k;
    }
    return 0.0;
  };
  fd::SamplerSetup setup;
  setup.schedule = &s;
  setup.v_objective = true;
  for (const double c : {0.0, 0.5, 2.0}) {
    setup.churn = c;
    for (const bool beta : {true, false}) {
      setup.ddpm_var = beta ? &s.beta : nullptr;
      auto g = at::make_generator<at::CPUGeneratorImpl>(9);
      const auto out = fd::ddpm_sample(setup, oracle, x.clone(), &g);
      EXPECT_NEAR(out.mean().item<double>(), 0.0, 0.02) << "churn " << c;
      EXPECT_NEAR(out.std().item<double>(), ddpm_std(c, beta), 0.015) << "ddpm churn " << c << (beta ? " beta" : "");
      if (beta) {
        EXPECT_NEAR(out.std().item<double>(), 1.0, 0.01) << "beta steps are exact for N(0, 1) data";
      }
    }
    auto g = at::make_generator<at::CPUGeneratorImpl>(9);
    const auto out = fd::ddim_sample(setup, oracle, x.clone(), 10, 0.0, &g);
    EXPECT_NEAR(out.std().item<double>(), ddim_std(c, 10), 0.015) << "ddim churn " << c;
  }
  // What the recursion says about the sampler, pinned: churn changes nothing with beta steps, and with
  // the posterior's variance or deterministic DDIM the longer steps lose spread (the
  // discretisation error grows with the gap), as EDM's Euler steps do.
  EXPECT_NEAR(ddpm_std(2.0, true), ddpm_std(0.0, true), 1e-9);
  EXPECT_LT(ddpm_std(0.5, false), ddpm_std(0.0, false) - 0.1);
  EXPECT_LT(ddim_std(0.5, 10), ddim_std(0.0, 10) - 0.05);
}

TEST(NoiseLevels, UniformIsRandintAndLognormalFollowsLnSigma) {
  const auto s = fd::make_schedule(ft::NoiseSchedule::kCosine, 50, torch::kCPU);
  ft::TrainOptions o;
  auto g1 = at::make_generator<at::CPUGeneratorImpl>(21), g2 = at::make_generator<at::CPUGeneratorImpl>(21);
  // uniform: the draws (and the generator's state after them) of the former torch::randint.
  EXPECT_TRUE(torch::equal(fd::draw_timesteps(o, s, 1000, g1),
                           torch::randint(0, 50, {1000}, g2, torch::TensorOptions().dtype(torch::kInt64))));
  o.noise_levels = ft::NoiseLevels::kLognormal;
  o.noise_log_mean = -1.2;
  o.noise_log_std = 1.2;
  const int64_t n = 20000;
  const auto t = fd::draw_timesteps(o, s, n, g1);
  const std::vector<double> ls = fd::log_sigmas(s);
  for (size_t i = 1; i < ls.size(); ++i) ASSERT_GT(ls[i], ls[i - 1]) << "ln sigma must grow with t";
  // Each draw lands on the step with the nearest ln sigma, so P(ln sigma_t <= mean + k std) is
  // about Phi(k) up to the width of one step around the mean (cosine T = 50: < 0.2 in ln sigma).
  const auto* tp = t.data_ptr<int64_t>();
  for (double k : {-1.0, 0.0, 1.0}) {
    int64_t below = 0;
    for (int64_t i = 0; i < n; ++i) below += ls[static_cast<size_t>(tp[i])] <= o.noise_log_mean + k * o.noise_log_std;
    const double phi = 0.5 * std::erfc(-k / std::sqrt(2.0));
    EXPECT_NEAR(static_cast<double>(below) / static_cast<double>(n), phi, 0.06) << "k = " << k;
  }
  EXPECT_GE(t.min().item<int64_t>(), 0);
  EXPECT_LE(t.max().item<int64_t>(), 49);
  // EDM's setting puts most draws at low noise: the median step is far below T/2.
  EXPECT_LT(std::get<0>(t.median(0)).item<int64_t>(), 15);
}

TEST(NoiseLevels, MeanFractionTakesThatShareToTheStepNearestMeanSigmaAndKeepsTheRest) {
  const auto s = fd::make_schedule(ft::NoiseSchedule::kCosine, 1000, torch::kCPU);
  ft::TrainOptions o;
  o.noise_levels = ft::NoiseLevels::kLognormal;
  o.noise_log_mean = -0.5;
  auto g1 = at::make_generator<at::CPUGeneratorImpl>(5), g2 = at::make_generator<at::CPUGeneratorImpl>(5);
  const int64_t n = 20000;
  const auto plain = fd::draw_timesteps(o, s, n, g1);
  o.mean_fraction = 0.25;
  o.mean_sigma = 16.0;
  const auto mixed = fd::draw_timesteps(o, s, n, g2);
  const int64_t at = fd::nearest_step(s, 16.0);
  const std::vector<double> ls = fd::log_sigmas(s);
  ASSERT_LT(std::abs(ls[static_cast<size_t>(at)] - std::log(16.0)), 0.05);
  // Every draw is either the plain one (the levels come first from the same generator) or the
  // mean step; about a quarter moved, though log-normal levels around -0.5 almost never reach it.
  const auto* p = plain.data_ptr<int64_t>();
  const auto* m = mixed.data_ptr<int64_t>();
  int64_t moved = 0, plain_at = 0;
  for (int64_t i = 0; i < n; ++i) {
    ASSERT_TRUE(m[i] == p[i] || m[i] == at) << i;
    moved += m[i] != p[i];
    plain_at += p[i] == at;
  }
  EXPECT_LT(plain_at, n / 500);
  EXPECT_NEAR(static_cast<double>(moved) / static_cast<double>(n), 0.25, 0.02);
}

TEST(NoiseLevels, ContextNoiseChangesTrainingThroughAutograd) {
  ft::ModelOptions mo;
  mo.context_size = 3;
  mo.patch_size = 16;
  mo.hidden = 16;
  mo.depth = 1;
  mo.diffusion_steps = 10;
  std::vector<float> ctx(32 * 3), fine(32 * 16);
  for (size_t i = 0; i < ctx.size(); ++i) ctx[i] = static_cast<float>(std::sin(0.7 * static_cast<double>(i)));
  for (size_t i = 0; i < fine.size(); ++i) fine[i] = static_cast<float>(std::cos(0.3 * static_cast<double>(i)));
  ft::DataView data;
  data.n = 32;
  data.context = ctx.data();
  data.fine = fine.data();
  auto train = [&](double noise, bool force_autograd) {
    ft::TrainOptions to;
    to.batch_size = 8;
    to.context_noise = noise;
    to.force_autograd = force_autograd;
    to.warmup_steps = 1;
    to.ema_decay = 0.0;  // sample with the trained weights themselves
    ft::Downscaler ds(mo, to, "cpu");
    for (int e = 0; e < 2; ++e) ds.train_epoch(data);
    ds.publish();
    std::vector<float> out(2 * 16);
    ft::SampleOptions so;
    so.members = 1;
    ds.sample(ctx.data(), fine.data(), nullptr, 2, so, 1, out.data());
    return out;
  };
  const auto clean = train(0.0, true), forced = train(0.5, true);
  double most = 0;
  for (size_t i = 0; i < clean.size(); ++i) most = std::max(most, std::fabs(double(forced[i]) - clean[i]));
  EXPECT_GT(most, 1e-2) << "context_noise must change what the model learns";
  // Where the fused CPU trainer would apply (an MLP on the CPU), context_noise trains through
  // autograd (the fused trainer has no augmentation): the same as forcing it, to rounding (the
  // sampling of this one goes through the fused sampler, of `forced` through the eager one).
  const auto noisy = train(0.5, false);
  for (size_t i = 0; i < noisy.size(); ++i) ASSERT_NEAR(noisy[i], forced[i], 1e-4) << i;
}

TEST(Sampler, EtaReachesTheDownscalerAndIsValidated) {
  ft::ModelOptions mo;
  mo.context_size = 3;
  mo.patch_size = 16;
  mo.hidden = 16;
  mo.depth = 1;
  ft::Downscaler ds(mo, ft::TrainOptions{}, "cpu");
  std::vector<float> ctx(2 * 3, 0.f), coarse(2, 1.f), a(2 * 4 * 16), b(a.size());
  ft::SampleOptions so;
  so.members = 4;
  ds.sample(ctx.data(), coarse.data(), nullptr, 2, so, 1, a.data());
  so.eta = 1.0;
  ds.sample(ctx.data(), coarse.data(), nullptr, 2, so, 1, b.data());
  EXPECT_NE(a, b) << "eta must reach the sampler";
  so.eta = 1.5;
  EXPECT_THROW(ds.sample(ctx.data(), coarse.data(), nullptr, 2, so, 1, b.data()), std::invalid_argument);
}
