// SPDX-License-Identifier: BSD-3-Clause
// Step matching and report output shared by finecast-eval's lat-lon and ICON paths.
#include "eval/cli/eval_common.hpp"

#include <netcdf.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>

#include "common/error.hpp"
#include "coupling/conditioning/conditioning_settings.hpp"
#include "coupling/grid/context_stencil.hpp"
#include "eval/report.hpp"
#include "eval/regression.hpp"

namespace finecast::eval::cli {

void check_default_truth(const EvalOptions& o) {
  if (!o.truth.empty()) return;
  int ncid = -1, id = -1;
  if (nc_open(o.pred.c_str(), NC_NOWRITE, &ncid) != NC_NOERR) return;  // the reader says why
  const bool found = nc_inq_varid(ncid, o.truth_variable().c_str(), &id) == NC_NOERR;
  nc_close(ncid);
  if (!found)
    throw ConfigError("no --truth given, and prediction '" + o.pred + "' has no variable '" + o.truth_variable() +
                      "' (the host's own field, which plugin outputs carry) to use as the truth: "
                      "give the fine truth with --truth FILE");
}

void match_steps(const StepAxis& truth, const StepAxis& pred, const std::string& time, std::vector<std::size_t>& tsteps,
                 std::vector<std::size_t>& psteps) {
  tsteps.clear();
  psteps.clear();
  if (!time.empty()) {
    const std::size_t t = truth.step(time);
    tsteps = {t};
    if (pred.n_times == truth.n_times)
      psteps = tsteps;
    else if (!pred.date(0).empty() && !truth.date(t).empty())
      psteps = {pred.step(truth.date(t))};  // both dated: the prediction's step at that date
    else if (pred.n_times == 1)
      psteps = {0};
    else
      throw ConfigError("--time " + time + ": " + pred.description + " has " + std::to_string(pred.n_times) +
                        " time steps and " + truth.description + " has " + std::to_string(truth.n_times) +
                        "; cannot tell which prediction step belongs to it");
  } else {
    if (pred.n_times != truth.n_times)
      throw ConfigError(pred.description + " has " + std::to_string(pred.n_times) + " time steps but " +
                        truth.description + " has " + std::to_string(truth.n_times) +
                        "; pass --time T to score one step");
    for (std::size_t t = 0; t < truth.n_times; ++t) tsteps.push_back(t), psteps.push_back(t);
  }
  // Both files dated: the dates must agree step by step (a prediction of another day would
  // otherwise be scored silently). Undated prediction steps are matched by index.
  for (std::size_t i = 0; i < tsteps.size(); ++i) {
    const std::string td = truth.date(tsteps[i]), pd = pred.date(psteps[i]);
    if (!td.empty() && !pd.empty() && td != pd)
      throw ConfigError("time steps do not match: " + truth.description + " step " + std::to_string(tsteps[i]) +
                        " is " + td + " but " + pred.description + " step " + std::to_string(psteps[i]) + " is " + pd);
  }
}

std::string join(const std::vector<std::size_t>& v) {
  std::string s;
  for (std::size_t i = 0; i < v.size(); ++i) s += (i ? " " : "") + std::to_string(v[i]);
  return s;
}

void write_reports(const eval::EvalReport& report, const EvalOptions& o) {
  namespace fe = eval;
  // Points of scored blocks where a prediction is NaN or infinite (or was too implausible to
  // read) are not scored: say how many, here and in the table's last column.
  for (const fe::EvalRow& row : report.rows)
    if (row.scores.n_nonfinite > 0)
      std::cout << "  " << row.name << ": " << row.scores.n_nonfinite
                << " point(s) of scored blocks not scored: a member is NaN, infinite or implausible there\n";
  std::cout << fe::format_table(report);
  if (!o.json.empty()) fe::write_text_file(o.json, fe::to_json(report));
  if (!o.csv.empty()) fe::write_text_file(o.csv, fe::to_csv(report));
}

void report_masked(const std::vector<coupling::FieldReader>& readers) {
  for (const auto& r : readers)
    if (r.out_of_range() > 0) std::cout << "  " << r.out_of_range_report() << "\n";
}

std::pair<std::string, std::string> split_file_var(const std::string& text, const std::string& option) {
  const size_t colon = text.rfind(':');
  if (colon == std::string::npos || colon + 1 == text.size() || text.find('/', colon) != std::string::npos)
    throw ConfigError(option + " " + text + ": expected FILE:VAR (a NetCDF file and the variable in it)");
  return {text.substr(0, colon), text.substr(colon + 1)};
}

bool check_regression_options(const EvalOptions& o) {
  const EvalOptions defaults;
  if (o.statics.empty()) {
    const char* needs = !o.fit_on.empty()                                             ? "--fit-on"
                        : !o.regression_in.empty()                                    ? "--regression-in"
                        : !o.regression_out.empty()                                   ? "--regression-out"
                        : o.local_slopes != defaults.local_slopes                     ? "--local-slopes"
                        : o.local_slope_ridge != defaults.local_slope_ridge           ? "--local-slope-ridge"
                        : !o.local_slope_static.empty()                               ? "--local-slope-static"
                        : o.regression_interpolant != defaults.regression_interpolant ? "--regression-interpolant"
                                                                                      : nullptr;
    if (needs)
      throw ConfigError(std::string(needs) +
                        " is for the regression baselines (regression_cons, regression_local), which need the fine "
                        "covariates: give them with --static FILE:VAR");
    return false;
  }
  for (const auto& s : o.statics) split_file_var(s, "--static");
  if (!o.regression_in.empty() && !o.fit_on.empty())
    throw ConfigError("--regression-in " + o.regression_in + " and --fit-on " + o.fit_on +
                      " both given: use the saved coefficients or fit new ones, not both");
  if (o.regression_in.empty() && o.fit_on.empty() && o.hold_out.empty())
    throw ConfigError(
        "--static needs --fit-on REGION|FILE (the training split regression_cons is fitted on), "
        "--hold-out (it is then fitted on the rest), or --regression-in FILE (saved coefficients)");
  local_slope_options(o);
  return true;
}

coupling::Interpolant regression_interpolant(const EvalOptions& o, bool latlon) {
  coupling::Interpolant kind = coupling::Interpolant::kAuto;
  if (!schema::parse_name(o.regression_interpolant, kind))
    throw ConfigError("--regression-interpolant " + o.regression_interpolant + ": expected one of " +
                      schema::name_list<coupling::Interpolant>() + " (the plugin's patch.interpolant)");
  return coupling::resolve_interpolant(kind, latlon, "--regression-interpolant", "the prediction's grid");
}

std::vector<std::string> static_names(const EvalOptions& o) {
  std::vector<std::string> names;
  for (const auto& s : o.statics) names.push_back(split_file_var(s, "--static").second);
  return names;
}

coupling::LocalSlopeOptions local_slope_options(const EvalOptions& o) {
  coupling::LocalSlopeOptions l;
  if (o.local_slopes < 0)
    throw ConfigError("--local-slopes " + std::to_string(o.local_slopes) +
                      ": expected the local slopes' window in edge steps, an integer >= 0 (0 = no regression_local)");
  if (!std::isfinite(o.local_slope_ridge) || o.local_slope_ridge < 0.0) {
    std::ostringstream v;
    v << o.local_slope_ridge;
    throw ConfigError("--local-slope-ridge " + v.str() + ": expected a finite real >= 0");
  }
  if (o.local_slopes == 0) {
    const EvalOptions defaults;
    const char* idle = !o.local_slope_static.empty()                       ? "--local-slope-static"
                       : o.local_slope_ridge != defaults.local_slope_ridge ? "--local-slope-ridge"
                                                                           : nullptr;
    if (idle) throw ConfigError(std::string(idle) + " is for regression_local: give --local-slopes RINGS (> 0) too");
    l.rings = 0;
    return l;
  }
  // regression_local is patch.residual regression's fit with local slopes, offline: the config's
  // check, under the options' names.
  coupling::PatchSettings patch;
  patch.residual = coupling::Residual::kRegression;
  patch.statics = static_names(o);
  patch.local_slopes = o.local_slopes;
  patch.local_slope_ridge = o.local_slope_ridge;
  patch.local_slope_static = o.local_slope_static;
  std::string known;
  for (const auto& n : patch.statics) known += (known.empty() ? "" : ", ") + n;
  l = coupling::local_slope_options(
      patch, {"--local-slopes", "--local-slope-static", "the --static covariates (known: " + known + ")"});
  // Terms in the covariates' order, whatever order the option lists them in (the plugin keeps
  // patch.local_slope_static's order, which its checkpoints' coefficients follow).
  std::sort(l.terms.begin(), l.terms.end());
  return l;
}

void warn_on_weak_covariates(const eval::RegressionFit& r, const std::string& hint) {
  if (!(r.residual_rms > 0)) return;
  const double explained = r.explained();
  if (explained >= coupling::kWeakCovariates) return;
  std::string names;
  for (const auto& n : r.names) names += (names.empty() ? "" : ", ") + n;
  char share[64];
  std::snprintf(share, sizeof share, "%.1f%% of the fine residual's variance (below %.0f%%)", 100.0 * explained,
                100.0 * coupling::kWeakCovariates);
  std::cerr << "finecast-eval: WARNING: the covariates (" << names << ") explain " << share
            << ": they may not lie where the data lies" << (hint.empty() ? "" : " (" + hint + ")") << "\n";
}

namespace {

std::string joined(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& n : v) s += (s.empty() ? "" : ", ") + n;
  return s;
}

/// --regression-in's fit of one baseline: the predictors, interpolant (`kind` on a lat-lon or
/// ICON grid, `latlon`) and local slopes this run asks for.
void check_saved_fit(const EvalOptions& o, const eval::RegressionFit& r, const std::vector<std::string>& names,
                     coupling::Interpolant kind, bool latlon, const coupling::LocalSlopeOptions& local) {
  const coupling::Interpolant saved = coupling::resolve_interpolant(r.interpolant, latlon);
  if (saved != kind)
    throw ConfigError("--regression-in " + o.regression_in + " holds " + r.baseline + " fitted on interpolant " +
                      schema::name_of(saved) + " (" + eval::regression_base_name(saved, latlon) +
                      (r.interpolant == coupling::Interpolant::kAuto ? "; the file records none: auto" : "") +
                      "), but this run asks for --regression-interpolant " + schema::name_of(kind) + " (" +
                      eval::regression_base_name(kind, latlon) + "): give --regression-interpolant " +
                      schema::name_of(saved) + ", or fit anew");
  if (r.names != names)
    throw ConfigError("--regression-in " + o.regression_in + " holds " + r.baseline + " coefficients of " +
                      joined(r.names) + ", but the --static covariates" +
                      (r.baseline == "regression_local" ? " and --local-slope-static" : "") + " give " + joined(names) +
                      " (same covariates, same order)");
  if (r.baseline == "regression_local" && (r.local_rings != local.rings || r.local_ridge != local.ridge)) {
    std::ostringstream msg;
    msg << "--regression-in " << o.regression_in << " holds regression_local fitted with --local-slopes "
        << r.local_rings << " --local-slope-ridge " << r.local_ridge << ", but this run asks for --local-slopes "
        << local.rings << " --local-slope-ridge " << local.ridge;
    throw ConfigError(msg.str());
  }
}

}  // namespace

