// SPDX-License-Identifier: BSD-3-Clause
// Conservative coarsening and patch extraction on the per-step hot path.
#include "coupling/grid/patches.hpp"

#include <cmath>
#include <cstring>
#include <numeric>
#include <string>

#include "common/error.hpp"
#include "coupling/grid/context_stencil.hpp"
#include "coupling/grid/patch_regression.hpp"

namespace finecast::coupling {
namespace {

// Growing only: resize() to a smaller or equal size never reallocates a std::vector.
template <class T>
void fit(std::vector<T>& v, size_t n) {
  if (v.size() != n) v.resize(n);
}

}  // namespace

int context_size(const PatchMap& map, int n_vars, const PatchOptions& options) {
  return static_offset(map, n_vars, options) + options.n_static * (1 + 2 * map.patch_size);
}

void position_features(const PatchMap& map, int64_t c, float* out) {
  const double lat = map.coarse_lat[c], lon = map.coarse_lon[c];
  const double cl = std::cos(lat);
  out[0] = static_cast<float>(std::sin(lat));
  out[1] = static_cast<float>(cl * std::cos(lon));
  out[2] = static_cast<float>(cl * std::sin(lon));
}

int static_channels(const PatchOptions& options) { return 2 * options.n_static; }

int static_offset(const PatchMap& map, int n_vars, const PatchOptions& options) {
  return n_vars * (1 + ring_count(map, options.rings)) + (options.static_features ? 3 : 0) +
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
    if (fields[v] == nullptr) throw InternalError("extract_patches: field " + std::to_string(v) + " is null");
  if (options.orography && orography == nullptr)
    throw InternalError("extract_patches: options.orography is set but no orography field given");
  if (options.target < 0 || options.target >= static_cast<int>(fields.size()))
    throw InternalError("extract_patches: target " + std::to_string(options.target) + " of " +
                        std::to_string(fields.size()) + " fields");
  const int n_vars = static_cast<int>(fields.size());
  const int64_t n = map.n_coarse;
  const int P = map.patch_size;
  out.n = n;
  out.C = context_size(map, n_vars, options);
  out.P = P;
  fit(out.fine, static_cast<size_t>(n * P));
  fit(out.coarse, static_cast<size_t>(n));
  fit(out.weights, static_cast<size_t>(n * P));
  if (map.patch_area.empty())
    out.area.assign(static_cast<size_t>(n), 1.0);
  else
    out.area.assign(map.patch_area.begin(), map.patch_area.begin() + n);
  fit(out.valid, static_cast<size_t>(n));
  fit(out.coarse_vars, static_cast<size_t>(n_vars * n));
  fit(out.coarse_orography, options.orography ? static_cast<size_t>(n) : 0);

  // A non-finite fine value makes the weighted sum non-finite, so one test per coarse cell
  // finds every missing value.
  float* coarse_vars = out.coarse_vars.data();
  for (int v = 0; v < n_vars; ++v) coarsen(map, fields[v], coarse_vars + v * n);
  if (options.orography) coarsen(map, orography, out.coarse_orography.data());
  const int64_t* idx = map.fine_of_patch.data();
  const float* target = fields[options.target];
  const float* target_coarse = coarse_vars + options.target * n;
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
    out.coarse[c] = target_coarse[c];
  }
  out.n_invalid = invalid;
}

