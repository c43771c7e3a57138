// SPDX-License-Identifier: BSD-3-Clause
// Cleaning, normalisation statistics and the time split of training data.
#include "trainer/data.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <string>

namespace finecast::trainer {

NormApplied derive_normalisation(const NormSums& sums, int64_t C, const torch::Device& device) {
  NormApplied a;
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
    // Data whose residual is zero (a field its base already reproduces, or a constant field:
    // nothing to add) keeps a vanishing scale, so that samples add nothing either; before any
    // data the scale is 1. Vanishing relative to the field (a fixed floor of 1e-12 made the
    // samples of a constant 1e-20 field 1e8 times the field, of a 1e-40 one 1e28 times).
    const double s = std::sqrt(sums.residual_sumsq / sums.residual_count);
    const double fine_rms = std::sqrt(sums.fine_sumsq / sums.residual_count);
    a.residual_std = std::max({s, kResidualScaleOfField * fine_rms, kMinResidualScale});
  }
  return a;
}

torch::Tensor cpu_float(const float* data, int64_t rows, int64_t cols) {
  return torch::from_blob(const_cast<float*>(data), {rows, cols}, torch::kFloat32);
}

torch::Tensor normalised_weights(const torch::Tensor& w, const char* who) {
  if ((w < 0).any().item<bool>()) throw std::invalid_argument(std::string(who) + ": weights must be >= 0");
  auto sum = w.sum(1, true);
  if ((sum <= 0).any().item<bool>())
    throw std::invalid_argument(std::string(who) + ": every weights row needs a positive sum");
  return w / sum;
}

torch::Tensor patch_mean(const torch::Tensor& fine, const torch::Tensor& w) {
  return w.defined() ? (fine * w).sum(1) : fine.mean(1);
}

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
    c.rows = idx;
    c.dropped = d.n - good;
  }
  if (c.weights.defined()) c.weights = normalised_weights(c.weights, who);
  return c;
}

void accumulate_normalisation(NormSums& s, const CleanData& c, int64_t C) {
  const int64_t n = c.fine.size(0);
  if (n == 0) return;
  if (s.context_sum.empty()) {
    s.context_sum.assign(static_cast<size_t>(C), 0.0);
    s.context_sumsq.assign(static_cast<size_t>(C), 0.0);
  }
  auto ctx = c.context.to(torch::kFloat64);
  auto csum = ctx.sum(0).contiguous(), csq = (ctx * ctx).sum(0).contiguous();
  for (int64_t i = 0; i < C; ++i) {
    s.context_sum[i] += csum.data_ptr<double>()[i];
    s.context_sumsq[i] += csq.data_ptr<double>()[i];
  }
  s.context_count += static_cast<double>(n);
  auto fine = c.fine.to(torch::kFloat64);
  auto w = c.weights.defined() ? c.weights.to(torch::kFloat64) : torch::Tensor();
  auto res = fine - patch_mean(fine, w).unsqueeze(1);
  s.residual_sumsq += (res * res).sum().item<double>();
  s.residual_count += static_cast<double>(res.numel());
  s.fine_sumsq += (fine * fine).sum().item<double>();
}

TimeSplit split_by_time(const int64_t* time, int64_t n, double fraction) {
  if (!(fraction >= 0.0 && fraction < 1.0)) throw std::invalid_argument("train.validation: must be in [0, 1)");
  TimeSplit s;
  std::vector<int64_t> steps;
  steps.reserve(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) steps.push_back(time ? time[i] : i);
  std::vector<int64_t> distinct = steps;
  std::sort(distinct.begin(), distinct.end());
  distinct.erase(std::unique(distinct.begin(), distinct.end()), distinct.end());
  s.steps = static_cast<int64_t>(distinct.size());
  if (fraction > 0 && s.steps >= 2) {
    const auto k = static_cast<int64_t>(std::llround(fraction * static_cast<double>(s.steps)));
    s.validation_steps = std::clamp<int64_t>(k, 1, s.steps - 1);
  }
  // Rows at or after the first held-out step are validation.
  const int64_t cut = s.validation_steps > 0 ? distinct[static_cast<size_t>(s.steps - s.validation_steps)]
                                             : std::numeric_limits<int64_t>::max();
  for (int64_t i = 0; i < n; ++i) (steps[static_cast<size_t>(i)] >= cut ? s.validation : s.train).push_back(i);
  return s;
}

