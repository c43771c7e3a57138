// SPDX-License-Identifier: BSD-3-Clause
// finecast-eval on ICON fields: patches are the coarse R2B<L> cells of the fine grid (the
// plugin's patch map), weights the grid's cell areas, baselines nearest and inverse-distance
// weighting, spectra the variance by refinement level.
#include <netcdf.h>
#include <sys/stat.h>

#include <algorithm>
#include <cmath>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/error.hpp"
#include "eval/evaluation.hpp"
#include "eval/window.hpp"
#include "coupling/grid/hold_out_mask.hpp"
#include "coupling/grid/icon_geometry.hpp"
#include "coupling/grid/icon_grid.hpp"
#include "coupling/grid/icon_hierarchy.hpp"
#include "coupling/io/field_reader.hpp"
#include "coupling/io/step_select.hpp"
#include "eval/cli/eval_common.hpp"
#include "eval/cli/icon_levels.hpp"

namespace finecast::eval::cli {
namespace {

namespace fe = eval;
using coupling::FieldReader;

bool file_exists(const std::string& path) {
  struct stat st {};
  return stat(path.c_str(), &st) == 0;
}

/// A global text attribute ("" when absent).
std::string global_text(const std::string& path, const char* name) {
  int ncid = -1;
  if (nc_open(path.c_str(), NC_NOWRITE, &ncid) != NC_NOERR) return "";
  std::string s;
  size_t len = 0;
  nc_type type = NC_NAT;
  if (nc_inq_att(ncid, NC_GLOBAL, name, &type, &len) == NC_NOERR && type == NC_CHAR) {
    s.resize(len);
    if (nc_get_att_text(ncid, NC_GLOBAL, name, s.data()) != NC_NOERR) s.clear();
    while (!s.empty() && s.back() == '\0') s.pop_back();
  }
  nc_close(ncid);
  return s;
}

bool has_variable(const std::string& path, const std::string& var) {
  int ncid = -1, id = -1;
  if (nc_open(path.c_str(), NC_NOWRITE, &ncid) != NC_NOERR) return false;
  const bool found = nc_inq_varid(ncid, var.c_str(), &id) == NC_NOERR;
  nc_close(ncid);
  return found;
}

/// An ICON field, [time,] [member,] ncells, read one member of one step at a time.
class IconVar {
 public:
  IconVar(const std::string& path, const std::string& var, const std::string& role)
      : path_(path), var_(var), role_(role) {
    try {
      readers_.emplace_back(path, var, 0);
    } catch (const Error& e) {
      throw IoError(role + " file: " + e.what());
    }
    const coupling::FieldReader& f = readers_.front();
    if (f.grid_kind() != coupling::FieldReader::GridKind::kUnstructured)
      throw ConfigError(describe() + " is on a lat-lon grid (" + f.spatial_dims().at(0) + " x " +
                        f.spatial_dims().at(1) +
                        ") but the other input is an ICON field: both must be on the same grid");
    n_cells_ = f.n_values();
    n_members_ = static_cast<std::size_t>(f.n_levels());
    for (std::size_t m = 1; m < n_members_; ++m) readers_.emplace_back(path, var, static_cast<int>(m));
    buf_.resize(static_cast<std::size_t>(n_cells_));
  }

  std::string describe() const { return role_ + " '" + path_ + "' variable '" + var_ + "'"; }
  const std::string& path() const { return path_; }
  const std::string& var() const { return var_; }
  int64_t n_cells() const { return n_cells_; }
  std::size_t n_members() const { return n_members_; }
  std::size_t n_times() const { return static_cast<std::size_t>(readers_.front().n_times()); }
  std::string date(std::size_t t) const {
    return readers_.front().has_time_axis() ? readers_.front().time_string(static_cast<int64_t>(t)) : "";
  }
  StepAxis axis() const {
    return {describe(), n_times(), [this](std::size_t t) { return date(t); },
            [this](const std::string& text) {
              return static_cast<std::size_t>(coupling::select_step(readers_.front(), text));
            }};
  }
  /// clon/clat of the file (radians), empty when it has none.
  coupling::OutputGrid grid() const {
    try {
      return readers_.front().output_grid();
    } catch (const IoError&) {
      return {};
    }
  }
  void read(std::size_t t, std::size_t m, double* out) {
    readers_.at(m).read(static_cast<int64_t>(t), buf_.data());
    for (int64_t i = 0; i < n_cells_; ++i) out[i] = buf_[static_cast<std::size_t>(i)];
  }
  void report_masked() const { eval::cli::report_masked(readers_); }

