// SPDX-License-Identifier: BSD-3-Clause
// Per-step driver: coarsen the truth, run the baselines, feed every accumulator.
#include "eval/evaluation.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <utility>

#include "common/error.hpp"

namespace finecast::eval {

namespace {

template <class List>
std::vector<std::string> names_of(const List& baselines) {
  std::vector<std::string> names;
  for (const auto& b : baselines) names.push_back(b.name);
  return names;
}

/// The fine cell's block (patch).
std::size_t patch_index(const BlockLayout& L, std::size_t i) { return (i / L.nx) / L.k * L.nbx() + (i % L.nx) / L.k; }
std::size_t patch_index(const CellLayout& L, std::size_t i) { return static_cast<std::size_t>(L.patch_of(i)); }
std::size_t patch_count(const BlockLayout& L) { return L.n_blocks(); }
std::size_t patch_count(const CellLayout& L) { return static_cast<std::size_t>(L.n_patches()); }
std::size_t cell_count(const BlockLayout& L) { return L.size(); }
std::size_t cell_count(const CellLayout& L) { return static_cast<std::size_t>(L.size()); }

/// The members of a noise reference for one step: base + noise drawn by `draw(rng)` with its
/// area-weighted mean in every block (patch) removed, scaled to noise.rms over the cells of the
/// valid blocks.
template <class Layout, class Draw>
std::vector<std::vector<double>> noise_members(const Layout& L, const std::vector<double>& base,
                                               const std::vector<char>& valid, const NoiseReference& noise,
                                               uint64_t seed, Draw draw) {
  const std::size_t n = cell_count(L), np = patch_count(L);
  std::mt19937_64 rng(seed);
  std::vector<std::vector<double>> out(static_cast<std::size_t>(noise.members));
  std::vector<double> sum(np), sw(np);
  for (auto& z : out) {
    z = draw(rng);
    std::fill(sum.begin(), sum.end(), 0.0);
    std::fill(sw.begin(), sw.end(), 0.0);
    for (std::size_t i = 0; i < n; ++i) {
      sum[patch_index(L, i)] += L.w(i) * z[i];
      sw[patch_index(L, i)] += L.w(i);
    }
    double ss = 0.0, sws = 0.0;
    for (std::size_t i = 0; i < n; ++i) {
      const std::size_t p = patch_index(L, i);
      z[i] -= sum[p] / sw[p];
      if (valid[p]) {
        ss += L.w(i) * z[i] * z[i];
        sws += L.w(i);
      }
    }
    const double scale = ss > 0.0 ? noise.rms / std::sqrt(ss / sws) : 0.0;
    for (std::size_t i = 0; i < n; ++i) z[i] = base[i] + scale * z[i];
  }
  return out;
}

template <class Layout>
std::vector<std::vector<double>> reference_members(const Layout& L, const std::vector<double>& base,
                                                   const std::vector<char>& valid, const NoiseReference& noise,
                                                   uint64_t seed, const ResidualSpectrum* spectrum) {
  if (spectrum)
    return noise_members(L, base, valid, noise, seed,
                         [&](std::mt19937_64& rng) { return spectral_noise(L, *spectrum, rng); });
  std::normal_distribution<double> normal;  // one for all members: the draws of before issue 26's second row
  return noise_members(L, base, valid, noise, seed, [&](std::mt19937_64& rng) {
    std::vector<double> z(cell_count(L));
    for (double& v : z) v = normal(rng);
    return z;
  });
}

/// One step of both noise references: noise_white, and noise_spectral once `spectrum` holds the
/// training residual's spectrum (its own random stream).
template <class Layout>
void add_noise_step(const Layout& L, const double* truth, const std::vector<char>& valid,
                    const std::vector<double>& base, const NoiseReference& noise, uint64_t step,
                    const ResidualSpectrum& spectrum, ScoreAccumulator& white, ScoreAccumulator& spectral) {
  auto score = [&](const std::vector<std::vector<double>>& members, ScoreAccumulator& acc) {
    std::vector<const double*> ptr;
    for (const auto& m : members) ptr.push_back(m.data());
    acc.add(L, truth, ptr, valid);
  };
  const uint64_t seed = noise.seed * 1000003ULL + step;
  score(reference_members(L, base, valid, noise, seed, nullptr), white);
  if (!spectrum.empty()) score(reference_members(L, base, valid, noise, seed ^ 0x5bd1e995ULL, &spectrum), spectral);
}

/// The base row's residual (truth - base) in the valid blocks, added to the training spectrum.
template <class Layout>
void add_training_step(const Layout& L, const double* truth, const std::vector<char>& valid,
                       const std::vector<double>& base, ResidualSpectrum& spectrum) {
  std::vector<double> r(base.size());
  for (std::size_t i = 0; i < r.size(); ++i) r[i] = truth[i] - base[i];
  add_residual_spectrum(L, r.data(), valid, spectrum);
}

/// Scored patches without counting them (the noise pass repeats the steps).
std::vector<char> valid_of(const std::vector<double>& coarse, const std::vector<char>& mask) {
  std::vector<char> valid(coarse.size());
  for (std::size_t p = 0; p < coarse.size(); ++p) valid[p] = std::isfinite(coarse[p]) && (mask.empty() || mask[p]);
  return valid;
}

}  // namespace

std::vector<std::vector<double>> noise_reference_members(const BlockLayout& L, const std::vector<double>& base,
                                                         const std::vector<char>& valid, const NoiseReference& noise,
                                                         uint64_t seed, const ResidualSpectrum* spectrum) {
  return reference_members(L, base, valid, noise, seed, spectrum);
}

std::vector<std::vector<double>> noise_reference_members(const CellLayout& L, const std::vector<double>& base,
                                                         const std::vector<char>& valid, const NoiseReference& noise,
                                                         uint64_t seed, const ResidualSpectrum* spectrum) {
  return reference_members(L, base, valid, noise, seed, spectrum);
}

std::pair<std::string, double> best_deterministic(const EvalReport& report) {
  std::pair<std::string, double> best{"", std::numeric_limits<double>::infinity()};
  for (const EvalRow& r : report.rows) {
    if (r.name == "model" || r.name.rfind("noise", 0) == 0 || !std::isfinite(r.scores.rmse)) continue;
    if (r.scores.rmse < best.second) best = {r.name, r.scores.rmse};
  }
  if (best.first.empty()) throw InternalError("best_deterministic: no baseline with a finite RMSE");
  return best;
}

void ScoreBook::set_noise_reference(NoiseReference noise) {
  if (noise.members < 2)
    throw ConfigError("noise reference: needs at least 2 members, got " + std::to_string(noise.members));
  noise_ = std::move(noise);
  has_noise_ = true;
}

template <class Layout>
void ScoreBook::add_noise(const Layout& L, const double* truth, const std::vector<char>& valid,
                          const std::vector<double>& base) {
  add_noise_step(L, truth, valid, base, noise_, noise_steps_++, noise_spectrum_, noise_scores_, spectral_scores_);
}

template <class Layout>
void ScoreBook::add_noise_training(const Layout& L, const double* truth, const std::vector<char>& valid,
                                   const std::vector<double>& base) {
  if (noise_steps_ > 0) throw InternalError("ScoreBook::add_noise_training after add_noise");
  add_training_step(L, truth, valid, base, noise_spectrum_);
}

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

void ScoreBook::set_local_regression(RegressionFit fit, LocalTerms terms, int64_t n_values, int64_t n_patches,
                                     const std::string& who) {
  if (!has_regression_) throw InternalError(who + "::set_local_regression before set_regression");
  if (fit.interpolant != fit_.interpolant)
    throw InternalError(who +
                        "::set_local_regression: regression_local fitted on another interpolant than regression_cons");
  if (fit.coef.size() != predictors_.values.size() + terms.options().terms.size())
    throw InternalError(who + "::set_local_regression: predictors and coefficients differ in number");
  if (static_cast<int64_t>(terms.n_cells()) != n_values || terms.n_patches() != n_patches)
    throw InternalError(who + "::set_local_regression: local terms of another grid or window");
  local_fit_ = std::move(fit);
  local_terms_ = std::move(terms);
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
  if (local_terms_) rep.rows.push_back({"regression_local", local_.result(truth_spectrum_)});
  if (has_noise_ && noise_scores_.steps() > 0)
    rep.rows.push_back({"noise_white", noise_scores_.result(truth_spectrum_)});
  if (has_noise_ && spectral_scores_.steps() > 0)
    rep.rows.push_back({"noise_spectral", spectral_scores_.result(truth_spectrum_)});
  rep.truth_spectrum = truth_spectrum_;
  if (steps_ > 0)
    for (double& e : rep.truth_spectrum.energy) e /= steps_;
}

template <class Layout>
GridEvaluator<Layout>::GridEvaluator(Layout layout, std::vector<std::string> baseline_names, std::string who,
                                     std::string unit)
    : layout_(std::move(layout)), who_(std::move(who)), unit_(std::move(unit)), book_(std::move(baseline_names)) {}

template <class Layout>
void GridEvaluator<Layout>::set_regression(RegressionFit fit, Predictors predictors) {
  book_.set_regression(std::move(fit), std::move(predictors), static_cast<int64_t>(cell_count(layout_)), who_);
}

template <class Layout>
void GridEvaluator<Layout>::set_local_regression(RegressionFit fit, LocalTerms terms) {
  book_.set_local_regression(std::move(fit), std::move(terms), static_cast<int64_t>(cell_count(layout_)),
                             static_cast<int64_t>(patch_count(layout_)), who_);
}

template <class Layout>
void GridEvaluator<Layout>::check_mask(const std::vector<char>& mask, const std::string& where) const {
  if (!mask.empty() && mask.size() != patch_count(layout_))
    throw InternalError(where + ": the " + unit_ + " mask has " + std::to_string(mask.size()) + " flags for " +
                        std::to_string(patch_count(layout_)) + " " + unit_ + "s");
}

template <class Layout>
void GridEvaluator<Layout>::add(const double* truth, const std::vector<const double*>& members,
                                const std::vector<char>& mask) {
  check_mask(mask, who_ + "::add");
  const std::vector<double> coarse = coarse_of(truth);
  const std::vector<char> valid = book_.valid_patches(coarse, mask);
  const std::vector<double> r = masked_residual(layout_, truth, valid);
  book_.add(
      layout_, truth, members, valid, coarse, [&](std::size_t i) { return baseline(i, coarse); },
      [&] { return regression_floor(coarse); }, residual_spectrum(r));
}

template <class Layout>
void GridEvaluator<Layout>::set_noise_reference(NoiseReference noise) {
  book_.set_noise_reference(std::move(noise));
}

template <class Layout>
std::vector<double> GridEvaluator<Layout>::noise_base_field(const double* truth, const std::vector<char>& mask,
                                                            std::vector<char>& valid) const {
  if (!book_.has_noise_reference()) throw InternalError(who_ + ": no noise reference set");
  check_mask(mask, who_);
  const std::vector<double> coarse = coarse_of(truth);
  valid = valid_of(coarse, mask);
  const std::string& name = book_.noise_reference().base;
  if (name == "regression_cons") {
    if (!book_.has_regression()) throw InternalError("noise reference: regression_cons without a regression");
    return book_.regression_on(regression_floor(coarse));
  }
  if (name == "regression_local") {
    if (!book_.has_local_regression()) throw InternalError("noise reference: regression_local without its fit");
    return book_.local_regression_on(regression_floor(coarse), coarse);
  }
  const std::vector<std::string>& names = book_.baseline_names();
  for (std::size_t i = 0; i < names.size(); ++i)
    if (names[i] == name) return baseline(i, coarse);
  throw InternalError("noise reference: no baseline named " + name);
}

template <class Layout>
void GridEvaluator<Layout>::add_noise_training(const double* truth, const std::vector<char>& mask) {
  std::vector<char> valid;
  const std::vector<double> base = noise_base_field(truth, mask, valid);
  book_.add_noise_training(layout_, truth, valid, base);
}

template <class Layout>
void GridEvaluator<Layout>::add_noise(const double* truth, const std::vector<char>& mask) {
  std::vector<char> valid;
  const std::vector<double> base = noise_base_field(truth, mask, valid);
  book_.add_noise(layout_, truth, valid, base);
}

template class GridEvaluator<BlockLayout>;
template class GridEvaluator<CellLayout>;

Evaluator::Evaluator(BlockLayout layout)
    : GridEvaluator(std::move(layout), names_of(all_baselines()), "Evaluator", "block") {
  layout_.validate();
}

std::vector<double> Evaluator::coarse_of(const double* truth) const { return block_means(layout_, truth); }

std::vector<double> Evaluator::baseline(std::size_t i, const std::vector<double>& coarse) const {
  return run_baseline(layout_, coarse, all_baselines()[i]);
}

std::vector<double> Evaluator::regression_floor(const std::vector<double>& coarse) const {
  return run_baseline(layout_, coarse, block_regression_base(regression_interpolant()));
}

RadialSpectrum Evaluator::residual_spectrum(const std::vector<double>& residual) const {
  return radial_spectrum(residual.data(), layout_.ny, layout_.nx);
}

EvalReport Evaluator::report() const {
  EvalReport rep;
  rep.ny = layout_.ny;
  rep.nx = layout_.nx;
  rep.k = layout_.k;
  rep.blocks_total = static_cast<int64_t>(layout_.n_blocks());
  fill(rep);
  return rep;
}

CellEvaluator::CellEvaluator(CellLayout layout, IdwOptions idw)
    : GridEvaluator(std::move(layout), names_of(cell_baselines()), "CellEvaluator", "patch"), interp_(layout_, idw) {}

std::vector<double> CellEvaluator::coarse_of(const double* truth) const { return patch_means(layout_, truth); }

std::vector<double> CellEvaluator::baseline(std::size_t i, const std::vector<double>& coarse) const {
  return interp_.run(coarse, cell_baselines()[i]);
}

std::vector<double> CellEvaluator::regression_floor(const std::vector<double>& coarse) const {
  return interp_.run(coarse, cell_regression_base(regression_interpolant()));
}

RadialSpectrum CellEvaluator::residual_spectrum(const std::vector<double>& residual) const {
  return hierarchy_spectrum(layout_, residual.data());
}

EvalReport CellEvaluator::report() const {
  EvalReport rep;
  rep.grid = EvalReport::Grid::kCells;
  rep.n_cells = layout_.size();
  rep.patch_size = layout_.patch_size();
  rep.fine_level = layout_.spec().fine_level;
  rep.coarse_level = layout_.spec().coarse_level;
  rep.blocks_total = layout_.n_patches();
  fill(rep);
  return rep;
}

}  // namespace finecast::eval
