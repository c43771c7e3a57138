// SPDX-License-Identifier: BSD-3-Clause
// Nearest, bilinear, bicubic and cubic B-spline interpolation of block means, and the
// conservative correction.
#include "eval/baselines.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>

#include "common/bspline.hpp"
#include "common/cubic.hpp"
#include "common/error.hpp"

namespace finecast::eval {

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

/// The coefficient at block row r, column col, both extended beyond the ends (rows never wrap).
double coefficient2(const std::vector<double>& a, int r, int col, int nby, int nbx, bool periodic_x) {
  if (nby == 1) r = 0;
  if (r < 0)
    return 2.0 * coefficient2(a, 0, col, nby, nbx, periodic_x) - coefficient2(a, -r, col, nby, nbx, periodic_x);
  if (r > nby - 1)
    return 2.0 * coefficient2(a, nby - 1, col, nby, nbx, periodic_x) -
           coefficient2(a, 2 * (nby - 1) - r, col, nby, nbx, periodic_x);
  return bspline_coefficient(a.data() + static_cast<std::size_t>(r) * nbx, 1, col, nbx, periodic_x);
}

/// NaN block values replaced by the mean of their finite edge neighbours, repeatedly, so that
/// the prefilter (which couples a whole row and column) sees finite values. False when every
/// block is NaN.
bool fill_missing(std::vector<double>& c, int nby, int nbx, bool periodic_x) {
  bool any_finite = false;
  for (double v : c) any_finite = any_finite || std::isfinite(v);
  if (!any_finite) return false;
  for (bool missing = true; missing;) {
    missing = false;
    std::vector<double> next = c;
    for (int i = 0; i < nby; ++i)
      for (int j = 0; j < nbx; ++j) {
        const std::size_t b = static_cast<std::size_t>(i) * nbx + j;
        if (std::isfinite(c[b])) continue;
        double sum = 0.0;
        int count = 0;
        const int di[4] = {-1, 1, 0, 0}, dj[4] = {0, 0, -1, 1};
        for (int m = 0; m < 4; ++m) {
          const int y = i + di[m];
          int x = j + dj[m];
          if (periodic_x) x = ((x % nbx) + nbx) % nbx;
          if (y < 0 || y >= nby || x < 0 || x >= nbx) continue;
          const double v = c[static_cast<std::size_t>(y) * nbx + x];
          if (std::isfinite(v)) {
            sum += v;
            ++count;
          }
        }
        if (count > 0)
          next[b] = sum / count;
        else
          missing = true;
      }
    c.swap(next);
  }
  return true;
}

std::vector<double> bspline_interpolate(const BlockLayout& L, const std::vector<double>& coarse) {
  const int nby = L.nby(), nbx = L.nbx();
  std::vector<double> a = coarse;
  if (!fill_missing(a, nby, nbx, L.periodic_x)) return std::vector<double>(L.size(), std::nan(""));
  for (int i = 0; i < nby; ++i) bspline_prefilter(a.data() + static_cast<std::size_t>(i) * nbx, nbx, 1, L.periodic_x);
  for (int j = 0; j < nbx; ++j) bspline_prefilter(a.data() + j, nby, nbx, false);
  // Along x first, for every block row (and the two extended rows each side), then along y.
  std::vector<double> out(L.size());
  std::vector<double> row_x(static_cast<std::size_t>(nby + 4) * L.nx);
  for (int j = 0; j < L.nx; ++j) {
    const double u = (j - 0.5 * (L.k - 1)) / L.k;
    const int b0 = static_cast<int>(std::floor(u));
    const std::array<double, 4> w = bspline_weights(u - b0);
    for (int r = -2; r < nby + 2; ++r) {
      double v = 0.0;
      for (int m = 0; m < 4; ++m) {
        v += w[m] * coefficient2(a, r, b0 - 1 + m, nby, nbx, L.periodic_x);
      }
      row_x[static_cast<std::size_t>(r + 2) * L.nx + j] = v;
    }
  }
  for (int i = 0; i < L.ny; ++i) {
    const double u = (i - 0.5 * (L.k - 1)) / L.k;
    const int b0 = static_cast<int>(std::floor(u));
    const std::array<double, 4> w = bspline_weights(u - b0);
    for (int j = 0; j < L.nx; ++j) {
      double v = 0.0;
      for (int m = 0; m < 4; ++m) v += w[m] * row_x[static_cast<std::size_t>(b0 - 1 + m + 2) * L.nx + j];
      out[static_cast<std::size_t>(i) * L.nx + j] = v;
    }
  }
  // Missing blocks stay missing.
  for (int i = 0; i < L.ny; ++i)
    for (int j = 0; j < L.nx; ++j)
      if (!std::isfinite(coarse[static_cast<std::size_t>(i / L.k) * nbx + j / L.k]))
        out[static_cast<std::size_t>(i) * L.nx + j] = std::nan("");
  return out;
}

}  // namespace

std::vector<double> interpolate(const BlockLayout& L, const std::vector<double>& coarse, Interp interp) {
  if (coarse.size() != L.n_blocks())
    throw InternalError("interpolate: expected " + std::to_string(L.n_blocks()) + " block values, got " +
                        std::to_string(coarse.size()));
  if (interp == Interp::kBspline) return bspline_interpolate(L, coarse);
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

}  // namespace finecast::eval