 private:
  std::string path_, var_, role_;
  std::vector<coupling::FieldReader> readers_;
  int64_t n_cells_ = 0;
  std::size_t n_members_ = 1;
  std::vector<float> buf_;
};

/// The grid file: --grid, else the prediction's grid_file_uri (as written, or beside the
/// prediction when the path is relative).
std::string grid_file(const EvalOptions& o) {
  if (!o.grid.empty()) return o.grid;
  const std::string uri = global_text(o.pred, "grid_file_uri");
  if (uri.empty())
    throw ConfigError("--grid is required for ICON fields: prediction '" + o.pred +
                      "' has no global attribute grid_file_uri naming its grid file");
  if (file_exists(uri)) return uri;
  const std::size_t slash = o.pred.find_last_of('/');
  if (uri[0] != '/' && slash != std::string::npos) {
    const std::string beside = o.pred.substr(0, slash + 1) + uri;
    if (file_exists(beside)) return beside;
  }
  throw ConfigError("prediction '" + o.pred + "' names its grid file '" + uri +
                    "' (grid_file_uri), which does not exist here: give the ICON grid file with "
                    "--grid");
}

/// Whether `field` is constant (bitwise, NaN cells ignored) on every cell of the map.
bool constant_per_patch(const coupling::PatchMap& m, const std::vector<double>& field) {
  for (int64_t c = 0; c < m.n_coarse; ++c) {
    double first = std::nan("");
    for (int k = 0; k < m.patch_size; ++k) {
      const double v = field[m.fine_of_patch[c * m.patch_size + k]];
      if (std::isnan(v)) continue;
      if (std::isnan(first))
        first = v;
      else if (v != first)
        return false;
    }
  }
  return true;
}

/// Patches wholly inside a region (every fine cell centre), as --region selects them.
std::vector<char> patches_inside(const fe::CellLayout& layout, const coupling::IconGrid& grid, const fe::Region& reg) {
  std::vector<char> mask(static_cast<std::size_t>(layout.n_patches()), 1);
  for (int64_t p = 0; p < layout.n_patches(); ++p)
    for (int k = 0; k < layout.patch_size(); ++k) {
      const int64_t c = layout.cells(p)[k];
      if (!reg.contains_lat(grid.clat[c] * 180.0 / M_PI) || !reg.contains_lon(grid.clon[c] * 180.0 / M_PI)) mask[p] = 0;
    }
  return mask;
}

/// An ICON field on the grid `grid_path` describes: the cell count, and the centres when the
/// file carries them. Throws ConfigError naming the file and the grid file.
void check_on_grid(const IconVar& v, const coupling::IconGrid& grid, const std::string& grid_path) {
  if (v.n_cells() != grid.n_cells)
    throw ConfigError("grids do not match: " + v.describe() + " has " + std::to_string(v.n_cells()) +
                      " cells but the ICON grid file '" + grid_path + "' has " + std::to_string(grid.n_cells));
  const coupling::OutputGrid g = v.grid();
  if (g.clon.size() != static_cast<std::size_t>(grid.n_cells)) return;
  for (int64_t i = 0; i < grid.n_cells; ++i)
    if (std::abs(std::remainder(g.clon[i] - grid.clon[i], 2 * M_PI)) > 1e-5 ||
        std::abs(g.clat[i] - grid.clat[i]) > 1e-5)
      throw ConfigError("grids do not match: cell " + std::to_string(i) + " of " + v.describe() + " lies at clon " +
                        std::to_string(g.clon[i]) + ", clat " + std::to_string(g.clat[i]) +
                        " but in the ICON grid file '" + grid_path + "' at " + std::to_string(grid.clon[i]) + ", " +
                        std::to_string(grid.clat[i]) + " (radians)");
}

/// The first step of a static field on the grid (covariate or mask), checked against it.
std::vector<double> read_static(const std::string& spec, const std::string& option, const std::string& role,
                                const coupling::IconGrid& grid, const std::string& grid_path, std::string* name) {
  const auto [file, var] = split_file_var(spec, option);
  IconVar v(file, var, role);
  if (v.n_members() != 1)
    throw ConfigError(v.describe() + " has a further dimension besides time and cells; " + option +
                      " takes a (time, ncells) or (ncells) field");
  check_on_grid(v, grid, grid_path);
  std::vector<double> out(static_cast<std::size_t>(grid.n_cells));
  v.read(0, 0, out.data());
  if (name) *name = var;
  return out;
}

/// Adds to the fitters (regression_cons's, and regression_local's when `terms` is given) the cells
/// of the patches flagged in `use` (empty = all), for each step of `src`: residual = truth - the
/// interpolant `kind`'s baseline (idw_cons or linear_cons) of the patch means; regression_local's
/// slopes from the same patch means.
void add_cell_fit_data(fe::RegressionFitter& fitter, fe::RegressionFitter* local, const fe::LocalTerms* terms,
                       IconVar& src, const std::vector<std::size_t>& steps, const fe::CellInterpolator& interp,
                       coupling::Interpolant kind, const fe::Predictors& p, const std::vector<char>& use) {
  const fe::CellLayout& L = interp.layout();
  std::vector<char> cell_use;
  if (!use.empty()) {
    cell_use.resize(static_cast<std::size_t>(L.size()));
    for (int64_t c = 0; c < L.size(); ++c) cell_use[c] = use[L.patch_of(c)];
  }
  std::vector<double> w(static_cast<std::size_t>(L.size()));
  for (int64_t c = 0; c < L.size(); ++c) w[c] = L.w(c);
  std::vector<double> truth(static_cast<std::size_t>(L.size()));
  for (std::size_t t : steps) {
    src.read(t, 0, truth.data());
    const std::vector<double> coarse = fe::patch_means(L, truth.data());
    const std::vector<double> base = interp.run(coarse, fe::cell_regression_base(kind));
    std::vector<double> residual(truth.size());
    for (std::size_t i = 0; i < residual.size(); ++i) residual[i] = truth[i] - base[i];
    fitter.add(p, residual, w, cell_use);
    if (local && terms) local->add(terms->extend(p, coarse), residual, w, cell_use);
  }
}

/// The patches' coarse level: --coarse-level, or the coarsest level on whose cells the
/// prediction's <var>_coarse (the coarse field the model was given) is constant; checked against
/// it either way when the prediction has it.
struct CoarseLevel {
  int level = -1;
  std::string source;  ///< "--coarse-level" or the companion variable's name
};

CoarseLevel coarse_level(const EvalOptions& o, IconLevels& hierarchy, const std::string& grid_path, const IconVar& pred,
                         bool has_coarse, const std::vector<double>& coarse_field) {
  const int F = hierarchy.fine_level();
  const std::string coarse_var = o.var + "_coarse";
  CoarseLevel c{o.coarse_level, "--coarse-level"};
  const int L = c.level;
  if (L > F)
    throw ConfigError("--coarse-level " + std::to_string(L) + " out of range: grid '" + grid_path + "' is R2B" +
                      std::to_string(F) + " (coarse levels 0.." + std::to_string(F - 1) + ")");
  if (L == F)
    throw ConfigError("--coarse-level " + std::to_string(L) + " is the fine level of grid '" + grid_path +
                      "': patches of one cell have no fine scales to score");
  if (L < 0) {
    if (!has_coarse)
      throw ConfigError("--coarse-level is required: " + pred.describe() + " has no companion '" + coarse_var +
                        "' to derive the coarse level from");
    for (int l = 0; l < F && c.level < 0; ++l)
      if (constant_per_patch(hierarchy.map(l), coarse_field)) c.level = l;
    if (c.level < 0)
      throw ConfigError("'" + coarse_var + "' of prediction '" + o.pred +
                        "' is not constant on the cells of any coarse level R2B0..R2B" + std::to_string(F - 1) +
                        " of grid '" + grid_path +
                        "': give --coarse-level (is it the grid the prediction was made on?)");
    c.source = coarse_var;
  } else if (has_coarse && !constant_per_patch(hierarchy.map(L), coarse_field)) {
    throw ConfigError("--coarse-level " + std::to_string(L) + " does not match prediction '" + o.pred + "': its '" +
                      coarse_var + "' is not constant on the R2B" + std::to_string(L) + " cells of grid '" + grid_path +
                      "'");
  }
  return c;
}

/// The patches scored: those wholly inside --region, and of those the held-out ones when
/// --hold-out is given (a region: patches wholly inside; a mask file: patches with a flagged
/// cell). An empty mask scores every patch.
struct ScoredPatches {
  std::vector<char> mask, held;
  int64_t count = 0;
  std::string region_text = "all";
};

ScoredPatches scored_patches(const EvalOptions& o, const fe::CellLayout& layout, const coupling::IconGrid& grid,
                             const std::string& grid_path, int L) {
  ScoredPatches s;
  s.count = layout.n_patches();
  if (!o.region.empty()) {
    s.mask = patches_inside(layout, grid, fe::parse_region(o.region));
    s.region_text = o.region;
  }
  if (!o.hold_out.empty()) {
    if (fe::is_regions_text(o.hold_out)) {
      s.held = fe::union_of_boxes(fe::parse_regions(o.hold_out, "--hold-out"),
                                  [&](const fe::Region& r) { return patches_inside(layout, grid, r); });
    } else {
      const std::vector<double> m = read_static(o.hold_out, "--hold-out", "hold-out mask", grid, grid_path, nullptr);
      // The plugin's rule for train.hold_out FILE:VAR (a patch with any flagged cell).
      s.held = coupling::patches_held_out(m.data(), layout.size(), layout.n_patches(),
                                          [&](int64_t c) { return layout.patch_of(c); });
    }
    if (s.mask.empty()) s.mask.assign(s.held.size(), 1);
    for (std::size_t p = 0; p < s.held.size(); ++p) s.mask[p] = s.mask[p] && s.held[p];
  }
  if (!s.mask.empty()) {
    s.count = 0;
    for (char m : s.mask) s.count += m;
    if (s.count == 0)
      throw ConfigError((o.region.empty() ? "--hold-out " + o.hold_out : "--region " + o.region) + ": no R2B" +
                        std::to_string(L) + " cell of grid '" + grid_path + "' lies wholly inside" +
                        (o.region.empty() || o.hold_out.empty() ? "" : " both --region and --hold-out"));
  }
  return s;
}

/// regression_cons: the interpolant `kind`'s baseline (idw_cons or linear_cons) plus the covariate
/// terms, fitted on the training split (the cells not held out, a --fit-on region, or a --fit-on
/// file), and with --local-slopes regression_local on the same data; handed to the evaluator.
fe::RegressionFits fit_regression(const EvalOptions& o, fe::CellEvaluator& ev, IconVar& truth,
                                  const std::vector<std::size_t>& tsteps, const coupling::IconGrid& grid,
                                  const std::string& grid_path, const std::vector<char>& held, int L,
                                  coupling::Interpolant kind) {
  const fe::CellLayout& layout = ev.layout();
  std::vector<std::vector<double>> values;
  std::vector<std::string> names;
  for (const auto& spec : o.statics) {
    names.emplace_back();
    values.push_back(read_static(spec, "--static", "covariate", grid, grid_path, &names.back()));
  }
  std::vector<const double*> ptrs;
  for (const auto& v : values) ptrs.push_back(v.data());
  fe::Predictors p = fe::cell_predictors(ev.interpolator(), names, ptrs, kind);
  const coupling::LocalSlopeOptions slopes = local_slope_options(o);
  std::optional<fe::LocalTerms> terms;
  std::vector<std::string> local_names;
  if (slopes.enabled()) {
    terms.emplace(fe::cell_local_terms(layout, names, ptrs, slopes));
    local_names = p.names;
    for (const auto& n : terms->names()) local_names.push_back(n);
  }
  fe::RegressionFits fits = finish_regression(o, false, p.names, local_names, [&] {
    fe::RegressionFitter fitter(p.names);
    std::optional<fe::RegressionFitter> local;
    if (terms) local.emplace(local_names, "regression_local");
    fe::RegressionFitter* lp = local ? &*local : nullptr;
    const fe::LocalTerms* tp = terms ? &*terms : nullptr;
    std::string where;
    if (o.fit_on.empty()) {
      std::vector<char> rest(held.size());
      for (std::size_t q = 0; q < held.size(); ++q) rest[q] = held[q] ? 0 : 1;
      add_cell_fit_data(fitter, lp, tp, truth, tsteps, ev.interpolator(), kind, p, rest);
      where =
          "the R2B" + std::to_string(L) + " cells of " + truth.path() + " not held out (--hold-out " + o.hold_out + ")";
    } else if (fe::is_region_text(o.fit_on)) {
      const auto use = patches_inside(layout, grid, fe::parse_region(o.fit_on, "--fit-on"));
      int64_t n = 0;
      for (char c : use) n += c;
      if (n == 0)
        throw ConfigError("--fit-on " + o.fit_on + ": no R2B" + std::to_string(L) + " cell of grid '" + grid_path +
                          "' lies wholly inside");
      add_cell_fit_data(fitter, lp, tp, truth, tsteps, ev.interpolator(), kind, p, use);
      where = "region " + o.fit_on + " of " + truth.path() + " (" + std::to_string(n) + " R2B" + std::to_string(L) +
              " cells)";
    } else {
      IconVar src(o.fit_on, truth.var(), "fit-on");
      check_on_grid(src, grid, grid_path);
      std::vector<std::size_t> steps;
      for (std::size_t t = 0; t < src.n_times(); ++t) steps.push_back(t);
      add_cell_fit_data(fitter, lp, tp, src, steps, ev.interpolator(), kind, p, {});
      where = o.fit_on + " (" + std::to_string(steps.size()) + " step(s))";
    }
    fe::RegressionFits out{fitter.solve(where), std::nullopt};
    if (local) out.local = local->solve(where);
    return out;
  });
  ev.set_regression(fits.cons, std::move(p));
  if (fits.local) ev.set_local_regression(*fits.local, std::move(*terms));
  return fits;
}

/// The ICON grid of finecast-eval: the prediction's and the truth's cells, the patches of the
/// coarse level, and with the prediction's <var>_coarse a check that the model saw the truth's
/// coarse field.
class IconEvalGrid : public EvalGrid {
 public:
  explicit IconEvalGrid(const EvalOptions& o)
      : o_(o), pred_(o.pred, o.var, "prediction"), truth_(o.truth_path(), o.truth_variable(), "truth") {
    if (truth_.n_members() != 1)
      throw ConfigError(truth_.describe() + " has a further dimension of " + std::to_string(truth_.n_members()) +
                        " entries besides time and cells; the truth must be (time, ncells) or (ncells)");
    if (o.block > 0)
      throw ConfigError("--block is for lat-lon fields; " + pred_.describe() +
                        " is an ICON field (patches are coarse cells: use --coarse-level)");
    interpolant_ = regression_interpolant(o, false);
    grid_path_ = grid_file(o);
    geometry_ = coupling::parse_icon_geometry(o.geometry, "--geometry");
    grid_ = coupling::read_icon_grid(grid_path_, geometry_);
    // Files that carry their cell centres must carry the grid's (the same cells in the same order).
    for (const IconVar* v : {&pred_, &truth_}) check_on_grid(*v, grid_, grid_path_);
  }

