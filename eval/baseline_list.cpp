// SPDX-License-Identifier: BSD-3-Clause
// The one list of interpolation baselines, and its rows for each grid.
#include "eval/baseline_list.hpp"

#include "common/error.hpp"
#include "coupling/grid/context_stencil.hpp"

namespace finecast::eval {

const std::vector<BaselineRow>& baseline_list() {
  static const std::vector<BaselineRow> list = {
      {"nearest", Interp::kNearest, CellInterp::kNearest, false},
      {"bilinear", Interp::kBilinear, std::nullopt, false},
      {"bicubic", Interp::kBicubic, std::nullopt, false},
      {"bspline", Interp::kBspline, std::nullopt, false},
      {"idw", std::nullopt, CellInterp::kIdw, false},
      {"nearest_cons", Interp::kNearest, CellInterp::kNearest, true},
      {"bilinear_cons", Interp::kBilinear, std::nullopt, true},
      {"bicubic_cons", Interp::kBicubic, std::nullopt, true},
      {"bspline_cons", Interp::kBspline, std::nullopt, true},
      {"idw_cons", std::nullopt, CellInterp::kIdw, true},
      {"linear_cons", std::nullopt, CellInterp::kLinear, true},
      {"idw_linear_cons", std::nullopt, CellInterp::kIdwLinear, true},
  };
  return list;
}

namespace {

/// The list's rows that run on one grid (`interp`: BaselineRow::blocks or ::cells), in its order.
template <class B, class I>
std::vector<B> on_grid(std::optional<I> BaselineRow::*interp) {
  std::vector<B> out;
  for (const auto& row : baseline_list())
    if (row.*interp) out.push_back({row.name, *(row.*interp), row.conservative});
  return out;
}

template <class B>
const B& named(const std::vector<B>& list, const std::string& name, const char* grid) {
  for (const auto& b : list)
    if (b.name == name) return b;
  throw InternalError("no baseline \"" + name + "\" on " + grid);
}

}  // namespace

const std::vector<Baseline>& all_baselines() {
  static const std::vector<Baseline> list = on_grid<Baseline>(&BaselineRow::blocks);
  return list;
}

const std::vector<CellBaseline>& cell_baselines() {
  static const std::vector<CellBaseline> list = on_grid<CellBaseline>(&BaselineRow::cells);
  return list;
}

const Baseline& block_baseline(const std::string& name) { return named(all_baselines(), name, "lat-lon blocks"); }

const CellBaseline& cell_baseline(const std::string& name) { return named(cell_baselines(), name, "ICON patches"); }

std::string regression_base_name(coupling::Interpolant kind, bool latlon) {
  // The plugin's interpolant names are the list's interpolations: bicubic, bspline, idw, linear,
  // idw_linear.
  return schema::name_of(coupling::resolve_interpolant(kind, latlon)) + "_cons";
}

const Baseline& block_regression_base(coupling::Interpolant kind) {
  return block_baseline(regression_base_name(kind, true));
}

const CellBaseline& cell_regression_base(coupling::Interpolant kind) {
  return cell_baseline(regression_base_name(kind, false));
}

}  // namespace finecast::eval
