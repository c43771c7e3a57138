// SPDX-License-Identifier: BSD-3-Clause
// A known conditional distribution for trainer tests: fine = coarse + amp * pattern + noise.
#pragma once

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

namespace finecast::trainer::testing {

/// Context = (coarse, amp, unrelated); fine_j = coarse + amp * pattern_j + noise_j, where pattern
/// and noise have zero patch mean, so the patch mean is exactly `coarse` and, given the
/// context, each fine value has mean coarse + amp * pattern_j and std noise * sqrt(1 - 1/P).
struct KnownDistribution {
  int64_t C = 3, P = 16, n = 0;
  double noise = 0.3;
  std::vector<float> context, fine, coarse;
  std::vector<double> pattern;

  KnownDistribution(int64_t samples, uint32_t seed, int64_t patch = 16) : P(patch), n(samples) {
    std::mt19937 rng(seed);
    std::normal_distribution<double> normal;
    std::uniform_real_distribution<double> uni(-1.0, 1.0);
    pattern.resize(static_cast<size_t>(P));
    double pm = 0;
    for (int64_t j = 0; j < P; ++j) pm += pattern[j] = std::sin(2.0 * M_PI * (static_cast<double>(j) + 0.5) / static_cast<double>(P));
    for (auto& p : pattern) p -= pm / static_cast<double>(P);
    context.resize(static_cast<size_t>(n * C));
    fine.resize(static_cast<size_t>(n * P));
    coarse.resize(static_cast<size_t>(n));
    std::vector<double> z(static_cast<size_t>(P));
    for (int64_t i = 0; i < n; ++i) {
      const double c = 2.0 * uni(rng), amp = 1.0 + 0.8 * uni(rng);
      context[i * C] = static_cast<float>(c);
      context[i * C + 1] = static_cast<float>(amp);
      context[i * C + 2] = static_cast<float>(uni(rng));
      double zm = 0;
      for (auto& v : z) zm += v = noise * normal(rng);
      for (int64_t j = 0; j < P; ++j)
        fine[i * P + j] = static_cast<float>(c + amp * pattern[j] + z[j] - zm / static_cast<double>(P));
      coarse[i] = static_cast<float>(c);
    }
  }
  double true_mean(int64_t i, int64_t j) const { return context[i * C] + context[i * C + 1] * pattern[j]; }
  double true_std() const { return noise * std::sqrt(1.0 - 1.0 / static_cast<double>(P)); }
};

}  // namespace finecast::trainer::testing
