// SPDX-License-Identifier: BSD-3-Clause
// Nearest and inverse-distance-weighted interpolation of patch means, and the conservative
// correction, on unstructured grids.
#include "eval/cell_baselines.hpp"
#include "coupling/grid/context_stencil.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <numeric>

#include "common/error.hpp"

namespace finecast::coupling::eval {

namespace {

using Vec3 = std::array<double, 3>;

Vec3 unit(double lon, double lat) {
  return {std::cos(lat) * std::cos(lon), std::cos(lat) * std::sin(lon), std::sin(lat)};
}

/// Great-circle angle between unit vectors (atan2 form: accurate for small and large angles).
double angle(const Vec3& a, const Vec3& b) {
  const Vec3 c = {a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]};
  return std::atan2(std::sqrt(c[0] * c[0] + c[1] * c[1] + c[2] * c[2]), a[0] * b[0] + a[1] * b[1] + a[2] * b[2]);
}

/// Patches within `rings` edge-neighbour steps of patch p (p first), or every patch when the
/// layout has no neighbour lists.
void candidates(const CellLayout& L, int64_t p, int rings, std::vector<int64_t>& out, std::vector<int64_t>& seen_at) {
  const CellLayoutSpec& s = L.spec();
  if (s.n_neighbours == 0) {
    out.resize(static_cast<std::size_t>(L.n_patches()));
    std::iota(out.begin(), out.end(), 0);
    return;
  }
  coupling::cells_within(s.patch_neighbours.data(), s.n_neighbours, p, rings, out, seen_at);
}

}  // namespace

const std::vector<CellBaseline>& cell_baselines() {
  static const std::vector<CellBaseline> list = {
      {"nearest", CellInterp::kNearest, false},
      {"idw", CellInterp::kIdw, false},
      {"nearest_cons", CellInterp::kNearest, true},
      {"idw_cons", CellInterp::kIdw, true},
  };
  return list;
}

CellInterpolator::CellInterpolator(const CellLayout& layout, IdwOptions options) : layout_(layout), options_(options) {
  if (options_.neighbours < 1)
    throw ConfigError("IDW: neighbours must be >= 1, got " + std::to_string(options_.neighbours));
  if (!(options_.power > 0.0)) throw ConfigError("IDW: power must be > 0, got " + std::to_string(options_.power));
  if (options_.rings < 1) throw ConfigError("IDW: rings must be >= 1, got " + std::to_string(options_.rings));
  const CellLayoutSpec& s = layout.spec();
  const int k = options_.neighbours;
  const int64_t n = layout.size();
  std::vector<Vec3> centre(static_cast<std::size_t>(layout.n_patches()));
  for (int64_t p = 0; p < layout.n_patches(); ++p) centre[p] = unit(s.patch_lon[p], s.patch_lat[p]);
  idw_patch_.assign(static_cast<std::size_t>(n * k), -1);
  idw_weight_.assign(static_cast<std::size_t>(n * k), 0.0);

  std::vector<int64_t> cand;
  std::vector<int64_t> seen_at(static_cast<std::size_t>(layout.n_patches()), -1);
  std::vector<std::pair<double, int64_t>> by_distance;
  // Cells of one patch share the candidate set: visit them patch by patch.
  for (int64_t p = 0; p < layout.n_patches(); ++p) {
    candidates(layout, p, options_.rings, cand, seen_at);
    for (int j = 0; j < layout.patch_size(); ++j) {
      const int64_t c = layout.cells(p)[j];
      const Vec3 x = unit(s.lon[c], s.lat[c]);
      by_distance.clear();
      for (int64_t q : cand) by_distance.push_back({angle(x, centre[q]), q});
      const std::size_t m = std::min<std::size_t>(by_distance.size(), static_cast<std::size_t>(k));
      // Ties broken by patch index, so the stencil does not depend on the search order.
      std::partial_sort(by_distance.begin(), by_distance.begin() + m, by_distance.end());
      int64_t* slot = idw_patch_.data() + c * k;
      double* w = idw_weight_.data() + c * k;
      if (by_distance.front().first < 1e-12) {
        slot[0] = by_distance.front().second;
        w[0] = 1.0;
        continue;
      }
      double sum = 0.0;
      for (std::size_t i = 0; i < m; ++i) {
        slot[i] = by_distance[i].second;
        w[i] = 1.0 / std::pow(by_distance[i].first, options_.power);
        sum += w[i];
      }
      for (std::size_t i = 0; i < m; ++i) w[i] /= sum;
    }
  }
}

std::vector<double> CellInterpolator::interpolate(const std::vector<double>& coarse, CellInterp interp) const {
  const CellLayout& L = layout_;
  if (static_cast<int64_t>(coarse.size()) != L.n_patches())
    throw InternalError("CellInterpolator: expected " + std::to_string(L.n_patches()) + " patch values, got " +
                        std::to_string(coarse.size()));
  std::vector<double> out(static_cast<std::size_t>(L.size()));
  if (interp == CellInterp::kNearest) {
    for (int64_t i = 0; i < L.size(); ++i) out[i] = coarse[L.patch_of(i)];
    return out;
  }
  const int k = options_.neighbours;
  for (int64_t i = 0; i < L.size(); ++i) {
    double v = 0.0, sw = 0.0;
    for (int j = 0; j < k; ++j) {
      const int64_t q = idw_patch_[i * k + j];
      if (q < 0 || !std::isfinite(coarse[q])) continue;
      v += idw_weight_[i * k + j] * coarse[q];
      sw += idw_weight_[i * k + j];
    }
    out[i] = sw > 0.0 ? v / sw : std::nan("");
  }
  return out;
}

std::vector<double> CellInterpolator::run(const std::vector<double>& coarse, const CellBaseline& baseline) const {
  std::vector<double> fine = interpolate(coarse, baseline.interp);
  if (baseline.conservative) restore_patch_means(layout_, coarse, fine);
  return fine;
}

void restore_patch_means(const CellLayout& L, const std::vector<double>& coarse, std::vector<double>& fine) {
  const std::vector<double> mean = patch_means(L, fine.data());
  for (int64_t i = 0; i < L.size(); ++i) {
    const int64_t p = L.patch_of(i);
    fine[i] += coarse[p] - mean[p];
  }
}

}  // namespace finecast::coupling::eval
