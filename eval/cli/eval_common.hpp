// SPDX-License-Identifier: BSD-3-Clause
// finecast-eval's options and what its lat-lon and ICON grids share: the driver run() over an
// EvalGrid, step matching and output.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "common/atomic_file.hpp"
#include "coupling/io/field_reader.hpp"
#include "eval/evaluation.hpp"
#include "eval/regression.hpp"

namespace finecast::eval::cli {

/// Every option of finecast-eval.
struct EvalOptions {
  std::string truth;  ///< "" = the prediction file, variable <var>_host (plugin outputs)
  std::string pred, var, truth_var, region, json, csv;
  int block = 0;          ///< lat-lon block edge; 0 = recorded in the prediction, else 16
  std::string time;       ///< --time: truth step to score, index or ISO 8601 date; "" = every step
  std::string grid;       ///< ICON grid file; "" = the prediction's grid_file_uri
  std::string geometry;   ///< ICON: file | uniform (coupling/grid/icon_geometry.hpp); "" = file
  int coarse_level = -1;  ///< ICON: patches are the R2B<L> cells; -1 = from <var>_coarse
  int idw_neighbours = 6;
  double idw_power = 2.0;
  /// --static FILE:VAR: fine static covariates of regression_cons (repeatable).
  std::vector<std::string> statics;
  /// --fit-on: where regression_cons is fitted: a region lat0,lat1,lon0,lon1 of the truth file,
  /// or a file with the truth variable on (part of) the covariates' grid. Default with
  /// --hold-out: every block (patch) that is not held out.
  std::string fit_on;
  /// --hold-out: score only these blocks (patches): a region, or FILE:VAR, a mask on the
  /// prediction's grid (a block is held out when any of its cells is non-zero).
  std::string hold_out;
  std::string regression_in, regression_out;  ///< reuse / save the regression baselines' coefficients
  /// --regression-interpolant: the plugin's patch.interpolant whose conservative baseline the
  /// regression baselines are fitted on (auto: bicubic_cons on lat-lon, idw_cons on ICON).
  std::string regression_interpolant = "auto";
  /// --local-slopes RINGS: regression_local's window in edge steps; 0 = no regression_local.
  int local_slopes = 0;
  double local_slope_ridge = 0.1;  ///< --local-slope-ridge: shrinkage toward the field's slope (>= 0)
  /// --local-slope-static: the covariates (VAR of --static) with a local term; empty = all.
  std::vector<std::string> local_slope_static;
  std::string baselines_out;  ///< NetCDF file for every baseline's field at the last scored step
  /// Members of the noise references (rows noise_white, noise_spectral): -1 = the prediction's members when it has
  /// at least 2, else 16; 0 = none.
  int noise_members = -1;

