// SPDX-License-Identifier: BSD-3-Clause
// The fused CPU MLP: sgemm for the layers, one pass per layer for bias + activation + derivative,
// one pass for noising + concatenation, one for the conservative loss and its gradient.
#include "trainer/fused_mlp.hpp"

#include <ATen/Parallel.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>

#include "trainer/packed_gemm.hpp"
#include "trainer/simd.hpp"

#if FINECAST_HAVE_CBLAS
// The CBLAS entry points of the OpenBLAS that LibTorch loads; declared here so no cblas.h is
// needed (the enum values are fixed by the CBLAS standard).
extern "C" {
void cblas_sgemm(int order, int transa, int transb, int m, int n, int k, float alpha, const float* a, int lda,
                 const float* b, int ldb, float beta, float* c, int ldc);
void cblas_sgemv(int order, int trans, int m, int n, float alpha, const float* a, int lda, const float* x, int incx,
                 float beta, float* y, int incy);
}
#endif

namespace finecast::trainer::fused {

namespace {

constexpr int kRowMajor = 101, kNoTrans = 111, kTrans = 112;

/// C[m,n] (=|+=) A[m,k] op B, row-major. transb: B is [n,k] (C = A B^T), else [k,n].
void gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, const float* b,
          int64_t ldb, float beta, float* c, int64_t ldc) {
#if FINECAST_HAVE_CBLAS
  if (m == 0 || n == 0) return;
  if (k == 0) {
    // BLAS leaves C * beta for k = 0; spell it out (C may hold garbage when beta = 0).
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) c[i * ldc + j] = beta == 0.0f ? 0.0f : beta * c[i * ldc + j];
    return;
  }
  cblas_sgemm(kRowMajor, trans_a ? kTrans : kNoTrans, trans_b ? kTrans : kNoTrans, static_cast<int>(m),
              static_cast<int>(n), static_cast<int>(k), 1.0f, a, static_cast<int>(lda), b, static_cast<int>(ldb), beta,
              c, static_cast<int>(ldc));
#else
  (void)trans_a, (void)trans_b, (void)m, (void)n, (void)k, (void)a, (void)lda, (void)b, (void)ldb, (void)beta, (void)c,
      (void)ldc;
  throw std::logic_error("fused MLP: this build has no CBLAS");
#endif
}

/// y[m] = A[m,n] x, A row-major with leading dimension lda.
void gemv(int64_t m, int64_t n, const float* a, int64_t lda, const float* x, float* y) {
#if FINECAST_HAVE_CBLAS
  if (n == 0) {
    std::fill(y, y + m, 0.0f);
    return;
  }
  cblas_sgemv(kRowMajor, kNoTrans, static_cast<int>(m), static_cast<int>(n), 1.0f, a, static_cast<int>(lda), x, 1, 0.0f,
              y, 1);
#else
  (void)m, (void)n, (void)a, (void)lda, (void)x, (void)y;
  throw std::logic_error("fused MLP: this build has no CBLAS");
#endif
}

// The activation passes work on eight floats at a time, as GCC's vector extension: written as a
// plain loop over floats, GCC 12 threads the clamps of exp into branches around constant results
// and then cannot if-convert the loop, which ran one float at a time (perf: 15% of a training
// benchmark, more of sampling, 2026-11-28).
// The helpers below are always inlined, so the ABI of passing 32-byte vectors without AVX (the
// `default` clone) is never used: GCC's -Wpsabi note about it does not apply.
#pragma GCC diagnostic ignored "-Wpsabi"
using LaneInts = int32_t __attribute__((vector_size(32), aligned(4)));
constexpr int64_t kLanes = 8;

inline __attribute__((always_inline)) Lanes splat(float a) { return Lanes{} + a; }

/// k <= kLanes floats from p; the lanes past k are 0.
inline __attribute__((always_inline)) Lanes load_lanes(const float* p, int64_t k) {
  Lanes v{};
  if (k == kLanes)
    std::memcpy(&v, p, sizeof v);  // one unaligned vector load
  else
    for (int64_t l = 0; l < k; ++l) v[l] = p[l];
  return v;
}