  StepAxis truth_axis() const override { return truth_.axis(); }
  StepAxis pred_axis() const override { return pred_.axis(); }

  void prepare(const std::vector<std::size_t>& /*truth_steps*/, const std::vector<std::size_t>& psteps) override {
    hierarchy_ = std::make_unique<IconLevels>(grid_);
    const std::string coarse_var = o_.var + "_coarse";
    if (has_variable(o_.pred, coarse_var)) coarse_ = std::make_unique<IconVar>(o_.pred, coarse_var, "prediction");
    coarse_field_.assign(static_cast<std::size_t>(grid_.n_cells), 0.0);
    if (coarse_) coarse_->read(psteps.front(), 0, coarse_field_.data());
    level_ = coarse_level(o_, *hierarchy_, grid_path_, pred_, coarse_ != nullptr, coarse_field_);
    // The layout: patches, areas, centres, and the levels in between for the bands.
    idw_.neighbours = o_.idw_neighbours;
    idw_.power = o_.idw_power;
    ev_ = std::make_unique<fe::CellEvaluator>(fe::CellLayout(hierarchy_->layout_spec(level_.level)), idw_);
    scored_ = scored_patches(o_, ev_->layout(), grid_, grid_path_, level_.level);
  }
  fe::StepEvaluator& evaluator() override { return *ev_; }
  std::size_t n_values() const override { return static_cast<std::size_t>(truth_.n_cells()); }
  std::size_t n_members() const override { return pred_.n_members(); }
  void read_truth(std::size_t t, double* out) override { truth_.read(t, 0, out); }
  void read_member(std::size_t t, std::size_t m, double* out) override { pred_.read(t, m, out); }

