// SPDX-License-Identifier: BSD-3-Clause
// k x k block arithmetic shared by the baselines and the metrics.
#include "eval/blocks.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include "common/error.hpp"

namespace finecast::eval {

void BlockLayout::validate() const {
  if (k < 1) throw ConfigError("block size must be >= 1, got " + std::to_string(k));
  if (ny < k || nx < k || ny % k != 0 || nx % k != 0)
    throw ConfigError("field of " + std::to_string(ny) + " x " + std::to_string(nx) + " is not tiled by whole " +
                      std::to_string(k) + " x " + std::to_string(k) + " blocks");
  if (!weight.empty()) {
    if (weight.size() != size())
      throw ConfigError("area weights: expected " + std::to_string(size()) + " values, got " +
                        std::to_string(weight.size()));
    for (double v : weight)
      if (!(v > 0.0) || !std::isfinite(v))
        throw ConfigError("area weights must be positive and finite (got " + std::to_string(v) + ")");
  }
}

std::vector<double> latlon_weights(const std::vector<double>& lat_deg, int nx) {
  std::vector<double> w;
  w.reserve(lat_deg.size() * static_cast<std::size_t>(nx));
  for (double lat : lat_deg) {
    // Grids whose outer rows sit on a pole would get a zero weight; a tiny floor keeps the
    // block mean defined there without changing anything measurable elsewhere.
    const double c = std::max(std::cos(lat * M_PI / 180.0), 1e-6);
    w.insert(w.end(), static_cast<std::size_t>(nx), c);
  }
  return w;
}

namespace {

/// Calls fn(fine index) for every cell of block (by, bx).
template <class Fn>
void for_block(const BlockLayout& L, int by, int bx, Fn&& fn) {
  for (int i = by * L.k; i < (by + 1) * L.k; ++i)
    for (int j = bx * L.k; j < (bx + 1) * L.k; ++j) fn(static_cast<std::size_t>(i) * L.nx + j);
}

}  // namespace

std::vector<double> block_means(const BlockLayout& L, const double* field) {
  std::vector<double> out(L.n_blocks());
  for (int by = 0; by < L.nby(); ++by)
    for (int bx = 0; bx < L.nbx(); ++bx) {
      double sw = 0.0, swx = 0.0;
      for_block(L, by, bx, [&](std::size_t p) {
        sw += L.w(p);
        swx += L.w(p) * field[p];
      });
      out[static_cast<std::size_t>(by) * L.nbx() + bx] = swx / sw;
    }
  return out;
}

std::vector<double> block_residual(const BlockLayout& L, const double* field) {
  const std::vector<double> mean = block_means(L, field);
  std::vector<double> out(L.size());
  for (int by = 0; by < L.nby(); ++by)
    for (int bx = 0; bx < L.nbx(); ++bx) {
      const double m = mean[static_cast<std::size_t>(by) * L.nbx() + bx];
      for_block(L, by, bx, [&](std::size_t p) { out[p] = field[p] - m; });
    }
  return out;
}

std::vector<double> block_std(const BlockLayout& L, const double* field) {
  const std::vector<double> mean = block_means(L, field);
  std::vector<double> out(L.n_blocks());
  for (int by = 0; by < L.nby(); ++by)
    for (int bx = 0; bx < L.nbx(); ++bx) {
      const std::size_t b = static_cast<std::size_t>(by) * L.nbx() + bx;
      double sw = 0.0, swd = 0.0;
      for_block(L, by, bx, [&](std::size_t p) {
        const double d = field[p] - mean[b];
        sw += L.w(p);
        swd += L.w(p) * d * d;
      });
      out[b] = std::sqrt(swd / sw);
    }
  return out;
}

}  // namespace finecast::eval