inline __attribute__((always_inline)) void store_lanes(float* p, Lanes v, int64_t k) {
  if (k == kLanes)
    std::memcpy(p, &v, sizeof v);
  else
    for (int64_t l = 0; l < k; ++l) p[l] = v[l];
}

// exp of eight floats: Cephes' expf (range reduction by ln 2 in two parts, degree-6 polynomial,
// 2^n by exponent bits), relative error about 1e-7, like the libm expf LibTorch's kernels use.
inline __attribute__((always_inline)) Lanes fast_exp(Lanes x) {
  x = x < splat(-87.3f) ? splat(-87.3f) : x;
  x = x > splat(88.7f) ? splat(88.7f) : x;
  // Round to nearest by the 1.5 * 2^23 trick.
  const Lanes n = (x * 1.44269504088896341f + 12582912.0f) - 12582912.0f;
  Lanes r = x - n * 0.693359375f;
  r = r - n * -2.12194440e-4f;
  Lanes p = splat(1.9875691500e-4f);
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r * r + r + 1.0f;
  const LaneInts bits = (__builtin_convertvector(n, LaneInts) + 127) << 23;
  Lanes scale;
  std::memcpy(&scale, &bits, sizeof scale);
  return p * scale;
}

/// h = act(z + bias [+ row]) and, when Der, d = act'(...): one pass over [rows, n], eight floats
/// at a time, one instance per (activation, row term, derivative).
template <Activation A, bool Row, bool Der>
inline __attribute__((always_inline)) void activate_rows(const float* z, const float* bias, const float* row,
                                                         int64_t rows, int64_t n, float* h, float* d) {
  for (int64_t i = 0; i < rows; ++i) {
    const float* zi = z + i * n;
    const float* ri = Row ? row + i * n : nullptr;
    float* hi = h + i * n;
    float* di = Der ? d + i * n : nullptr;
    for (int64_t j = 0; j < n; j += kLanes) {
      const int64_t k = std::min(kLanes, n - j);
      Lanes v = load_lanes(zi + j, k) + load_lanes(bias + j, k);
      if (Row) v += load_lanes(ri + j, k);
      Lanes out, der;
      if (A == Activation::kSilu) {
        const Lanes s = 1.0f / (1.0f + fast_exp(-v));
        out = v * s;
        der = s * (1.0f + v * (1.0f - s));
      } else if (A == Activation::kGelu) {
        // 0.5 v (1 + tanh(u)), u = k0 (v + k1 v^3); tanh(u) = 1 - 2 / (1 + exp(2u)).
        const float k0 = 0.7978845608028654f, k1 = 0.044715f;
        const Lanes u = k0 * (v + k1 * v * v * v);
        const Lanes th = 1.0f - 2.0f / (1.0f + fast_exp(2.0f * u));
        out = 0.5f * v * (1.0f + th);
        der = 0.5f * (1.0f + th) + 0.5f * v * (1.0f - th * th) * k0 * (1.0f + 3.0f * k1 * v * v);
      } else {
        const auto positive = v > splat(0.0f);
        out = positive ? v : splat(0.0f);
        der = positive ? splat(1.0f) : splat(0.0f);
      }
      store_lanes(hi + j, out, k);
      if (Der) store_lanes(di + j, der, k);
    }
  }
}

template <Activation A>
inline __attribute__((always_inline)) void activate_as(const float* z, const float* bias, const float* row,
                                                       int64_t rows, int64_t n, float* h, float* d) {
  if (row) {
    if (d)
      activate_rows<A, true, true>(z, bias, row, rows, n, h, d);
    else
      activate_rows<A, true, false>(z, bias, row, rows, n, h, d);
  } else {
    if (d)
      activate_rows<A, false, true>(z, bias, row, rows, n, h, d);
    else
      activate_rows<A, false, false>(z, bias, row, rows, n, h, d);
  }
}