  /// With the prediction's <var>_coarse: the model must have seen the truth's coarse field.
  void check_step(std::size_t tstep, std::size_t pstep, const double* truth) override {
    if (!coarse_) return;
    const fe::CellLayout& layout = ev_->layout();
    const int L = level_.level;
    coarse_->read(pstep, 0, coarse_field_.data());
    const std::vector<double> means = fe::patch_means(layout, truth);
    for (int64_t p = 0; p < layout.n_patches(); ++p) {
      const double model_coarse = coarse_field_[layout.cells(p)[0]];
      if (!std::isfinite(means[p]) || !std::isfinite(model_coarse)) continue;
      const double d = std::abs(model_coarse - means[p]);
      worst_coarse_ = std::max(worst_coarse_, d);
      // Float fields coarsened in double agree to a few float roundings.
      if (d > 1e-5 * std::max(1.0, std::abs(means[p])))
        throw ConfigError("the prediction was not made from this truth: at " + truth_.describe() + " step " +
                          std::to_string(tstep) + ", R2B" + std::to_string(L) + " cell " + std::to_string(p) +
                          " has the area-weighted mean " + std::to_string(means[p]) + " but prediction '" + o_.pred +
                          "' variable '" + coarse_->var() + "' (the coarse field the model was given) holds " +
                          std::to_string(model_coarse));
    }
  }

