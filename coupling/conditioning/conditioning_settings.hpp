// SPDX-License-Identifier: BSD-3-Clause
// The settable part of a model's conditioning: the keys a run sets in the plugin's config
// (grid.*, fields, target, patch.*) and its checkpoints record in their conditioning spec,
// declared once in one option table. The config takes the table in as it takes the trainer's
// (plugin/config.cpp: inherited), the spec adds what a run derives and learns
// (conditioning_spec.cpp). Also the one check of the local-slope settings, which config
// validation, the spec read from a checkpoint and finecast-eval make. Header-only: the config
// library (plugin/config.*) uses it without linking the coupling library. No torch, no MPI.
#pragma once

#include <algorithm>
#include <string>
#include <vector>

#include "common/error.hpp"
#include "common/schema.hpp"
#include "coupling/grid/icon_geometry.hpp"
#include "coupling/grid/local_slopes.hpp"
#include "coupling/grid/patch_map.hpp"

namespace finecast::coupling {

enum class GridType { kIcon, kLatLon };
/// What the model's residual is taken from: each patch's coarse value (mean), the
/// conservative interpolant of the coarse neighbourhood (interp), or that interpolant plus a
/// least-squares fit on the static covariates (regression: a two-stage model; docs/training.md).
enum class Residual { kMean, kInterp, kRegression };

inline const schema::Names<GridType>& names(GridType) {
  static const schema::Names<GridType> n{{GridType::kIcon, "icon"}, {GridType::kLatLon, "latlon"}};
  return n;
}
inline const schema::Names<Residual>& names(Residual) {
  static const schema::Names<Residual> n{
      {Residual::kMean, "mean"}, {Residual::kInterp, "interp"}, {Residual::kRegression, "regression"}};
  return n;
}

/// grid.*: the fine grid and how it is cut into patches.
struct GridSettings {
  GridType type = GridType::kIcon;
  std::string file;  ///< ICON grid file, or a CF NetCDF file with the lat/lon coordinates (a config requires it)
  IconGeometry geometry = IconGeometry::kFile;  ///< icon: the file's coordinates or the uniform ones
  std::string variable;  ///< latlon: the variable whose coordinates define the grid ("" = the first field)
  /// icon: patches are the cells of R<n>B<coarse_level>. finecast-downscale's spec also takes -1,
  /// "from the patch size" (its --coarse-level left out), which no config or checkpoint holds.
  int coarse_level = 0;
  /// icon limited area: coarse cells reaching into refin_c_ctrl rows 1..boundary_rows (ICON's
  /// lateral boundary zone) are left out of training and sampling
  int boundary_rows = 4;
  /// latlon: patches are block x block cells. finecast-downscale's spec also takes 0, "from the
  /// patch size" (its --block left out), which no config or checkpoint holds.
  int block = 16;
};

/// patch.*: the context around each patch, the residual base and its regression.
struct PatchSettings {
  bool static_features = true;    ///< add sin lat, cos lat cos lon, cos lat sin lon to the context
  std::string orography;          ///< host variable with the surface height ("" = none)
  bool relative_context = false;  ///< coarse values in the context relative to the patch's own
  int context_rings =
      0;  ///< 0: edge neighbours; K: every coarse cell within K rings (coupling/grid/context_stencil.hpp)
  Residual residual = Residual::kMean;
  /// Host variables with fine static covariates (surface height, land fraction), gathered once;
  /// each adds its normalised block mean and fine anomalies to every patch's context.
  std::vector<std::string> statics;
  /// Gather the patch.static fields at every coupling step instead of once: fine covariates that
  /// the host updates (a running-mean climatology of the target, e.g.). Each step's patches take
  /// that step's values, normalised as the first step's were.
  bool static_refresh = false;
  /// patch.residual regression: refit the coefficients at every coupling step on that step's
  /// training patches (instead of once, at the first step), so the base follows a relation that
  /// changes over the run; a sampling uses the coefficients of the step before its own.
  bool regression_refit = false;
  /// The residual base's interpolant (auto: bicubic on lat-lon, idw on ICON; a spec's is resolved).
  Interpolant interpolant = Interpolant::kAuto;
  /// patch.residual regression: a local-slope term per covariate of local_slope_static (empty =
  /// all of statics) over a window of local_slopes edge steps (0 = none; docs/training.md), with
  /// its ridge.
  int local_slopes = 0;
  double local_slope_ridge = 0.1;
  std::vector<std::string> local_slope_static;
  /// patch.residual regression: W, the share of each sampling's ensemble mean kept; the rest moves
  /// it to the global regression (the base's regression without its local-slope terms, fitted
  /// beside it), the members' deviations from their mean kept. 1 = off (docs/training.md).
  double global_blend = 1.0;
  /// patch.residual regression: the global regression's own interpolant (auto: the base's,
  /// patch.interpolant): the regression is then fitted on the fine values minus it.
  Interpolant global_interpolant = Interpolant::kAuto;
  /// patch.residual regression: k, each sampling's members spread around their mean times r2^k
  /// per patch, r2 the mean square over the patch of what the global regression adds to the
  /// interpolant (in the target's units squared); 0 = off (docs/training.md).
  double spread_regression = 0.0;
};

/// Every settable conditioning key. The plugin's Config and the ConditioningSpec both derive from
/// it, so that a run's spec is its config's settings as they are (plugin::conditioning_spec).
struct ConditioningSettings {
  GridSettings grid;
  std::vector<std::string> fields;  ///< host variables, every one a coarse predictor (a config requires them)
  std::string target;               ///< the downscaled field, one of fields ("" in a config: the first)
  PatchSettings patch;
};

namespace detail {

inline std::string join_names(const std::vector<std::string>& names, const char* separator) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : separator) + n;
  return out;
}

}  // namespace detail