eval::RegressionFits finish_regression(const EvalOptions& o, bool latlon, const std::vector<std::string>& cons_names,
                                       const std::vector<std::string>& local_names,
                                       const std::function<eval::RegressionFits()>& fit) {
  namespace fe = eval;
  const coupling::LocalSlopeOptions local = local_slope_options(o);
  const coupling::Interpolant kind = regression_interpolant(o, latlon);
  fe::RegressionFits r;
  if (!o.regression_in.empty()) {
    std::ifstream in(o.regression_in);
    if (!in) throw IoError("--regression-in " + o.regression_in + ": cannot open the file");
    std::stringstream text;
    text << in.rdbuf();
    r = fe::regressions_from_json(text.str(), "--regression-in " + o.regression_in);
    check_saved_fit(o, r.cons, cons_names, kind, latlon, local);
    if (local_names.empty()) {
      r.local.reset();  // a saved regression_local that this run does not ask for
    } else {
      if (!r.local)
        throw ConfigError("--regression-in " + o.regression_in +
                          " holds no regression_local fit (only regression_cons's), but --local-slopes " +
                          std::to_string(local.rings) +
                          " asks for one: write the file with --local-slopes, or score without it");
      check_saved_fit(o, *r.local, local_names, kind, latlon, local);
    }
  } else {
    r = fit();
    if (r.local) {
      r.local->local_rings = local.rings;
      r.local->local_ridge = local.ridge;
    }
  }
  r.cons.interpolant = kind;
  if (r.local) r.local->interpolant = kind;
  std::cout << "  " << fe::describe(r.cons) << "\n";
  if (r.local) std::cout << "  " << fe::describe(*r.local) << "\n";
  if (!o.regression_out.empty()) {
    fe::write_text_file(o.regression_out, fe::regressions_to_json(r));
    std::cout << "  " << (r.local ? "regression_cons and regression_local" : "regression_cons")
              << " coefficients written to " << o.regression_out << "\n";
  }
  return r;
}

