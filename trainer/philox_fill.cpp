// SPDX-License-Identifier: BSD-3-Clause
#include "trainer/philox_fill.hpp"

#include <ATen/Parallel.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <string>

#include "trainer/simd.hpp"

#if FINECAST_HAVE_CUDA
#include <c10/cuda/CUDAStream.h>

#include "trainer/cuda_kernels.hpp"
#endif

namespace finecast::trainer::philox {

uint64_t key_of(uint64_t seed) {
  // splitmix64: neighbouring seeds give unrelated keys.
  uint64_t z = seed + 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

namespace {

// normal_at on eight consecutive Philox blocks (32 elements) at once, the Box-Muller step in
// vectors of four doubles, lane j for block j: the same counters and the same double-precision
// Box-Muller, with log, sin and cos as polynomials accurate to an ulp or two of a double instead
// of libm's scalar calls: on one Zen 3 core about as fast as LibTorch's torch::randn (mt19937),
// and parallel.
// The float a lane rounds to is normal_at's unless the double lies within those ulps of a
// rounding boundary between two floats (tests/trainer/test_philox.cpp counts how often: never
// in a draw of 2^22 on the development machine).
// The helpers are always inlined, so passing 32-byte vectors without AVX (the `default` clone)
// never happens: GCC's -Wpsabi note about that ABI does not apply.
#pragma GCC diagnostic ignored "-Wpsabi"
using F64x4 = double __attribute__((vector_size(32)));
using U64x4 = uint64_t __attribute__((vector_size(32)));
using I64x4 = int64_t __attribute__((vector_size(32)));
using F32x4 = float __attribute__((vector_size(16)));

template <class To, class From>
inline __attribute__((always_inline)) To bits_as(const From& v) {
  static_assert(sizeof(To) == sizeof(From));
  To t;
  std::memcpy(&t, &v, sizeof t);
  return t;
}

/// Exact for 0 <= v < 2^52: v's bits under the exponent of 2^52, less 2^52.
inline __attribute__((always_inline)) F64x4 to_double(const U64x4& v) {
  return bits_as<F64x4>(v | 0x4330000000000000ull) - 4503599627370496.0;
}

/// ln(u) for normal u in (0, 1]: u = 2^k m with m in [sqrt(1/2), sqrt(2)); ln m = 2 atanh(s),
/// s = (m - 1) / (m + 1), |s| <= 0.1716, by its series through s^21 (the next term is 6e-19 of
/// the sum); k ln 2 with ln 2 in two parts (the first exact times k).
inline __attribute__((always_inline)) F64x4 log_unit(const F64x4& u) {
  const I64x4 bits = bits_as<I64x4>(u);
  I64x4 k = ((bits >> 52) & 0x7ff) - 1023;
  F64x4 m = bits_as<F64x4>((bits & 0x000FFFFFFFFFFFFFll) | 0x3FF0000000000000ll);
  const I64x4 big = m > 1.4142135623730951;  // -1 where true
  m = big ? m * 0.5 : m;
  k -= big;
  const F64x4 f = m - 1.0;  // exact (Sterbenz)
  const F64x4 s = f / (2.0 + f), z = s * s;
  F64x4 p = F64x4{} + 1.0 / 21;
  for (const double c : {1.0 / 19, 1.0 / 17, 1.0 / 15, 1.0 / 13, 1.0 / 11, 1.0 / 9, 1.0 / 7, 1.0 / 5, 1.0 / 3})
    p = p * z + c;
  const F64x4 log_m = 2.0 * s + 2.0 * s * z * p;
  const F64x4 kd = to_double(bits_as<U64x4>(k + 64)) - 64.0;  // k >= -1022
  return kd * 0.6931471804855391 + (log_m + kd * 7.440617110012397e-11);
}

/// sin and cos of a in [0, 2 pi]: a = q pi/2 + r, |r| <= pi/4 (pi/2 in two parts, the first
/// exact times q), the Taylor series of sin r through r^17 and of cos r through r^18 (the next
/// terms are below 1e-19), then the quadrant's swap and signs.
inline __attribute__((always_inline)) void sincos_turn(const F64x4& a, F64x4& sin_a, F64x4& cos_a) {
  constexpr double kRound = 6755399441055744.0;  // 1.5 * 2^52: adding it rounds to an integer
  const F64x4 shifted = a * 0.6366197723675814 + kRound;
  const F64x4 q = shifted - kRound;
  const I64x4 quadrant = bits_as<I64x4>(shifted) & 3;
  const F64x4 r = (a - q * 1.5707963267341256) - q * 6.077100506506192e-11;
  const F64x4 z = r * r;
  // 1/n! for the odd n (sin) and the even n (cos), signs alternating.
  F64x4 ps = F64x4{} + 1.0 / 355687428096000.0;  // 1/17!
  for (const double c : {-1.0 / 1307674368000.0, 1.0 / 6227020800.0, -1.0 / 39916800.0, 1.0 / 362880.0, -1.0 / 5040.0,
                         1.0 / 120.0, -1.0 / 6.0})
    ps = ps * z + c;
  const F64x4 sin_r = r + r * z * ps;
  F64x4 cos_r = F64x4{} - 1.0 / 6402373705728000.0;  // -1/18!
  for (const double c : {1.0 / 20922789888000.0, -1.0 / 87178291200.0, 1.0 / 479001600.0, -1.0 / 3628800.0,
                         1.0 / 40320.0, -1.0 / 720.0, 1.0 / 24.0, -1.0 / 2.0, 1.0})
    cos_r = cos_r * z + c;
  const I64x4 swap = (quadrant & 1) != 0;
  const F64x4 s = swap ? cos_r : sin_r, c = swap ? sin_r : cos_r;
  sin_a = (quadrant & 2) != 0 ? -s : s;
  cos_a = ((quadrant + 1) & 2) != 0 ? -c : c;
}

constexpr int kBlocks = 8;       // Philox blocks per group
constexpr uint64_t kGroup = 32;  // elements per group

using Words = uint32_t[4][kBlocks];  // x[w][j]: word w of block j of a group
constexpr int64_t kChunk = 16;       // groups whose words are computed in one call

/// Philox on the blocks of groups g0 .. g0 + count - 1 (count <= kChunk) into words[g - g0].
/// Written per lane, eight lanes, so that the compiler makes each 32 x 32 -> 64-bit product a
/// widening vector multiply (on vectors of 64-bit lanes it emulates a full 64-bit one); a
/// function of its own, not inlined, because inlined into the Box-Muller loops GCC 12 left it
/// scalar.
FINECAST_CLONES __attribute__((noinline)) void philox_words(Words* words, uint64_t g0, int64_t count, uint64_t key,
                                                            uint64_t stream, uint32_t purpose) {
  for (int64_t g = 0; g < count; ++g) {
    auto& x = words[g];
    for (int j = 0; j < kBlocks; ++j) {
      x[0][j] = static_cast<uint32_t>(kBlocks * (g0 + static_cast<uint64_t>(g)) + static_cast<uint64_t>(j));
      x[1][j] = static_cast<uint32_t>(stream);
      x[2][j] = static_cast<uint32_t>(stream >> 32);
      x[3][j] = purpose;
    }
    uint32_t k0 = static_cast<uint32_t>(key), k1 = static_cast<uint32_t>(key >> 32);
    for (int round = 0; round < 10; ++round) {
      for (int j = 0; j < kBlocks; ++j) {
        const uint64_t p0 = static_cast<uint64_t>(x[0][j]) * 0xD2511F53u;
        const uint64_t p1 = static_cast<uint64_t>(x[2][j]) * 0xCD9E8D57u;
        const uint32_t y0 = static_cast<uint32_t>(p1 >> 32) ^ x[1][j] ^ k0;
        const uint32_t y2 = static_cast<uint32_t>(p0 >> 32) ^ x[3][j] ^ k1;
        x[1][j] = static_cast<uint32_t>(p1);
        x[3][j] = static_cast<uint32_t>(p0);
        x[0][j] = y0;
        x[2][j] = y2;
      }
      k0 += 0x9E3779B9u;
      k1 += 0xBB67AE85u;
    }
  }
}

/// Elements [32 g0, 32 (g0 + groups)) of normal_at's draw into out (out[0] is element 32 g0).
FINECAST_CLONES void fill_groups(float* out, uint64_t g0, int64_t groups, uint64_t key, uint64_t stream,
                                 uint32_t purpose) {
  Words words[kChunk];
  for (int64_t g = 0; g < groups; ++g) {
    if (g % kChunk == 0)
      philox_words(words, g0 + static_cast<uint64_t>(g), std::min(kChunk, groups - g), key, stream, purpose);
    const auto& x = words[g % kChunk];
    // Box-Muller on four blocks at a time: pair (word 0, word 1) gives a block's elements 0 and
    // 1, pair (word 2, word 3) its elements 2 and 3; an even element takes the cosine.
    for (int half = 0; half < 2; ++half) {
      const int b = 4 * half;
      F64x4 v[4];
      for (int pair = 0; pair < 2; ++pair) {
        const uint32_t* a = x[2 * pair] + b;
        const uint32_t* c = x[2 * pair + 1] + b;
        const F64x4 u1 = (to_double(U64x4{a[0], a[1], a[2], a[3]}) + 1.0) * 2.3283064365386963e-10;
        const F64x4 u2 = to_double(U64x4{c[0], c[1], c[2], c[3]}) * 2.3283064365386963e-10;
        F64x4 radius = -2.0 * log_unit(u1);
        for (int j = 0; j < 4; ++j) radius[j] = std::sqrt(radius[j]);
        F64x4 sin_a, cos_a;
        sincos_turn(6.283185307179586 * u2, sin_a, cos_a);
        v[2 * pair] = radius * cos_a;
        v[2 * pair + 1] = radius * sin_a;
      }
      // Lane j of v[w] is element 4 j + w: a 4 x 4 transpose, then four stores.
      const F32x4 f0 = __builtin_convertvector(v[0], F32x4), f1 = __builtin_convertvector(v[1], F32x4);
      const F32x4 f2 = __builtin_convertvector(v[2], F32x4), f3 = __builtin_convertvector(v[3], F32x4);
      const F32x4 t0 = __builtin_shufflevector(f0, f1, 0, 4, 1, 5), t1 = __builtin_shufflevector(f0, f1, 2, 6, 3, 7);
      const F32x4 t2 = __builtin_shufflevector(f2, f3, 0, 4, 1, 5), t3 = __builtin_shufflevector(f2, f3, 2, 6, 3, 7);
      const F32x4 rows[4] = {__builtin_shufflevector(t0, t2, 0, 1, 4, 5), __builtin_shufflevector(t0, t2, 2, 3, 6, 7),
                             __builtin_shufflevector(t1, t3, 0, 1, 4, 5), __builtin_shufflevector(t1, t3, 2, 3, 6, 7)};
      std::memcpy(out + kGroup * static_cast<uint64_t>(g) + 16 * half, rows, sizeof rows);
    }
  }
}

}  // namespace

// Whole groups in parallel; a group the range cuts is computed whole into a buffer and its part
// copied, so every element comes from the same vector code.
void fill_normal_cpu(float* out, int64_t n, uint64_t key, uint64_t stream, Purpose purpose, uint64_t first) {
  if (n <= 0) return;
  const uint64_t end = first + static_cast<uint64_t>(n);
  const uint64_t g_first = first / kGroup, g_last = (end - 1) / kGroup;  // groups touched
  auto part = [&](uint64_t g) {
    float buffer[kGroup];
    fill_groups(buffer, g, 1, key, stream, purpose);
    const uint64_t from = std::max(first, kGroup * g), to = std::min(end, kGroup * (g + 1));
    std::memcpy(out + (from - first), buffer + (from - kGroup * g), (to - from) * sizeof(float));
  };
  const uint64_t whole_begin = first % kGroup == 0 ? g_first : g_first + 1;
  const uint64_t whole_end = end % kGroup == 0 ? g_last + 1 : g_last;
  if (whole_begin >= whole_end) {  // no whole group: one or two cut ones
    part(g_first);
    if (g_last != g_first) part(g_last);
    return;
  }
  if (whole_begin != g_first) part(g_first);
  at::parallel_for(0, static_cast<int64_t>(whole_end - whole_begin), 512, [&](int64_t begin, int64_t stop) {
    const uint64_t g = whole_begin + static_cast<uint64_t>(begin);
    fill_groups(out + (kGroup * g - first), g, stop - begin, key, stream, purpose);
  });
  if (whole_end != g_last + 1) part(g_last);
}

void fill_normal(torch::Tensor& out, uint64_t key, const torch::Tensor& stream, Purpose purpose) {
  if (out.scalar_type() != torch::kFloat32 || !out.is_contiguous())
    throw std::invalid_argument("philox::fill_normal: out must be a contiguous float tensor");
  if (stream.scalar_type() != torch::kInt64 || stream.numel() != 1 || stream.device() != out.device())
    throw std::invalid_argument("philox::fill_normal: stream must be one int64 on out's device");
  if (out.is_cuda()) {
#if FINECAST_HAVE_CUDA
    const int err =
        finecast_philox_normal_cuda(out.data_ptr<float>(), out.numel(), key, stream.data_ptr<int64_t>(), purpose,
                                    c10::cuda::getCurrentCUDAStream(out.device().index()).stream());
    if (err != 0)
      throw std::runtime_error("philox::fill_normal: the CUDA kernel did not launch (error " + std::to_string(err) +
                               ")");
    return;
#else
    throw std::runtime_error("philox::fill_normal: this build has no CUDA kernel");
#endif
  }
  fill_normal_cpu(out.data_ptr<float>(), out.numel(), key, static_cast<uint64_t>(stream.item<int64_t>()), purpose);
}

void fill_normal_draws(torch::Tensor& out, const torch::Tensor& params, Purpose purpose) {
  if (out.scalar_type() != torch::kFloat32 || !out.is_contiguous() || out.dim() != 2)
    throw std::invalid_argument("philox::fill_normal_draws: out must be a contiguous float tensor [draws, n]");
  if (params.scalar_type() != torch::kInt64 || params.numel() != 2 || !params.is_contiguous() ||
      params.device() != out.device())
    throw std::invalid_argument("philox::fill_normal_draws: params must be two int64 {key, first} on out's device");
  const int64_t draws = out.size(0), n = out.size(1);
  if (out.is_cuda()) {
#if FINECAST_HAVE_CUDA
    const int err =
        finecast_philox_normal_draws_cuda(out.data_ptr<float>(), draws, n, params.data_ptr<int64_t>(), purpose,
                                          c10::cuda::getCurrentCUDAStream(out.device().index()).stream());
    if (err != 0)
      throw std::runtime_error("philox::fill_normal_draws: the CUDA kernel did not launch (error " +
                               std::to_string(err) + ")");
    return;
#else
    throw std::runtime_error("philox::fill_normal_draws: this build has no CUDA kernel");
#endif
  }
  const int64_t* p = params.data_ptr<int64_t>();
  for (int64_t d = 0; d < draws; ++d)
    fill_normal_cpu(out.data_ptr<float>() + d * n, n, static_cast<uint64_t>(p[0]), static_cast<uint64_t>(d), purpose,
                    static_cast<uint64_t>(p[1]));
}

}  // namespace finecast::trainer::philox
