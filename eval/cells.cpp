// SPDX-License-Identifier: BSD-3-Clause
// Patch arithmetic on unstructured grids shared by the ICON baselines and metrics.
#include "eval/cells.hpp"

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>

#include "common/error.hpp"

namespace finecast::eval {

namespace {

[[noreturn]] void bad(const std::string& what) { throw ConfigError("unstructured patch layout: " + what); }

/// Area-weighted means of `field` over the groups of `group` (n_groups values).
std::vector<double> group_means(const CellLayout& L, const std::vector<int64_t>& group, int64_t n_groups,
                                const double* field) {
  std::vector<double> sw(static_cast<std::size_t>(n_groups), 0.0), swx(sw);
  for (int64_t i = 0; i < L.size(); ++i) {
    sw[group[i]] += L.w(i);
    swx[group[i]] += L.w(i) * field[i];
  }
  for (std::size_t g = 0; g < sw.size(); ++g) swx[g] /= sw[g];
  return swx;
}

}  // namespace

CellLayout::CellLayout(CellLayoutSpec spec) : spec_(std::move(spec)) {
  const CellLayoutSpec& s = spec_;
  if (s.n_cells < 1) bad("no fine cells");
  if (s.patch_size < 1) bad("patch size " + std::to_string(s.patch_size) + " < 1");
  if (s.cell_of_patch.empty() || s.cell_of_patch.size() % s.patch_size != 0)
    bad(std::to_string(s.cell_of_patch.size()) + " patch entries are not whole patches of " +
        std::to_string(s.patch_size));
  n_patches_ = static_cast<int64_t>(s.cell_of_patch.size()) / s.patch_size;
  const auto n = static_cast<std::size_t>(s.n_cells);
  const auto np = static_cast<std::size_t>(n_patches_);
  if (s.area.size() != n || s.lon.size() != n || s.lat.size() != n)
    bad("area, lon and lat need " + std::to_string(n) + " values each, got " + std::to_string(s.area.size()) + ", " +
        std::to_string(s.lon.size()) + ", " + std::to_string(s.lat.size()));
  if (s.patch_lon.size() != np || s.patch_lat.size() != np)
    bad("patch centres: expected " + std::to_string(np) + " values");
  if (s.patch_neighbours.size() != np * static_cast<std::size_t>(s.n_neighbours))
    bad("patch neighbours: expected " + std::to_string(np * s.n_neighbours) + " values, got " +
        std::to_string(s.patch_neighbours.size()));
  for (int64_t nb : s.patch_neighbours)
    if (nb < -1 || nb >= n_patches_) bad("patch neighbour " + std::to_string(nb) + " out of range");
  for (double a : s.area)
    if (!(a > 0.0) || !std::isfinite(a)) bad("cell areas must be positive and finite (got " + std::to_string(a) + ")");

  patch_of_.assign(n, -1);
  for (int64_t p = 0; p < n_patches_; ++p)
    for (int k = 0; k < s.patch_size; ++k) {
      const int64_t c = s.cell_of_patch[static_cast<std::size_t>(p * s.patch_size + k)];
      if (c < 0 || c >= s.n_cells) bad("fine cell index " + std::to_string(c) + " out of range");
      if (patch_of_[c] >= 0)
        bad("fine cell " + std::to_string(c) + " lies in patches " + std::to_string(patch_of_[c]) + " and " +
            std::to_string(p));
      patch_of_[c] = p;
    }
  if (n_patches_ * s.patch_size != s.n_cells)
    bad(std::to_string(s.n_cells - n_patches_ * s.patch_size) + " fine cells lie in no patch");

  // Every level nests in the one above it: all fine cells of one of its cells share the cell
  // above (the patch for the coarsest level).
  band_cells_ = {n_patches_};
  const std::vector<int64_t>* above = &patch_of_;
  for (std::size_t j = 0; j < s.levels.size(); ++j) {
    const std::vector<int64_t>& g = s.levels[j];
    if (g.size() != n) bad("level " + std::to_string(j) + " needs " + std::to_string(n) + " values");
    int64_t n_groups = 0;
    for (int64_t v : g) {
      if (v < 0 || v >= s.n_cells) bad("level " + std::to_string(j) + ": index out of range");
      n_groups = std::max(n_groups, v + 1);
    }
    std::vector<int64_t> parent(static_cast<std::size_t>(n_groups), -1), count(parent.size(), 0);
    for (std::size_t i = 0; i < n; ++i) {
      int64_t& p = parent[g[i]];
      if (p >= 0 && p != (*above)[i])
        bad("level " + std::to_string(j) + " does not nest in the level above it (cell " + std::to_string(g[i]) + ")");
      p = (*above)[i];
      ++count[g[i]];
    }
    for (int64_t c : count)
      if (c == 0) bad("level " + std::to_string(j) + " has empty cells");
    band_cells_.push_back(n_groups);
    above = &g;
  }
  band_cells_.push_back(s.n_cells);
}

std::vector<double> patch_means(const CellLayout& L, const double* field) {
  std::vector<double> out(static_cast<std::size_t>(L.n_patches()));
  for (int64_t p = 0; p < L.n_patches(); ++p) {
    const int64_t* c = L.cells(p);
    double sw = 0.0, swx = 0.0;
    for (int k = 0; k < L.patch_size(); ++k) {
      sw += L.w(c[k]);
      swx += L.w(c[k]) * field[c[k]];
    }
    out[p] = swx / sw;
  }
  return out;
}

std::vector<double> patch_residual(const CellLayout& L, const double* field) {
  const std::vector<double> mean = patch_means(L, field);
  std::vector<double> out(static_cast<std::size_t>(L.size()));
  for (int64_t i = 0; i < L.size(); ++i) out[i] = field[i] - mean[L.patch_of(i)];
  return out;
}

std::vector<double> patch_std(const CellLayout& L, const double* field) {
  const std::vector<double> mean = patch_means(L, field);
  std::vector<double> out(static_cast<std::size_t>(L.n_patches()));
  for (int64_t p = 0; p < L.n_patches(); ++p) {
    const int64_t* c = L.cells(p);
    double sw = 0.0, swd = 0.0;
    for (int k = 0; k < L.patch_size(); ++k) {
      const double d = field[c[k]] - mean[p];
      sw += L.w(c[k]);
      swd += L.w(c[k]) * d * d;
    }
    out[p] = std::sqrt(swd / sw);
  }
  return out;
}

std::vector<std::vector<double>> hierarchy_bands(const CellLayout& L, const double* field) {
  const int B = L.n_bands();
  std::vector<std::vector<double>> bands(static_cast<std::size_t>(B));
  // m_{b-1} for every fine cell, starting with the patch means.
  const std::vector<double> pm = patch_means(L, field);
  std::vector<double> prev(static_cast<std::size_t>(L.size()));
  for (int64_t i = 0; i < L.size(); ++i) prev[i] = pm[L.patch_of(i)];
  for (int b = 1; b <= B; ++b) {
    std::vector<double> cur(prev.size());
    if (b < B) {
      const std::vector<int64_t>& g = L.spec().levels[b - 1];
      const std::vector<double> m = group_means(L, g, L.cells_at_band(b), field);
      for (int64_t i = 0; i < L.size(); ++i) cur[i] = m[g[i]];
    } else {
      cur.assign(field, field + L.size());
    }
    std::vector<double>& d = bands[b - 1];
    d.resize(prev.size());
    for (int64_t i = 0; i < L.size(); ++i) d[i] = cur[i] - prev[i];
    prev.swap(cur);
  }
  return bands;
}

RadialSpectrum hierarchy_spectrum(const CellLayout& L, const double* field) {
  const int B = L.n_bands();
  RadialSpectrum s;
  s.n = B;
  s.wavenumber.resize(B);
  s.energy.assign(B, 0.0);
  s.modes.resize(B);
  double total_w = 0.0;
  for (int64_t i = 0; i < L.size(); ++i) total_w += L.w(i);
  const std::vector<std::vector<double>> bands = hierarchy_bands(L, field);
  for (int b = 1; b <= B; ++b) {
    double e = 0.0;
    for (int64_t i = 0; i < L.size(); ++i) e += L.w(i) * bands[b - 1][i] * bands[b - 1][i];
    s.energy[b - 1] = e / total_w;
    s.wavenumber[b - 1] = 0.5 / std::ldexp(1.0, B - b);
    s.modes[b - 1] = L.cells_at_band(b) - L.cells_at_band(b - 1);
  }
  return s;
}

}  // namespace finecast::eval