BaselinesWriter::BaselinesWriter(const EvalOptions& o, std::vector<std::string> dims, std::vector<std::size_t> shape,
                                 std::size_t n_steps, Fields layout)
    : dims_(std::move(dims)), shape_(std::move(shape)), n_steps_(n_steps), layout_(std::move(layout)) {
  if (o.baselines_out.empty()) return;
  file_ = std::make_unique<AtomicFile>(o.baselines_out);
  check(nc_create(file_->tmp_path().c_str(), NC_CLOBBER | NC_NETCDF4, &nc_), "cannot create the file");
  auto text = [&](const char* key, const std::string& value) {
    check(nc_put_att_text(nc_, NC_GLOBAL, key, value.size(), value.c_str()),
          "writing the attribute " + std::string(key));
  };
  text("truth", o.truth_path());
  text("pred", o.pred);
  text("var", o.var);
  text("content",
       "finecast-eval's baselines at every scored step (along time; truth_step and pred_step are the "
       "files' step indices), computed from the truth's coarse field (ICON grids also coarse_cell, each "
       "cell's patch index, cell_area, its weight in the scores, and scored, 1 where its patch was scored)");
}

BaselinesWriter::~BaselinesWriter() {
  if (nc_ >= 0) nc_close(nc_);  // an abandoned file: AtomicFile removes it
}