void fill_contexts(const PatchMap& global, int64_t first, const PatchMap& local, const float* all_coarse_vars,
                   int n_vars, const float* all_static_means, const std::vector<const float*>& statics,
                   const PatchOptions& options, Patches& out) {
  const int64_t n = local.n_coarse, N = global.n_coarse;
  const int P = local.patch_size;
  if (first < 0 || first + n > N)
    throw InternalError("fill_contexts: patches " + std::to_string(first) + "+" + std::to_string(n) + " of " +
                        std::to_string(N));
  if (static_cast<int>(statics.size()) != options.n_static)
    throw InternalError("extract_patches: " + std::to_string(statics.size()) + " static covariates given, " +
                        std::to_string(options.n_static) + " expected");
  for (const float* f : statics)
    if (f == nullptr) throw InternalError("extract_patches: a static covariate is null");
  if (options.rings > 0 && global.rings != options.rings)
    throw InternalError("extract_patches: the patch map was not prepared for context_rings " +
                        std::to_string(options.rings) + " (prepare_patch_map)");
  if ((options.interp_base || options.n_static > 0) && global.base.width == 0)
    throw InternalError("extract_patches: the patch map was not prepared with the interpolant (prepare_patch_map)");
  const int nr = ring_count(global, options.rings);
  const int64_t* ring = options.rings > 0 ? global.ring_cells.data() : global.neighbours.data();
  const int C = context_size(global, n_vars, options);
  fit(out.context, static_cast<size_t>(n * C));
  // The conservative interpolant of each covariate's block means on these patches: again only
  // when the means (compared bit for bit) or the patches differ from the last call's, as they do
  // not in a run (static covariates). It was 35-40% of the plugin's work per coupling step.
  const auto n_means = static_cast<size_t>(options.n_static * N);
  const bool same =
      out.static_interp.size() == static_cast<size_t>(options.n_static * n * P) && out.static_interp_map == &global &&
      out.static_interp_first == first && out.static_interp_of.size() == n_means &&
      (n_means == 0 || std::memcmp(out.static_interp_of.data(), all_static_means, n_means * sizeof(float)) == 0);
  if (!same) {
    fit(out.static_interp, static_cast<size_t>(options.n_static * n * P));
    for (int s = 0; s < options.n_static; ++s)
      interpolate_patches(global, all_static_means + s * N, out.static_interp.data() + s * n * P, first, n);
    out.static_interp_of.assign(all_static_means, all_static_means + n_means);
    out.static_interp_map = &global;
    out.static_interp_first = first;
  }
  const int64_t* idx = local.fine_of_patch.data();
  auto invalidate = [&](int64_t c) {
    if (out.valid[c]) {
      out.valid[c] = 0;
      ++out.n_invalid;
    }
  };
  for (int64_t c = 0; c < n; ++c) {
    const int64_t g = first + c;
    float* ctx = out.context.data() + c * C;
    for (int v = 0; v < n_vars; ++v) {
      const float* cv = all_coarse_vars + v * N;
      const float own = cv[g];
      const float level = options.relative ? own : 0.0f;
      *ctx++ = own - level;
      for (int k = 0; k < nr; ++k) {
        const int64_t b = ring[g * nr + k];
        *ctx++ = ((b >= 0 && std::isfinite(cv[b])) ? cv[b] : own) - level;
      }
    }
    if (options.static_features) {
      position_features(global, g, ctx);
      ctx += 3;
    }
    if (options.orography) *ctx++ = out.coarse_orography[c];
    // Static covariates: the block means first, then each covariate's anomalies and deviations.
    const int64_t base = c * P;
    float* fine_fields = ctx + options.n_static;
    for (int s = 0; s < options.n_static; ++s) {
      const float* x = statics[s];
      const float m = all_static_means[s * N + g];
      if (!std::isfinite(m)) invalidate(c);
      *ctx++ = m;
      for (int k = 0; k < P; ++k) *fine_fields++ = static_cast<float>(x[idx[base + k]] - static_cast<double>(m));
      const float* interp = out.static_interp.data() + (s * n + c) * P;
      for (int k = 0; k < P; ++k) *fine_fields++ = x[idx[base + k]] - interp[k];
    }
  }
  if (options.interp_base) {
    fit(out.base, static_cast<size_t>(n * P));
    fit(out.residual, static_cast<size_t>(n * P));
    interpolate_patches(global, all_coarse_vars + options.target * N, out.base.data(), first, n);
    for (int64_t i = 0; i < n * P; ++i) out.residual[i] = out.fine[i] - out.base[i];
    if (global.global_base.width != 0) {
      fit(out.global_interp, static_cast<size_t>(n * P));
      interpolate_patches(global, global.global_base, all_coarse_vars + options.target * N, out.global_interp.data(),
                          first, n);
    } else {
      out.global_interp.clear();
    }
    if (options.local_slopes.enabled() && options.n_static > 0)
      local_slopes(global.neighbours.data(), global.n_neighbours, N, all_coarse_vars + options.target * N,
                   all_static_means, options.n_static, options.local_slopes, first, n, out.local_slopes);
    else
      out.local_slopes.clear();
    if (!options.regression.empty()) add_regression_base(global, n_vars, options, out);
  } else {
    out.base.clear();
    out.residual.clear();
    out.global_interp.clear();
  }
}

void extract_patches(const PatchMap& map, const std::vector<const float*>& fields, const float* orography,
                     const std::vector<const float*>& statics, const PatchOptions& options, Patches& out) {
  coarsen_patches(map, fields, orography, options, out);
  fit(out.static_means, static_cast<size_t>(options.n_static * map.n_coarse));
  for (size_t s = 0; s < statics.size() && static_cast<int>(s) < options.n_static; ++s)
    coarsen(map, statics[s], out.static_means.data() + s * map.n_coarse);
  fill_contexts(map, 0, map, out.coarse_vars.data(), static_cast<int>(fields.size()), out.static_means.data(), statics,
                options, out);
}

void extract_patches(const PatchMap& map, const std::vector<const float*>& fields, const float* orography,
                     const PatchOptions& options, Patches& out) {
  extract_patches(map, fields, orography, {}, options, out);
}

const float* sampler_coarse(Patches& p) {
  if (p.base.empty()) return p.coarse.data();
  p.zeros.assign(static_cast<size_t>(p.n), 0.0f);
  return p.zeros.data();
}

void add_patch_base(const Patches& p, int64_t members, float* samples) {
  if (p.base.empty()) return;
  const int64_t P = p.P;
  for (int64_t c = 0; c < p.n; ++c)
    for (int64_t m = 0; m < members; ++m) {
      float* x = samples + (c * members + m) * P;
      const float* b = p.base.data() + c * P;
      for (int64_t k = 0; k < P; ++k) x[k] += b[k];
    }
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
  if (!global.patch_area.empty())
    m.patch_area.assign(global.patch_area.begin() + first, global.patch_area.begin() + first + count);
  m.neighbours.assign(global.neighbours.begin() + first * nn, global.neighbours.begin() + (first + count) * nn);
  m.coarse_lon.assign(global.coarse_lon.begin() + first, global.coarse_lon.begin() + first + count);
  m.coarse_lat.assign(global.coarse_lat.begin() + first, global.coarse_lat.begin() + first + count);
  return m;
}

}  // namespace finecast::coupling