/// A list of names: as text (version 1 checkpoints) "a,b,c" ("" = none), as a typed value (version
/// 2, and a YAML list through yaml_schema::bind) a string array. Names are non-empty and hold no
/// comma, else their text would not read back.
template <class S>
schema::Field<S> names_field(std::string key, std::vector<std::string> S::*member, std::string comment) {
  using schema::BadValue;
  schema::Field<S> f = schema::field_head<S>(std::move(key), schema::Kind::kText, std::move(comment));
  f.rule = "a list of host variable names";
  f.get = [member](const S& s) { return detail::join_names(s.*member, ","); };
  f.set = [member](S& s, const std::string& text) {
    std::vector<std::string> names;
    for (size_t start = 0; !text.empty();) {
      const size_t comma = text.find(',', start);
      names.push_back(text.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
    if (std::any_of(names.begin(), names.end(), [](const std::string& n) { return n.empty(); }))
      throw BadValue("must be names joined by commas, got \"" + text + "\"");
    s.*member = std::move(names);
  };
  f.get_value = [member](const S& s) { return schema::Value(s.*member); };
  f.set_value = [member](S& s, const schema::Value& v) {
    const auto& names = schema::value_as<std::vector<std::string>>(v);
    if (std::any_of(names.begin(), names.end(),
                    [](const std::string& n) { return n.empty() || n.find(',') != std::string::npos; }))
      throw BadValue("must be non-empty names without commas, got \"" + schema::to_text(v) + "\"");
    s.*member = names;
  };
  return f;
}

/// The settable conditioning keys, each declared once: type, range, comment (what
/// configs/reference.yaml shows) and whether a resumed run must keep the value its checkpoint
/// recorded. By section (grid.*, fields, target, patch.*), each in config file order.
///
/// The ranges are the config's, which are also every value a checkpoint holds: checkpoints record
/// the run's config, and those written before the spec existed (version 0) recorded neither
/// grid.coarse_level nor grid.block. The spec's own table once took grid.coarse_level -1 and
/// grid.block 0 ("from the patch size", what finecast-downscale sets in code, never through this
/// table) and grid.block up to 4096 (the config's bound before issue 23 cut it to 512).
inline const schema::Table<ConditioningSettings>& conditioning_settings_table() {
  using namespace schema;
  static const Table<ConditioningSettings> table = [] {
    Table<GridSettings> grid{
        choice("type", &GridSettings::type,
               "icon (triangles, patches = coarser ICON cells) | latlon (patches = blocks)")
            .compared_on_resume(),
        text("file", &GridSettings::file, "ICON grid file, or a CF file with the lat/lon coordinates"),
        choice("geometry", &GridSettings::geometry,
               "icon: the cells' coordinates: file (the grid file's) | uniform (the standard uniform "
               "icosahedral R2B<k> geometry rebuilt from the file's topology, for data on the file's "
               "cells but not on its coordinates)")
            .compared_on_resume(),
        text("variable", &GridSettings::variable,
             "latlon: variable whose coordinates define the grid (\"\" = the first field)"),
        integer("coarse_level", &GridSettings::coarse_level, 0, 20,
                "icon: patches are the cells of R<n>B<coarse_level> (R2B4 -> R2B0: 256 cells each)"),
        integer("boundary_rows", &GridSettings::boundary_rows, 0, 64,
                "icon limited area: coarse cells reaching into refin_c_ctrl rows 1..N (ICON's lateral "
                "boundary zone, where the driving model's values are prescribed: 4 rows) are left out of "
                "training and sampling, as are those cut by the domain's edge; 0 = keep the zone"),
        integer("block", &GridSettings::block, 2, 512,
                "latlon: patches are block x block cells (at most 512: 262,144 fine values a patch)")};
    Table<PatchSettings> patch{
        boolean("static_features", &PatchSettings::static_features,
                "add sin lat, cos lat cos lon, cos lat sin lon of the coarse centre to the context")
            .compared_on_resume(),
        text("orography", &PatchSettings::orography,
             "host variable with the surface height, added coarse to the context (\"\" = none)")
            .compared_on_resume(),
        boolean("relative_context", &PatchSettings::relative_context,
                "the coarse values in the context as differences from the patch's own (its level left out: "
                "a model trained where it is warm then meets no unseen levels where it is cold)")
            .compared_on_resume(),
        integer("context_rings", &PatchSettings::context_rings, 0, 8,
                "coarse context around each patch: 0 = its edge neighbours (ICON 3, lat-lon 4); K = every "
                "coarse cell within K rings (lat-lon: the (2K+1)^2 blocks around; ICON: K edge steps)")
            .compared_on_resume(),
        choice("residual", &PatchSettings::residual,
               "the model learns fine minus: mean (the patch's coarse value) | interp (the conservative "
               "interpolant of the coarse neighbourhood: bicubic on lat-lon blocks, IDW on ICON) | "
               "regression (that interpolant plus a least-squares fit on patch.static, fitted at the first "
               "step: a two-stage model; docs/training.md)")
            .compared_on_resume(),
        names_field("static", &PatchSettings::statics,
                    "host variables with fine static covariates (e.g. [topography_c, fr_land]), gathered once; "
                    "each adds its normalised block mean and fine anomalies to the context")
            .compared_on_resume(),
        boolean("static_refresh", &PatchSettings::static_refresh,
                "gather the patch.static fields at every coupling step instead of once: fine covariates the "
                "host updates (e.g. a running-mean climatology of the target, docs/training.md); each step's "
                "patches, buffered and sampled, take that step's values, normalised as at the first step"),
        boolean(
            "regression_refit", &PatchSettings::regression_refit,
            "patch.residual regression: refit the coefficients at every coupling step on that step's patches "
            "instead of once at the first step: a base that follows a relation changing over the run (a "
            "season); each step is buffered with its own fit, and sampled with the step before's (docs/training.md)"),
        choice("interpolant", &PatchSettings::interpolant,
               "the conservative interpolant of patch.residual interp and regression and of the static "
               "covariates' coarse part: lat-lon bicubic (Keys) | bspline (cubic B-spline); ICON idw "
               "(inverse-distance) | linear (least-squares gradients) | idw_linear (their mean); auto = "
               "bicubic on lat-lon, idw on ICON (docs/training.md)")
            .compared_on_resume(),
        integer("local_slopes", &PatchSettings::local_slopes, 0, 24,
                "patch.residual regression: K > 0 adds, per covariate of patch.local_slope_static, its "
                "deviation times the local slope of the target's coarse values on the covariates' block "
                "means over the coarse cells within K edge steps (e.g. a lapse rate that changes across "
                "the domain); 0 = none (docs/training.md)")
            .compared_on_resume(),
        real("local_slope_ridge", &PatchSettings::local_slope_ridge, 0.0, 1e6,
             "ridge of each local fit: shrinks the slopes toward 0 (times the window's cells and each "
             "covariate's variance over the field)")
            .compared_on_resume(),
        names_field("local_slope_static", &PatchSettings::local_slope_static,
                    "the covariates of patch.static that get a local-slope term (empty = all)")
            .compared_on_resume(),
        real("global_blend", &PatchSettings::global_blend, 0.0, 1.0,
             "patch.residual regression: W < 1 moves each sampling's ensemble mean to the global regression (the "
             "base's fit without local slopes, fitted beside it) + W x (mean - it), keeping every member's "
             "deviation from the mean: an average of the model and a regression that err differently; 1 = off "
             "(docs/training.md)"),
        choice("global_interpolant", &PatchSettings::global_interpolant,
               "patch.residual regression: the interpolant of the global regression (patch.global_blend's target, "
               "patch.spread_regression's term), fitted on the fine values minus it: auto = patch.interpolant's; "
               "another one (e.g. linear beside an idw_linear base) when the regression on it is the stronger "
               "(docs/training.md)")
            .compared_on_resume(),
        real("spread_regression", &PatchSettings::spread_regression, 0.0, 10.0,
             "patch.residual regression: k > 0 spreads each patch's members around their mean by r2^k (times "
             "sample.inflation), r2 the mean square over the patch of what the global regression on the "
             "covariates adds to the interpolant, in the target's units squared: wider where the covariates "
             "matter more; 0 = off (docs/training.md)")};
    Table<ConditioningSettings> t = nested(&ConditioningSettings::grid, grid, "grid.");
    t.push_back(names_field("fields", &ConditioningSettings::fields,
                            "host variables to couple, each a name or {name: NAME, level: K} (one level of a 3-D "
                            "variable, 1 = model top); the first one is downscaled")
                    .compared_on_resume());
    t.push_back(text("target", &ConditioningSettings::target,
                     "the downscaled field, one of fields (\"\" = the first); the others are predictors only")
                    .compared_on_resume());
    for (auto& f : nested(&ConditioningSettings::patch, patch, "patch.")) t.push_back(std::move(f));
    return t;
  }();
  return table;
}

/// The names the local-slope settings go by where they are set, for messages: the keys of the
/// config and of checkpoints, or finecast-eval's options.
struct LocalSlopeNames {
  std::string local_slopes = "patch.local_slopes";
  std::string local_slope_static = "patch.local_slope_static";
  std::string statics = "patch.static";
};

/// The one check of the local-slope settings: "" when they hold, else what is wrong. Local slopes
/// (local_slopes > 0) add terms to patch.residual regression's fit, so they need it; each
/// covariate of local_slope_static is one of statics, and named once (twice would make the fit
/// collinear).
inline std::string local_slope_problem(const PatchSettings& patch, const LocalSlopeNames& keys = {}) {
  if (patch.local_slopes > 0 && patch.residual != Residual::kRegression)
    return keys.local_slopes + " adds terms to the regression of patch.residual regression, but patch.residual is " +
           schema::name_of(patch.residual);
  const auto& chosen = patch.local_slope_static;
  for (auto it = chosen.begin(); it != chosen.end(); ++it) {
    if (std::find(patch.statics.begin(), patch.statics.end(), *it) == patch.statics.end())
      return keys.local_slope_static + ": \"" + *it + "\" is not one of " + keys.statics;
    if (std::find(chosen.begin(), it, *it) != it) return keys.local_slope_static + " lists \"" + *it + "\" twice";
  }
  return std::string();
}

/// The local slopes of patch.residual regression: the window, the ridge and the covariates with a
/// term (indices into statics, in local_slope_static's order, which the fitted coefficients
/// follow; every covariate when it is empty). Off (rings 0) without local slopes or without the
/// regression. Throws ConfigError with local_slope_problem's message.
inline LocalSlopeOptions local_slope_options(const PatchSettings& patch, const LocalSlopeNames& keys = {}) {
  LocalSlopeOptions o;
  if (patch.residual != Residual::kRegression || patch.local_slopes == 0) return o;
  if (const std::string problem = local_slope_problem(patch, keys); !problem.empty()) throw ConfigError(problem);
  o.rings = patch.local_slopes;
  o.ridge = patch.local_slope_ridge;
  if (patch.local_slope_static.empty())
    for (size_t s = 0; s < patch.statics.size(); ++s) o.terms.push_back(static_cast<int>(s));
  for (const auto& name : patch.local_slope_static)
    o.terms.push_back(
        static_cast<int>(std::find(patch.statics.begin(), patch.statics.end(), name) - patch.statics.begin()));
  return o;
}

}  // namespace finecast::coupling
