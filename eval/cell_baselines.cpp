// SPDX-License-Identifier: BSD-3-Clause
// Nearest, inverse-distance-weighted and least-squares linear interpolation of patch means, and
// the conservative correction, on unstructured grids.
#include "eval/cell_baselines.hpp"
#include "coupling/grid/context_stencil.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <numeric>

#include "common/error.hpp"

namespace finecast::eval {

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

  if (options_.gradient_rings < 1)
    throw ConfigError("linear: gradient rings must be >= 1, got " + std::to_string(options_.gradient_rings));
  cell_xyz_.resize(static_cast<std::size_t>(n));
  for (int64_t c = 0; c < n; ++c) cell_xyz_[c] = unit(s.lon[c], s.lat[c]);
  centroid_.assign(static_cast<std::size_t>(layout.n_patches()), Vec3{0.0, 0.0, 0.0});
  gradient_from_.resize(static_cast<std::size_t>(layout.n_patches()));
  std::fill(seen_at.begin(), seen_at.end(), -1);
  for (int64_t p = 0; p < layout.n_patches(); ++p) {
    double sw = 0.0;
    for (int j = 0; j < layout.patch_size(); ++j) {
      const int64_t c = layout.cells(p)[j];
      for (int d = 0; d < 3; ++d) centroid_[p][d] += layout.w(c) * cell_xyz_[c][d];
      sw += layout.w(c);
    }
    for (int d = 0; d < 3; ++d) centroid_[p][d] /= sw;
    candidates(layout, p, options_.gradient_rings, cand, seen_at);
    for (int64_t q : cand)
      if (q != p) gradient_from_[p].push_back(q);
  }
}

std::vector<double> CellInterpolator::linear(const std::vector<double>& coarse) const {
  const CellLayout& L = layout_;
  std::vector<double> out(static_cast<std::size_t>(L.size()));
  for (int64_t p = 0; p < L.n_patches(); ++p) {
    const Vec3& m = centroid_[p];
    // Weighted least squares: (D^T W D + ridge) g = D^T W (c_q - c_p) over the finite neighbours.
    // The tiny ridge picks the smallest gradient where the neighbours leave a direction open.
    double A[3][3] = {}, r[3] = {};
    for (int64_t q : gradient_from_[p]) {
      if (!std::isfinite(coarse[q])) continue;
      const Vec3 d = {centroid_[q][0] - m[0], centroid_[q][1] - m[1], centroid_[q][2] - m[2]};
      const double d2 = d[0] * d[0] + d[1] * d[1] + d[2] * d[2];
      if (!(d2 > 0.0)) continue;
      const double w = 1.0 / d2, dc = coarse[q] - coarse[p];
      for (int a = 0; a < 3; ++a) {
        r[a] += w * d[a] * dc;
        for (int b = 0; b < 3; ++b) A[a][b] += w * d[a] * d[b];
      }
    }
    const double ridge = 1e-12 * (A[0][0] + A[1][1] + A[2][2]) + 1e-300;
    for (int a = 0; a < 3; ++a) A[a][a] += ridge;
    // Gaussian elimination with partial pivoting on the 3 x 3 system.
    double g[3] = {0.0, 0.0, 0.0};
    if (std::isfinite(coarse[p])) {
      int piv[3] = {0, 1, 2};
      for (int col = 0; col < 3; ++col) {
        int best = col;
        for (int row = col + 1; row < 3; ++row)
          if (std::abs(A[piv[row]][col]) > std::abs(A[piv[best]][col])) best = row;
        std::swap(piv[col], piv[best]);
        for (int row = col + 1; row < 3; ++row) {
          const double f = A[piv[row]][col] / A[piv[col]][col];
          for (int b = col; b < 3; ++b) A[piv[row]][b] -= f * A[piv[col]][b];
          r[piv[row]] -= f * r[piv[col]];
        }
      }
      for (int col = 2; col >= 0; --col) {
        double v = r[piv[col]];
        for (int b = col + 1; b < 3; ++b) v -= A[piv[col]][b] * g[b];
        g[col] = v / A[piv[col]][col];
      }
      for (double& v : g)
        if (!std::isfinite(v)) v = 0.0;
    }
    for (int j = 0; j < L.patch_size(); ++j) {
      const int64_t c = L.cells(p)[j];
      const Vec3& x = cell_xyz_[c];
      out[c] = coarse[p] + g[0] * (x[0] - m[0]) + g[1] * (x[1] - m[1]) + g[2] * (x[2] - m[2]);
    }
  }
  return out;
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
  if (interp == CellInterp::kLinear) return linear(coarse);
  if (interp == CellInterp::kIdwLinear) {
    out = interpolate(coarse, CellInterp::kIdw);
    const std::vector<double> lin = linear(coarse);
    for (std::size_t i = 0; i < out.size(); ++i) out[i] = 0.5 * (out[i] + lin[i]);
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

}  // namespace finecast::eval
