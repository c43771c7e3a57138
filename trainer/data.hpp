// SPDX-License-Identifier: BSD-3-Clause
// Training data on its way in (internal): non-finite rows dropped, weights normalised,
// normalisation statistics, and the split of a session's samples by time.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <utility>
#include <vector>

#include "trainer/downscaler.hpp"

namespace finecast::trainer {

/// Running sums behind the normalisation; doubles so that many sessions accumulate exactly enough.
struct NormSums {
  double context_count = 0;
  std::vector<double> context_sum, context_sumsq;  ///< [C]
  double residual_count = 0, residual_sumsq = 0;   ///< residuals have zero weighted patch mean
  /// The squared fine values over the same residual_count values: the field's magnitude, which
  /// the residual's scale may not fall far below (0 from checkpoints written before it was kept).
  double fine_sumsq = 0;
  /// Each context feature's smallest and largest training value ([C] each; empty in checkpoints
  /// written before they were kept): the range sample.clip_context holds the network's inputs to.
  std::vector<double> context_min, context_max;
};

/// Normalisation as applied: context (x - mean) / std per feature, residual r / std.
struct NormApplied {
  torch::Tensor context_mean, context_std;  ///< float32 [C] on the device
  /// The training range of each context feature, float32 [C] on the CPU; undefined when the sums
  /// have none (no data yet, or a checkpoint from before the range was kept).
  torch::Tensor context_min, context_max;
  double residual_std = 1.0;
};

/// The residual's scale is at least this fraction of the fine values' RMS (float32 resolves
/// about 6e-8 of a value: a smaller residual is rounding), and at least kMinResidualScale, a
/// normal float32 number with room to spare (the smallest is 1.2e-38): the scale divides.
constexpr double kResidualScaleOfField = 1e-7;
constexpr double kMinResidualScale = 1e-30;

/// Means and standard deviations from the sums (unit scale for constant features), on `device`.
NormApplied derive_normalisation(const NormSums& sums, int64_t context_size, const torch::Device& device);

/// The bounds sample.clip_context holds each context feature to: its training range widened by
/// `margin` times its width at both ends ([C] float32 each, CPU); undefined without a range.
std::pair<torch::Tensor, torch::Tensor> clip_bounds(const NormApplied& norm, double margin);

/// `context` ([n, C], CPU, raw) with each feature held to clip_bounds(norm, margin): a value beyond
/// them becomes the bound, so that the network is not asked to extrapolate far in a feature;
/// returned as is when `norm` has no range.
torch::Tensor clip_to_training_range(const torch::Tensor& context, const NormApplied& norm, double margin);

/// How far each row of `context` ([n, C], CPU, raw) lies beyond the training range: the largest
/// over its features of the distance outside [min, max], in units of that feature's max - min
/// ([n] float32; 0 inside; features of zero width left out); undefined when `norm` has no range.
torch::Tensor training_range_excess(const torch::Tensor& context, const NormApplied& norm);

/// A [rows, cols] float32 CPU tensor over caller memory (not copied).
torch::Tensor cpu_float(const float* data, int64_t rows, int64_t cols);

/// Rows normalised to sum 1; throws when a row has a negative or zero-sum weight.
torch::Tensor normalised_weights(const torch::Tensor& w, const char* who);

/// (Weighted) patch mean of each row: [n].
torch::Tensor patch_mean(const torch::Tensor& fine, const torch::Tensor& w);

/// The inputs after dropping non-finite rows: context, fine, weights (or undefined), and the
/// original row of each kept sample.
struct CleanData {
  torch::Tensor context, fine, weights;
  torch::Tensor rows;  ///< int64 [kept]: index into the DataView (undefined when nothing was dropped)
  int64_t dropped = 0;
};

/// Checks the view (null pointers, n) and drops rows holding NaN/Inf.
CleanData clean(const DataView& d, int64_t C, int64_t P, const char* who);

/// Adds the statistics of clean data to the sums.
void accumulate_normalisation(NormSums& sums, const CleanData& c, int64_t C);

/// A session's rows split by time: the samples of the most recent `fraction` of the distinct
/// time steps (at least one step when fraction > 0 and there are two or more steps; never all
/// of them) are held out. Rows keep their order within each part.
struct TimeSplit {
  std::vector<int64_t> train, validation;   ///< row indices into the DataView
  int64_t steps = 0, validation_steps = 0;  ///< distinct time steps in all, held out
};
/// `time` may be null: then each row is its own step, in row order.
TimeSplit split_by_time(const int64_t* time, int64_t n, double fraction);

/// A split by samples (train.validation_split: patches): row i is held out when a hash of its
/// context and fine values, mixed with `seed`, falls below `fraction` of the hash range. The
/// rule looks at nothing but the sample, so a sample is held out in every session that holds it
/// and on whichever trainer rank holds it; the share held out is `fraction` only on average.
/// Rows keep their order within each part (`steps` = `validation_steps` = 0).
TimeSplit split_by_patches(const CleanData& c, double fraction, uint64_t seed);

/// The samples of `rows` of a view, copied into contiguous vectors (a DataView over them).
struct Subset {
  std::vector<float> context, fine, weights;
  std::vector<int64_t> time;
  DataView view() const;
};
Subset take_rows(const DataView& d, const std::vector<int64_t>& rows, int64_t C, int64_t P);

/// Normalised epoch tensors on `device`: residual / std [n,P], context [n,C], weights [n,P] or
/// undefined.
struct EpochTensors {
  torch::Tensor r0, ctx, w;
  int64_t n = 0;
  /// Data-parallel: the group's rows (global_n) and, for each, its row here or -1. Empty when
  /// training alone.
  std::vector<int64_t> global_to_local;
  int64_t global_n = 0;
};
EpochTensors normalise(const CleanData& c, const NormApplied& norm, const torch::Device& device);

}  // namespace finecast::trainer
