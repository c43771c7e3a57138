// SPDX-License-Identifier: BSD-3-Clause
// One evaluation: a model's ensemble and the interpolation baselines scored on the same truth.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "coupling/eval/baselines.hpp"
#include "coupling/eval/blocks.hpp"
#include "coupling/eval/metrics.hpp"

namespace finecast::coupling::eval {

/// One scored prediction ("model" or a baseline name).
struct EvalRow {
  std::string name;
  Scores scores;
};

/// Everything an evaluation produced, ready for the table, JSON and CSV writers.
struct EvalReport {
  int ny = 0, nx = 0, k = 0;
  int n_times = 0;
  int64_t blocks_total = 0;       ///< blocks per time step
  int64_t blocks_valid = 0;       ///< blocks scored, summed over time steps
  std::vector<EvalRow> rows;      ///< "model" first, then all_baselines() in order
  RadialSpectrum truth_spectrum;  ///< mean over time steps
  /// Free-form context written into the JSON header (files, variable, region, ...).
  std::vector<std::pair<std::string, std::string>> meta;
};

/// Scores time steps one by one. For each step the coarse field is the area-weighted block
/// mean of the truth, and every baseline is computed from it.
class Evaluator {
 public:
  /// Throws ConfigError when the layout is not usable (see BlockLayout::validate).
  explicit Evaluator(BlockLayout layout);
  /// One time step: the truth and the predicted members, each layout().size() values.
  void add(const double* truth, const std::vector<const double*>& members);
  /// Scores so far; "model" first, then the baselines.
  EvalReport report() const;
  const BlockLayout& layout() const { return layout_; }

 private:
  BlockLayout layout_;
  ScoreAccumulator model_;
  std::vector<ScoreAccumulator> baselines_;
  RadialSpectrum truth_spectrum_;  // summed over steps
  int steps_ = 0;
  int64_t blocks_valid_ = 0;
};

}  // namespace finecast::coupling::eval
