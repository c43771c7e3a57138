// SPDX-License-Identifier: BSD-3-Clause
// C = A W^T for a linear layer's weight W packed once and multiplied many times: the fused
// samplers' 50 steps multiply the same four weights by 80-row activations, a shape where a
// general sgemm spends much of each call packing W again (internal; plain C++, no torch).
#pragma once

#include <cstdint>
#include <vector>

namespace finecast::trainer::fused {

/// A weight W [n,k] (row-major, nn.Linear's layout) stored as panels of kPanel output columns:
/// panel p holds W[p*kPanel + j][kk] at kk*kPanel + j, zero past row n.
class PackedWeight {
 public:
  static constexpr int64_t kPanel = 16;

  /// Copies W [n,k] with leading dimension ldw (>= k) into panels; reuses the storage.
  void pack(const float* w, int64_t n, int64_t k, int64_t ldw);

  int64_t depth() const { return k_; }
  int64_t panels() const { return (n_ + kPanel - 1) / kPanel; }

  /// C[:m, columns of panels p0..p1) = A[m,k] W^T (overwritten), A and C row-major. Each element
  /// is summed over k in the same order whatever m, p0, p1 and the row's position in A are, so
  /// results do not depend on how callers split rows or panels between threads.
  void multiply(int64_t m, const float* a, int64_t lda, float* c, int64_t ldc, int64_t p0, int64_t p1) const;

 private:
  /// One k-row of a panel: one cache line (C++17 allocates over-aligned types aligned).
  struct alignas(64) PanelRow {
    float v[kPanel];
  };
  int64_t n_ = 0, k_ = 0;
  std::vector<PanelRow> storage_;  ///< panels() * k rows
};

}  // namespace finecast::trainer::fused
