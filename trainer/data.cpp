// SPDX-License-Identifier: BSD-3-Clause
// Cleaning, normalisation statistics and the time split of training data.
#include "trainer/data.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
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
  if (static_cast<int64_t>(sums.context_min.size()) == C && static_cast<int64_t>(sums.context_max.size()) == C &&
      C > 0 && sums.context_count > 0) {
    a.context_min = torch::tensor(sums.context_min, torch::kFloat64).to(torch::kFloat32);
    a.context_max = torch::tensor(sums.context_max, torch::kFloat64).to(torch::kFloat32);
  }
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

torch::Tensor patch_mean(const torch::Tensor& fine, const torch::Tensor& w) {
  return w.defined() ? (fine * w).sum(1) : fine.mean(1);
}

namespace {

/// Whether none of x[0..m) is NaN or Inf (all exponent bits set): an integer test the compiler
/// vectorises.
bool finite_row(const float* x, int64_t m) {
  uint32_t bad = 0;
  for (int64_t i = 0; i < m; ++i) {
    uint32_t bits;
    std::memcpy(&bits, x + i, sizeof bits);
    bad |= static_cast<uint32_t>((bits & 0x7f800000u) == 0x7f800000u);
  }
  return bad == 0;
}

/// The sum of x[j] * w[j] (w null: of x[j]), in double, with four partial sums so that the adds
/// do not wait on each other.
double row_sum(const float* x, const float* w, int64_t m) {
  double a[4] = {0, 0, 0, 0};
  int64_t j = 0;
  for (; j + 4 <= m; j += 4)
    for (int k = 0; k < 4; ++k) a[k] += w ? static_cast<double>(w[j + k]) * x[j + k] : static_cast<double>(x[j + k]);
  for (; j < m; ++j) a[0] += w ? static_cast<double>(w[j]) * x[j] : static_cast<double>(x[j]);
  return (a[0] + a[1]) + (a[2] + a[3]);
}

/// w[0..P) scaled to sum 1 (summed in double) into out[0..P); throws, naming `who`, on a negative
/// weight or a row without a positive sum. Training (clean) and sampling normalise alike.
void normalise_weight_row(const float* w, float* out, int64_t P, const char* who) {
  uint32_t negative = 0;
  for (int64_t j = 0; j < P; ++j) negative |= static_cast<uint32_t>(w[j] < 0);
  if (negative) throw std::invalid_argument(std::string(who) + ": weights must be >= 0");
  const auto sum = static_cast<float>(row_sum(w, nullptr, P));
  if (!(sum > 0)) throw std::invalid_argument(std::string(who) + ": every weights row needs a positive sum");
  for (int64_t j = 0; j < P; ++j) out[j] = w[j] / sum;
}

/// A patch's mean: weighted by its (normalised) weights, else plain.
double patch_mean_of(const float* f, const float* w, int64_t P) {
  return w ? row_sum(f, w, P) : row_sum(f, nullptr, P) / static_cast<double>(P);
}

/// Row `row` of a contiguous float [n, cols] tensor.
const float* row_of(const torch::Tensor& t, int64_t row) { return t.data_ptr<float>() + row * t.size(1); }

}  // namespace

torch::Tensor normalised_weights(const torch::Tensor& w, const char* who) {
  const torch::Tensor in = w.to(torch::kCPU, torch::kFloat32).contiguous();
  torch::Tensor out = torch::empty_like(in);
  const int64_t P = in.size(1);
  for (int64_t r = 0; r < in.size(0); ++r) normalise_weight_row(row_of(in, r), out.data_ptr<float>() + r * P, P, who);
  return out;
}

// One pass over the rows on the calling thread, in plain loops: a session's set-up ran LibTorch's
// element-wise operations a dozen times over the data (each a parallel region, each a fresh
// buffer), which on a shared or oversubscribed core cost as much as an epoch.
CleanData clean(const DataView& d, int64_t C, int64_t P, const char* who) {
  if (d.n < 0) throw std::invalid_argument(std::string(who) + ": n must be >= 0");
  if (d.n > 0 && (!d.fine || (C > 0 && !d.context)))
    throw std::invalid_argument(std::string(who) + ": context and fine must not be null");
  std::vector<int64_t> kept;
  kept.reserve(static_cast<size_t>(d.n));
  for (int64_t i = 0; i < d.n; ++i)
    if (finite_row(d.fine + i * P, P) && (C == 0 || finite_row(d.context + i * C, C)) &&
        (!d.weights || finite_row(d.weights + i * P, P)))
      kept.push_back(i);
  const auto m = static_cast<int64_t>(kept.size());
  CleanData c;
  if (m == d.n) {  // nothing dropped: the rows as they are (not copied)
    c.context = C > 0 ? cpu_float(d.context, d.n, C) : torch::zeros({d.n, 0});
    c.fine = cpu_float(d.fine, d.n, P);
  } else {
    c.context = torch::empty({m, C}, torch::kFloat32);
    c.fine = torch::empty({m, P}, torch::kFloat32);
    for (int64_t k = 0; k < m; ++k) {
      const int64_t i = kept[static_cast<size_t>(k)];
      if (C > 0) std::memcpy(c.context.data_ptr<float>() + k * C, d.context + i * C, sizeof(float) * C);
      std::memcpy(c.fine.data_ptr<float>() + k * P, d.fine + i * P, sizeof(float) * P);
    }
    c.rows = torch::tensor(kept, torch::kInt64);
    c.dropped = d.n - m;
  }
  if (d.weights) {
    // Each row normalised to sum 1.
    c.weights = torch::empty({m, P}, torch::kFloat32);
    for (int64_t k = 0; k < m; ++k)
      normalise_weight_row(d.weights + kept[static_cast<size_t>(k)] * P, c.weights.data_ptr<float>() + k * P, P, who);
  }
  return c;
}