  const std::vector<char>& scored() const override { return scored_.mask; }
  const std::vector<char>& held() const override { return scored_.held; }

  fe::RegressionFits fit_regression(const std::vector<std::size_t>& tsteps) override {
    return eval::cli::fit_regression(o_, *ev_, truth_, tsteps, grid_, grid_path_, scored_.held, level_.level,
                                     interpolant_);
  }
  std::string weak_covariates_hint() const override {
    return std::string("the covariates and the data must be on the same geometry; this run uses ") +
           (uniform() ? "--geometry uniform" : "the grid file's (--geometry file)") +
           ", and finecast-host --write-orography takes --geometry too";
  }

  MetaRows layout_meta() const override {
    return {{"grid", "icon"},
            {"grid_file", grid_path_},
            {"grid_geometry", uniform() ? "uniform" : "file"},
            {"fine_level", std::to_string(hierarchy_->fine_level())},
            {"coarse_level", std::to_string(level_.level)},
            {"coarse_level_source", level_.source},
            {"region", scored_.region_text}};
  }
  MetaRows method_meta() const override {
    const std::string L = std::to_string(level_.level), coarse_var = o_.var + "_coarse";
    return {{"weights", uniform() ? "cell_area of the uniform geometry" : "cell_area of the grid file"},
            {"coarse", "area-weighted R2B" + L + " cell means of the truth"},
            {"coarse_check", coarse_ ? "max |" + coarse_var + " - coarse| = " + std::to_string(worst_coarse_)
                                     : "no " + coarse_var + " in the prediction"},
            {"idw", std::to_string(idw_.neighbours) + " nearest R2B" + L + " centres, weights 1/d^" +
                        std::to_string(idw_.power)},
            {"spectrum", "variance by refinement level (no Fourier spectrum on ICON cells)"}};
  }

