// SPDX-License-Identifier: BSD-3-Clause
// The interpolation baselines: one list for lat-lon blocks and ICON patches. A baseline is a way
// to bring coarse means back to the fine cells without learning; the two grids share the idea and
// some of the methods (nearest, and every _cons form), not the interpolations themselves (bilinear,
// bicubic and B-splines need the blocks' rows and columns, IDW and the linear reconstruction the
// patches' centres), so each row says how it runs on each grid, or that it does not.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "coupling/grid/patch_map.hpp"

namespace finecast::eval {

/// How block means (taken to sit at block centres) are interpolated to the fine cells.
enum class Interp {
  kNearest,   ///< piecewise constant: each fine cell takes its own block's value
  kBilinear,  ///< tensor-product linear between block centres
  kBicubic,   ///< tensor-product cubic convolution (Keys, a = -0.5) between block centres
  /// Tensor-product cubic B-spline through the block centres: the block values prefiltered to
  /// B-spline coefficients (a natural spline: zero second derivative at the outer centres, so
  /// linear fields are exact up to the edges; a periodic one along a closed longitude circle).
  kBspline,
};

/// How patch means (taken to sit at the patch centres) reach the fine cells.
enum class CellInterp {
  kNearest,  ///< every fine cell takes its own patch's value
  kIdw,      ///< inverse-distance weighting of nearby patch centres at the fine cell centre
  /// Linear reconstruction in each patch: the patch value at its centroid (the area-weighted
  /// mean of its fine cells' unit position vectors) plus a gradient fitted by weighted least
  /// squares to the differences to the neighbouring patches' values (patches within
  /// IdwOptions::gradient_rings edge steps, weights 1 / distance^2; 1 ring, the edge neighbours,
  /// measured best on ICON ts: docs/evaluation_results.md). The gradient is a 3-D
  /// vector, so fields linear in 3-D position are reproduced exactly; the centroid makes the
  /// patch mean equal the coarse value.
  kLinear,
  /// The mean of kIdw and kLinear (the plugin's patch.interpolant idw_linear).
  kIdwLinear,
};

/// One baseline of the list: its name, how it runs on lat-lon blocks and on ICON patches (none:
/// not on that grid), and whether the interpolation is followed by restoring every coarse mean.
struct BaselineRow {
  std::string name;
  std::optional<Interp> blocks;
  std::optional<CellInterp> cells;
  bool conservative = false;
};

/// Every baseline, in report order (a grid's reports list its baselines in this order). A new
/// baseline is one row here, and an Interp or CellInterp case where it runs.
const std::vector<BaselineRow>& baseline_list();

/// One baseline on lat-lon blocks: an interpolation, optionally followed by restore_block_means.
struct Baseline {
  std::string name;  ///< e.g. "bilinear_cons"
  Interp interp;
  bool conservative;
};

/// One baseline on an unstructured grid: an interpolation, optionally followed by
/// restore_patch_means.
struct CellBaseline {
  std::string name;  ///< e.g. "idw_cons"
  CellInterp interp;
  bool conservative;
};

/// The list's baselines on lat-lon blocks, in its order: nearest, bilinear, bicubic, bspline,
/// then their conservative forms.
const std::vector<Baseline>& all_baselines();

/// The list's baselines on ICON patches, in its order: nearest, idw, then their conservative
/// forms, then linear_cons (conservative by construction; no plain form) and idw_linear_cons.
const std::vector<CellBaseline>& cell_baselines();

/// The baseline of that name on lat-lon blocks / on ICON patches; InternalError when the list has
/// none there.
const Baseline& block_baseline(const std::string& name);
const CellBaseline& cell_baseline(const std::string& name);

/// The conservative interpolant that regression_cons and regression_local add their fit to, and
/// that the covariates' deviations are taken from, for the plugin's patch.interpolant `kind`
/// (finecast-eval --regression-interpolant): the baseline <kind>_cons, auto resolved to
/// bicubic_cons on lat-lon blocks and idw_cons on ICON patches (docs/evaluation.md,
/// "regression_cons"). Throws ConfigError (coupling::resolve_interpolant) for a kind of the other
/// grid.
std::string regression_base_name(coupling::Interpolant kind, bool latlon);
const Baseline& block_regression_base(coupling::Interpolant kind);
const CellBaseline& cell_regression_base(coupling::Interpolant kind);

}  // namespace finecast::eval