void BaselinesWriter::check(int status, const std::string& what) const {
  if (status != NC_NOERR) throw IoError(where() + ": " + what + " (" + nc_strerror(status) + ")");
}

void BaselinesWriter::define(const Fields& baselines) {
  std::vector<int> ids(dims_.size() + 1);
  check(nc_def_dim(nc_, "time", n_steps_, &ids[0]), "defining the time dimension");
  for (std::size_t d = 0; d < dims_.size(); ++d)
    check(nc_def_dim(nc_, dims_[d].c_str(), shape_[d], &ids[d + 1]), "defining the dimension " + dims_[d]);
  check(nc_def_var(nc_, "truth_step", NC_INT64, 1, ids.data(), &truth_step_var_), "defining truth_step");
  check(nc_def_var(nc_, "pred_step", NC_INT64, 1, ids.data(), &pred_step_var_), "defining pred_step");
  for (const auto& f : baselines) {
    int v = -1;
    check(nc_def_var(nc_, f.first.c_str(), NC_DOUBLE, static_cast<int>(ids.size()), ids.data(), &v),
          "defining the variable " + f.first);
    names_.push_back(f.first);
    vars_.push_back(v);
  }
  std::vector<int> layout_vars;
  for (const auto& f : layout_) {
    int v = -1;
    check(nc_def_var(nc_, f.first.c_str(), NC_DOUBLE, static_cast<int>(dims_.size()), ids.data() + 1, &v),
          "defining the variable " + f.first);
    layout_vars.push_back(v);
  }
  check(nc_enddef(nc_), "leaving define mode");
  for (std::size_t i = 0; i < layout_.size(); ++i)
    check(nc_put_var_double(nc_, layout_vars[i], layout_[i].second.data()), "writing " + layout_[i].first);
  layout_.clear();
}

