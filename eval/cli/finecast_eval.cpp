// SPDX-License-Identifier: BSD-3-Clause
// finecast-eval: scores a downscaled ensemble and interpolation baselines against a fine truth.
// This file: the command line and the lat-lon grid (LatLonEvalGrid); the ICON grid is eval_icon.cpp's,
// the one driver both run through is run() in eval_common.cpp.
#include <netcdf.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cmath>
#include <iostream>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "common/cli.hpp"
#include "common/error.hpp"
#include "eval/evaluation.hpp"
#include "eval/report.hpp"
#include "eval/window.hpp"
#include "coupling/grid/hold_out_mask.hpp"
#include "coupling/grid/icon_geometry.hpp"
#include "coupling/io/field_reader.hpp"
#include "coupling/io/plausibility.hpp"
#include "eval/cli/eval_common.hpp"
#include "coupling/io/step_select.hpp"

namespace fe = finecast::eval;
namespace ft = finecast::eval::cli;
using finecast::ConfigError;
using finecast::IoError;

namespace {

/// A lat-lon field read through coupling/io's FieldReader: [time,] [member,] y, x. FieldReader
/// treats the member dimension as its one "level" dimension, so each member has a reader.
class GridVar {
 public:
  GridVar(const std::string& path, const std::string& var, const std::string& role);

  std::string describe() const { return role + " '" + path + "' variable '" + var + "'"; }
  /// Reads rows y0..y0+ny-1, columns x0..x0+nx-1 of step t, member m (NaN = missing).
  void read(std::size_t t, std::size_t m, int y0, int ny, int x0, int nx, double* out);
  /// The ISO date of step t, or "" when the file has no time coordinate.
  std::string date(std::size_t t) const;
  /// Values the readers made missing, one line per file and member (ft::report_masked).
  void report_masked() const { ft::report_masked(readers_); }
  /// The step that --time `text` names: a 0-based index or an ISO 8601 date.
  std::size_t step(const std::string& text) const {
    return static_cast<std::size_t>(finecast::coupling::select_step(readers_.front(), text));
  }

  std::string path, var, role;
  std::size_t n_times = 1, n_members = 1;
  int ny = 0, nx = 0;
  std::string y_name, x_name, y_units;
  std::vector<double> y, x;  ///< coordinate values (empty when the file has none)
  int recorded_block = 0;    ///< global attribute finecast_block (0 = absent)

