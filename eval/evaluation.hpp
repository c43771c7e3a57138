// SPDX-License-Identifier: BSD-3-Clause
// One evaluation: a model's ensemble and the interpolation baselines scored on the same truth.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "eval/baselines.hpp"
#include "eval/blocks.hpp"
#include "eval/cell_baselines.hpp"
#include "eval/cells.hpp"
#include "eval/metrics.hpp"
#include "eval/noise.hpp"
#include "eval/regression.hpp"

namespace finecast::eval {

/// One scored prediction ("model" or a baseline name).
struct EvalRow {
  std::string name;
  Scores scores;
};

/// Everything an evaluation produced, ready for the table, JSON and CSV writers.
struct EvalReport {
  enum class Grid { kLatLon, kCells };
  Grid grid = Grid::kLatLon;
  int ny = 0, nx = 0, k = 0;  ///< lat-lon window and block edge
  /// Unstructured grids: fine cells, fine cells per patch, and the R2B levels (-1 = unknown).
  int64_t n_cells = 0;
  int patch_size = 0, fine_level = -1, coarse_level = -1;
  int n_times = 0;
  int64_t blocks_total = 0;       ///< blocks (patches) per time step
  int64_t blocks_valid = 0;       ///< blocks (patches) scored, summed over time steps
  std::vector<EvalRow> rows;      ///< "model" first, then the baselines in order
  RadialSpectrum truth_spectrum;  ///< mean over time steps
  /// Free-form context written into the JSON header (files, variable, region, ...).
  std::vector<std::pair<std::string, std::string>> meta;
};

/// The noise references (issue 26): a deterministic baseline plus `members` draws of noise with
/// zero block (patch) mean, scaled to `rms` over the scored cells, scored as an ensemble: white
/// noise (row "noise_white"), and noise with the training residual's spectrum (row
/// "noise_spectral", when add_noise_training was given the training split; eval/noise.hpp).
/// They ask of a model's CRPS and spread more than any deterministic baseline can: calibrated
/// noise around the best baseline, learning nothing.
struct NoiseReference {
  std::string base;  ///< the row the noise is added to: a baseline's name, "regression_cons" or "regression_local"
  double rms = 0.0;  ///< RMS of the noise over the scored cells of each step
  int members = 16;
  uint64_t seed = 42;
};

/// What both evaluators keep per step and report alike: the model's and every baseline's scores,
/// the optional regression baselines, the truth's residual spectrum, the last step's baseline
/// fields. The grid-specific parts (coarsening, baselines, spectra) come in as arguments.
class ScoreBook {
 public:
  explicit ScoreBook(std::vector<std::string> baseline_names);
  /// regression_cons from now on; `who` and `n_values` check the predictors (InternalError).
  void set_regression(RegressionFit fit, Predictors predictors, int64_t n_values, const std::string& who);
  bool has_regression() const { return has_regression_; }
  /// The interpolant regression_cons's fit was taken on: the regressions' floor is its baseline.
  coupling::Interpolant regression_interpolant() const { return fit_.interpolant; }
  /// regression_local from now on (after set_regression: its predictors are regression_cons's
  /// followed by `terms`' for each step's coarse field); `fit` has their coefficients.
  void set_local_regression(RegressionFit fit, LocalTerms terms, int64_t n_values, int64_t n_patches,
                            const std::string& who);
  bool has_local_regression() const { return local_terms_.has_value(); }
  /// The patches scored this step: coarse value finite and allowed by `mask` (empty = all).
  std::vector<char> valid_patches(const std::vector<double>& coarse, const std::vector<char>& mask);
  /// One step: the model's members, baseline(i) for each baseline, the regressions on top of
  /// `regression_floor()` (called only with a regression; regression_local's slopes from
  /// `coarse`, the step's block means), and the truth's residual spectrum.
  template <class Layout, class Baseline, class Floor>
  void add(const Layout& layout, const double* truth, const std::vector<const double*>& members,
           const std::vector<char>& valid, const std::vector<double>& coarse, Baseline baseline, Floor regression_floor,
           const RadialSpectrum& spectrum) {
    model_.add(layout, truth, members, valid);
    last_.clear();
    for (std::size_t i = 0; i < baselines_.size(); ++i) {
      std::vector<double> fine = baseline(i);
      baselines_[i].add(layout, truth, {fine.data()}, valid);
      last_.emplace_back(names_[i], std::move(fine));
    }
    if (has_regression_) {
      const std::vector<double> floor = regression_floor();
      std::vector<double> fine = apply_regression(fit_, predictors_, floor);
      regression_.add(layout, truth, {fine.data()}, valid);
      last_.emplace_back("regression_cons", std::move(fine));
      if (local_terms_) {
        std::vector<double> local = local_regression_on(floor, coarse);
        local_.add(layout, truth, {local.data()}, valid);
        last_.emplace_back("regression_local", std::move(local));
      }
    }
    accumulate_spectrum(truth_spectrum_, spectrum, 1.0);
    ++steps_;
  }
  /// The rows ("model", the baselines, regression_cons, regression_local), the mean truth
  /// spectrum, the step and valid-patch counts.
  void fill(EvalReport& report) const;
  const std::vector<std::pair<std::string, std::vector<double>>>& last() const { return last_; }
  const std::vector<std::string>& baseline_names() const { return names_; }
  /// The noise reference from now on (its row is empty until add_noise is called).
  void set_noise_reference(NoiseReference noise);
  bool has_noise_reference() const { return has_noise_; }
  const NoiseReference& noise_reference() const { return noise_; }
  /// One step of the noise reference: `base` is its base row's fine field for this step
  /// (Layout: BlockLayout or CellLayout).
  template <class Layout>
  void add_noise(const Layout& layout, const double* truth, const std::vector<char>& valid,
                 const std::vector<double>& base);
  /// One step of the training split for noise_spectral (before any add_noise): the residual
  /// truth - base of the `valid` blocks (patches) goes into the training spectrum.
  template <class Layout>
  void add_noise_training(const Layout& layout, const double* truth, const std::vector<char>& valid,
                          const std::vector<double>& base);
  /// The training residual's spectrum so far (empty: no noise_spectral row).
  const ResidualSpectrum& noise_spectrum() const { return noise_spectrum_; }
  /// regression_cons's field on top of `floor` (needs a regression).
  std::vector<double> regression_on(const std::vector<double>& floor) const {
    return apply_regression(fit_, predictors_, floor);
  }
  /// regression_local's field on top of `floor`, its slopes from the block means `coarse`.
  std::vector<double> local_regression_on(const std::vector<double>& floor, const std::vector<double>& coarse) const {
    return apply_regression(local_fit_, local_terms_->extend(predictors_, coarse), floor);
  }