FINECAST_CLONES
void activate(Activation act, const float* z, const float* bias, const float* row, int64_t rows, int64_t n, float* h,
              float* d) {
  switch (act) {
    case Activation::kSilu:
      activate_as<Activation::kSilu>(z, bias, row, rows, n, h, d);
      break;
    case Activation::kGelu:
      activate_as<Activation::kGelu>(z, bias, row, rows, n, h, d);
      break;
    case Activation::kRelu:
      activate_as<Activation::kRelu>(z, bias, row, rows, n, h, d);
      break;
  }
}

/// dz = dh * d over [rows, n] (in place in dh), and db (=|+=) its column sums.
FINECAST_CLONES
void backprop_activation(float* dh, const float* d, int64_t rows, int64_t n, float* db, bool overwrite) {
  if (overwrite) std::fill(db, db + n, 0.0f);
  for (int64_t i = 0; i < rows; ++i) {
    float* gi = dh + i * n;
    const float* di = d + i * n;
    for (int64_t j = 0; j < n; ++j) {
      const float g = gi[j] * di[j];
      gi[j] = g;
      db[j] += g;
    }
  }
}

/// Column sums of [rows, n] into db (=|+=).
FINECAST_CLONES
void column_sums(const float* g, int64_t rows, int64_t n, float* db, bool overwrite) {
  if (overwrite) std::fill(db, db + n, 0.0f);
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < n; ++j) db[j] += g[i * n + j];
}

/// Weighted (w != nullptr, summing to 1) or plain mean of a row: 16 float lanes (vectorised; a
/// single accumulator would add one element at a time), summed in double at the end.
inline __attribute__((always_inline)) double row_mean(const float* x, const float* w, int64_t n) {
  constexpr int kLanes = 16;
  float acc[kLanes] = {};
  int64_t j = 0;
  if (w) {
    for (; j + kLanes <= n; j += kLanes)
      for (int l = 0; l < kLanes; ++l) acc[l] += x[j + l] * w[j + l];
  } else {
    for (; j + kLanes <= n; j += kLanes)
      for (int l = 0; l < kLanes; ++l) acc[l] += x[j + l];
  }
  double m = 0;
  for (int l = 0; l < kLanes; ++l) m += acc[l];
  for (; j < n; ++j) m += w ? static_cast<double>(x[j]) * w[j] : x[j];
  return w ? m : m / static_cast<double>(n);
}

/// What one step of the fused samplers applies to each row (diffusion.cpp's estimates + update).
struct SamplerStep {
  int64_t P = 0;
  bool conservative = false, v_objective = false, ddpm = false, last = false;
  float a = 1, s = 0, clip = 0, c_x0 = 0, c_x = 0, c_eps = 0, sigma = 0;
  const float* bias = nullptr;     ///< output bias [P]
  const float* weights = nullptr;  ///< [b,P] or nullptr
  const float* noise = nullptr;    ///< [b,P] or nullptr (no noise this step)
};