 private:
  std::vector<finecast::coupling::FieldReader> readers_;
  std::vector<float> buf_;
};

/// A numeric or numeric-text global attribute; 0 when absent or not a number.
int global_int(const std::string& path, const char* name) {
  int ncid = -1;
  if (nc_open(path.c_str(), NC_NOWRITE, &ncid) != NC_NOERR) return 0;
  nc_type type = NC_NAT;
  size_t len = 0;
  double value = 0;
  if (nc_inq_att(ncid, NC_GLOBAL, name, &type, &len) == NC_NOERR && len > 0) {
    if (type == NC_CHAR) {
      std::string s(len, '\0');
      if (nc_get_att_text(ncid, NC_GLOBAL, name, s.data()) == NC_NOERR) value = std::atof(s.c_str());
    } else if (type != NC_STRING && len == 1) {
      nc_get_att_double(ncid, NC_GLOBAL, name, &value);
    }
  }
  nc_close(ncid);
  return static_cast<int>(std::lround(value));
}

GridVar::GridVar(const std::string& p, const std::string& name, const std::string& r) : path(p), var(name), role(r) {
  using finecast::coupling::FieldReader;
  try {
    readers_.emplace_back(path, var, 0);
  } catch (const finecast::Error& e) {
    throw IoError(role + " file: " + e.what());
  }
  const FieldReader& f = readers_.front();
  const std::string expected =
      role != "prediction" ? "(time, lat, lon) or (lat, lon)" : "(time, member, lat, lon) or (member, lat, lon)";
  if (f.grid_kind() == FieldReader::GridKind::kUnstructured)
    throw ConfigError(describe() + " is on an unstructured grid (dimension '" + f.spatial_dims().at(0) +
                      "') but the prediction is a lat-lon field: both must be on the same grid, "
                      "lat-lon " +
                      expected + " or ICON (time, ncells)");
  n_times = static_cast<std::size_t>(f.n_times());
  n_members = static_cast<std::size_t>(f.n_levels());
  if ((role == "truth" || role == "covariate" || role == "fit-on") && n_members != 1)
    throw ConfigError(describe() + " has a further dimension of " + std::to_string(n_members) +
                      " entries besides time and space; the truth must be " + expected);
  ny = static_cast<int>(f.spatial_shape().at(0));
  nx = static_cast<int>(f.spatial_shape().at(1));
  y_name = f.spatial_dims().at(0);
  x_name = f.spatial_dims().at(1);
  try {
    const finecast::coupling::OutputGrid g = f.output_grid();
    y = g.y.values;
    x = g.x.values;
    const auto u = g.y.text_attrs.find("units");
    if (u != g.y.text_attrs.end()) y_units = u->second;
  } catch (const IoError&) {
    // No 1-D coordinate variables: the grids are then matched by shape alone.
  }
  for (std::size_t m = 1; m < n_members; ++m) readers_.emplace_back(path, var, static_cast<int>(m));
  recorded_block = global_int(path, "finecast_block");
}

std::string GridVar::date(std::size_t t) const {
  return readers_.front().has_time_axis() ? readers_.front().time_string(static_cast<int64_t>(t)) : "";
}

void GridVar::read(std::size_t t, std::size_t m, int y0, int nyr, int x0, int nxr, double* out) {
  buf_.resize(static_cast<std::size_t>(ny) * nx);
  readers_.at(m).read(static_cast<int64_t>(t), buf_.data());
  for (int i = 0; i < nyr; ++i)
    for (int j = 0; j < nxr; ++j)
      out[static_cast<std::size_t>(i) * nxr + j] = buf_[static_cast<std::size_t>(y0 + i) * nx + x0 + j];
}

std::string range_text(const std::vector<double>& v) {
  if (v.empty()) return "no coordinate";
  std::ostringstream os;
  os << v.front() << ".." << v.back();
  return os.str();
}

bool looks_like_latitude(const GridVar& g) {
  std::string n = g.y_name;
  std::transform(n.begin(), n.end(), n.begin(), ::tolower);
  return g.y_units.rfind("degrees_north", 0) == 0 || g.y_units == "degrees" || g.y_units == "degree" ||
         n.find("lat") != std::string::npos;
}

std::string grid_text(const GridVar& g) {
  return g.describe() + " is " + std::to_string(g.ny) + " x " + std::to_string(g.nx) + " (" + g.y_name + " " +
         range_text(g.y) + ", " + g.x_name + " " + range_text(g.x) + ")";
}

/// Where `ref`'s grid starts inside `outer`'s (matched by coordinates; by shape when either has
/// none). Throws ConfigError naming both files when `outer` does not contain `ref`.
std::pair<int, int> locate(const GridVar& outer, const GridVar& ref, const std::string& what) {
  if (!outer.y.empty() && !ref.y.empty() && !outer.x.empty() && !ref.x.empty()) {
    const int oy = fe::find_offset(outer.y, ref.y), ox = fe::find_offset(outer.x, ref.x);
    if (oy >= 0 && ox >= 0) return {oy, ox};
  } else if (outer.ny == ref.ny && outer.nx == ref.nx) {
    return {0, 0};
  }
  throw ConfigError("grids do not match: " + grid_text(outer) + " but " + grid_text(ref) + "; " + what);
}

/// The block layout of a window of `g` (rows y0.., columns x0..): cos(lat) weights when the
/// rows are latitudes; periodic when the window closes a longitude circle.
fe::BlockLayout window_layout(const GridVar& g, int y0, int ny, int x0, int nx, int k) {
  fe::BlockLayout layout;
  layout.ny = ny;
  layout.nx = nx;
  layout.k = k;
  if (!g.y.empty() && looks_like_latitude(g))
    layout.weight = fe::latlon_weights(std::vector<double>(g.y.begin() + y0, g.y.begin() + y0 + ny), nx);
  layout.periodic_x = x0 == 0 && nx == g.nx && !g.x.empty() && fe::is_global_lon(g.x);
  return layout;
}

/// The --static covariates, opened once.
struct Covariates {
  std::vector<std::string> names;
  std::vector<std::unique_ptr<GridVar>> vars;

