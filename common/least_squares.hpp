// SPDX-License-Identifier: BSD-3-Clause
// Small weighted least squares through the normal equations: the fit that the regression
// baseline (eval/regression) and the plugin's regression base
// (coupling/grid/patch_regression) share.
#pragma once

#include <cstdint>
#include <vector>

namespace finecast {

/// Solves the symmetric positive definite system A x = b (n x n, row-major, only the lower
/// triangle read) by Cholesky; false when A is not positive definite to working precision
/// (a pivot below 1e-10 of the largest diagonal: one predictor a combination of the others).
bool cholesky_solve(std::vector<double> A, std::vector<double> b, int n, std::vector<double>& x);

/// The weighted normal equations of y ~ sum_j coef[j] x[j] (no intercept), accumulated point by
/// point. All sums live in one array, so that partial sums of several processes add up in
/// place (an MPI_Allreduce over sums()) before solve.
class NormalEquations {
 public:
  explicit NormalEquations(int m);
  int size() const { return m_; }
  /// Adds one point: x[0..m-1], y, weight w.
  void add(const double* x, double y, double w);
  /// X'WX (m x m, lower triangle), X'Wy (m), y'Wy, the sum of weights and the point count.
  std::vector<double>& sums() { return sums_; }
  int64_t points() const { return static_cast<int64_t>(sums_.back()); }
  double weight() const { return sums_[sums_.size() - 2]; }

  struct Solution {
    std::vector<double> coef;
    double rms_before = 0.0;  ///< weighted RMS of y
    double rms_after = 0.0;   ///< and of y minus the fit
  };
  /// false when there are no points or the predictors are collinear.
  bool solve(Solution& out) const;

 private:
  int m_;
  std::vector<double> sums_;
};

}  // namespace finecast
