// SPDX-License-Identifier: BSD-3-Clause
// Per-step driver: coarsen the truth, run the baselines, feed every accumulator.
#include "coupling/eval/evaluation.hpp"

#include <cmath>
#include <string>
#include <utility>

#include "common/error.hpp"

namespace finecast::coupling::eval {

Evaluator::Evaluator(BlockLayout layout) : layout_(std::move(layout)) {
  layout_.validate();
  baselines_.resize(all_baselines().size());
}

void Evaluator::set_regression(RegressionFit fit, Predictors predictors) {
  if (predictors.values.size() != fit.coef.size())
    throw InternalError("Evaluator::set_regression: predictors and coefficients differ in number");
  for (const auto& v : predictors.values)
    if (v.size() != layout_.size()) throw InternalError("Evaluator::set_regression: predictors of another window");
  fit_ = std::move(fit);
  predictors_ = std::move(predictors);
  has_regression_ = true;
}

void Evaluator::add(const double* truth, const std::vector<const double*>& members,
                    const std::vector<char>& block_mask) {
  const BlockLayout& L = layout_;
  if (!block_mask.empty() && block_mask.size() != L.n_blocks())
    throw InternalError("Evaluator::add: the block mask has " + std::to_string(block_mask.size()) + " flags for " +
                        std::to_string(L.n_blocks()) + " blocks");
  const std::vector<double> coarse = block_means(L, truth);
  std::vector<char> valid(coarse.size());
  for (std::size_t b = 0; b < coarse.size(); ++b) {
    valid[b] = std::isfinite(coarse[b]) && (block_mask.empty() || block_mask[b]) ? 1 : 0;
    blocks_valid_ += valid[b];
  }
  model_.add(L, truth, members, valid);
  last_.clear();
  for (std::size_t i = 0; i < baselines_.size(); ++i) {
    std::vector<double> fine = run_baseline(L, coarse, all_baselines()[i]);
    baselines_[i].add(L, truth, {fine.data()}, valid);
    last_.emplace_back(all_baselines()[i].name, std::move(fine));
  }
  if (has_regression_) {
    static const Baseline bicubic_cons{"bicubic_cons", Interp::kBicubic, true};
    std::vector<double> fine = apply_regression(fit_, predictors_, run_baseline(L, coarse, bicubic_cons));
    regression_.add(L, truth, {fine.data()}, valid);
    last_.emplace_back("regression_cons", std::move(fine));
  }
  const std::vector<double> r = masked_residual(L, truth, valid);
  accumulate_spectrum(truth_spectrum_, radial_spectrum(r.data(), L.ny, L.nx), 1.0);
  ++steps_;
}

EvalReport Evaluator::report() const {
  EvalReport rep;
  rep.ny = layout_.ny;
  rep.nx = layout_.nx;
  rep.k = layout_.k;
  rep.n_times = steps_;
  rep.blocks_total = static_cast<int64_t>(layout_.n_blocks());
  rep.blocks_valid = blocks_valid_;
  rep.rows.push_back({"model", model_.result(truth_spectrum_)});
  for (std::size_t i = 0; i < baselines_.size(); ++i)
    rep.rows.push_back({all_baselines()[i].name, baselines_[i].result(truth_spectrum_)});
  if (has_regression_) rep.rows.push_back({"regression_cons", regression_.result(truth_spectrum_)});
  rep.truth_spectrum = truth_spectrum_;
  if (steps_ > 0)
    for (double& e : rep.truth_spectrum.energy) e /= steps_;
  return rep;
}

CellEvaluator::CellEvaluator(CellLayout layout, IdwOptions idw) : layout_(std::move(layout)), interp_(layout_, idw) {
  baselines_.resize(cell_baselines().size());
}

void CellEvaluator::set_regression(RegressionFit fit, Predictors predictors) {
  if (predictors.values.size() != fit.coef.size())
    throw InternalError("CellEvaluator::set_regression: predictors and coefficients differ in number");
  for (const auto& v : predictors.values)
    if (static_cast<int64_t>(v.size()) != layout_.size())
      throw InternalError("CellEvaluator::set_regression: predictors of another grid");
  fit_ = std::move(fit);
  predictors_ = std::move(predictors);
  has_regression_ = true;
}

void CellEvaluator::add(const double* truth, const std::vector<const double*>& members,
                        const std::vector<char>& patch_mask) {
  const CellLayout& L = layout_;
  if (!patch_mask.empty() && static_cast<int64_t>(patch_mask.size()) != L.n_patches())
    throw InternalError("CellEvaluator::add: the patch mask has " + std::to_string(patch_mask.size()) + " flags for " +
                        std::to_string(L.n_patches()) + " patches");
  const std::vector<double> coarse = patch_means(L, truth);
  std::vector<char> valid(coarse.size());
  for (std::size_t p = 0; p < coarse.size(); ++p) {
    valid[p] = std::isfinite(coarse[p]) && (patch_mask.empty() || patch_mask[p]) ? 1 : 0;
    patches_valid_ += valid[p];
  }
  model_.add(L, truth, members, valid);
  last_.clear();
  for (std::size_t i = 0; i < baselines_.size(); ++i) {
    std::vector<double> fine = interp_.run(coarse, cell_baselines()[i]);
    baselines_[i].add(L, truth, {fine.data()}, valid);
    last_.emplace_back(cell_baselines()[i].name, std::move(fine));
  }
  if (has_regression_) {
    static const CellBaseline idw_cons{"idw_cons", CellInterp::kIdw, true};
    std::vector<double> fine = apply_regression(fit_, predictors_, interp_.run(coarse, idw_cons));
    regression_.add(L, truth, {fine.data()}, valid);
    last_.emplace_back("regression_cons", std::move(fine));
  }
  const std::vector<double> r = masked_residual(L, truth, valid);
  accumulate_spectrum(truth_spectrum_, hierarchy_spectrum(L, r.data()), 1.0);
  ++steps_;
}

EvalReport CellEvaluator::report() const {
  EvalReport rep;
  rep.grid = EvalReport::Grid::kCells;
  rep.n_cells = layout_.size();
  rep.patch_size = layout_.patch_size();
  rep.fine_level = layout_.spec().fine_level;
  rep.coarse_level = layout_.spec().coarse_level;
  rep.n_times = steps_;
  rep.blocks_total = layout_.n_patches();
  rep.blocks_valid = patches_valid_;
  rep.rows.push_back({"model", model_.result(truth_spectrum_)});
  for (std::size_t i = 0; i < baselines_.size(); ++i)
    rep.rows.push_back({cell_baselines()[i].name, baselines_[i].result(truth_spectrum_)});
  if (has_regression_) rep.rows.push_back({"regression_cons", regression_.result(truth_spectrum_)});
  rep.truth_spectrum = truth_spectrum_;
  if (steps_ > 0)
    for (double& e : rep.truth_spectrum.energy) e /= steps_;
  return rep;
}

}  // namespace finecast::coupling::eval
