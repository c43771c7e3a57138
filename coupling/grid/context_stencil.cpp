// SPDX-License-Identifier: BSD-3-Clause
// Ring tables and the conservative interpolant of the coarse neighbourhood (lat-lon bicubic or
// B-spline, ICON inverse-distance weighting or least-squares gradients), built once per patch map.
#include "coupling/grid/context_stencil.hpp"

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>

#include "common/bspline.hpp"
#include "common/cubic.hpp"
#include "common/least_squares.hpp"
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
void idw_table(const PatchMap& m, CoarseInterpolation& ip) {
  constexpr int kNeighbours = 6, kRings = 3;
  constexpr double kPower = 2.0;
  if (m.fine_lon.size() != static_cast<std::size_t>(m.n_fine))
    throw InternalError("prepare_patch_map: the ICON patch map holds no fine cell centres");
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

/// One axis of the B-spline stencil: for each of nb*k fine positions, `width` block indices
/// and weights, the rows of bspline_axis_matrix cut to the window of `width` blocks around the
/// position (kept inside the axis when it does not wrap) and renormalised to sum to 1. An axis
/// of fewer blocks takes them all, the slots left over with weight 0.
void bspline_axis(int64_t nb, int k, bool wrap, int width, std::vector<int64_t>& idx, std::vector<double>& w) {
  const std::vector<double> full = bspline_axis_matrix(static_cast<int>(nb), k, wrap);
  const int64_t n = nb * k;
  const int reach = (width - 4) / 2;
  idx.assign(static_cast<std::size_t>(n * width), 0);
  w.assign(static_cast<std::size_t>(n * width), 0.0);
  for (int64_t i = 0; i < n; ++i) {
    const double u = (static_cast<double>(i) - 0.5 * (k - 1)) / k;
    int64_t lo = static_cast<int64_t>(std::floor(u)) - 1 - reach;
    const int64_t taken = std::min<int64_t>(width, nb);
    if (taken < width || !wrap) lo = taken < width ? 0 : std::clamp<int64_t>(lo, 0, nb - width);
    double sum = 0.0;
    for (int64_t a = 0; a < taken; ++a) {
      const int64_t b = wrap ? wrap_index(lo + a, nb) : lo + a;
      idx[i * width + a] = b;
      w[i * width + a] = full[static_cast<std::size_t>(i * nb + b)];
      sum += w[i * width + a];
    }
    for (int64_t a = 0; a < taken; ++a) w[i * width + a] /= sum;
  }
}

/// Least-squares gradient weights (finecast-eval's linear_cons): in coarse cell p, the value at
/// fine cell x is c_p + g . (x - m_p), with m_p the area-weighted mean of its fine cells' unit
/// vectors and g fitted to c_q - c_p over its edge neighbours q, weights 1/|m_q - m_p|^2, with
/// the same tiny ridge. Linear in the coarse values: weight w_q y . d_q on neighbour q, where
/// (D^T W D + ridge) y = x - m_p, and the rest on p.
void linear_table(const PatchMap& m, CoarseInterpolation& ip) {
  if (m.fine_lon.size() != static_cast<std::size_t>(m.n_fine))
    throw InternalError("prepare_patch_map: the ICON patch map holds no fine cell centres");
  const int nn = m.n_neighbours, width = 1 + nn;
  ip.width = width;
  ip.cell.assign(static_cast<std::size_t>(m.n_fine * width), -1);
  ip.cell_w.assign(static_cast<std::size_t>(m.n_fine * width), 0.0);
  const int64_t P = m.patch_size;
  std::vector<sphere::Vec3> centroid(static_cast<std::size_t>(m.n_coarse), sphere::Vec3{0.0, 0.0, 0.0});
  for (int64_t p = 0; p < m.n_coarse; ++p)
    for (int64_t j = 0; j < P; ++j) {
      const int64_t c = m.fine_of_patch[p * P + j];
      const sphere::Vec3 x = sphere::to_xyz(m.fine_lon[c], m.fine_lat[c]);
      for (int d = 0; d < 3; ++d) centroid[p][d] += m.fine_weight[p * P + j] * x[d];
    }
  for (int64_t p = 0; p < m.n_coarse; ++p) {
    std::vector<double> A(9, 0.0), wq(static_cast<std::size_t>(nn), 0.0);
    std::vector<sphere::Vec3> d(static_cast<std::size_t>(nn), sphere::Vec3{0.0, 0.0, 0.0});
    for (int k = 0; k < nn; ++k) {
      const int64_t q = m.neighbours[p * nn + k];
      if (q < 0) continue;
      for (int a = 0; a < 3; ++a) d[k][a] = centroid[q][a] - centroid[p][a];
      const double d2 = sphere::dot(d[k], d[k]);
      if (!(d2 > 0.0)) continue;
      wq[k] = 1.0 / d2;
      for (int a = 0; a < 3; ++a)
        for (int b = 0; b < 3; ++b) A[a * 3 + b] += wq[k] * d[k][a] * d[k][b];
    }
    const double ridge = 1e-12 * (A[0] + A[4] + A[8]) + 1e-300;
    for (int a = 0; a < 3; ++a) A[a * 4] += ridge;
    // A's inverse, column by column (symmetric positive definite with the ridge).
    std::vector<double> inv(9, 0.0), col;
    bool solved = true;
    for (int a = 0; a < 3 && solved; ++a) {
      std::vector<double> e(3, 0.0);
      e[a] = 1.0;
      solved = cholesky_solve(A, e, 3, col);
      for (int b = 0; b < 3 && solved; ++b) inv[b * 3 + a] = col[b];
    }
    for (int64_t j = 0; j < P; ++j) {
      const int64_t c = m.fine_of_patch[p * P + j];
      const sphere::Vec3 x = sphere::to_xyz(m.fine_lon[c], m.fine_lat[c]);
      const double r[3] = {x[0] - centroid[p][0], x[1] - centroid[p][1], x[2] - centroid[p][2]};
      int64_t* slot = &ip.cell[c * width];
      double* w = &ip.cell_w[c * width];
      slot[0] = p;
      w[0] = 1.0;
      if (!solved) continue;  // no gradient: the cell's own value
      double y[3];
      for (int a = 0; a < 3; ++a) y[a] = inv[a * 3] * r[0] + inv[a * 3 + 1] * r[1] + inv[a * 3 + 2] * r[2];
      for (int k = 0; k < nn; ++k) {
        if (wq[k] == 0.0) continue;
        slot[1 + k] = m.neighbours[p * nn + k];
        w[1 + k] = wq[k] * (y[0] * d[k][0] + y[1] * d[k][1] + y[2] * d[k][2]);
        w[0] -= w[1 + k];
      }
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

Interpolant resolve_interpolant(Interpolant kind, bool latlon, const std::string& option, const std::string& grid) {
  if (kind == Interpolant::kAuto) return legacy_interpolant(latlon);
  const std::string mismatch = interpolant_mismatch(kind, latlon, option, grid);
  if (!mismatch.empty()) throw ConfigError(mismatch);
  return kind;
}

namespace {

/// The interpolation weights of `kind` (resolved) on the map.
CoarseInterpolation interpolation_table(const PatchMap& map, Interpolant kind) {
  CoarseInterpolation t;
  switch (kind) {
    case Interpolant::kBicubic:
      cubic_axis(map.block_rows, map.block, false, t.row, t.row_w);
      cubic_axis(map.block_cols, map.block, map.wrap_columns, t.col, t.col_w);
      t.width = 4;
      break;
    case Interpolant::kBspline: {
      const int width = 4 + 2 * kBsplineReach;
      bspline_axis(map.block_rows, map.block, false, width, t.row, t.row_w);
      bspline_axis(map.block_cols, map.block, map.wrap_columns, width, t.col, t.col_w);
      t.width = width;
      break;
    }
    case Interpolant::kIdw:
      idw_table(map, t);
      break;
    case Interpolant::kLinear:
      linear_table(map, t);
      break;
    case Interpolant::kIdwLinear: {
      // Both stencils side by side, each at half weight: a fine cell's value is the mean of its
      // IDW and linear values (the patch mean is restored after, as for each alone).
      const CoarseInterpolation idw = interpolation_table(map, Interpolant::kIdw),
                                lin = interpolation_table(map, Interpolant::kLinear);
      t.width = idw.width + lin.width;
      const auto W = static_cast<std::size_t>(t.width);
      t.cell.assign(static_cast<std::size_t>(map.n_fine) * W, -1);
      t.cell_w.assign(static_cast<std::size_t>(map.n_fine) * W, 0.0);
      for (int64_t c = 0; c < map.n_fine; ++c) {
        std::size_t slot = static_cast<std::size_t>(c) * W;
        for (const CoarseInterpolation* from : {&idw, &lin})
          for (int a = 0; a < from->width; ++a, ++slot) {
            t.cell[slot] = from->cell[c * from->width + a];
            t.cell_w[slot] = 0.5 * from->cell_w[c * from->width + a];
          }
      }
      break;
    }
    case Interpolant::kAuto:
      throw InternalError("prepare_patch_map: unresolved interpolant");
  }
  t.kind = kind;
  return t;
}

}  // namespace

void prepare_patch_map(PatchMap& map, int rings, bool interpolant, Interpolant kind, Interpolant global_kind) {
  if (rings > 0 && (map.rings != rings || map.ring_cells.empty())) {
    if (is_latlon(map) && (map.block_rows <= 0 || map.block_cols <= 0))
      throw InternalError("prepare_patch_map: the lat-lon patch map has no block grid");
    build_rings(map, rings);
  }
  if (!interpolant) return;
  kind = resolve_interpolant(kind, is_latlon(map));
  if (map.base.width == 0 || map.base.kind != kind) map.base = interpolation_table(map, kind);
  // patch.global_interpolant: auto or the base's own needs no table of its own.
  if (global_kind != Interpolant::kAuto)
    global_kind = resolve_interpolant(global_kind, is_latlon(map), "patch.global_interpolant");
  if (global_kind == Interpolant::kAuto || global_kind == kind)
    map.global_base = CoarseInterpolation{};
  else if (map.global_base.width == 0 || map.global_base.kind != global_kind)
    map.global_base = interpolation_table(map, global_kind);
}

void interpolate_patches(const PatchMap& m, const float* coarse, float* out, int64_t first, int64_t count) {
  interpolate_patches(m, m.base, coarse, out, first, count);
}

void interpolate_patches(const PatchMap& m, const CoarseInterpolation& table, const float* coarse, float* out,
                         int64_t first, int64_t count) {
  if (table.width == 0)
    throw InternalError("interpolate_patches: the patch map has no interpolant (prepare_patch_map)");
  if (count < 0) count = m.n_coarse - first;
  if (first < 0 || first + count > m.n_coarse)
    throw InternalError("interpolate_patches: patches " + std::to_string(first) + "+" + std::to_string(count) +
                        " outside the map's " + std::to_string(m.n_coarse));
  const int64_t P = m.patch_size;
  const int W = table.width;
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
          const int64_t brow = table.row[row * W + a];
          for (int b = 0; b < W; ++b)
            r += table.col_w[col * W + b] * value(brow * m.block_cols + table.col[col * W + b]);
          v += table.row_w[row * W + a] * r;
        }
      } else {
        for (int a = 0; a < W; ++a) {
          const int64_t q = table.cell[f * W + a];
          if (q >= 0) v += table.cell_w[f * W + a] * value(q);
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
