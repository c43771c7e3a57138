// SPDX-License-Identifier: BSD-3-Clause
// The counter-based training noise (train.noise_generator: philox): Philox4x32-10 gives the
// published known-answer vectors, each element of a draw depends on its index alone, the normals
// have the right moments, and training with it takes the same steps on the graph path (which
// draws it inside the step) as on the eager path (which draws it on the host). On a GPU,
// test_cuda.cpp compares the kernel's stream with this one.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <utility>
#include <vector>

#include "tests/trainer/trainer_test_data.hpp"
#include "trainer/downscaler.hpp"
#include "trainer/downscaler_impl.hpp"
#include "trainer/philox_fill.hpp"
#include "trainer/sampling_internal.hpp"
#include "trainer/train_graph.hpp"

namespace ft = finecast::trainer;
namespace px = finecast::trainer::philox;
using namespace finecast::trainer::testing;  // NOLINT: the shared test data

TEST(Philox, KnownAnswerVectorsOfPhilox4x32With10Rounds) {
  // Random123's kat_vectors (counter, key -> output).
  struct Kat {
    px::Block counter;
    uint32_t k0, k1;
    px::Block want;
  };
  const Kat kats[] = {
      {{{0, 0, 0, 0}}, 0, 0, {{0x6627e8d5u, 0xe169c58du, 0xbc57ac4cu, 0x9b00dbd8u}}},
      {{{0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu}},
       0xffffffffu,
       0xffffffffu,
       {{0x408f276du, 0x41c83b0eu, 0xa20bc7c6u, 0x6d5451fdu}}},
      {{{0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u}},
       0xa4093822u,
       0x299f31d0u,
       {{0xd16cfe09u, 0x94fdccebu, 0x5001e420u, 0x24126ea1u}}},
  };
  for (const Kat& k : kats) {
    const px::Block r = px::philox4x32_10(k.counter, k.k0, k.k1);
    for (int i = 0; i < 4; ++i) EXPECT_EQ(r.x[i], k.want.x[i]) << "word " << i;
  }
}

TEST(Philox, EachElementDependsOnItsIndexAloneAndTheNormalsAreStandard) {
  const uint64_t key = px::key_of(42);
  const int64_t n = 200003;
  std::vector<float> all(static_cast<size_t>(n));
  px::fill_normal_cpu(all.data(), n, key, 7, px::kTrainingNoise);
  // Any element, computed alone, is the element of the whole draw (what lets a GPU thread, a
  // rank or a micro-batch compute its part).
  for (int64_t e : {int64_t{0}, int64_t{1}, int64_t{2}, int64_t{3}, int64_t{4}, int64_t{12345}, n - 1})
    EXPECT_EQ(px::normal_at(key, 7, px::kTrainingNoise, static_cast<uint64_t>(e)), all[static_cast<size_t>(e)]);
  double sum = 0, sq = 0, four = 0;
  for (float v : all) {
    sum += v;
    sq += static_cast<double>(v) * v;
    four += std::pow(static_cast<double>(v), 4);
  }
  const double mean = sum / n, var = sq / n - mean * mean;
  EXPECT_LT(std::abs(mean), 5.0 / std::sqrt(static_cast<double>(n)));
  EXPECT_NEAR(var, 1.0, 5.0 * std::sqrt(2.0 / n));
  EXPECT_NEAR(four / n, 3.0, 0.05);
  // Another stream, key or purpose is another draw.
  EXPECT_NE(px::normal_at(key, 8, px::kTrainingNoise, 0), all[0]);
  EXPECT_NE(px::normal_at(px::key_of(43), 7, px::kTrainingNoise, 0), all[0]);
  EXPECT_NE(px::key_of(42), px::key_of(43));
  // fill_normal reads the stream number from a tensor (on the GPU: on the device).
  auto out = torch::empty({n}, torch::TensorOptions().dtype(torch::kFloat32));
  px::fill_normal(out, key, torch::full({1}, int64_t{7}, torch::TensorOptions().dtype(torch::kInt64)),
                  px::kTrainingNoise);
  EXPECT_EQ(std::memcmp(out.data_ptr<float>(), all.data(), all.size() * sizeof(float)), 0);
}

TEST(Philox, TheVectorFillIsTheScalarDrawFromAnyFirstElement) {
  // fill_normal_cpu computes 16 elements at a time with its own log, sin and cos; normal_at, the
  // definition (and what the CUDA kernel computes), calls libm's. Every element of a draw of
  // 2^22 that starts and ends inside a group of 16 must be normal_at's float.
  const uint64_t key = px::key_of(7), first = 1000003;
  const int64_t n = (int64_t{1} << 22) + 5;
  std::vector<float> fast(static_cast<size_t>(n));
  px::fill_normal_cpu(fast.data(), n, key, 3, px::kSamplingNoise, first);
  int64_t differ = 0;
  double worst = 0;
  for (int64_t i = 0; i < n; ++i) {
    const float want = px::normal_at(key, 3, px::kSamplingNoise, first + static_cast<uint64_t>(i));
    const float got = fast[static_cast<size_t>(i)];
    if (got != want) {
      ++differ;
      worst =
          std::max(worst, std::abs(static_cast<double>(got) - want) / std::abs(std::nextafter(want, 2 * want) - want));
    }
  }
  std::printf("philox vector fill: %lld of %lld floats differ from normal_at (at most %.1f ulp)\n",
              static_cast<long long>(differ), static_cast<long long>(n), worst);
  EXPECT_EQ(differ, 0);
  // Short ranges: inside one group of 32, across two, exactly one.
  for (const auto& [from, count] : {std::pair<uint64_t, int64_t>{5, 3}, {30, 5}, {64, 32}, {7, 1}}) {
    std::vector<float> part(static_cast<size_t>(count));
    px::fill_normal_cpu(part.data(), count, key, 3, px::kSamplingNoise, from);
    for (int64_t i = 0; i < count; ++i)
      EXPECT_EQ(part[static_cast<size_t>(i)],
                px::normal_at(key, 3, px::kSamplingNoise, from + static_cast<uint64_t>(i)))
          << "element " << from + static_cast<uint64_t>(i);
  }
  // Another purpose is another draw.
  EXPECT_NE(px::normal_at(key, 3, px::kTrainingNoise, first), fast[0]);
}