/// Rows [r0, r1): y (raw output, bias added here) -> x0 and eps estimates -> the new x, in place.
/// `scratch` holds 2P floats.
FINECAST_CLONES
void sampler_rows(const SamplerStep& st, float* x, float* y, int64_t r0, int64_t r1, float* scratch) {
  const int64_t P = st.P;
  float* x0 = scratch;
  float* eps = scratch + P;
  const float a = st.a, s = st.s, clip = st.clip;
  for (int64_t i = r0; i < r1; ++i) {
    float* xi = x + i * P;
    float* yi = y + i * P;
    const float* w = st.weights ? st.weights + i * P : nullptr;
    for (int64_t j = 0; j < P; ++j) yi[j] += st.bias[j];
    if (st.conservative) {
      const float m = static_cast<float>(row_mean(yi, w, P));
      for (int64_t j = 0; j < P; ++j) yi[j] -= m;
    }
    if (st.v_objective) {
      for (int64_t j = 0; j < P; ++j) {
        x0[j] = a * xi[j] - s * yi[j];
        eps[j] = s * xi[j] + a * yi[j];
      }
    } else {
      for (int64_t j = 0; j < P; ++j) {
        x0[j] = (xi[j] - s * yi[j]) / a;
        eps[j] = yi[j];
      }
    }
    if (clip > 0) {
      for (int64_t j = 0; j < P; ++j) {
        const float v = x0[j] < -clip ? -clip : x0[j];
        x0[j] = v > clip ? clip : v;
      }
      if (st.conservative) {
        const float m = static_cast<float>(row_mean(x0, w, P));
        for (int64_t j = 0; j < P; ++j) x0[j] -= m;
      }
      for (int64_t j = 0; j < P; ++j) eps[j] = (xi[j] - a * x0[j]) / s;
    } else if (st.conservative) {
      const float m = static_cast<float>(row_mean(x0, w, P));
      for (int64_t j = 0; j < P; ++j) x0[j] -= m;
    }
    const float* zi = st.noise ? st.noise + i * P : nullptr;
    const float zm = zi && st.conservative ? static_cast<float>(row_mean(zi, w, P)) : 0.0f;
    if (st.ddpm) {
      if (zi) {
        for (int64_t j = 0; j < P; ++j) xi[j] = st.c_x0 * x0[j] + st.c_x * xi[j] + st.sigma * (zi[j] - zm);
      } else {
        for (int64_t j = 0; j < P; ++j) xi[j] = st.c_x0 * x0[j] + st.c_x * xi[j];
      }
    } else if (st.last) {
      for (int64_t j = 0; j < P; ++j) xi[j] = x0[j];
    } else if (zi) {
      for (int64_t j = 0; j < P; ++j) xi[j] = st.c_x0 * x0[j] + st.c_eps * eps[j] + st.sigma * (zi[j] - zm);
    } else {
      for (int64_t j = 0; j < P; ++j) xi[j] = st.c_x0 * x0[j] + st.c_eps * eps[j];
    }
  }
}

/// Rows per parallel chunk so that each chunk has about `work` elements (serial for small batches).
int64_t grain_rows(int64_t n_per_row, int64_t work = 32768) {
  return std::max<int64_t>(1, work / std::max<int64_t>(1, n_per_row));
}

/// C[m, n] = A[m, w.depth()] W^T, the column panels split between threads (each element's
/// sum is the same whatever the split). A chunk gets at least about 2^17 multiply-adds.
void packed_product(int64_t m, const float* a, int64_t lda, const PackedWeight& w, float* c, int64_t ldc) {
  const int64_t per_panel = std::max<int64_t>(1, m * w.depth() * PackedWeight::kPanel);
  at::parallel_for(0, w.panels(), std::max<int64_t>(1, (int64_t{1} << 17) / per_panel),
                   [&](int64_t p0, int64_t p1) { w.multiply(m, a, lda, c, ldc, p0, p1); });
}

}  // namespace

bool compiled() {
#if FINECAST_HAVE_CBLAS
  return true;
#else
  return false;
#endif
}

Mlp::Mlp(const ModelOptions& mo, Layout layout, const float* step_table)
    : mo_(mo),
      layout_(std::move(layout)),
      table_(step_table),
      act_(mo.activation),
      C_(mo.context_size),
      P_(mo.patch_size),
      E_(mo.time_embedding),
      H_(mo.hidden),
      D_(mo.depth),
      in_(mo.patch_size + mo.context_size + mo.time_embedding) {
  if (static_cast<int64_t>(layout_.weight.size()) != D_ + 1 || static_cast<int64_t>(layout_.bias.size()) != D_ + 1)
    throw std::logic_error("fused MLP: the parameter layout does not match model.depth");
  h_.resize(static_cast<size_t>(D_));
  d_.resize(static_cast<size_t>(D_));
}

