// SPDX-License-Identifier: BSD-3-Clause
// Ring tables and the conservative interpolant of the coarse neighbourhood (lat-lon bicubic,
// ICON inverse-distance weighting), built once per patch map.
#include "coupling/grid/context_stencil.hpp"

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>

#include "common/cubic.hpp"
#include "common/error.hpp"
#include "coupling/grid/spherical.hpp"

namespace finecast::coupling {
namespace {

bool is_latlon(const PatchMap& m) { return m.kind == PatchMap::Kind::kLatLonBlocks; }

int64_t clamp_index(int64_t i, int64_t n) { return i < 0 ? 0 : (i >= n ? n - 1 : i); }
int64_t wrap_index(int64_t i, int64_t n) { return ((i % n) + n) % n; }

void build_rings(PatchMap& m, int rings) {
  const int n = ring_count(m, rings);
  m.ring_cells.assign(static_cast<std::size_t>(m.n_coarse * n), -1);
  if (is_latlon(m)) {
    for (int64_t I = 0; I < m.block_rows; ++I)
      for (int64_t J = 0; J < m.block_cols; ++J) {
        int64_t* out = &m.ring_cells[(I * m.block_cols + J) * n];
        for (int di = -rings; di <= rings; ++di)
          for (int dj = -rings; dj <= rings; ++dj) {
            if (di == 0 && dj == 0) continue;
            const int64_t r = clamp_index(I + di, m.block_rows);
            const int64_t c = m.wrap_columns ? wrap_index(J + dj, m.block_cols) : clamp_index(J + dj, m.block_cols);
            *out++ = r * m.block_cols + c;
          }
      }
  } else {
    std::vector<int64_t> cells, seen(static_cast<std::size_t>(m.n_coarse), -1);
    for (int64_t p = 0; p < m.n_coarse; ++p) {
      cells_within(m.neighbours.data(), m.n_neighbours, p, rings, cells, seen);
      if (static_cast<int>(cells.size()) - 1 > n)
        throw GridError("ICON patch map: " + std::to_string(cells.size() - 1) + " coarse cells lie within " +
                        std::to_string(rings) + " edge steps of coarse cell " + std::to_string(p) + ", more than the " +
                        std::to_string(n) + " of a triangular lattice (not an icosahedral grid?)");
      std::copy(cells.begin() + 1, cells.end(), &m.ring_cells[p * n]);
    }
  }
  m.rings = rings;
  m.ring_count = n;
}

/// One axis of the bicubic stencil: for each of nb*k fine positions, 4 block indices and weights.
void cubic_axis(int64_t nb, int k, bool wrap, std::vector<int64_t>& idx, std::vector<double>& w) {
  const int64_t n = nb * k;
  idx.resize(static_cast<std::size_t>(n * 4));
  w.resize(static_cast<std::size_t>(n * 4));
  for (int64_t i = 0; i < n; ++i) {
    // Block b's centre sits at fine position b k + (k - 1) / 2 (finecast-eval's convention).
    const double u = (static_cast<double>(i) - 0.5 * (k - 1)) / k;
    const auto b0 = static_cast<int64_t>(std::floor(u));
    const auto wt = keys_cubic_weights(u - static_cast<double>(b0));
    for (int a = 0; a < 4; ++a) {
      const int64_t b = b0 - 1 + a;
      idx[i * 4 + a] = wrap ? wrap_index(b, nb) : clamp_index(b, nb);
      w[i * 4 + a] = wt[a];
    }
  }
}

/// Great-circle angle between unit vectors (the form finecast-eval's IDW uses).
double angle(const sphere::Vec3& a, const sphere::Vec3& b) {
  const sphere::Vec3 c = sphere::cross(a, b);
  return std::atan2(std::sqrt(sphere::dot(c, c)), sphere::dot(a, b));
}

/// Inverse-distance weights of the 6 nearest coarse centres (among those within 3 edge steps),
/// 1/d^2: finecast-eval's idw with its defaults.
void idw_table(PatchMap& m) {
  constexpr int kNeighbours = 6, kRings = 3;
  constexpr double kPower = 2.0;
  if (m.fine_lon.size() != static_cast<std::size_t>(m.n_fine))
    throw InternalError("prepare_patch_map: the ICON patch map holds no fine cell centres");
  CoarseInterpolation& ip = m.base;
  ip.width = kNeighbours;
  ip.cell.assign(static_cast<std::size_t>(m.n_fine * kNeighbours), -1);
  ip.cell_w.assign(static_cast<std::size_t>(m.n_fine * kNeighbours), 0.0);
  std::vector<sphere::Vec3> centre(static_cast<std::size_t>(m.n_coarse));
  for (int64_t q = 0; q < m.n_coarse; ++q) centre[q] = sphere::to_xyz(m.coarse_lon[q], m.coarse_lat[q]);
  std::vector<int64_t> cand, seen(static_cast<std::size_t>(m.n_coarse), -1);
  std::vector<std::pair<double, int64_t>> by_distance;
  for (int64_t p = 0; p < m.n_coarse; ++p) {
    cells_within(m.neighbours.data(), m.n_neighbours, p, kRings, cand, seen);
    for (int j = 0; j < m.patch_size; ++j) {
      const int64_t c = m.fine_of_patch[p * m.patch_size + j];
      const sphere::Vec3 x = sphere::to_xyz(m.fine_lon[c], m.fine_lat[c]);
      by_distance.clear();
      for (int64_t q : cand) by_distance.push_back({angle(x, centre[q]), q});
      const std::size_t n = std::min<std::size_t>(by_distance.size(), kNeighbours);
      // Ties broken by coarse index, so the stencil does not depend on the search order.
      std::partial_sort(by_distance.begin(), by_distance.begin() + n, by_distance.end());
      int64_t* slot = &ip.cell[c * kNeighbours];
      double* w = &ip.cell_w[c * kNeighbours];
      if (by_distance.front().first < 1e-12) {
        slot[0] = by_distance.front().second;
        w[0] = 1.0;
        continue;
      }
      double sum = 0.0;
      for (std::size_t i = 0; i < n; ++i) {
        slot[i] = by_distance[i].second;
        w[i] = 1.0 / std::pow(by_distance[i].first, kPower);
        sum += w[i];
      }
      for (std::size_t i = 0; i < n; ++i) w[i] /= sum;
    }
  }
}

}  // namespace

void cells_within(const int64_t* neighbours, int n_neighbours, int64_t p, int rings, std::vector<int64_t>& out,
                  std::vector<int64_t>& seen_at) {
  out.clear();
  out.push_back(p);
  seen_at[p] = p;
  std::size_t begin = 0;
  for (int r = 0; r < rings; ++r) {
    const std::size_t end = out.size();
    for (std::size_t i = begin; i < end; ++i)
      for (int k = 0; k < n_neighbours; ++k) {
        const int64_t q = neighbours[out[i] * n_neighbours + k];
        if (q >= 0 && seen_at[q] != p) {
          seen_at[q] = p;
          out.push_back(q);
        }
      }
    begin = end;
  }
}

int ring_count(const PatchMap& map, int rings) {
  if (rings < 0) throw ConfigError("patch.context_rings must be >= 0, got " + std::to_string(rings));
  if (rings == 0) return map.n_neighbours;
  if (is_latlon(map)) return (2 * rings + 1) * (2 * rings + 1) - 1;
  return 3 * rings * (rings + 1) / 2;
}

void prepare_patch_map(PatchMap& map, int rings, bool interpolant) {
  if (rings > 0 && (map.rings != rings || map.ring_cells.empty())) {
    if (is_latlon(map) && (map.block_rows <= 0 || map.block_cols <= 0))
      throw InternalError("prepare_patch_map: the lat-lon patch map has no block grid");
    build_rings(map, rings);
  }
  if (interpolant && map.base.width == 0) {
    if (is_latlon(map)) {
      cubic_axis(map.block_rows, map.block, false, map.base.row, map.base.row_w);
      cubic_axis(map.block_cols, map.block, map.wrap_columns, map.base.col, map.base.col_w);
      map.base.width = 4;
    } else {
      idw_table(map);
    }
  }
}

void interpolate_patches(const PatchMap& m, const float* coarse, float* out, int64_t first, int64_t count) {
  if (m.base.width == 0)
    throw InternalError("interpolate_patches: the patch map has no interpolant (prepare_patch_map)");
  if (count < 0) count = m.n_coarse - first;
  if (first < 0 || first + count > m.n_coarse)
    throw InternalError("interpolate_patches: patches " + std::to_string(first) + "+" + std::to_string(count) +
                        " outside the map's " + std::to_string(m.n_coarse));
  const int64_t P = m.patch_size;
  const int W = m.base.width;
  std::vector<double> v_of(static_cast<std::size_t>(P));
  for (int64_t p = first; p < first + count; ++p) {
    const double own = coarse[p];
    auto value = [&](int64_t q) {
      const double v = coarse[q];
      return std::isfinite(v) ? v : own;
    };
    double mean = 0.0;
    for (int64_t k = 0; k < P; ++k) {
      const int64_t f = m.fine_of_patch[p * P + k];
      double v = 0.0;
      if (is_latlon(m)) {
        // The fine row and column within the kept blocks (trailing ones are cropped).
        const int64_t row = f / m.grid_columns, col = f % m.grid_columns;
        for (int a = 0; a < W; ++a) {
          double r = 0.0;
          const int64_t brow = m.base.row[row * W + a];
          for (int b = 0; b < W; ++b)
            r += m.base.col_w[col * W + b] * value(brow * m.block_cols + m.base.col[col * W + b]);
          v += m.base.row_w[row * W + a] * r;
        }
      } else {
        for (int a = 0; a < W; ++a) {
          const int64_t q = m.base.cell[f * W + a];
          if (q >= 0) v += m.base.cell_w[f * W + a] * value(q);
        }
      }
      v_of[k] = v;
      mean += m.fine_weight[p * P + k] * v;
    }
    // Conservative: the patch's area-weighted mean is its coarse value.
    for (int64_t k = 0; k < P; ++k) out[(p - first) * P + k] = static_cast<float>(v_of[k] + (own - mean));
  }
}

}  // namespace finecast::coupling