  explicit Covariates(const std::vector<std::string>& specs) {
    for (const auto& spec : specs) {
      const auto [file, var] = ft::split_file_var(spec, "--static");
      vars.push_back(std::make_unique<GridVar>(file, var, "covariate"));
      names.push_back(var);
    }
  }
  /// Each covariate's values (first step) on the window rows y0.., columns x0.. of `ref`.
  std::vector<std::vector<double>> read(const GridVar& ref, int y0, int ny, int x0, int nx) {
    std::vector<std::vector<double>> out;
    for (auto& v : vars) {
      const auto [oy, ox] =
          locate(*v, ref, "a --static covariate must cover the grid of the fields it is used with (same coordinates)");
      if (v->n_times > 1) std::cout << "  " << v->describe() << " has " << v->n_times << " steps; the first is used\n";
      out.emplace_back(static_cast<std::size_t>(ny) * nx);
      v->read(0, 0, oy + y0, ny, ox + x0, nx, out.back().data());
    }
    return out;
  }
};

std::vector<const double*> pointers(const std::vector<std::vector<double>>& v) {
  std::vector<const double*> p;
  for (const auto& x : v) p.push_back(x.data());
  return p;
}

/// Blocks of a window (rows y0.., columns x0.. of `g`) whose cells all lie inside the region.
std::vector<char> blocks_in_region(const GridVar& g, const fe::Region& reg, int y0, int ny, int x0, int nx, int k,
                                   const std::string& option) {
  if (g.y.empty() || g.x.empty())
    throw ConfigError(option + " with a region needs coordinate variables, but " + g.describe() + " has none");
  const int nby = ny / k, nbx = nx / k;
  std::vector<char> mask(static_cast<std::size_t>(nby) * nbx, 0);
  for (int by = 0; by < nby; ++by)
    for (int bx = 0; bx < nbx; ++bx) {
      bool inside = true;
      for (int i = by * k; i < (by + 1) * k && inside; ++i) inside = reg.contains_lat(g.y[y0 + i]);
      for (int j = bx * k; j < (bx + 1) * k && inside; ++j) inside = reg.contains_lon(g.x[x0 + j]);
      mask[static_cast<std::size_t>(by) * nbx + bx] = inside ? 1 : 0;
    }
  return mask;
}

/// --hold-out as a block mask of the scored window of `pred`: regions (blocks wholly inside one), or
/// FILE:VAR (blocks with any non-zero cell).
std::vector<char> hold_out_blocks(const ft::EvalOptions& o, const GridVar& pred, int y0, int ny, int x0, int nx,
                                  int k) {
  std::vector<char> mask;
  if (fe::is_regions_text(o.hold_out)) {
    mask = fe::union_of_boxes(fe::parse_regions(o.hold_out, "--hold-out"), [&](const fe::Region& r) {
      return blocks_in_region(pred, r, y0, ny, x0, nx, k, "--hold-out");
    });
  } else {
    const auto [file, var] = ft::split_file_var(o.hold_out, "--hold-out");
    GridVar m(file, var, "covariate");
    const auto [oy, ox] = locate(m, pred, "the --hold-out mask must cover the prediction's grid");
    std::vector<double> v(static_cast<std::size_t>(ny) * nx);
    m.read(0, 0, oy + y0, ny, ox + x0, nx, v.data());
    // The plugin's rule for train.hold_out FILE:VAR (a block with any flagged cell).
    const int nbx = nx / k;
    mask = finecast::coupling::patches_held_out(
        v.data(), static_cast<int64_t>(v.size()), static_cast<int64_t>(ny / k) * nbx,
        [&](int64_t i) { return static_cast<int64_t>(i / nx / k * nbx + i % nx / k); });
  }
  int64_t held = 0;
  for (char c : mask) held += c;
  if (held == 0) throw ConfigError("--hold-out " + o.hold_out + ": no block of the scored window is held out");
  return mask;
}

/// The fitters of the regression baselines: regression_cons's, and regression_local's when the
/// local slopes are on; `kind` their interpolant (--regression-interpolant).
struct Fitters {
  fe::RegressionFitter cons;
  std::optional<fe::RegressionFitter> local;
  finecast::coupling::LocalSlopeOptions slopes;
  finecast::coupling::Interpolant kind;
};

/// Adds to the fitters the cells of the blocks flagged in `block_use` (empty = all) of a window of
/// `src`, for each of `steps`: residual = truth - the interpolant's baseline (bicubic_cons or
/// bspline_cons) of the block means; regression_local's slopes from the same block means over the
/// whole window.
void add_fit_data(Fitters& fitters, GridVar& src, Covariates& cov, int y0, int ny, int x0, int nx, int k,
                  const std::vector<std::size_t>& steps, const std::vector<char>& block_use) {
  const fe::BlockLayout layout = window_layout(src, y0, ny, x0, nx, k);
  layout.validate();
  const auto values = cov.read(src, y0, ny, x0, nx);
  const fe::Predictors p = fe::block_predictors(layout, cov.names, pointers(values), fitters.kind);
  std::optional<fe::LocalTerms> terms;
  if (fitters.local) terms.emplace(fe::block_local_terms(layout, cov.names, pointers(values), fitters.slopes));
  std::vector<char> use;
  if (!block_use.empty()) {
    use.resize(layout.size());
    for (int i = 0; i < ny; ++i)
      for (int j = 0; j < nx; ++j)
        use[static_cast<std::size_t>(i) * nx + j] = block_use[static_cast<std::size_t>(i / k) * layout.nbx() + j / k];
  }
  std::vector<double> truth(layout.size());
  for (std::size_t t : steps) {
    src.read(t, 0, y0, ny, x0, nx, truth.data());
    const std::vector<double> coarse = fe::block_means(layout, truth.data());
    const std::vector<double> base = fe::run_baseline(layout, coarse, fe::block_regression_base(fitters.kind));
    std::vector<double> residual(layout.size());
    for (std::size_t i = 0; i < residual.size(); ++i) residual[i] = truth[i] - base[i];
    fitters.cons.add(p, residual, layout.weight, use);
    if (terms) fitters.local->add(terms->extend(p, coarse), residual, layout.weight, use);
  }
}

/// Whether the prediction is an unstructured (ICON) field; false also when it cannot be read
/// (the lat-lon path then reports why).
bool prediction_is_icon(const ft::EvalOptions& o) {
  try {
    const finecast::coupling::FieldReader f(o.pred, o.var, 0);
    return f.grid_kind() == finecast::coupling::FieldReader::GridKind::kUnstructured;
  } catch (const finecast::Error&) {
    return false;
  }
}

/// The ICON-only options must not be given for a lat-lon field.
void refuse_icon_options(const ft::EvalOptions& o, const GridVar& pred) {
  const ft::EvalOptions defaults;
  const char* icon_option = !o.grid.empty()                               ? "--grid"
                            : !o.geometry.empty()                         ? "--geometry"
                            : o.coarse_level >= 0                         ? "--coarse-level"
                            : o.idw_neighbours != defaults.idw_neighbours ? "--idw-neighbours"
                            : o.idw_power != defaults.idw_power           ? "--idw-power"
                                                                          : nullptr;
  if (icon_option)
    throw ConfigError(std::string(icon_option) + " is for ICON fields; " + pred.describe() +
                      " is a lat-lon field (blocks of k x k cells: use --block)");
}

/// Where the prediction grid sits in the truth grid (row and column offsets): the same grid or
/// a piece of it.
std::pair<int, int> prediction_offset(const GridVar& truth, const GridVar& pred) {
  auto grid_text = [](const GridVar& g) {
    return g.describe() + " is " + std::to_string(g.ny) + " x " + std::to_string(g.nx) + " (" + g.y_name + " " +
           range_text(g.y) + ", " + g.x_name + " " + range_text(g.x) + ")";
  };
  const std::string mismatch =
      "grids do not match: " + grid_text(pred) + " but " + grid_text(truth) +
      "; the prediction must be on the truth's grid or on a part of it cropped to whole blocks";
  if (!truth.y.empty() && !pred.y.empty() && !truth.x.empty() && !pred.x.empty()) {
    const int ty0 = fe::find_offset(truth.y, pred.y), tx0 = fe::find_offset(truth.x, pred.x);
    if (ty0 < 0 || tx0 < 0) throw ConfigError(mismatch);
    return {ty0, tx0};
  }
  if (truth.ny != pred.ny || truth.nx != pred.nx) throw ConfigError(mismatch);
  return {0, 0};
}

/// The block size: --block, or the one the prediction records (16 when neither says); it must
/// tile the prediction grid.
int block_size(const ft::EvalOptions& o, const GridVar& pred) {
  const int recorded = pred.recorded_block;
  const int k = o.block > 0 ? o.block : (recorded > 0 ? recorded : 16);
  if (o.block > 0 && recorded > 0 && recorded != o.block)
    throw ConfigError("--block " + std::to_string(o.block) + " does not match the block size " +
                      std::to_string(recorded) + " recorded in prediction '" + pred.path + "'");
  if (pred.ny % k != 0 || pred.nx % k != 0)
    throw ConfigError("--block " + std::to_string(k) + " does not tile the prediction grid " + std::to_string(pred.ny) +
                      " x " + std::to_string(pred.nx) + " of '" + pred.path +
                      "' (a downscaled field covers whole blocks: is --block the block size it was made with?)");
  return k;
}

/// The scored window in prediction-grid indices: all of it, or the whole blocks inside --region.
struct Window {
  int y0 = 0, x0 = 0, ny = 0, nx = 0;
  std::string region_text = "all";
};

Window scored_window(const ft::EvalOptions& o, const GridVar& pred, int k) {
  Window w{0, 0, pred.ny, pred.nx, "all"};
  if (o.region.empty()) return w;
  const fe::Region reg = fe::parse_region(o.region);
  if (pred.y.empty() || pred.x.empty())
    throw ConfigError("--region needs coordinate variables, but prediction '" + pred.path + "' has none for " +
                      pred.y_name + "/" + pred.x_name);
  const auto [by0, by1] = fe::blocks_inside(
      pred.y, k, [&](double v) { return reg.contains_lat(v); }, pred.y_name);
  const auto [bx0, bx1] = fe::blocks_inside(
      pred.x, k, [&](double v) { return reg.contains_lon(v); }, pred.x_name);
  w.y0 = by0 * k;
  w.x0 = bx0 * k;
  w.ny = (by1 - by0) * k;
  w.nx = (bx1 - bx0) * k;
  w.region_text = o.region;
  return w;
}

/// regression_cons (and regression_local) on the interpolant `kind`: the covariates on the window,
/// coefficients fitted on the training split (the window's blocks not held out, a --fit-on region
/// of the truth, or a --fit-on file); handed to the evaluator.
fe::RegressionFits fit_regression(const ft::EvalOptions& o, fe::Evaluator& ev, const fe::BlockLayout& layout,
                                  GridVar& truth, const GridVar& pred, const Window& w, int ty0, int tx0, int k,
                                  const std::vector<std::size_t>& tsteps, const std::vector<char>& scored,
                                  finecast::coupling::Interpolant kind) {
  Covariates cov(o.statics);
  const auto values = cov.read(pred, w.y0, w.ny, w.x0, w.nx);
  fe::Predictors p = fe::block_predictors(layout, cov.names, pointers(values), kind);
  const finecast::coupling::LocalSlopeOptions slopes = ft::local_slope_options(o);
  std::optional<fe::LocalTerms> terms;
  std::vector<std::string> local_names;
  if (slopes.enabled()) {
    terms.emplace(fe::block_local_terms(layout, cov.names, pointers(values), slopes));
    local_names = p.names;
    for (const auto& n : terms->names()) local_names.push_back(n);
  }
  fe::RegressionFits fits = ft::finish_regression(o, true, p.names, local_names, [&] {
    Fitters fitters{fe::RegressionFitter(p.names), std::nullopt, slopes, kind};
    if (terms) fitters.local.emplace(local_names, "regression_local");
    std::string where;
    if (o.fit_on.empty()) {
      // The scored window's blocks that are not held out, same steps.
      std::vector<char> rest(scored.size());
      for (std::size_t b = 0; b < scored.size(); ++b) rest[b] = scored[b] ? 0 : 1;
      add_fit_data(fitters, truth, cov, ty0 + w.y0, w.ny, tx0 + w.x0, w.nx, k, tsteps, rest);
      where = "the blocks of " + truth.path + " not held out (--hold-out " + o.hold_out + ")";
    } else if (fe::is_region_text(o.fit_on)) {
      // Whole blocks of the truth file, aligned with the prediction's blocks.
      const int y0 = (ty0 + w.y0) % k, x0 = (tx0 + w.x0) % k;
      const int fny = (truth.ny - y0) / k * k, fnx = (truth.nx - x0) / k * k;
      const auto use = blocks_in_region(truth, fe::parse_region(o.fit_on, "--fit-on"), y0, fny, x0, fnx, k, "--fit-on");
      int64_t n = 0;
      for (char c : use) n += c;
      if (n == 0)
        throw ConfigError("--fit-on " + o.fit_on + ": no whole block of " + truth.describe() + " lies inside");
      add_fit_data(fitters, truth, cov, y0, fny, x0, fnx, k, tsteps, use);
      where = "region " + o.fit_on + " of " + truth.path + " (" + std::to_string(n) + " blocks)";
    } else {
      GridVar src(o.fit_on, truth.var, "fit-on");
      std::vector<std::size_t> steps;
      for (std::size_t t = 0; t < src.n_times; ++t) steps.push_back(t);
      if (src.ny < k || src.nx < k)
        throw ConfigError("--fit-on " + o.fit_on + ": " + src.describe() + " is smaller than one block of " +
                          std::to_string(k));
      add_fit_data(fitters, src, cov, 0, src.ny / k * k, 0, src.nx / k * k, k, steps, {});
      where = o.fit_on + " (" + std::to_string(src.ny / k * (src.nx / k)) + " blocks, " + std::to_string(steps.size()) +
              " step(s))";
    }
    fe::RegressionFits out{fitters.cons.solve(where), std::nullopt};
    if (fitters.local) out.local = fitters.local->solve(where);
    return out;
  });
  ev.set_regression(fits.cons, std::move(p));
  if (fits.local) ev.set_local_regression(*fits.local, std::move(*terms));
  return fits;
}

/// The lat-lon grid of finecast-eval: a window of whole k x k blocks of the prediction, and the
/// same cells of the truth (the prediction's grid or a piece of it).
class LatLonEvalGrid : public ft::EvalGrid {
 public:
  explicit LatLonEvalGrid(const ft::EvalOptions& o)
      : o_(o), truth_(o.truth_path(), o.truth_variable(), "truth"), pred_(o.pred, o.var, "prediction") {
    refuse_icon_options(o, pred_);
    interpolant_ = ft::regression_interpolant(o, true);
    std::tie(ty0_, tx0_) = prediction_offset(truth_, pred_);
    k_ = block_size(o, pred_);
    w_ = scored_window(o, pred_, k_);
  }

