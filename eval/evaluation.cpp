// SPDX-License-Identifier: BSD-3-Clause
// Per-step driver: coarsen the truth, run the baselines, feed every accumulator.
#include "eval/evaluation.hpp"

#include <cmath>
#include <string>
#include <utility>

#include "common/error.hpp"

namespace finecast::coupling::eval {

namespace {

template <class List>
std::vector<std::string> names_of(const List& baselines) {
  std::vector<std::string> names;
  for (const auto& b : baselines) names.push_back(b.name);
  return names;
}

}  // namespace

ScoreBook::ScoreBook(std::vector<std::string> baseline_names)
    : names_(std::move(baseline_names)), baselines_(names_.size()) {}

void ScoreBook::set_regression(RegressionFit fit, Predictors predictors, int64_t n_values, const std::string& who) {
  if (predictors.values.size() != fit.coef.size())
    throw InternalError(who + "::set_regression: predictors and coefficients differ in number");
  for (const auto& v : predictors.values)
    if (static_cast<int64_t>(v.size()) != n_values)
      throw InternalError(who + "::set_regression: predictors of another grid or window");
  fit_ = std::move(fit);
  predictors_ = std::move(predictors);
  has_regression_ = true;
}

std::vector<char> ScoreBook::valid_patches(const std::vector<double>& coarse, const std::vector<char>& mask) {
  std::vector<char> valid(coarse.size());
  for (std::size_t p = 0; p < coarse.size(); ++p) {
    valid[p] = std::isfinite(coarse[p]) && (mask.empty() || mask[p]) ? 1 : 0;
    valid_ += valid[p];
  }
  return valid;
}

void ScoreBook::fill(EvalReport& rep) const {
  rep.n_times = steps_;
  rep.blocks_valid = valid_;
  rep.rows.push_back({"model", model_.result(truth_spectrum_)});
  for (std::size_t i = 0; i < baselines_.size(); ++i)
    rep.rows.push_back({names_[i], baselines_[i].result(truth_spectrum_)});
  if (has_regression_) rep.rows.push_back({"regression_cons", regression_.result(truth_spectrum_)});
  rep.truth_spectrum = truth_spectrum_;
  if (steps_ > 0)
    for (double& e : rep.truth_spectrum.energy) e /= steps_;
}

Evaluator::Evaluator(BlockLayout layout) : layout_(std::move(layout)), book_(names_of(all_baselines())) {
  layout_.validate();
}

void Evaluator::set_regression(RegressionFit fit, Predictors predictors) {
  book_.set_regression(std::move(fit), std::move(predictors), static_cast<int64_t>(layout_.size()), "Evaluator");
}

void Evaluator::add(const double* truth, const std::vector<const double*>& members,
                    const std::vector<char>& block_mask) {
  const BlockLayout& L = layout_;
  if (!block_mask.empty() && block_mask.size() != L.n_blocks())
    throw InternalError("Evaluator::add: the block mask has " + std::to_string(block_mask.size()) + " flags for " +
                        std::to_string(L.n_blocks()) + " blocks");
  const std::vector<double> coarse = block_means(L, truth);
  const std::vector<char> valid = book_.valid_patches(coarse, block_mask);
  static const Baseline bicubic_cons{"bicubic_cons", Interp::kBicubic, true};
  const std::vector<double> r = masked_residual(L, truth, valid);
  book_.add(
      L, truth, members, valid, [&](std::size_t i) { return run_baseline(L, coarse, all_baselines()[i]); },
      [&] { return run_baseline(L, coarse, bicubic_cons); }, radial_spectrum(r.data(), L.ny, L.nx));
}

EvalReport Evaluator::report() const {
  EvalReport rep;
  rep.ny = layout_.ny;
  rep.nx = layout_.nx;
  rep.k = layout_.k;
  rep.blocks_total = static_cast<int64_t>(layout_.n_blocks());
  book_.fill(rep);
  return rep;
}

CellEvaluator::CellEvaluator(CellLayout layout, IdwOptions idw)
    : layout_(std::move(layout)), interp_(layout_, idw), book_(names_of(cell_baselines())) {}

void CellEvaluator::set_regression(RegressionFit fit, Predictors predictors) {
  book_.set_regression(std::move(fit), std::move(predictors), layout_.size(), "CellEvaluator");
}

void CellEvaluator::add(const double* truth, const std::vector<const double*>& members,
                        const std::vector<char>& patch_mask) {
  const CellLayout& L = layout_;
  if (!patch_mask.empty() && static_cast<int64_t>(patch_mask.size()) != L.n_patches())
    throw InternalError("CellEvaluator::add: the patch mask has " + std::to_string(patch_mask.size()) + " flags for " +
                        std::to_string(L.n_patches()) + " patches");
  const std::vector<double> coarse = patch_means(L, truth);
  const std::vector<char> valid = book_.valid_patches(coarse, patch_mask);
  static const CellBaseline idw_cons{"idw_cons", CellInterp::kIdw, true};
  const std::vector<double> r = masked_residual(L, truth, valid);
  book_.add(
      L, truth, members, valid, [&](std::size_t i) { return interp_.run(coarse, cell_baselines()[i]); },
      [&] { return interp_.run(coarse, idw_cons); }, hierarchy_spectrum(L, r.data()));
}

EvalReport CellEvaluator::report() const {
  EvalReport rep;
  rep.grid = EvalReport::Grid::kCells;
  rep.n_cells = layout_.size();
  rep.patch_size = layout_.patch_size();
  rep.fine_level = layout_.spec().fine_level;
  rep.coarse_level = layout_.spec().coarse_level;
  rep.blocks_total = layout_.n_patches();
  book_.fill(rep);
  return rep;
}

}  // namespace finecast::coupling::eval