void Mlp::ensure(int64_t b, bool derivatives) {
  if (derivatives && static_cast<int64_t>(d_[0].size()) < b * H_)
    for (auto& v : d_) v.assign(static_cast<size_t>(std::max(b, cap_) * H_), 0.0f);
  if (b <= cap_) return;
  cap_ = b;
  x_.assign(static_cast<size_t>(b * in_), 0.0f);
  tgt_.assign(static_cast<size_t>(b * P_), 0.0f);
  for (auto& v : h_) v.assign(static_cast<size_t>(b * H_), 0.0f);
  if (!d_[0].empty())
    for (auto& v : d_) v.assign(static_cast<size_t>(b * H_), 0.0f);
  z_.assign(static_cast<size_t>(b * H_), 0.0f);
  g0_.assign(static_cast<size_t>(b * H_), 0.0f);
  g1_.assign(static_cast<size_t>(b * H_), 0.0f);
  y_.assign(static_cast<size_t>(b * P_), 0.0f);
  dy_.assign(static_cast<size_t>(b * P_), 0.0f);
  row_sse_.assign(static_cast<size_t>(b), 0.0);
  emb_.assign(static_cast<size_t>(H_), 0.0f);
}

void Mlp::hidden_layers(const float* params, int64_t b, bool derivative, const float* bias0, const float* row0,
                        bool packed) {
  for (int64_t l = 0; l < D_; ++l) {
    if (l > 0 && packed)
      packed_product(b, h_[l - 1].data(), H_, packed_[static_cast<size_t>(l)], z_.data(), H_);
    else if (l > 0)
      gemm(false, true, b, H_, H_, h_[l - 1].data(), H_, params + layout_.weight[l], H_, 0.0f, z_.data(), H_);
    const float* bias = l == 0 && bias0 ? bias0 : params + layout_.bias[l];
    const float* row = l == 0 ? row0 : nullptr;
    float* h = h_[l].data();
    float* d = derivative ? d_[l].data() : nullptr;
    at::parallel_for(0, b, grain_rows(H_), [&](int64_t r0, int64_t r1) {
      activate(act_, z_.data() + r0 * H_, bias, row ? row + r0 * H_ : nullptr, r1 - r0, H_, h + r0 * H_,
               d ? d + r0 * H_ : nullptr);
    });
  }
  // Output layer: y = h_{D-1} Wo^T (bias added by the caller's loss or sampler pass).
  if (packed)
    packed_product(b, h_[D_ - 1].data(), H_, packed_[static_cast<size_t>(D_)], y_.data(), P_);
  else
    gemm(false, true, b, P_, H_, h_[D_ - 1].data(), H_, params + layout_.weight[D_], H_, 0.0f, y_.data(), P_);
}