  void print_summary(const fe::EvalReport& rep, std::size_t n_steps) const override {
    const int F = hierarchy_->fine_level(), L = level_.level;
    std::cout << "  ICON grid " << grid_path_ << (uniform() ? " (uniform geometry)" : "") << ": R2B" << F << " ("
              << grid_.n_cells << " cells) in R2B" << L << " patches of " << ev_->layout().patch_size()
              << " (coarse level from " << level_.source << "), " << scored_.count << " of "
              << ev_->layout().n_patches() << " patches scored per step, " << n_steps << " time step(s), "
              << pred_.n_members() << " member(s), weights cell_area\n";
    if (coarse_)
      std::cout << "  " << o_.var << "_coarse matches the truth's R2B" << L << " means (max difference "
                << worst_coarse_ << ")\n";
    const int64_t possible = scored_.count * static_cast<int64_t>(n_steps);
    if (rep.blocks_valid < possible)
      std::cout << "  " << possible - rep.blocks_valid << " patch-steps skipped (missing truth values)\n";
  }
  void print_notes() const override {
    const int F = hierarchy_->fine_level(), L = level_.level;
    std::cout << "  spectra: variance by refinement level R2B" << L + 1 << "..R2B" << F
              << "; hf_ratio = the finest level's (R2B" << F - 1 << " -> R2B" << F << ") energy over the truth's\n";
  }
  void report_masked() const override {
    truth_.report_masked();
    pred_.report_masked();
  }
  std::vector<std::string> field_dims() const override { return {"ncells"}; }
  std::vector<std::size_t> field_shape() const override { return {static_cast<std::size_t>(grid_.n_cells)}; }
  /// coarse_cell: the index of each cell's R2B<L> patch (the evaluator's patch order); cell_area:
  /// the weight of each cell in every score; scored: 1 where the cell's patch was scored, else 0.
  std::vector<std::pair<std::string, std::vector<double>>> layout_fields() const override {
    const fe::CellLayout& layout = ev_->layout();
    std::vector<double> patch(static_cast<std::size_t>(layout.size())), area(patch.size()), scored(patch.size());
    for (int64_t c = 0; c < layout.size(); ++c) {
      const auto i = static_cast<std::size_t>(c);
      const int64_t p = layout.patch_of(c);
      patch[i] = static_cast<double>(p);
      area[i] = layout.w(c);
      scored[i] = scored_.mask.empty() || scored_.mask[static_cast<std::size_t>(p)] ? 1.0 : 0.0;
    }
    return {{"coarse_cell", std::move(patch)}, {"cell_area", std::move(area)}, {"scored", std::move(scored)}};
  }

 private:
  bool uniform() const { return geometry_ == coupling::IconGeometry::kUniform; }

  const EvalOptions& o_;
  IconVar pred_, truth_;
  std::string grid_path_;
  coupling::IconGeometry geometry_{};
  coupling::IconGrid grid_;
  std::unique_ptr<IconLevels> hierarchy_;
  std::unique_ptr<IconVar> coarse_;  ///< the prediction's <var>_coarse, when it has one
  std::vector<double> coarse_field_;
  CoarseLevel level_;
  fe::IdwOptions idw_;
  coupling::Interpolant interpolant_ = coupling::Interpolant::kAuto;  ///< --regression-interpolant, resolved
  std::unique_ptr<fe::CellEvaluator> ev_;
  ScoredPatches scored_;
  double worst_coarse_ = 0.0;
};

}  // namespace

std::unique_ptr<EvalGrid> make_icon_grid(const EvalOptions& o) { return std::make_unique<IconEvalGrid>(o); }

}  // namespace finecast::eval::cli