  ft::StepAxis truth_axis() const override { return axis(truth_); }
  ft::StepAxis pred_axis() const override { return axis(pred_); }

  void prepare(const std::vector<std::size_t>& /*truth_steps*/,
               const std::vector<std::size_t>& /*pred_steps*/) override {
    // The layout: weights and periodicity of the window; with --hold-out only those blocks score.
    ev_ = std::make_unique<fe::Evaluator>(window_layout(pred_, w_.y0, w_.ny, w_.x0, w_.nx, k_));
    if (!o_.hold_out.empty()) scored_ = hold_out_blocks(o_, pred_, w_.y0, w_.ny, w_.x0, w_.nx, k_);
  }
  fe::StepEvaluator& evaluator() override { return *ev_; }
  std::size_t n_values() const override { return ev_->layout().size(); }
  std::size_t n_members() const override { return pred_.n_members; }
  void read_truth(std::size_t t, double* out) override {
    truth_.read(t, 0, ty0_ + w_.y0, w_.ny, tx0_ + w_.x0, w_.nx, out);
  }
  void read_member(std::size_t t, std::size_t m, double* out) override {
    pred_.read(t, m, w_.y0, w_.ny, w_.x0, w_.nx, out);
  }
  // The hold-out blocks are the scored ones and those the regression's training split leaves out.
  const std::vector<char>& scored() const override { return scored_; }
  const std::vector<char>& held() const override { return scored_; }