double Mlp::train_micro(const float* params, float* grad, const EpochInputs& in, const MicroBatch& mb,
                        double loss_scale, bool overwrite) {
  const int64_t b = mb.b, P = P_, C = C_, E = E_;
  if (b <= 0) return 0.0;
  ensure(b, grad != nullptr);
  const bool conservative = mo_.conservative, v_obj = mo_.objective == Objective::kV;
  // Noising, concatenation and the target in one pass over the rows.
  at::parallel_for(0, b, grain_rows(in_), [&](int64_t r0, int64_t r1) {
    for (int64_t i = r0; i < r1; ++i) {
      const int64_t src = mb.idx[i], t = mb.t[i];
      const float a = in.sqrt_ab[t], s = in.sqrt_1mab[t];
      const float* x0 = in.x0 + src * P;
      const float* w = in.weights ? in.weights + src * P : nullptr;
      const float* e = mb.eps + i * P;
      const float em = conservative ? static_cast<float>(row_mean(e, w, P)) : 0.0f;
      float* xi = x_.data() + i * in_;
      float* ti = tgt_.data() + i * P;
      for (int64_t j = 0; j < P; ++j) {
        const float ej = e[j] - em;
        xi[j] = a * x0[j] + s * ej;
        ti[j] = v_obj ? a * ej - s * x0[j] : ej;
      }
      std::memcpy(xi + P, in.context + src * C, static_cast<size_t>(C) * sizeof(float));
      std::memcpy(xi + P + C, table_ + t * E, static_cast<size_t>(E) * sizeof(float));
    }
  });
  gemm(false, true, b, H_, in_, x_.data(), in_, params + layout_.weight[0], in_, 0.0f, z_.data(), H_);
  hidden_layers(params, b, grad != nullptr, nullptr, nullptr);

  // Loss and dLoss/dy: out = y + bias, minus its (weighted) mean when conservative.
  const float* bo = params + layout_.bias[D_];
  const float coef = static_cast<float>(2.0 * loss_scale);
  at::parallel_for(0, b, grain_rows(P), [&](int64_t r0, int64_t r1) {
    for (int64_t i = r0; i < r1; ++i) {
      float* yi = y_.data() + i * P;
      const float* w = in.weights ? in.weights + mb.idx[i] * P : nullptr;
      for (int64_t j = 0; j < P; ++j) yi[j] += bo[j];
      const float m = conservative ? static_cast<float>(row_mean(yi, w, P)) : 0.0f;
      const float* ti = tgt_.data() + i * P;
      float* gi = dy_.data() + i * P;
      double sse = 0, gsum = 0;
      for (int64_t j = 0; j < P; ++j) {
        const float diff = yi[j] - m - ti[j];
        sse += static_cast<double>(diff) * diff;
        gi[j] = coef * diff;
        gsum += gi[j];
      }
      // The adjoint of x -> x - w.x: g - w * sum(g).
      if (conservative) {
        if (w) {
          for (int64_t j = 0; j < P; ++j) gi[j] -= static_cast<float>(w[j] * gsum);
        } else {
          const float gm = static_cast<float>(gsum / static_cast<double>(P));
          for (int64_t j = 0; j < P; ++j) gi[j] -= gm;
        }
      }
      row_sse_[i] = sse;
    }
  });
  double sse = 0;
  for (int64_t i = 0; i < b; ++i) sse += row_sse_[i];
  if (!grad) return sse;

  const float beta = overwrite ? 0.0f : 1.0f;
  // Output layer.
  gemm(true, false, P, H_, b, dy_.data(), P, h_[D_ - 1].data(), H_, beta, grad + layout_.weight[D_], H_);
  column_sums(dy_.data(), b, P, grad + layout_.bias[D_], overwrite);
  float* dh = g0_.data();
  float* other = g1_.data();
  gemm(false, false, b, H_, P, dy_.data(), P, params + layout_.weight[D_], H_, 0.0f, dh, H_);
  for (int64_t l = D_ - 1; l >= 0; --l) {
    backprop_activation(dh, d_[l].data(), b, H_, grad + layout_.bias[l], overwrite);
    const float* input = l == 0 ? x_.data() : h_[l - 1].data();
    const int64_t width = l == 0 ? in_ : H_;
    gemm(true, false, H_, width, b, dh, H_, input, width, beta, grad + layout_.weight[l], width);
    if (l > 0) {
      gemm(false, false, b, H_, H_, dh, H_, params + layout_.weight[l], H_, 0.0f, other, H_);
      std::swap(dh, other);
    }
  }
  return sse;
}

void Mlp::forward(const float* params, const float* x_t, const float* context, const int64_t* t, int64_t b,
                  float* out) {
  if (b <= 0) return;
  ensure(b, false);
  const int64_t P = P_, C = C_, E = E_;
  for (int64_t i = 0; i < b; ++i) {
    float* xi = x_.data() + i * in_;
    std::memcpy(xi, x_t + i * P, static_cast<size_t>(P) * sizeof(float));
    std::memcpy(xi + P, context + i * C, static_cast<size_t>(C) * sizeof(float));
    std::memcpy(xi + P + C, table_ + t[i] * E, static_cast<size_t>(E) * sizeof(float));
  }
  gemm(false, true, b, H_, in_, x_.data(), in_, params + layout_.weight[0], in_, 0.0f, z_.data(), H_);
  hidden_layers(params, b, false, nullptr, nullptr);
  const float* bo = params + layout_.bias[D_];
  for (int64_t i = 0; i < b; ++i)
    for (int64_t j = 0; j < P; ++j) out[i * P + j] = y_[i * P + j] + bo[j];
}