std::pair<torch::Tensor, torch::Tensor> clip_bounds(const NormApplied& norm, double margin) {
  if (!norm.context_min.defined()) return {};
  const auto width = norm.context_max - norm.context_min;
  return {norm.context_min - margin * width, norm.context_max + margin * width};
}

torch::Tensor clip_to_training_range(const torch::Tensor& context, const NormApplied& norm, double margin) {
  const auto [lo, hi] = clip_bounds(norm, margin);
  if (!lo.defined() || context.size(1) != lo.size(0)) return context;
  return torch::max(torch::min(context, hi), lo);
}

torch::Tensor training_range_excess(const torch::Tensor& context, const NormApplied& norm) {
  if (!norm.context_min.defined() || context.size(1) != norm.context_min.size(0)) return {};
  const auto lo = norm.context_min.to(torch::kCPU), hi = norm.context_max.to(torch::kCPU);
  const auto width = hi - lo;
  const auto outside = torch::clamp_min(torch::max(lo - context, context - hi), 0.0);
  const auto excess = torch::where(width > 0, outside / torch::where(width > 0, width, torch::ones_like(width)),
                                   torch::zeros_like(outside));
  return context.size(1) > 0 ? std::get<0>(excess.max(1)) : torch::zeros({context.size(0)}, context.options());
}

void accumulate_normalisation(NormSums& s, const CleanData& c, int64_t C) {
  const int64_t n = c.fine.size(0), P = c.fine.size(1);
  if (n == 0) return;
  if (s.context_sum.empty()) {
    s.context_sum.assign(static_cast<size_t>(C), 0.0);
    s.context_sumsq.assign(static_cast<size_t>(C), 0.0);
  }
  if (s.context_min.size() != static_cast<size_t>(C)) {
    s.context_min.assign(static_cast<size_t>(C), std::numeric_limits<double>::infinity());
    s.context_max.assign(static_cast<size_t>(C), -std::numeric_limits<double>::infinity());
  }
  const torch::Tensor ctx = c.context.contiguous(), fine = c.fine.contiguous();
  const torch::Tensor w = c.weights.defined() ? c.weights.contiguous() : torch::Tensor();
  double residual_sumsq = 0, fine_sumsq = 0;
  for (int64_t r = 0; r < n; ++r) {
    if (C > 0) {
      const float* x = row_of(ctx, r);
      for (int64_t i = 0; i < C; ++i) {
        s.context_sum[static_cast<size_t>(i)] += x[i];
        s.context_sumsq[static_cast<size_t>(i)] += static_cast<double>(x[i]) * x[i];
        s.context_min[static_cast<size_t>(i)] = std::min<double>(s.context_min[static_cast<size_t>(i)], x[i]);
        s.context_max[static_cast<size_t>(i)] = std::max<double>(s.context_max[static_cast<size_t>(i)], x[i]);
      }
    }
    const float* f = row_of(fine, r);
    const double mean = patch_mean_of(f, w.defined() ? row_of(w, r) : nullptr, P);
    // Sums of squares about the mean and about 0, four partial sums each.
    double e2[4] = {0, 0, 0, 0}, f2[4] = {0, 0, 0, 0};
    int64_t j = 0;
    for (; j + 4 <= P; j += 4)
      for (int k = 0; k < 4; ++k) {
        const double v = f[j + k], e = v - mean;
        e2[k] += e * e;
        f2[k] += v * v;
      }
    for (; j < P; ++j) {
      const double v = f[j], e = v - mean;
      e2[0] += e * e;
      f2[0] += v * v;
    }
    residual_sumsq += (e2[0] + e2[1]) + (e2[2] + e2[3]);
    fine_sumsq += (f2[0] + f2[1]) + (f2[2] + f2[3]);
  }
  s.context_count += static_cast<double>(n);
  s.residual_sumsq += residual_sumsq;
  s.residual_count += static_cast<double>(n * P);
  s.fine_sumsq += fine_sumsq;
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
  const int64_t n = e.n, P = c.fine.size(1), C = c.context.size(1);
  const torch::Tensor fine = c.fine.contiguous(), ctx = c.context.contiguous();
  const torch::Tensor w = c.weights.defined() ? c.weights.contiguous() : torch::Tensor();
  const torch::Tensor mean = norm.context_mean.to(torch::kCPU).contiguous();
  const torch::Tensor sd = norm.context_std.to(torch::kCPU).contiguous();
  torch::Tensor r0 = torch::empty({n, P}, torch::kFloat32), x = torch::empty({n, C}, torch::kFloat32);
  const auto scale = static_cast<float>(norm.residual_std);
  const float *mu = mean.data_ptr<float>(), *sigma = sd.data_ptr<float>();
  float *r0_out = r0.data_ptr<float>(), *x_out = x.data_ptr<float>();
  for (int64_t r = 0; r < n; ++r) {
    // The residual from the patch's (weighted) mean, in the residual's scale.
    const float* f = row_of(fine, r);
    const auto coarse = static_cast<float>(patch_mean_of(f, w.defined() ? row_of(w, r) : nullptr, P));
    float* out = r0_out + r * P;
    for (int64_t j = 0; j < P; ++j) out[j] = (f[j] - coarse) / scale;
    const float* in = C > 0 ? row_of(ctx, r) : nullptr;
    float* xo = x_out + r * C;
    for (int64_t i = 0; i < C; ++i) xo[i] = (in[i] - mu[i]) / sigma[i];
  }
  e.r0 = r0.to(device);
  e.ctx = x.to(device);
  if (w.defined()) e.w = w.to(device);
  return e;
}

}  // namespace finecast::trainer