  /// The truth file and variable after the defaults.
  std::string truth_path() const { return truth.empty() ? pred : truth; }
  std::string truth_variable() const { return !truth_var.empty() ? truth_var : truth.empty() ? var + "_host" : var; }
};

/// Without --truth the truth is the prediction's <var>_host: throws ConfigError (naming --truth
/// and the file) when the prediction has no such variable.
void check_default_truth(const EvalOptions& options);

/// The time axis of one input, as the step matching sees it.
struct StepAxis {
  std::string description;  ///< e.g. "truth 'a.nc' variable 'ts'"
  std::size_t n_times = 1;
  std::function<std::string(std::size_t)> date;  ///< ISO date of a step, "" when undated
  /// The step an index or date names (coupling::select_step); throws ConfigError.
  std::function<std::size_t(const std::string&)> step;
};

/// The truth and prediction steps scored together: --time T, an index or date of the truth (with
/// the prediction step of the same index, of the same date when both are dated, or step 0 of a
/// one-step prediction), else every step of two files with as many steps. Dated steps must have
/// the same dates. Throws ConfigError naming both inputs.
void match_steps(const StepAxis& truth, const StepAxis& pred, const std::string& time,
                 std::vector<std::size_t>& truth_steps, std::vector<std::size_t>& pred_steps);

/// "0 1 2": step lists for the JSON meta.
std::string join(const std::vector<std::size_t>& v);

/// Prints the table and writes --json / --csv.
void write_reports(const eval::EvalReport& report, const EvalOptions& options);

/// Prints, for each reader that made values missing (outside the file's valid range or the
/// plausibility table's), one line: file, variable, count, the first step, index and value.
void report_masked(const std::vector<coupling::FieldReader>& readers);

/// FILE:VAR of --static and --hold-out (a colon followed by a path separator belongs to the
/// file name); throws ConfigError naming `option` when VAR is missing.
std::pair<std::string, std::string> split_file_var(const std::string& text, const std::string& option);

/// Whether regression_cons is scored: --static given. Checks the combinations of --static,
/// --fit-on, --hold-out, --regression-in, --regression-out and the --local-slope options
/// (ConfigError naming them).
bool check_regression_options(const EvalOptions& options);

/// --regression-interpolant for a lat-lon (`latlon`) or ICON grid, auto resolved (bicubic,
/// idw). Throws ConfigError naming the option, the value and the grid when the name is unknown or
/// interpolates the other grid type.
coupling::Interpolant regression_interpolant(const EvalOptions& options, bool latlon);

/// The covariates' names: the VAR of each --static FILE:VAR, in order.
std::vector<std::string> static_names(const EvalOptions& options);

/// regression_local's local slopes from --local-slopes, --local-slope-ridge and
/// --local-slope-static (terms: indices into static_names); rings 0 when it is off. Throws
/// ConfigError naming the option for a bad value or an unknown or repeated covariate.
coupling::LocalSlopeOptions local_slope_options(const EvalOptions& options);

/// Prints a WARNING (stderr) when the covariates of `fit` explain less than
/// coupling::kWeakCovariates (the plugin's threshold too) of
/// the residual's variance on the fit data, with `hint` (what to check; "" = none). Such
/// covariates are uninformative for the field or not where the data is: issue 26's ICON case,
/// surface height and land fraction averaged onto the grid file's stretched geometry while the
/// data lay on the uniform one, explained 0.3% of the residual there and 26% on the right one.
void warn_on_weak_covariates(const eval::RegressionFit& fit, const std::string& hint);

/// After a fit (or --regression-in): records the interpolant (regression_interpolant on a lat-lon
/// or ICON grid, `latlon`) in the fits, prints the coefficients, writes --regression-out. With
/// --regression-in, checks that the file's predictors are those given (`cons_names`, and
/// `local_names` when regression_local is on: non-empty), its interpolant this run's (a file
/// without one was fitted on auto) and its local slopes' settings those of the options
/// (ConfigError naming the file). `fit` fits both (the local one when local_names is non-empty).
eval::RegressionFits finish_regression(const EvalOptions& options, bool latlon,
                                       const std::vector<std::string>& cons_names,
                                       const std::vector<std::string>& local_names,
                                       const std::function<eval::RegressionFits()>& fit);

/// --baselines-out: every baseline's field at every scored step, written step by step as they are
/// scored (a long run's steps are never all held in memory). One variable per baseline, named after
/// it, on (time, dims...) in double precision; truth_step and pred_step (the files' step indices)
/// along time; the grid's layout fields (EvalGrid::layout_fields) without time; the global
/// attributes truth, pred, var. The file appears complete at finish() or not at all (AtomicFile:
/// a run that fails leaves an earlier file of that name as it was). Throws IoError naming the file.
/// Without --baselines-out every call does nothing.
class BaselinesWriter {
 public:
  using Fields = std::vector<std::pair<std::string, std::vector<double>>>;
  BaselinesWriter(const EvalOptions& options, std::vector<std::string> dims, std::vector<std::size_t> shape,
                  std::size_t n_steps, Fields layout);
  ~BaselinesWriter();
  BaselinesWriter(const BaselinesWriter&) = delete;
  BaselinesWriter& operator=(const BaselinesWriter&) = delete;
  /// The baselines of the next scored step (the same names at every step).
  void add(const Fields& baselines, std::size_t truth_step, std::size_t pred_step);
  /// Closes and commits the file, once every step was added.
  void finish();

 private:
  void define(const Fields& baselines);
  void check(int status, const std::string& what) const;
  std::string where() const { return "--baselines-out " + file_->path(); }