void Mlp::sample(const float* params, const SampleInputs& in, const std::vector<diffusion::StepCoefficients>& steps,
                 bool ddpm, bool v_objective, bool conservative, double x0_clip, float* x0_out) {
  const int64_t b = in.b, P = P_, C = C_, E = E_;
  if (b <= 0) return;
  ensure(b, false);
  const float* w0 = params + layout_.weight[0];
  // Layer 0 splits into x_t W_x^T (every step) + [context W_c^T + b0] (once per sampling, kept in
  // g1_) + table[t] W_e^T (one gemv per step, in emb_): the context and step columns are not
  // recomputed for each of the 50 steps.
  gemm(false, true, b, H_, C, in.context, C, w0 + P, in_, 0.0f, g1_.data(), H_);
  // The weights every step multiplies, packed once for the whole loop: layer 0's x_t columns,
  // the hidden layers, the output layer.
  packed_.resize(static_cast<size_t>(D_ + 1));
  packed_[0].pack(w0, H_, P, in_);
  for (int64_t l = 1; l < D_; ++l) packed_[static_cast<size_t>(l)].pack(params + layout_.weight[l], H_, H_, H_);
  packed_[static_cast<size_t>(D_)].pack(params + layout_.weight[D_], P_, H_, H_);
  {
    const float* b0 = params + layout_.bias[0];
    for (int64_t i = 0; i < b; ++i)
      for (int64_t j = 0; j < H_; ++j) g1_[i * H_ + j] += b0[j];
  }
  // x lives in tgt_ ([b,P]); the network output in y_.
  float* x = tgt_.data();
  std::memcpy(x, in.noise, static_cast<size_t>(b * P) * sizeof(float));
  if (conservative) {
    for (int64_t i = 0; i < b; ++i) {
      const float* w = in.weights ? in.weights + i * P : nullptr;
      const float m = static_cast<float>(row_mean(x + i * P, w, P));
      for (int64_t j = 0; j < P; ++j) x[i * P + j] -= m;
    }
  }
  const float* bo = params + layout_.bias[D_];
  int64_t draw = 1;
  for (size_t k = 0; k < steps.size(); ++k) {
    const diffusion::StepCoefficients& c = steps[k];
    if (c.u != c.t) throw std::logic_error("fused sampler: no churn");
    const int64_t t = c.t;
    const bool last = k + 1 == steps.size();
    gemv(H_, E, w0 + P + C, in_, table_ + t * E, emb_.data());
    packed_product(b, x, P, packed_[0], z_.data(), H_);
    hidden_layers(params, b, false, emb_.data(), g1_.data(), true);
    // The sampler update, row by row (same arithmetic as diffusion.cpp's estimates + step).
    const bool noisy = ddpm ? t > 0 : c.z_coef > 0;
    const float* z = nullptr;
    if (noisy) {
      if (draw >= in.draws) throw std::logic_error("fused sampler: fewer pre-drawn noise fields than noisy steps");
      z = in.noise + draw * b * P;
    }
    if (noisy || (!ddpm && !last)) ++draw;  // DDIM keeps one draw per non-final step (see noise_draws)
    SamplerStep st;
    st.P = P;
    st.conservative = conservative;
    st.v_objective = v_objective;
    st.ddpm = ddpm;
    st.last = last;
    st.a = static_cast<float>(c.a);
    st.s = static_cast<float>(c.b);
    st.clip = static_cast<float>(x0_clip);
    st.c_x0 = static_cast<float>(c.x0_coef);
    st.c_x = static_cast<float>(c.x_coef);
    st.c_eps = static_cast<float>(c.eps_coef);
    st.sigma = static_cast<float>(c.z_coef);
    st.bias = bo;
    st.weights = in.weights;
    st.noise = z;
    at::parallel_for(0, b, grain_rows(P), [&](int64_t r0, int64_t r1) {
      std::vector<float> scratch(static_cast<size_t>(2 * P));
      sampler_rows(st, x, y_.data(), r0, r1, scratch.data());
    });
  }
  std::memcpy(x0_out, x, static_cast<size_t>(b * P) * sizeof(float));
}

}  // namespace finecast::trainer::fused