  fe::RegressionFits fit_regression(const std::vector<std::size_t>& tsteps) override {
    return ::fit_regression(o_, *ev_, ev_->layout(), truth_, pred_, w_, ty0_, tx0_, k_, tsteps, scored_, interpolant_);
  }
  std::string weak_covariates_hint() const override { return "check that the --static files are on the truth's grid"; }

  ft::MetaRows layout_meta() const override {
    return {{"block", std::to_string(k_)},
            {"region", w_.region_text},
            {"truth_y0", std::to_string(ty0_ + w_.y0)},
            {"truth_x0", std::to_string(tx0_ + w_.x0)},
            {"pred_y0", std::to_string(w_.y0)},
            {"pred_x0", std::to_string(w_.x0)}};
  }
  ft::MetaRows method_meta() const override {
    return {{"weights", weights_text()},
            {"periodic_x", ev_->layout().periodic_x ? "true" : "false"},
            {"coarse", "area-weighted block means of the truth"}};
  }

  void print_summary(const fe::EvalReport& rep, std::size_t n_steps) const override {
    std::cout << "  window " << w_.ny << " x " << w_.nx << " (" << pred_.y_name << " rows " << w_.y0 << ".."
              << w_.y0 + w_.ny - 1 << ", " << pred_.x_name << " columns " << w_.x0 << ".." << w_.x0 + w_.nx - 1
              << " of the prediction), block " << k_ << ", " << rep.blocks_total << " blocks per step, " << n_steps
              << " time step(s), " << pred_.n_members << " member(s), weights " << weights_text() << "\n";
    if (!scored_.empty()) {
      int64_t held = 0;
      for (char c : scored_) held += c;
      std::cout << "  --hold-out " << o_.hold_out << ": " << held << " of " << scored_.size()
                << " blocks scored per step\n";
    } else if (rep.blocks_valid < rep.blocks_total * static_cast<int64_t>(n_steps))
      std::cout << "  " << rep.blocks_total * static_cast<int64_t>(n_steps) - rep.blocks_valid
                << " block-steps skipped (missing truth values)\n";
  }
  void report_masked() const override {
    truth_.report_masked();
    pred_.report_masked();
  }
  std::vector<std::string> field_dims() const override { return {pred_.y_name, pred_.x_name}; }
  std::vector<std::size_t> field_shape() const override {
    return {static_cast<std::size_t>(w_.ny), static_cast<std::size_t>(w_.nx)};
  }