  std::unique_ptr<AtomicFile> file_;  ///< null without --baselines-out
  std::vector<std::string> dims_;
  std::vector<std::size_t> shape_;
  std::size_t n_steps_ = 0, written_ = 0;
  Fields layout_;
  std::vector<std::string> names_;
  std::vector<int> vars_;
  int nc_ = -1, truth_step_var_ = -1, pred_step_var_ = -1;
};

/// The regressions' meta entries for the JSON report (regression_local's prefixed so).
void add_regression_meta(const eval::RegressionFits& fits, std::vector<std::pair<std::string, std::string>>& meta);

/// Meta rows of the JSON/CSV reports, in order.
using MetaRows = std::vector<std::pair<std::string, std::string>>;

/// What finecast-eval's one driver (run) needs to know of a grid type: reading a step of the
/// truth or of a member on the scored layout, the layout and its evaluator, the scored and
/// held-out blocks (patches), the regression baseline's fit data, and the grid's report rows and
/// summary lines. LatLonEvalGrid (finecast_eval.cpp: k x k blocks of a window) and IconEvalGrid
/// (eval_icon.cpp: coarse R2B<L> cells) implement it; their constructors open and check the files.
class EvalGrid {
 public:
  virtual ~EvalGrid() = default;
  /// The time axes run() matches (match_steps).
  virtual StepAxis truth_axis() const = 0;
  virtual StepAxis pred_axis() const = 0;
  /// After the step matching: the layout, its evaluator and the scored / held-out masks.
  virtual void prepare(const std::vector<std::size_t>& truth_steps, const std::vector<std::size_t>& pred_steps) = 0;
  virtual eval::StepEvaluator& evaluator() = 0;
  /// Values of one field on the scored layout, and the prediction's members.
  virtual std::size_t n_values() const = 0;
  virtual std::size_t n_members() const = 0;
  /// Step t of the truth, or of member m of the prediction, on the scored layout (NaN = missing).
  virtual void read_truth(std::size_t t, double* out) = 0;
  virtual void read_member(std::size_t t, std::size_t m, double* out) = 0;
  /// A check of one matched step before it is scored (ConfigError); none by default.
  virtual void check_step(std::size_t /*truth_step*/, std::size_t /*pred_step*/, const double* /*truth*/) {}
  /// The blocks (patches) scored (empty = all) and those --hold-out holds out (empty = none).
  virtual const std::vector<char>& scored() const = 0;
  virtual const std::vector<char>& held() const = 0;
  /// regression_cons (and regression_local with --local-slopes) fitted (or read) and set on the
  /// evaluator; `truth_steps` as matched.
  virtual eval::RegressionFits fit_regression(const std::vector<std::size_t>& truth_steps) = 0;
  /// What to check when the covariates explain little (warn_on_weak_covariates).
  virtual std::string weak_covariates_hint() const = 0;
  /// The grid's report rows: those after truth_var, and those after members.
  virtual MetaRows layout_meta() const = 0;
  virtual MetaRows method_meta() const = 0;
  /// The summary lines after "finecast-eval: truth vs prediction", and those after the masked
  /// values' lines.
  virtual void print_summary(const eval::EvalReport& report, std::size_t n_steps) const = 0;
  virtual void print_notes() const {}
  /// Values the readers made missing (report_masked), truth first.
  virtual void report_masked() const = 0;
  /// Dimensions and shape of a field for --baselines-out.
  virtual std::vector<std::string> field_dims() const = 0;
  virtual std::vector<std::size_t> field_shape() const = 0;
  /// Fields of the layout that --baselines-out writes beside the baselines, so that a script can
  /// group and weight cells as the scores did (ICON: each cell's patch, area and whether it was
  /// scored); none by default.
  virtual std::vector<std::pair<std::string, std::vector<double>>> layout_fields() const { return {}; }
};

/// The ICON grid of the prediction (eval_icon.cpp); opens and checks the files.
std::unique_ptr<EvalGrid> make_icon_grid(const EvalOptions& options);

/// finecast-eval on either grid: match the steps, fit the regression baselines when asked, score every
/// step, the noise references' passes, the report's rows, the summary, the reports and the
/// baseline fields. Returns the exit status.
int run(const EvalOptions& options, EvalGrid& grid);

/// The noise reference after the scoring pass (issue 26): the best deterministic row of `rep`
/// as its base, with the RMS of its residual on the training split where finecast-eval has one
/// for it (regression_cons, regression_local: its fit's residual RMS), else on the scored cells
/// (its RMSE). Adds what was chosen to `meta`.
eval::NoiseReference noise_reference(const EvalOptions& o, const eval::EvalReport& rep, int prediction_members,
                                     const eval::RegressionFits* fits,
                                     std::vector<std::pair<std::string, std::string>>& meta);

/// noise_spectral's training split (issue 26): with --hold-out the blocks (patches) not held
/// out, where regression_cons is fitted too; else the scored ones (in-sample, which favours the
/// reference, as noise_white's RMS does). `held`: the held-out flags, `scored`: the scored
/// flags (empty = all). `source` says which, for the report.
std::vector<char> noise_training_mask(const EvalOptions& options, const std::vector<char>& held,
                                      const std::vector<char>& scored, std::string& source);

/// noise_spectral's entries of the JSON meta, and a line on stdout when the training split gave
/// no spectrum (no row then).
void add_spectral_noise_meta(const eval::ResidualSpectrum& spectrum, const std::string& source,
                             std::vector<std::pair<std::string, std::string>>& meta);

}  // namespace finecast::eval::cli
