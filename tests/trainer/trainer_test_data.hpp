// SPDX-License-Identifier: BSD-3-Clause
// A known conditional distribution for trainer tests (fine = coarse + amp * pattern + noise),
// the small model that learns it, and how its samples are scored.
#pragma once

#include <ftw.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "trainer/downscaler.hpp"
#include "trainer/validation.hpp"

namespace finecast::trainer::testing {

namespace ft = finecast::trainer;

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
    for (int64_t j = 0; j < P; ++j)
      pm += pattern[j] = std::sin(2.0 * M_PI * (static_cast<double>(j) + 0.5) / static_cast<double>(P));
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

/// The model and training settings of the learning tests (64-wide patches of 16 values).
inline ft::ModelOptions small_model() {
  ft::ModelOptions o;
  o.context_size = 3;
  o.patch_size = 16;
  o.hidden = 128;
  o.depth = 3;
  o.time_embedding = 32;
  o.diffusion_steps = 50;
  return o;
}

/// A smaller model of the same shape: the checkpoint tests' model, and the built-in MLP that the
/// TorchScript and export tests write as a script module and compare with.
inline ft::ModelOptions tiny_mlp() {
  ft::ModelOptions o;
  o.context_size = 3;
  o.patch_size = 16;
  o.hidden = 32;
  o.depth = 2;
  o.time_embedding = 16;
  o.diffusion_steps = 20;
  return o;
}

inline bool contains(const std::string& s, const std::string& what) { return s.find(what) != std::string::npos; }

inline ft::TrainOptions fast_training() {
  ft::TrainOptions t;
  t.batch_size = 64;
  t.lr = 3e-3;
  t.warmup_steps = 50;
  t.decay_steps = 2500;
  t.ema_decay = 0.995;
  t.seed = 5;
  return t;
}

inline ft::DataView view(const KnownDistribution& d) { return {d.context.data(), d.fine.data(), nullptr, d.n}; }

/// How well samples match the truth on `test`: RMS error of the ensemble mean (over all cells),
/// mean ensemble spread, and the correlation of the sampled pattern amplitude with the true one.
struct Skill {
  double mean_rmse = 0, spread = 0, amp_corr = 0;
  double crps_fair = 0;  ///< the members' fair CRPS against the sample itself, mean over cells
};

inline Skill evaluate(const ft::Downscaler& ds, const KnownDistribution& test, const ft::SampleOptions& so,
                      uint64_t seed) {
  const int64_t n = test.n, P = test.P, M = so.members;
  std::vector<float> out(static_cast<size_t>(n * M * P));
  ds.sample(test.context.data(), test.coarse.data(), nullptr, n, so, seed, out.data());
  Skill s;
  double se = 0, spread = 0, crps = 0;
  std::vector<double> amp_true(n), amp_est(n);
  std::vector<float> members(static_cast<size_t>(M));
  for (int64_t i = 0; i < n; ++i) {
    double proj = 0, pp = 0;
    for (int64_t j = 0; j < P; ++j) {
      double m = 0, m2 = 0;
      for (int64_t k = 0; k < M; ++k) {
        const double v = members[static_cast<size_t>(k)] = out[(i * M + k) * P + j];
        m += v;
        m2 += v * v;
      }
      if (M >= 2) crps += ft::validation::crps_fair(members, test.fine[i * P + j]);
      m /= M;
      spread += std::sqrt(std::max(0.0, m2 / M - m * m) * M / (M - 1));
      se += (m - test.true_mean(i, j)) * (m - test.true_mean(i, j));
      proj += (m - test.coarse[i]) * test.pattern[j];
      pp += test.pattern[j] * test.pattern[j];
    }
    amp_true[i] = test.context[i * test.C + 1];
    amp_est[i] = proj / pp;
  }
  s.mean_rmse = std::sqrt(se / static_cast<double>(n * P));
  s.spread = spread / static_cast<double>(n * P);
  s.crps_fair = crps / static_cast<double>(n * P);
  auto mean = [](const std::vector<double>& v) {
    double m = 0;
    for (double x : v) m += x;
    return m / static_cast<double>(v.size());
  };
  const double ma = mean(amp_true), me = mean(amp_est);
  double sab = 0, saa = 0, sbb = 0;
  for (int64_t i = 0; i < n; ++i) {
    sab += (amp_true[i] - ma) * (amp_est[i] - me);
    saa += (amp_true[i] - ma) * (amp_true[i] - ma);
    sbb += (amp_est[i] - me) * (amp_est[i] - me);
  }
  s.amp_corr = sab / std::sqrt(saa * sbb + 1e-30);
  return s;
}

/// Removes a directory tree with POSIX nftw. Not std::filesystem::remove_all: PyTorch's pip
/// wheels (2.11 seen) export their own copy of it from libtorch.so, which wins symbol lookup and
/// crashes (a call through a null pointer) on a non-empty directory.
inline void remove_tree(const std::string& dir) {
  ::nftw(
      dir.c_str(), [](const char* path, const struct stat*, int, struct FTW*) { return ::remove(path); }, 16,
      FTW_DEPTH | FTW_PHYS);
}

/// A fresh directory for the running test (under the system temp directory, named after the
/// test and the process), removed with everything in it when the test ends.
class ScratchDir {
 public:
  explicit ScratchDir(const std::string& tag)
      : dir_(std::filesystem::temp_directory_path() /
             ("finecast_" + tag + "_" + std::to_string(::getpid()) + "_" +
              ::testing::UnitTest::GetInstance()->current_test_info()->name())) {
    remove_tree(dir_.string());
    std::filesystem::create_directories(dir_);
  }
  ~ScratchDir() { remove_tree(dir_.string()); }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  const std::filesystem::path& dir() const { return dir_; }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }

 private:
  std::filesystem::path dir_;
};

}  // namespace finecast::trainer::testing
