// SPDX-License-Identifier: BSD-3-Clause
// The packed product: a register-blocked kernel of 6 rows x 16 columns (twelve 8-float
// accumulators, the layout that keeps both FMA pipes of an AVX2 core busy), over W's panels
// kept in L1 while the rows of A stream past. See packed_gemm.hpp.
#include "trainer/packed_gemm.hpp"

#include <algorithm>
#include <cstring>
#include <stdexcept>

#include "trainer/simd.hpp"

namespace finecast::trainer::fused {

namespace {

// Lanes (simd.hpp): the helpers are always inlined into the cloned function, so the `default`
// clone never passes a 32-byte vector by value.
#pragma GCC diagnostic ignored "-Wpsabi"
constexpr int64_t kPanel = PackedWeight::kPanel;
constexpr int kRows = 6;

/// C[R rows, cols <= 16] = A[R rows, k] times one panel. acc += a * b, in k order, is one
/// multiply-add per element in every clone with FMA (and a multiply then an add without).
template <int R>
inline __attribute__((always_inline)) void panel_rows(int64_t k, const float* a, int64_t lda, const float* panel,
                                                      float* c, int64_t ldc, int64_t cols) {
  Lanes lo[R], hi[R];
#pragma GCC unroll 6
  for (int r = 0; r < R; ++r) lo[r] = hi[r] = Lanes{};
  for (int64_t kk = 0; kk < k; ++kk) {
    Lanes b0, b1;
    std::memcpy(&b0, panel + kk * kPanel, sizeof b0);
    std::memcpy(&b1, panel + kk * kPanel + 8, sizeof b1);
#pragma GCC unroll 6
    for (int r = 0; r < R; ++r) {
      const float v = a[r * lda + kk];
      const Lanes ar = {v, v, v, v, v, v, v, v};  // one broadcast load (`Lanes{} + v` adds a 0 first)
      lo[r] += ar * b0;
      hi[r] += ar * b1;
    }
  }
#pragma GCC unroll 6
  for (int r = 0; r < R; ++r) {
    float* cr = c + r * ldc;
    if (cols == kPanel) {
      std::memcpy(cr, &lo[r], sizeof lo[r]);
      std::memcpy(cr + 8, &hi[r], sizeof hi[r]);
    } else {
      for (int64_t j = 0; j < cols; ++j) cr[j] = j < 8 ? lo[r][j] : hi[r][j - 8];
    }
  }
}

/// The last rows < kRows of A: panel_rows<rows> for a run-time count 1 <= rows <= R.
template <int R>
inline __attribute__((always_inline)) void edge_rows(int64_t rows, int64_t k, const float* a, int64_t lda,
                                                     const float* panel, float* c, int64_t ldc, int64_t cols) {
  if (rows == R) {
    panel_rows<R>(k, a, lda, panel, c, ldc, cols);
  } else if constexpr (R > 1) {
    edge_rows<R - 1>(rows, k, a, lda, panel, c, ldc, cols);
  }
}

FINECAST_CLONES
void multiply_panels(int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, const float* panels, float* c,
                     int64_t ldc, int64_t p0, int64_t p1) {
  for (int64_t p = p0; p < p1; ++p) {
    const float* panel = panels + p * kPanel * k;
    const int64_t cols = std::min(kPanel, n - p * kPanel);
    float* cp = c + p * kPanel;
    int64_t i = 0;
    for (; i + kRows <= m; i += kRows) panel_rows<kRows>(k, a + i * lda, lda, panel, cp + i * ldc, ldc, cols);
    if (m > i) edge_rows<kRows - 1>(m - i, k, a + i * lda, lda, panel, cp + i * ldc, ldc, cols);
  }
}

}  // namespace

void PackedWeight::pack(const float* w, int64_t n, int64_t k, int64_t ldw) {
  if (n < 0 || k < 0 || ldw < k) throw std::invalid_argument("PackedWeight::pack: bad shape");
  n_ = n;
  k_ = k;
  storage_.resize(static_cast<size_t>(panels() * k));
  for (int64_t p = 0; p < panels(); ++p) {
    const int64_t cols = std::min(kPanel, n - p * kPanel);
    for (int64_t kk = 0; kk < k; ++kk) {
      float* dst = storage_[static_cast<size_t>(p * k + kk)].v;
      for (int64_t j = 0; j < cols; ++j) dst[j] = w[(p * kPanel + j) * ldw + kk];
      for (int64_t j = cols; j < kPanel; ++j) dst[j] = 0.0f;
    }
  }
}

void PackedWeight::multiply(int64_t m, const float* a, int64_t lda, float* c, int64_t ldc, int64_t p0,
                            int64_t p1) const {
  if (p0 < 0 || p1 > panels() || p0 > p1) throw std::out_of_range("PackedWeight::multiply: panel range");
  if (m <= 0 || p0 == p1) return;
  // (k = 0 reads no panel and writes zeros.)
  multiply_panels(m, n_, k_, a, lda, reinterpret_cast<const float*>(storage_.data()), c, ldc, p0, p1);
}

}  // namespace finecast::trainer::fused
