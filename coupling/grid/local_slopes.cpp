// SPDX-License-Identifier: BSD-3-Clause
// Local slopes: the covariates' variances over the field first (the ridge's scale), then one small
// centred fit per cell.
#include "coupling/grid/local_slopes.hpp"

#include <algorithm>
#include <cmath>

#include "common/error.hpp"
#include "common/least_squares.hpp"
#include "coupling/grid/context_stencil.hpp"

namespace finecast::coupling {

namespace {

/// Centred sums of the target on S covariates over a set of cells, and their solution.
class CentredFit {
 public:
  explicit CentredFit(int S) : S_(S), sx_(S), sxx_(static_cast<size_t>(S * S)), sxy_(S) {}
  void clear() {
    m_ = 0;
    sy_ = 0.0;
    std::fill(sx_.begin(), sx_.end(), 0.0);
    std::fill(sxx_.begin(), sxx_.end(), 0.0);
    std::fill(sxy_.begin(), sxy_.end(), 0.0);
  }
  void add(const double* x, double y) {
    ++m_;
    sy_ += y;
    for (int a = 0; a < S_; ++a) {
      sx_[a] += x[a];
      sxy_[a] += x[a] * y;
      for (int b = 0; b <= a; ++b) sxx_[a * S_ + b] += x[a] * x[b];
    }
  }
  /// Variance of covariate a over the cells added (0 without cells).
  double variance(int a) const {
    if (m_ == 0) return 0.0;
    const double mean = sx_[a] / m_;
    return std::max(0.0, sxx_[a * S_ + a] / m_ - mean * mean);
  }
  /// The slopes with the ridge `lambda` * m * var[s] on slope s; false when singular.
  bool solve(double lambda, const std::vector<double>& var, std::vector<double>& out) const {
    if (m_ == 0) return false;
    std::vector<double> A(static_cast<size_t>(S_ * S_)), rhs(S_);
    for (int a = 0; a < S_; ++a) {
      for (int b = 0; b <= a; ++b) A[a * S_ + b] = sxx_[a * S_ + b] - sx_[a] * sx_[b] / m_;
      rhs[a] = sxy_[a] - sx_[a] * sy_ / m_;
      A[a * S_ + a] += lambda * m_ * var[a];
    }
    return cholesky_solve(std::move(A), std::move(rhs), S_, out);
  }

 private:
  int S_;
  int64_t m_ = 0;
  double sy_ = 0.0;
  std::vector<double> sx_, sxx_, sxy_;
};

}  // namespace

template <typename T>
void local_slopes(const int64_t* neighbours, int n_neighbours, int64_t n, const T* target, const T* covariates, int S,
                  const LocalSlopeOptions& options, int64_t first, int64_t count, std::vector<double>& slopes) {
  if (options.rings < 1 || S < 1 || first < 0 || count < 0 || first + count > n || !(options.ridge >= 0.0))
    throw InternalError("local_slopes: bad arguments");
  for (int t : options.terms)
    if (t < 0 || t >= S) throw InternalError("local_slopes: term " + std::to_string(t) + " of " + std::to_string(S));
  std::vector<double> x(S);
  auto valid = [&](int64_t p) {
    if (!std::isfinite(static_cast<double>(target[p]))) return false;
    for (int s = 0; s < S; ++s) {
      x[s] = static_cast<double>(covariates[s * n + p]);
      if (!std::isfinite(x[s])) return false;
    }
    return true;
  };
  // The covariates' variances over the field: the ridge's scale.
  CentredFit fit(S);
  for (int64_t p = 0; p < n; ++p)
    if (valid(p)) fit.add(x.data(), static_cast<double>(target[p]));
  std::vector<double> var(S);
  for (int s = 0; s < S; ++s) var[s] = fit.variance(s);

  slopes.assign(static_cast<size_t>(options.terms.size() * count), 0.0);
  std::vector<int64_t> window, seen(static_cast<size_t>(n), -1);
  std::vector<double> b(S);
  for (int64_t i = 0; i < count; ++i) {
    const int64_t p = first + i;
    cells_within(neighbours, n_neighbours, p, options.rings, window, seen);
    fit.clear();
    for (int64_t q : window)
      if (valid(q)) fit.add(x.data(), static_cast<double>(target[q]));
    if (!fit.solve(options.ridge, var, b)) b.assign(S, 0.0);
    for (size_t t = 0; t < options.terms.size(); ++t) slopes[t * count + i] = b[options.terms[t]];
  }
}

template void local_slopes<float>(const int64_t*, int, int64_t, const float*, const float*, int,
                                  const LocalSlopeOptions&, int64_t, int64_t, std::vector<double>&);
template void local_slopes<double>(const int64_t*, int, int64_t, const double*, const double*, int,
                                   const LocalSlopeOptions&, int64_t, int64_t, std::vector<double>&);

}  // namespace finecast::coupling