void BaselinesWriter::add(const Fields& baselines, std::size_t truth_step, std::size_t pred_step) {
  if (!file_) return;
  if (written_ == 0) define(baselines);
  if (written_ >= n_steps_)
    throw InternalError(where() + ": more steps than the " + std::to_string(n_steps_) + " scored");
  std::size_t values = 1;
  for (std::size_t n : shape_) values *= n;
  std::vector<std::size_t> start(shape_.size() + 1, 0), count(shape_.size() + 1, 1);
  start[0] = written_;
  std::copy(shape_.begin(), shape_.end(), count.begin() + 1);
  for (std::size_t i = 0; i < baselines.size(); ++i) {
    if (i >= names_.size() || baselines[i].first != names_[i] || baselines[i].second.size() != values)
      throw InternalError(where() + ": the baselines of step " + std::to_string(truth_step) +
                          " differ in name or size from the first step's");
    check(nc_put_vara_double(nc_, vars_[i], start.data(), count.data(), baselines[i].second.data()),
          "writing " + names_[i] + " at step " + std::to_string(truth_step));
  }
  const long long steps[2] = {static_cast<long long>(truth_step), static_cast<long long>(pred_step)};
  check(nc_put_var1_longlong(nc_, truth_step_var_, start.data(), &steps[0]), "writing truth_step");
  check(nc_put_var1_longlong(nc_, pred_step_var_, start.data(), &steps[1]), "writing pred_step");
  ++written_;
}

void BaselinesWriter::finish() {
  if (!file_) return;
  if (written_ != n_steps_)
    throw InternalError(where() + ": " + std::to_string(written_) + " of " + std::to_string(n_steps_) +
                        " steps written");
  const int status = nc_close(nc_);
  nc_ = -1;
  check(status, "closing the file");
  file_->commit();
  std::cout << "  baselines of the " << n_steps_ << " scored step(s) written to " << file_->path() << "\n";
}

void add_regression_meta(const eval::RegressionFits& fits, std::vector<std::pair<std::string, std::string>>& meta) {
  auto number = [](double x) {
    std::ostringstream v;
    v.precision(10);
    v << x;
    return v.str();
  };
  const eval::RegressionFit& c = fits.cons;
  meta.push_back({"regression_interpolant", schema::name_of(c.interpolant)});
  meta.push_back({"regression_fit_on", c.fit_on});
  meta.push_back({"regression_points", std::to_string(c.n_points)});
  for (std::size_t j = 0; j < c.coef.size(); ++j) meta.push_back({"regression_coef " + c.names[j], number(c.coef[j])});
  if (!fits.local) return;
  const eval::RegressionFit& l = *fits.local;
  std::string terms;
  for (const auto& n : l.names)
    if (n.size() > 6 && n.compare(n.size() - 6, 6, " local") == 0)
      terms += (terms.empty() ? "" : ",") + n.substr(0, n.size() - 6);
  meta.push_back({"regression_local_rings", std::to_string(l.local_rings)});
  meta.push_back({"regression_local_ridge", number(l.local_ridge)});
  meta.push_back({"regression_local_static", terms});
  meta.push_back({"regression_local_fit_on", l.fit_on});
  meta.push_back({"regression_local_points", std::to_string(l.n_points)});
  for (std::size_t j = 0; j < l.coef.size(); ++j)
    meta.push_back({"regression_local_coef " + l.names[j], number(l.coef[j])});
}

