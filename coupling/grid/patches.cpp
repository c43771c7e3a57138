// SPDX-License-Identifier: BSD-3-Clause
// Conservative coarsening and patch extraction on the per-step hot path.
#include "coupling/grid/patches.hpp"

#include <cmath>
#include <numeric>
#include <string>

#include "common/error.hpp"

namespace finecast::coupling {
namespace {

// Growing only: resize() to a smaller or equal size never reallocates a std::vector.
template <class T>
void fit(std::vector<T>& v, size_t n) {
  if (v.size() != n) v.resize(n);
}

}  // namespace

int context_size(const PatchMap& map, int n_vars, const PatchOptions& options) {
  return n_vars * (1 + map.n_neighbours) + (options.static_features ? 3 : 0) +
         (options.orography ? 1 : 0);
}

void coarsen(const PatchMap& map, const float* field, float* out) {
  const int64_t P = map.patch_size;
  const int64_t* idx = map.fine_of_patch.data();
  const double* w = map.fine_weight.data();
  for (int64_t c = 0; c < map.n_coarse; ++c) {
    double s = 0.0;  // double: 256 float terms would lose the last bits of a conservative mean
    const int64_t base = c * P;
    for (int64_t k = 0; k < P; ++k) s += w[base + k] * field[idx[base + k]];
    out[c] = static_cast<float>(s);
  }
}

void scatter_patches(const PatchMap& map, const float* patch_values, float* field) {
  const int64_t total = map.n_coarse * map.patch_size;
  const int64_t* idx = map.fine_of_patch.data();
  for (int64_t i = 0; i < total; ++i) field[idx[i]] = patch_values[i];
}

void coarsen_patches(const PatchMap& map, const std::vector<const float*>& fields, const float* orography,
                     const PatchOptions& options, Patches& out) {
  if (fields.empty()) throw InternalError("extract_patches: no fields given");
  for (size_t v = 0; v < fields.size(); ++v)
    if (fields[v] == nullptr)
      throw InternalError("extract_patches: field " + std::to_string(v) + " is null");
  if (options.orography && orography == nullptr)
    throw InternalError("extract_patches: options.orography is set but no orography field given");
  const int n_vars = static_cast<int>(fields.size());
  const int64_t n = map.n_coarse;
  const int P = map.patch_size;
  out.n = n;
  out.C = context_size(map, n_vars, options);
  out.P = P;
  fit(out.fine, static_cast<size_t>(n * P));
  fit(out.coarse, static_cast<size_t>(n));
  fit(out.weights, static_cast<size_t>(n * P));
  fit(out.valid, static_cast<size_t>(n));
  fit(out.coarse_vars, static_cast<size_t>(n_vars * n));
  fit(out.coarse_orography, options.orography ? static_cast<size_t>(n) : 0);

  // A non-finite fine value makes the weighted sum non-finite, so one test per coarse cell
  // finds every missing value.
  float* coarse_vars = out.coarse_vars.data();
  for (int v = 0; v < n_vars; ++v) coarsen(map, fields[v], coarse_vars + v * n);
  if (options.orography) coarsen(map, orography, out.coarse_orography.data());
  const int64_t* idx = map.fine_of_patch.data();
  const float* target = fields[0];
  for (int64_t i = 0; i < n * P; ++i) {
    out.fine[i] = target[idx[i]];
    out.weights[i] = static_cast<float>(map.fine_weight[i]);
  }
  int64_t invalid = 0;
  for (int64_t c = 0; c < n; ++c) {
    bool ok = true;
    for (int v = 0; v < n_vars; ++v) ok = ok && std::isfinite(coarse_vars[v * n + c]);
    if (options.orography) ok = ok && std::isfinite(out.coarse_orography[c]);
    out.valid[c] = ok ? 1 : 0;
    invalid += ok ? 0 : 1;
    out.coarse[c] = coarse_vars[c];
  }
  out.n_invalid = invalid;
}

void fill_contexts(const PatchMap& map, int64_t first, const float* all_coarse_vars, int64_t n_all, int n_vars,
                   const PatchOptions& options, Patches& out) {
  const int64_t n = map.n_coarse;
  const int nn = map.n_neighbours;
  const int C = context_size(map, n_vars, options);
  fit(out.context, static_cast<size_t>(n * C));
  const int64_t* nbr = map.neighbours.data();
  for (int64_t c = 0; c < n; ++c) {
    float* ctx = out.context.data() + c * C;
    for (int v = 0; v < n_vars; ++v) {
      const float* cv = all_coarse_vars + v * n_all;
      const float own = cv[first + c];
      *ctx++ = own;
      for (int k = 0; k < nn; ++k) {
        const int64_t b = nbr[c * nn + k];
        *ctx++ = (b >= 0 && std::isfinite(cv[b])) ? cv[b] : own;
      }
    }
    if (options.static_features) {
      const double lat = map.coarse_lat[c], lon = map.coarse_lon[c];
      const double cl = std::cos(lat);
      *ctx++ = static_cast<float>(std::sin(lat));
      *ctx++ = static_cast<float>(cl * std::cos(lon));
      *ctx++ = static_cast<float>(cl * std::sin(lon));
    }
    if (options.orography) *ctx++ = out.coarse_orography[c];
  }
}

void extract_patches(const PatchMap& map, const std::vector<const float*>& fields, const float* orography,
                     const PatchOptions& options, Patches& out) {
  coarsen_patches(map, fields, orography, options, out);
  fill_contexts(map, 0, out.coarse_vars.data(), map.n_coarse, static_cast<int>(fields.size()), options, out);
}

PatchMap shard_map(const PatchMap& global, int64_t first, int64_t count) {
  if (first < 0 || count < 0 || first + count > global.n_coarse)
    throw InternalError("shard_map: patches " + std::to_string(first) + "+" + std::to_string(count) + " outside 0.." +
                        std::to_string(global.n_coarse));
  const int64_t P = global.patch_size, nn = global.n_neighbours;
  PatchMap m;
  m.kind = global.kind;
  m.n_fine = count * P;
  m.n_coarse = count;
  m.patch_size = global.patch_size;
  m.n_neighbours = global.n_neighbours;
  m.fine_of_patch.resize(static_cast<size_t>(count * P));
  std::iota(m.fine_of_patch.begin(), m.fine_of_patch.end(), int64_t{0});
  m.fine_weight.assign(global.fine_weight.begin() + first * P, global.fine_weight.begin() + (first + count) * P);
  m.neighbours.assign(global.neighbours.begin() + first * nn, global.neighbours.begin() + (first + count) * nn);
  m.coarse_lon.assign(global.coarse_lon.begin() + first, global.coarse_lon.begin() + first + count);
  m.coarse_lat.assign(global.coarse_lat.begin() + first, global.coarse_lat.begin() + first + count);
  return m;
}

}  // namespace finecast::coupling