 private:
  std::vector<std::string> names_;
  ScoreAccumulator model_;
  std::vector<ScoreAccumulator> baselines_;
  bool has_regression_ = false;
  RegressionFit fit_;
  Predictors predictors_;
  ScoreAccumulator regression_;
  std::optional<LocalTerms> local_terms_;
  RegressionFit local_fit_;
  ScoreAccumulator local_;
  RadialSpectrum truth_spectrum_;  // summed over steps
  int steps_ = 0;
  int64_t valid_ = 0;
  std::vector<std::pair<std::string, std::vector<double>>> last_;
  bool has_noise_ = false;
  NoiseReference noise_;
  ScoreAccumulator noise_scores_;
  ResidualSpectrum noise_spectrum_;
  ScoreAccumulator spectral_scores_;
  uint64_t noise_steps_ = 0;
};

/// What finecast-eval's one driver asks of an evaluator, whatever the grid: score a step, then
/// the noise references' passes, then the report. Evaluator (lat-lon blocks) and CellEvaluator
/// (ICON patches) implement it; `mask` holds one flag per block (patch), empty = all.
class StepEvaluator {
 public:
  virtual ~StepEvaluator() = default;
  /// One time step: the truth and the predicted members, each layout().size() values.
  virtual void add(const double* truth, const std::vector<const double*>& members,
                   const std::vector<char>& mask = {}) = 0;
  /// The noise reference; then add_noise_training() for every step of the training split (for
  /// noise_spectral), then add_noise() for every step that add() was given, in order.
  virtual void set_noise_reference(NoiseReference noise) = 0;
  virtual void add_noise_training(const double* truth, const std::vector<char>& mask = {}) = 0;
  virtual void add_noise(const double* truth, const std::vector<char>& mask = {}) = 0;
  virtual const ResidualSpectrum& noise_spectrum() const = 0;
  /// Scores so far; "model" first, then the baselines (and noise_white, noise_spectral once set).
  virtual EvalReport report() const = 0;
  /// Every baseline's fine field of the latest step, by name (finecast-eval --baselines-out).
  virtual const std::vector<std::pair<std::string, std::vector<double>>>& last_baselines() const = 0;
};

/// The grid-independent half of an evaluator over `Layout` (BlockLayout or CellLayout): the mask
/// checks, the scores of every step and both noise references' passes. The grid gives the coarse
/// field, its baselines, regression_cons's floor and the truth's residual spectrum. A block
/// (patch) is scored when the mask (one flag per block, empty = all) allows it and its truth is
/// finite everywhere.
template <class Layout>
class GridEvaluator : public StepEvaluator {
 public:
  void add(const double* truth, const std::vector<const double*>& members, const std::vector<char>& mask = {}) final;
  void set_noise_reference(NoiseReference noise) final;
  /// One step of the training split: the blocks of `mask` whose truth is finite.
  void add_noise_training(const double* truth, const std::vector<char>& mask = {}) final;
  /// One step of the noise references: the same truth and mask as that step's add().
  void add_noise(const double* truth, const std::vector<char>& mask = {}) final;
  const ResidualSpectrum& noise_spectrum() const final { return book_.noise_spectrum(); }
  const std::vector<std::pair<std::string, std::vector<double>>>& last_baselines() const final { return book_.last(); }
  /// Adds the baseline regression_cons (the conservative baseline of fit.interpolant plus the
  /// fitted covariate terms), listed after the interpolation baselines; `predictors` are those of
  /// the covariates on this layout for the same interpolant (block_predictors, cell_predictors).
  void set_regression(RegressionFit fit, Predictors predictors);
  /// Adds regression_local after regression_cons (set_regression first): the same predictors
  /// and the local terms of the same covariates on this layout (block_local_terms,
  /// cell_local_terms), `fit` their coefficients (fitted on regression_cons's interpolant).
  void set_local_regression(RegressionFit fit, LocalTerms terms);
  const Layout& layout() const { return layout_; }