namespace {

uint64_t mix64(uint64_t z) {  // splitmix64's finaliser
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

uint64_t hash_floats(uint64_t h, const float* v, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    float x = v[i];
    if (x == 0.0f) x = 0.0f;  // -0 and +0 are the same value
    uint32_t bits = 0;
    std::memcpy(&bits, &x, sizeof bits);
    h = mix64(h ^ bits);
  }
  return h;
}

}  // namespace

TimeSplit split_by_patches(const CleanData& c, double fraction, uint64_t seed) {
  if (!(fraction >= 0.0 && fraction < 1.0)) throw std::invalid_argument("train.validation: must be in [0, 1)");
  TimeSplit s;
  const int64_t n = c.fine.size(0), P = c.fine.size(1), C = c.context.size(1);
  const auto ctx = c.context.contiguous(), fine = c.fine.contiguous();
  // Held out when the hash's top 53 bits, as a fraction of 2^53, are below `fraction`.
  constexpr double kScale = 1.0 / 9007199254740992.0;  // 2^-53
  const uint64_t salt = mix64(seed ^ 0x5EED5917ULL);
  for (int64_t i = 0; i < n; ++i) {
    uint64_t h = salt;
    if (C > 0) h = hash_floats(h, ctx.data_ptr<float>() + i * C, C);
    h = hash_floats(h, fine.data_ptr<float>() + i * P, P);
    const double u = static_cast<double>(mix64(h) >> 11) * kScale;
    (u < fraction ? s.validation : s.train).push_back(i);
  }
  return s;
}

DataView Subset::view() const {
  DataView v;
  v.context = context.empty() ? nullptr : context.data();
  v.fine = fine.data();
  v.weights = weights.empty() ? nullptr : weights.data();
  v.n = static_cast<int64_t>(time.size());
  v.time = time.data();
  return v;
}

Subset take_rows(const DataView& d, const std::vector<int64_t>& rows, int64_t C, int64_t P) {
  Subset s;
  const auto m = static_cast<int64_t>(rows.size());
  s.context.resize(static_cast<size_t>(m * C));
  s.fine.resize(static_cast<size_t>(m * P));
  if (d.weights) s.weights.resize(static_cast<size_t>(m * P));
  s.time.resize(static_cast<size_t>(m));
  for (int64_t k = 0; k < m; ++k) {
    const int64_t i = rows[static_cast<size_t>(k)];
    if (C > 0) std::memcpy(&s.context[k * C], d.context + i * C, static_cast<size_t>(C) * sizeof(float));
    std::memcpy(&s.fine[k * P], d.fine + i * P, static_cast<size_t>(P) * sizeof(float));
    if (d.weights) std::memcpy(&s.weights[k * P], d.weights + i * P, static_cast<size_t>(P) * sizeof(float));
    s.time[k] = d.time ? d.time[i] : i;
  }
  return s;
}

EpochTensors normalise(const CleanData& c, const NormApplied& norm, const torch::Device& device) {
  torch::NoGradGuard no_grad;
  EpochTensors e;
  e.n = c.fine.size(0);
  auto coarse = patch_mean(c.fine, c.weights).unsqueeze(1);
  e.r0 = ((c.fine - coarse) / norm.residual_std).to(device).contiguous();
  e.ctx = ((c.context.to(device) - norm.context_mean) / norm.context_std).contiguous();
  if (c.weights.defined()) e.w = c.weights.to(device).contiguous();
  return e;
}

}  // namespace finecast::trainer
