// SPDX-License-Identifier: BSD-3-Clause
// RMSE, bias, CRPS, block-std ratio and residual spectra of predictions against a truth.
#include "eval/metrics.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include "common/error.hpp"

namespace finecast::eval {

namespace {

/// Returns (mean |x - y|, sum over ordered pairs |x_i - x_j|); sorting makes the pair sum O(m).
std::pair<double, double> crps_terms(const double* x, int m, double y) {
  std::vector<double> s(x, x + m);
  std::sort(s.begin(), s.end());
  double abs_err = 0.0, pairs = 0.0;
  for (int i = 0; i < m; ++i) {
    abs_err += std::abs(s[i] - y);
    pairs += s[i] * (2.0 * i - m + 1);  // s_i appears i times as the larger, m-1-i as the smaller
  }
  return {abs_err / m, 2.0 * pairs};
}

}  // namespace

double crps_ensemble(const double* x, int m, double y) {
  const auto [e, pairs] = crps_terms(x, m, y);
  return e - 0.5 * pairs / (static_cast<double>(m) * m);
}

double crps_ensemble_fair(const double* x, int m, double y) {
  const auto [e, pairs] = crps_terms(x, m, y);
  if (m < 2) return e;
  return e - 0.5 * pairs / (static_cast<double>(m) * (m - 1));
}

std::vector<double> masked_residual(const BlockLayout& L, const double* field, const std::vector<char>& block_valid) {
  std::vector<double> r = block_residual(L, field);
  for (int i = 0; i < L.ny; ++i)
    for (int j = 0; j < L.nx; ++j) {
      const std::size_t p = static_cast<std::size_t>(i) * L.nx + j;
      const std::size_t b = static_cast<std::size_t>(i / L.k) * L.nbx() + j / L.k;
      if (!block_valid[b] || !std::isfinite(r[p])) r[p] = 0.0;
    }
  return r;
}

std::vector<double> masked_residual(const CellLayout& L, const double* field, const std::vector<char>& patch_valid) {
  std::vector<double> r = patch_residual(L, field);
  for (int64_t i = 0; i < L.size(); ++i)
    if (!patch_valid[L.patch_of(i)] || !std::isfinite(r[i])) r[i] = 0.0;
  return r;
}

void accumulate_spectrum(RadialSpectrum& a, const RadialSpectrum& b, double scale) {
  if (a.energy.empty()) {
    a = b;
    for (double& e : a.energy) e *= scale;
    return;
  }
  if (a.energy.size() != b.energy.size())
    throw InternalError("accumulate_spectrum: " + std::to_string(a.energy.size()) + " vs " +
                        std::to_string(b.energy.size()) + " bins");
  for (std::size_t i = 0; i < a.energy.size(); ++i) a.energy[i] += scale * b.energy[i];
}

void ScoreAccumulator::begin_step(int m) {
  if (m < 1) throw InternalError("ScoreAccumulator::add: no members");
  if (members_ != 0 && m != members_)
    throw InternalError("ScoreAccumulator::add: member count changed from " + std::to_string(members_) + " to " +
                        std::to_string(m));
  members_ = m;
  ++steps_;
}

template <class PatchOf, class Weight>
void ScoreAccumulator::add_points(int64_t n, PatchOf patch_of, Weight weight, const double* truth,
                                  const std::vector<const double*>& members, const std::vector<char>& valid) {
  const int m = static_cast<int>(members.size());
  std::vector<double> x(static_cast<std::size_t>(m));
  for (int64_t p = 0; p < n; ++p) {
    if (!valid[patch_of(p)]) continue;
    bool finite = true;
    double mean = 0.0;
    for (int e = 0; e < m; ++e) {
      x[e] = members[e][p];
      finite = finite && std::isfinite(x[e]);
      mean += x[e];
    }
    if (!finite) {
      ++n_nonfinite_;
      continue;
    }
    mean /= m;
    const double w = weight(p), err = mean - truth[p];
    double var = 0.0;
    for (int e = 0; e < m; ++e) var += (x[e] - mean) * (x[e] - mean);
    sw_ += w;
    se_ += w * err;
    se2_ += w * err * err;
    sae_ += w * std::abs(err);
    svar_ += m > 1 ? w * var / (m - 1) : 0.0;
    scrps_ += w * crps_ensemble(x.data(), m, truth[p]);
    scrps_fair_ += w * crps_ensemble_fair(x.data(), m, truth[p]);
    ++n_;
  }
}

void ScoreAccumulator::add_spread(const std::vector<double>& tstd, const std::vector<double>& pstd,
                                  const std::vector<char>& valid) {
  // A block (patch) counts only when the truth and every member are finite in it, so numerator
  // and denominator cover the same blocks.
  for (std::size_t b = 0; b < tstd.size(); ++b)
    if (valid[b] && std::isfinite(pstd[b]) && std::isfinite(tstd[b])) {
      pred_block_std_ += pstd[b];
      truth_block_std_ += tstd[b];
    }
}

template <class Layout, class StdOf, class SpectrumOf>
void ScoreAccumulator::add_members(const Layout& L, const double* truth, const std::vector<const double*>& members,
                                   const std::vector<char>& valid, StdOf std_of, SpectrumOf spectrum_of) {
  const int m = members_;
  std::vector<double> pstd(valid.size(), 0.0);
  for (int e = 0; e < m; ++e) {
    const std::vector<double> s = std_of(members[e]);
    for (std::size_t b = 0; b < s.size(); ++b) pstd[b] += s[b] / m;
  }
  add_spread(std_of(truth), pstd, valid);

  for (int e = 0; e < m; ++e) {
    const std::vector<double> r = masked_residual(L, members[e], valid);
    accumulate_spectrum(spectrum_, spectrum_of(r), 1.0 / m);
  }
}

void ScoreAccumulator::add(const BlockLayout& L, const double* truth, const std::vector<const double*>& members,
                           const std::vector<char>& block_valid) {
  if (block_valid.size() != L.n_blocks()) throw InternalError("ScoreAccumulator::add: block mask has the wrong size");
  begin_step(static_cast<int>(members.size()));
  const int nx = L.nx, k = L.k, nbx = L.nbx();
  add_points(
      static_cast<int64_t>(L.size()),
      [&](int64_t p) { return static_cast<std::size_t>((p / nx) / k) * nbx + (p % nx) / k; },
      [&](int64_t p) { return L.w(static_cast<std::size_t>(p)); }, truth, members, block_valid);
  add_members(
      L, truth, members, block_valid, [&](const double* f) { return block_std(L, f); },
      [&](const std::vector<double>& r) { return radial_spectrum(r.data(), L.ny, L.nx); });
}

void ScoreAccumulator::add(const CellLayout& L, const double* truth, const std::vector<const double*>& members,
                           const std::vector<char>& patch_valid) {
  if (static_cast<int64_t>(patch_valid.size()) != L.n_patches())
    throw InternalError("ScoreAccumulator::add: patch mask has the wrong size");
  begin_step(static_cast<int>(members.size()));
  add_points(
      L.size(), [&](int64_t i) { return L.patch_of(i); }, [&](int64_t i) { return L.w(i); }, truth, members,
      patch_valid);
  add_members(
      L, truth, members, patch_valid, [&](const double* f) { return patch_std(L, f); },
      [&](const std::vector<double>& r) { return hierarchy_spectrum(L, r.data()); });
}

Scores ScoreAccumulator::result(const RadialSpectrum& truth_spectrum) const {
  Scores s;
  s.members = members_;
  s.n_points = n_;
  s.n_nonfinite = n_nonfinite_;
  const double nan = std::nan("");
  if (sw_ > 0) {
    s.rmse = std::sqrt(se2_ / sw_);
    s.bias = se_ / sw_;
    s.mae = sae_ / sw_;
    s.crps = scrps_ / sw_;
    s.crps_fair = scrps_fair_ / sw_;
    s.spread = std::sqrt(svar_ / sw_);
  } else {
    s.rmse = s.bias = s.mae = s.crps = s.crps_fair = s.spread = nan;
  }
  s.std_ratio = truth_block_std_ > 0 ? pred_block_std_ / truth_block_std_ : nan;
  s.spectrum = spectrum_;
  if (steps_ > 0)
    for (double& e : s.spectrum.energy) e /= steps_;
  const double te = upper_half_energy(truth_spectrum) / std::max(steps_, 1);
  s.upper_energy_ratio = te > 0 ? upper_half_energy(s.spectrum) / te : nan;
  return s;
}

}  // namespace finecast::eval