 private:
  static ft::StepAxis axis(const GridVar& g) {
    return {g.describe(), g.n_times, [&g](std::size_t t) { return g.date(t); },
            [&g](const std::string& text) { return g.step(text); }};
  }
  std::string weights_text() const { return ev_->layout().weight.empty() ? "uniform" : "cos(" + pred_.y_name + ")"; }

  const ft::EvalOptions& o_;
  GridVar truth_, pred_;
  int ty0_ = 0, tx0_ = 0, k_ = 0;
  finecast::coupling::Interpolant interpolant_ = finecast::coupling::Interpolant::kAuto;  ///< resolved
  Window w_;
  std::unique_ptr<fe::Evaluator> ev_;
  std::vector<char> scored_;
};

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "finecast-eval: scores a downscaled ensemble against the fine truth, next to interpolation "
      "baselines computed from the truth's coarse means. Lat-lon fields: k x k blocks, baselines "
      "nearest, bilinear, bicubic and their conservative variants. ICON fields (ncells): the "
      "coarse R2B<L> cells of --grid, baselines nearest and inverse-distance weighting and their "
      "conservative variants. Prints a table; --json adds the spectra."};
  ft::EvalOptions o;
  app.add_option("--truth", o.truth,
                 "fine truth NetCDF: (time, lat, lon), (lat, lon), (time, ncells) or (ncells) "
                 "(default: the prediction file's <var>_host, which plugin outputs carry)");
  app.add_option("--pred", o.pred,
                 "prediction NetCDF: (time, member, lat, lon), (member, lat, lon), "
                 "(time, member, ncells) or (member, ncells)")
      ->required();
  app.add_option("--var", o.var, "variable name in the prediction (and the truth)")->required();
  app.add_option("--truth-var", o.truth_var, "variable name in the truth when it differs");
  app.add_option("--block", o.block,
                 "lat-lon: block edge k in fine cells (default: recorded in the prediction, else 16)")
      ->check(finecast::cli::positive());
  app.add_option("--grid", o.grid, "ICON: the fine ICON grid file (default: the prediction's grid_file_uri)");
  app.add_option("--geometry", o.geometry,
                 std::string(finecast::coupling::kIconGeometryHelp) +
                     " (default: file; every file that carries clon/clat must have the same centres)")
      ->check(CLI::IsMember({"file", "uniform"}));
  app.add_option("--coarse-level", o.coarse_level,
                 "ICON: patches are the R2B<L> cells (default: the coarsest level on whose cells "
                 "the prediction's <var>_coarse is constant)")
      ->check(finecast::cli::non_negative());
  app.add_option("--idw-neighbours", o.idw_neighbours, "ICON: coarse cell centres in the inverse-distance baselines")
      ->capture_default_str()
      ->check(finecast::cli::positive());
  app.add_option("--idw-power", o.idw_power, "ICON: the inverse-distance weights are 1/d^power")
      ->capture_default_str()
      ->check(finecast::cli::positive());
  app.add_option("--region", o.region,
                 "lat0,lat1,lon0,lon1 in degrees: score only the whole blocks (coarse cells) inside");
  finecast::cli::add_time(app, o.time, "score only this step of the truth");
  app.add_option("--static", o.statics,
                 "FILE:VAR, a fine static covariate (e.g. the surface height) on the truth's grid or a larger "
                 "one (matched by coordinates); repeatable. Adds the baseline regression_cons: the conservative "
                 "interpolant plus a least-squares fit of the fine residual on each covariate's within-block "
                 "anomaly and its deviation from its own conservative interpolant");
  app.add_option("--fit-on", o.fit_on,
                 "where regression_cons is fitted (the training split): a region lat0,lat1,lon0,lon1 of the "
                 "truth file, or a NetCDF file holding the truth variable on the covariates' grid (all its steps)");
  app.add_option(
      "--hold-out", o.hold_out,
      "score only the held-out blocks (coarse cells): a region lat0,lat1,lon0,lon1 (whole blocks "
      "inside), several joined by ';' (whole blocks inside one), or FILE:VAR, a mask on the prediction's "
      "grid (non-zero = held out); regression_cons is then fitted on the rest unless --fit-on says otherwise");
  app.add_option(
      "--baselines-out", o.baselines_out,
      "write every baseline's field at every scored step to this NetCDF file (along time; for figures; ICON "
      "grids also each cell's patch, coarse_cell, its weight, cell_area, and scored: 1 in the scored patches)");
  app.add_option("--local-slopes", o.local_slopes,
                 "RINGS: with --static, adds the baseline regression_local: regression_cons plus, per covariate, "
                 "its deviation times the local slope of the coarse truth on the covariates' block means over the "
                 "blocks (coarse cells) within RINGS edge steps; 0 = off")
      ->capture_default_str();
  app.add_option("--local-slope-ridge", o.local_slope_ridge,
                 "R >= 0: the ridge of regression_local's local fits, which shrinks the slopes toward 0: R times "
                 "the window's cells times each covariate's variance")
      ->capture_default_str();
  app.add_option("--local-slope-static", o.local_slope_static,
                 "NAME[,NAME...]: the covariates (VAR of --static) that get a local term in regression_local "
                 "(default: all; the slopes are always fitted on all of them jointly)")
      ->delimiter(',');
  app.add_option("--regression-interpolant", o.regression_interpolant,
                 "the conservative interpolant regression_cons and regression_local are fitted on (and the "
                 "covariates' deviations taken from), named as the plugin's patch.interpolant: auto (bicubic on "
                 "lat-lon, idw on ICON), bicubic or bspline (lat-lon: bicubic_cons, bspline_cons), idw, linear or "
                 "idw_linear (ICON: idw_cons, linear_cons, idw_linear_cons, their mean); give the plugin's value to "
                 "score its patch.residual regression base")
      ->capture_default_str();
  app.add_option("--regression-out", o.regression_out,
                 "write the regression baselines' coefficients as JSON to this file: regression_cons's fit, "
                 "or with --local-slopes {\"regression_cons\": fit, \"regression_local\": fit}");
  app.add_option("--regression-in", o.regression_in,
                 "use the coefficients of a file written by --regression-out instead of fitting (with "
                 "--local-slopes the file must hold a regression_local fit; fitted on the same "
                 "--regression-interpolant)");
  app.add_option("--noise-members", o.noise_members,
                 "members of the noise references noise_white and noise_spectral (the best deterministic baseline "
                 "plus noise of its residual's RMS with zero block mean: white, or with the residual's spectrum on "
                 "the training split); default: the prediction's members, at least 2, else 16; 0 = none")
      ->check(CLI::Range(-1, 4096));
  app.add_option("--json", o.json, "write scores and spectra as JSON to this file");
  app.add_option("--csv", o.csv, "write scores as CSV to this file");
  std::vector<std::string> plausible;
  app.add_option("--plausible", plausible, finecast::coupling::kPlausibleOptionHelp);
  finecast::cli::add_version(app, "finecast-eval");
  CLI11_PARSE(app, argc, argv);
  try {
    finecast::coupling::set_plausible_overrides(plausible, "--plausible");
    ft::check_default_truth(o);
    std::unique_ptr<ft::EvalGrid> grid;
    if (prediction_is_icon(o))
      grid = ft::make_icon_grid(o);
    else
      grid = std::make_unique<LatLonEvalGrid>(o);
    return ft::run(o, *grid);
  } catch (const finecast::Error& e) {
    std::cerr << "finecast-eval: error: " << e.what() << "\n";
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "finecast-eval: error: " << e.what() << "\n";
    return 1;
  }
}