eval::NoiseReference noise_reference(const EvalOptions& o, const eval::EvalReport& rep, int prediction_members,
                                     const eval::RegressionFits* fits,
                                     std::vector<std::pair<std::string, std::string>>& meta) {
  eval::NoiseReference n;
  const auto [base, rmse] = eval::best_deterministic(rep);
  n.base = base;
  n.members = o.noise_members > 0 ? o.noise_members : prediction_members >= 2 ? prediction_members : 16;
  std::string source = "RMSE of " + base + " on the scored cells";
  n.rms = rmse;
  const eval::RegressionFit* fit = !fits                                       ? nullptr
                                   : base == "regression_cons"                 ? &fits->cons
                                   : base == "regression_local" && fits->local ? &*fits->local
                                                                               : nullptr;
  if (fit && fit->fitted_rms > 0) {
    n.rms = fit->fitted_rms;
    source = "residual RMS of " + base + " on its fit data (" + fit->fit_on + ")";
  }
  std::ostringstream v;
  v.precision(10);
  v << n.rms;
  meta.push_back({"noise_base", n.base});
  meta.push_back({"noise_rms", v.str()});
  meta.push_back({"noise_rms_source", source});
  meta.push_back({"noise_members", std::to_string(n.members)});
  meta.push_back({"noise", "white, zero block mean, seed " + std::to_string(n.seed)});
  return n;
}

std::vector<char> noise_training_mask(const EvalOptions& o, const std::vector<char>& held,
                                      const std::vector<char>& scored, std::string& source) {
  if (o.hold_out.empty()) {
    source = "the scored blocks (in-sample: no --hold-out)";
    return scored;
  }
  std::vector<char> rest(held.size());
  for (std::size_t p = 0; p < held.size(); ++p) rest[p] = held[p] ? 0 : 1;
  source = "the blocks not held out (--hold-out " + o.hold_out + ")";
  return rest;
}

void add_spectral_noise_meta(const eval::ResidualSpectrum& spectrum, const std::string& source,
                             std::vector<std::pair<std::string, std::string>>& meta) {
  if (spectrum.empty()) {
    std::cout << "  noise_spectral: no training block with a finite residual in " << source << "; no row\n";
    return;
  }
  meta.push_back({"noise_spectral",
                  "the noise base's residual spectrum (lat-lon: radial, ICON: by refinement "
                  "level) on " +
                      source + ", zero block mean, noise_white's RMS and seed (own stream)"});
}

namespace {

/// A truth without a finite value (all NaN, fill values or implausible) leaves nothing to score:
/// said naming its file and variable, instead of a report of NaN scores (or "no baseline with a
/// finite RMSE" from the noise reference).
void check_something_scored(const EvalOptions& o, const eval::EvalReport& report, std::size_t finite_truth,
                            const std::vector<std::size_t>& tsteps) {
  const std::string what = o.truth_path() + ", variable '" + o.truth_variable() + "'";
  const std::string steps = std::to_string(tsteps.size()) + " scored time step(s) (" + join(tsteps) + ")";
  if (finite_truth == 0)
    throw IoError("the truth " + what + " has no finite value at the " + steps +
                  ": every value is NaN, a fill value or outside its plausible range; nothing to score");
  for (const auto& row : report.rows)
    if (row.scores.n_points > 0) return;
  throw IoError("the truth " + what +
                " has finite values, but no block (patch) of the scored window has a finite "
                "truth in all its cells at the " +
                steps + "; nothing to score");
}

}  // namespace

