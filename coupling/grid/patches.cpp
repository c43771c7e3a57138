// SPDX-License-Identifier: BSD-3-Clause
// Conservative coarsening and patch extraction on the per-step hot path.
#include "coupling/grid/patches.hpp"

#include <cmath>
#include <string>

#include "common/error.hpp"
#include "coupling/grid/context_stencil.hpp"

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

void extract_patches(const PatchMap& map, const std::vector<const float*>& fields,
                     const float* orography, const PatchOptions& options, Patches& out) {
  extract_patches(map, fields, orography, {}, options, out);
}

void extract_patches(const PatchMap& map, const std::vector<const float*>& fields,
                     const float* orography, const std::vector<const float*>& statics,
                     const PatchOptions& options, Patches& out) {
  if (fields.empty()) throw InternalError("extract_patches: no fields given");
  for (size_t v = 0; v < fields.size(); ++v)
    if (fields[v] == nullptr)
      throw InternalError("extract_patches: field " + std::to_string(v) + " is null");
  if (options.orography && orography == nullptr)
    throw InternalError("extract_patches: options.orography is set but no orography field given");
  if (options.target < 0 || options.target >= static_cast<int>(fields.size()))
    throw InternalError("extract_patches: target " + std::to_string(options.target) + " of " +
                        std::to_string(fields.size()) + " fields");
  if (static_cast<int>(statics.size()) != options.n_static)
    throw InternalError("extract_patches: " + std::to_string(statics.size()) + " static covariates given, " +
                        std::to_string(options.n_static) + " expected");
  for (const float* f : statics)
    if (f == nullptr) throw InternalError("extract_patches: a static covariate is null");
  if (options.rings > 0 && map.rings != options.rings)
    throw InternalError("extract_patches: the patch map was not prepared for context_rings " +
                        std::to_string(options.rings) + " (prepare_patch_map)");
  if ((options.interp_base || options.n_static > 0) && map.base.width == 0)
    throw InternalError(
        "extract_patches: the patch map was not prepared with the interpolant (prepare_patch_map)");
  const int n_vars = static_cast<int>(fields.size());
  const int64_t n = map.n_coarse;
  const int P = map.patch_size;
  const int nr = ring_count(map, options.rings);
  const int64_t* ring = options.rings > 0 ? map.ring_cells.data() : map.neighbours.data();
  // The static covariates' block means and the conservative interpolant of them.
  fit(out.static_means, static_cast<size_t>(options.n_static * map.n_coarse));
  fit(out.static_interp, static_cast<size_t>(options.n_static * map.n_coarse * map.patch_size));
  for (int s = 0; s < options.n_static; ++s) {
    coarsen(map, statics[s], out.static_means.data() + s * map.n_coarse);
    interpolate_patches(map, out.static_means.data() + s * map.n_coarse,
                        out.static_interp.data() + s * map.n_coarse * map.patch_size);
  }
  const int C = context_size(map, n_vars, options);
  out.n = n;
  out.C = C;
  out.P = P;
  fit(out.context, static_cast<size_t>(n * C));
  fit(out.fine, static_cast<size_t>(n * P));
  fit(out.coarse, static_cast<size_t>(n));
  fit(out.weights, static_cast<size_t>(n * P));
  fit(out.valid, static_cast<size_t>(n));
  fit(out.coarse_vars, static_cast<size_t>(n_vars * n));

  // A non-finite fine value makes the weighted sum non-finite, so one test per coarse cell
  // finds every missing value.
  float* coarse_vars = out.coarse_vars.data();
  for (int v = 0; v < n_vars; ++v) coarsen(map, fields[v], coarse_vars + v * n);
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
    out.valid[c] = ok ? 1 : 0;
    invalid += ok ? 0 : 1;
    out.coarse[c] = target_coarse[c];
  }
  auto invalidate = [&](int64_t c) {
    if (out.valid[c]) {
      out.valid[c] = 0;
      ++invalid;
    }
  };

  for (int64_t c = 0; c < n; ++c) {
    float* ctx = out.context.data() + c * C;
    for (int v = 0; v < n_vars; ++v) {
      const float* cv = coarse_vars + v * n;
      const float own = cv[c];
      *ctx++ = own;
      for (int k = 0; k < nr; ++k) {
        const int64_t b = ring[c * nr + k];
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
    const int64_t base = c * P;
    if (options.orography) {
      double s = 0.0;
      for (int k = 0; k < P; ++k) s += map.fine_weight[base + k] * orography[idx[base + k]];
      const auto coarse_oro = static_cast<float>(s);
      if (!std::isfinite(coarse_oro)) invalidate(c);
      *ctx++ = coarse_oro;
    }
    // Static covariates: the block means first, then each covariate's anomalies and deviations.
    float* fields = ctx + options.n_static;
    for (int s = 0; s < options.n_static; ++s) {
      const float* x = statics[s];
      const float m = out.static_means[s * n + c];
      if (!std::isfinite(m)) invalidate(c);
      *ctx++ = m;
      for (int k = 0; k < P; ++k)
        *fields++ = static_cast<float>(x[idx[base + k]] - static_cast<double>(m));
      const float* interp = out.static_interp.data() + (s * n + c) * P;
      for (int k = 0; k < P; ++k) *fields++ = x[idx[base + k]] - interp[k];
    }
  }
  if (options.interp_base) {
    fit(out.base, static_cast<size_t>(n * P));
    fit(out.residual, static_cast<size_t>(n * P));
    interpolate_patches(map, target_coarse, out.base.data());
    for (int64_t i = 0; i < n * P; ++i) out.residual[i] = out.fine[i] - out.base[i];
  } else {
    out.base.clear();
    out.residual.clear();
  }
  out.n_invalid = invalid;
}

}  // namespace finecast::coupling