TEST(Philox, ASamplingsNoiseOfARowDoesNotDependOnTheBatchItIsDrawnIn) {
  // sampling::noise indexes by the row of the whole sampling: rows 2..4 drawn as a batch of
  // their own are those rows of a batch of 0..4 (what lets sample() cut a field into batches).
  namespace fs = finecast::trainer::sampling;
  const int64_t draws = 3, members = 2, P = 16;
  const auto whole = fs::noise(draws, 0, 5, members, P, 11);
  const auto part = fs::noise(draws, 2, 3, members, P, 11);
  EXPECT_TRUE(torch::equal(part, whole.narrow(1, 2 * members, 3 * members)));
  EXPECT_FALSE(torch::equal(part, whole.narrow(1, 0, 3 * members)));
  EXPECT_FALSE(torch::equal(fs::noise(draws, 2, 3, members, P, 12), part));  // another seed
}

TEST(Philox, TheSamplersDrawsAreOneStreamPerDrawFromTheStagedKeyAndFirstElement) {
  // What the captured sampler's kernel draws from its staged {key, first} (test_cuda.cpp compares
  // the kernel with this): row d of fill_normal_draws is stream d of the key from element first.
  namespace fs = finecast::trainer::sampling;
  const int64_t draws = 4, rows = 3, members = 2, P = 13;  // first = 5 * 2 * 13: no group boundary
  const auto params = fs::noise_params(5, members, P, 77);
  uint64_t key = 0;
  std::memcpy(&key, params.data_ptr<int64_t>(), sizeof key);
  EXPECT_EQ(key, px::key_of(77));
  EXPECT_EQ(params.data_ptr<int64_t>()[1], 5 * members * P);
  const int64_t n = rows * members * P;
  auto out = torch::empty({draws, n}, torch::kFloat32);
  px::fill_normal_draws(out, params, px::kSamplingNoise);
  int64_t differ = 0;
  for (int64_t d = 0; d < draws; ++d)
    for (int64_t i = 0; i < n; ++i)
      differ += out[d][i].item<float>() !=
                px::normal_at(key, static_cast<uint64_t>(d), px::kSamplingNoise, static_cast<uint64_t>(130 + i));
  EXPECT_EQ(differ, 0);
  EXPECT_TRUE(torch::equal(out.view({draws, rows * members, P}), fs::noise(draws, 5, rows, members, P, 77)));
  // Malformed parameters are refused, not read out of bounds.
  auto three = torch::zeros({3}, torch::kInt64);
  EXPECT_THROW(px::fill_normal_draws(out, three, px::kSamplingNoise), std::invalid_argument);
  auto flat = out.view({-1});
  EXPECT_THROW(px::fill_normal_draws(flat, params, px::kSamplingNoise), std::invalid_argument);
}

TEST(Philox, TheGraphPathDrawsInTheStepWhatTheEagerPathDrawsOnTheHost) {
  KnownDistribution d(300, 2);  // 4 full batches through the graph path, the last 44 eagerly
  auto to = fast_training();
  to.force_autograd = true;
  to.noise_generator = ft::NoiseGenerator::kPhilox;
  ft::Downscaler eager(small_model(), to, "cpu"), graph(small_model(), to, "cpu");
  ft::internals(graph).force_graph_path = true;
  auto other = to;
  other.noise_generator = ft::NoiseGenerator::kCpu;
  ft::Downscaler cpu_noise(small_model(), other, "cpu");
  const auto init = ft::internals(eager).flat.clone();
  double loss_e = 0, loss_g = 0, loss_c = 0;
  for (int e = 0; e < 3; ++e) {
    loss_e = eager.train_epoch(view(d)).avg_loss;
    loss_g = graph.train_epoch(view(d)).avg_loss;
    loss_c = cpu_noise.train_epoch(view(d)).avg_loss;
  }
  ASSERT_TRUE(ft::internals(graph).train_graph) << "the graph path was not taken";
  EXPECT_EQ(graph.step(), eager.step());
  EXPECT_NEAR(loss_g, loss_e, 1e-5 * loss_e);
  const auto update = (ft::internals(eager).flat - init).norm().item<double>();
  const double diff = (ft::internals(graph).flat - ft::internals(eager).flat).norm().item<double>() / update;
  EXPECT_LT(diff, 1e-4);
  // ... and it is another noise than the CPU generator's: the runs part.
  const double apart = (ft::internals(cpu_noise).flat - ft::internals(eager).flat).norm().item<double>() / update;
  std::printf("philox: graph path vs eager %.2e; philox vs cpu noise %.2e (losses %.5f, %.5f, %.5f)\n", diff, apart,
              loss_g, loss_e, loss_c);
  EXPECT_GT(apart, 100 * diff);
}