int run(const EvalOptions& o, EvalGrid& grid) {
  std::vector<std::size_t> tsteps, psteps;
  const StepAxis truth = grid.truth_axis(), pred = grid.pred_axis();
  match_steps(truth, pred, o.time, tsteps, psteps);
  grid.prepare(tsteps, psteps);
  eval::StepEvaluator& ev = grid.evaluator();
  const bool regression = check_regression_options(o);
  eval::RegressionFits fit;
  if (regression) {
    fit = grid.fit_regression(tsteps);
    warn_on_weak_covariates(fit.cons, grid.weak_covariates_hint());
  }

  const std::size_t n = grid.n_values(), n_members = grid.n_members();
  std::vector<double> tbuf(n);
  std::vector<std::vector<double>> mbuf(n_members, std::vector<double>(n));
  std::vector<const double*> mptr;
  for (const auto& m : mbuf) mptr.push_back(m.data());
  std::size_t finite_truth = 0;
  BaselinesWriter baselines(o, grid.field_dims(), grid.field_shape(), tsteps.size(), grid.layout_fields());
  for (std::size_t i = 0; i < tsteps.size(); ++i) {
    grid.read_truth(tsteps[i], tbuf.data());
    finite_truth +=
        static_cast<std::size_t>(std::count_if(tbuf.begin(), tbuf.end(), [](double x) { return std::isfinite(x); }));
    for (std::size_t m = 0; m < n_members; ++m) grid.read_member(psteps[i], m, mbuf[m].data());
    grid.check_step(tsteps[i], psteps[i], tbuf.data());
    ev.add(tbuf.data(), mptr, grid.scored());
    baselines.add(ev.last_baselines(), tsteps[i], psteps[i]);
  }
  check_something_scored(o, ev.report(), finite_truth, tsteps);
  // The noise reference around the best deterministic row: a second pass over the same steps.
  MetaRows noise_meta;
  if (o.noise_members != 0) {
    ev.set_noise_reference(
        noise_reference(o, ev.report(), static_cast<int>(n_members), regression ? &fit : nullptr, noise_meta));
    // noise_spectral: the training residual's spectrum (variance by refinement band) first.
    std::string source;
    const std::vector<char> train = noise_training_mask(o, grid.held(), grid.scored(), source);
    for (std::size_t t : tsteps) {
      grid.read_truth(t, tbuf.data());
      ev.add_noise_training(tbuf.data(), train);
    }
    add_spectral_noise_meta(ev.noise_spectrum(), source, noise_meta);
    for (std::size_t t : tsteps) {
      grid.read_truth(t, tbuf.data());
      ev.add_noise(tbuf.data(), grid.scored());
    }
  }

  eval::EvalReport rep = ev.report();
  rep.meta = {{"truth", o.truth_path()}, {"pred", o.pred}, {"var", o.var}, {"truth_var", o.truth_variable()}};
  const MetaRows layout = grid.layout_meta(), method = grid.method_meta();
  rep.meta.insert(rep.meta.end(), layout.begin(), layout.end());
  rep.meta.push_back({"truth_steps", join(tsteps)});
  rep.meta.push_back({"pred_steps", join(psteps)});
  rep.meta.push_back({"members", std::to_string(n_members)});
  rep.meta.insert(rep.meta.end(), method.begin(), method.end());
  rep.meta.push_back({"finecast_version", FINECAST_VERSION});
  if (!o.hold_out.empty()) rep.meta.push_back({"hold_out", o.hold_out});
  if (regression) add_regression_meta(fit, rep.meta);
  rep.meta.insert(rep.meta.end(), noise_meta.begin(), noise_meta.end());

  std::cout << "finecast-eval: " << truth.description << " vs " << pred.description << "\n";
  grid.print_summary(rep, tsteps.size());
  grid.report_masked();
  grid.print_notes();
  write_reports(rep, o);
  baselines.finish();
  return 0;
}

}  // namespace finecast::eval::cli
