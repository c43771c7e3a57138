// SPDX-License-Identifier: BSD-3-Clause
// Nearest, bilinear and bicubic interpolation of block means, and the conservative correction.
#include "eval/baselines.hpp"

#include <array>
#include <cmath>

#include "common/cubic.hpp"
#include "common/error.hpp"

namespace finecast::coupling::eval {

const std::vector<Baseline>& all_baselines() {
  static const std::vector<Baseline> list = {
      {"nearest", Interp::kNearest, false},       {"bilinear", Interp::kBilinear, false},
      {"bicubic", Interp::kBicubic, false},       {"nearest_cons", Interp::kNearest, true},
      {"bilinear_cons", Interp::kBilinear, true}, {"bicubic_cons", Interp::kBicubic, true},
  };
  return list;
}

namespace {

/// Stencil of one fine coordinate along one axis: block indices and their weights.
struct Stencil {
  int n = 0;
  std::array<int, 4> idx{};
  std::array<double, 4> w{};
};

int wrap_or_clamp(int b, int nb, bool periodic) {
  if (periodic) return ((b % nb) + nb) % nb;
  return b < 0 ? 0 : (b >= nb ? nb - 1 : b);
}

/// Fine cell i (of an axis with nb blocks of k cells) in block-centre coordinates: block b's
/// centre lies at fine position b*k + (k-1)/2.
Stencil stencil(int i, int k, int nb, Interp interp, bool periodic) {
  Stencil s;
  if (interp == Interp::kNearest) {
    s.n = 1;
    s.idx[0] = i / k;
    s.w[0] = 1.0;
    return s;
  }
  const double u = (i - 0.5 * (k - 1)) / k;
  const int b0 = static_cast<int>(std::floor(u));
  const double t = u - b0;
  if (interp == Interp::kBilinear) {
    s.n = 2;
    s.idx = {b0, b0 + 1, 0, 0};
    s.w = {1.0 - t, t, 0.0, 0.0};
  } else {
    // Keys' cubic convolution kernel with a = -0.5 (Catmull-Rom): exact for quadratics.
    s.n = 4;
    s.idx = {b0 - 1, b0, b0 + 1, b0 + 2};
    s.w = keys_cubic_weights(t);
  }
  for (int m = 0; m < s.n; ++m) s.idx[m] = wrap_or_clamp(s.idx[m], nb, periodic);
  return s;
}

}  // namespace

std::vector<double> interpolate(const BlockLayout& L, const std::vector<double>& coarse, Interp interp) {
  if (coarse.size() != L.n_blocks())
    throw InternalError("interpolate: expected " + std::to_string(L.n_blocks()) + " block values, got " +
                        std::to_string(coarse.size()));
  const int nby = L.nby(), nbx = L.nbx();
  std::vector<Stencil> sx(L.nx);
  for (int j = 0; j < L.nx; ++j) sx[j] = stencil(j, L.k, nbx, interp, L.periodic_x);
  std::vector<double> out(L.size());
  for (int i = 0; i < L.ny; ++i) {
    const Stencil sy = stencil(i, L.k, nby, interp, false);
    for (int j = 0; j < L.nx; ++j) {
      double v = 0.0;
      for (int a = 0; a < sy.n; ++a) {
        const double* row = coarse.data() + static_cast<std::size_t>(sy.idx[a]) * nbx;
        double r = 0.0;
        for (int b = 0; b < sx[j].n; ++b) r += sx[j].w[b] * row[sx[j].idx[b]];
        v += sy.w[a] * r;
      }
      out[static_cast<std::size_t>(i) * L.nx + j] = v;
    }
  }
  return out;
}

void restore_block_means(const BlockLayout& L, const std::vector<double>& coarse, std::vector<double>& fine) {
  const std::vector<double> mean = block_means(L, fine.data());
  for (int i = 0; i < L.ny; ++i)
    for (int j = 0; j < L.nx; ++j) {
      const std::size_t b = static_cast<std::size_t>(i / L.k) * L.nbx() + j / L.k;
      fine[static_cast<std::size_t>(i) * L.nx + j] += coarse[b] - mean[b];
    }
}

std::vector<double> run_baseline(const BlockLayout& L, const std::vector<double>& coarse, const Baseline& baseline) {
  std::vector<double> fine = interpolate(L, coarse, baseline.interp);
  if (baseline.conservative) restore_block_means(L, coarse, fine);
  return fine;
}

}  // namespace finecast::coupling::eval