 protected:
  /// `who` and `unit` name the evaluator and its patches ("block", "patch") in errors.
  GridEvaluator(Layout layout, std::vector<std::string> baseline_names, std::string who, std::string unit);
  /// The rows, the mean truth spectrum and the counts; the grid adds its shape.
  void fill(EvalReport& report) const { book_.fill(report); }
  /// The regressions' interpolant: regression_floor() is its baseline.
  coupling::Interpolant regression_interpolant() const { return book_.regression_interpolant(); }
  Layout layout_;

 private:
  /// The area-weighted block (patch) means of the truth.
  virtual std::vector<double> coarse_of(const double* truth) const = 0;
  /// Baseline `i` (in the order of the names given) from the coarse field.
  virtual std::vector<double> baseline(std::size_t i, const std::vector<double>& coarse) const = 0;
  /// The field regression_cons adds its covariate terms to: the baseline of the regressions' interpolant.
  virtual std::vector<double> regression_floor(const std::vector<double>& coarse) const = 0;
  virtual RadialSpectrum residual_spectrum(const std::vector<double>& residual) const = 0;
  /// InternalError naming `where` when `mask` is neither empty nor one flag per block (patch).
  void check_mask(const std::vector<char>& mask, const std::string& where) const;
  /// The noise reference's base row at one step, and the valid blocks (patches) of `mask`.
  std::vector<double> noise_base_field(const double* truth, const std::vector<char>& mask,
                                       std::vector<char>& valid) const;
  std::string who_, unit_;
  ScoreBook book_;
};

extern template class GridEvaluator<BlockLayout>;
extern template class GridEvaluator<CellLayout>;

/// Scores time steps one by one on lat-lon blocks. For each step the coarse field is the
/// area-weighted block mean of the truth, and every baseline is computed from it.
class Evaluator : public GridEvaluator<BlockLayout> {
 public:
  /// Throws ConfigError when the layout is not usable (see BlockLayout::validate).
  explicit Evaluator(BlockLayout layout);
  /// Scores so far; "model" first, then the baselines (and noise_white, noise_spectral once set).
  EvalReport report() const override;

 private:
  std::vector<double> coarse_of(const double* truth) const override;
  std::vector<double> baseline(std::size_t i, const std::vector<double>& coarse) const override;
  std::vector<double> regression_floor(const std::vector<double>& coarse) const override;
  RadialSpectrum residual_spectrum(const std::vector<double>& residual) const override;
};

/// The same for patches of an unstructured grid (ICON's coarse cells): the coarse field is the
/// area-weighted patch mean of the truth, the baselines are cell_baselines(), and the spectra
/// are the hierarchy's bands (hierarchy_spectrum).
class CellEvaluator : public GridEvaluator<CellLayout> {
 public:
  /// Throws ConfigError when the layout or the IDW options are not usable.
  explicit CellEvaluator(CellLayout layout, IdwOptions idw = {});
  CellEvaluator(const CellEvaluator&) = delete;
  CellEvaluator& operator=(const CellEvaluator&) = delete;
  /// Scores so far; "model" first, then the baselines (and noise_white, noise_spectral once set).
  EvalReport report() const override;
  const CellInterpolator& interpolator() const { return interp_; }

 private:
  std::vector<double> coarse_of(const double* truth) const override;
  std::vector<double> baseline(std::size_t i, const std::vector<double>& coarse) const override;
  std::vector<double> regression_floor(const std::vector<double>& coarse) const override;
  RadialSpectrum residual_spectrum(const std::vector<double>& residual) const override;
  CellInterpolator interp_;
};

/// The members of a noise reference for one step (seed: the step's): `base` plus noise with zero
/// area-weighted mean in every block (patch), scaled to noise.rms over the cells of the `valid`
/// blocks; white (N(0,1) per cell) when `spectrum` is null, else spectral_noise() of it.
std::vector<std::vector<double>> noise_reference_members(const BlockLayout& layout, const std::vector<double>& base,
                                                         const std::vector<char>& valid, const NoiseReference& noise,
                                                         uint64_t seed, const ResidualSpectrum* spectrum);
std::vector<std::vector<double>> noise_reference_members(const CellLayout& layout, const std::vector<double>& base,
                                                         const std::vector<char>& valid, const NoiseReference& noise,
                                                         uint64_t seed, const ResidualSpectrum* spectrum);

/// The deterministic row (a baseline, regression_cons or regression_local; not "model", not a
/// noise row) with the lowest RMSE, and that RMSE: the noise reference's base and amplitude.
std::pair<std::string, double> best_deterministic(const EvalReport& report);

}  // namespace finecast::eval
