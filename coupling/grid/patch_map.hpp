// SPDX-License-Identifier: BSD-3-Clause
// The map from coarse cells (patches) to fine cells that every later stage shares.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/schema.hpp"

namespace finecast::coupling {

/// The conservative interpolant of the coarse neighbourhood (patch.interpolant; the residual
/// base of patch.residual: interp). kAuto is the grid's default: kBicubic on lat-lon blocks, kIdw
/// on ICON (what every model before patch.interpolant was trained with).
enum class Interpolant {
  kAuto,
  kBicubic,  ///< lat-lon: Keys' cubic convolution between block centres (finecast-eval's bicubic)
  kBspline,  ///< lat-lon: the cubic B-spline of the block values (finecast-eval's bspline)
  kIdw,      ///< ICON: inverse-distance weighting of nearby coarse centres (finecast-eval's idw)
  kLinear,   ///< ICON: a least-squares gradient in each coarse cell (finecast-eval's linear_cons)
  /// ICON: the mean of kIdw and kLinear (finecast-eval's idw_linear_cons): their errors differ, and
  /// the regression on their mean beats both on ICON ts (docs/evaluation.md, "The strongest regression")
  kIdwLinear,
};

inline const schema::Names<Interpolant>& names(Interpolant) {
  static const schema::Names<Interpolant> n{
      {Interpolant::kAuto, "auto"}, {Interpolant::kBicubic, "bicubic"}, {Interpolant::kBspline, "bspline"},
      {Interpolant::kIdw, "idw"},   {Interpolant::kLinear, "linear"},   {Interpolant::kIdwLinear, "idw_linear"}};
  return n;
}

/// The interpolant of a lat-lon (`latlon`) or ICON grid before patch.interpolant existed: what
/// auto resolves to, and what a checkpoint without the key was trained with.
inline Interpolant legacy_interpolant(bool latlon) { return latlon ? Interpolant::kBicubic : Interpolant::kIdw; }

/// "" when `kind` interpolates the grid's cells (auto does on both, bicubic and bspline on
/// lat-lon blocks, idw, linear and idw_linear on ICON cells), else what is wrong and the fix. `option` names
/// the setting and `grid` what says the grid type (the plugin's patch.interpolant and grid.type;
/// finecast-eval's --regression-interpolant and its prediction's grid).
inline std::string interpolant_mismatch(Interpolant kind, bool latlon, const std::string& option = "patch.interpolant",
                                        const std::string& grid = "grid.type") {
  if (kind == Interpolant::kAuto || latlon == (kind == Interpolant::kBicubic || kind == Interpolant::kBspline))
    return std::string();
  return option + " " + schema::name_of(kind) + " interpolates " + (latlon ? "ICON cells" : "lat-lon blocks") +
         ", but " + grid + " is " +
         (latlon ? "latlon: use bicubic or bspline" : "icon: use idw, linear or idw_linear") + " (or auto)";
}

/// Interpolation weights from coarse cells to fine cells. Lat-lon blocks: separable, `width`
/// block rows per fine row and block columns per fine column (4 for bicubic; the B-spline's
/// weights decay as 0.268^distance and are cut at kBsplineReach blocks beyond the bicubic
/// stencil). ICON: `width` coarse cells per fine cell. Built by prepare_patch_map
/// (coupling/grid/context_stencil.hpp).
struct CoarseInterpolation {
  Interpolant kind = Interpolant::kAuto;  ///< the one built (never kAuto once built)
  int width = 0;                          ///< 0 = not built
  std::vector<int64_t> row, col;          ///< lat-lon: [fine rows][width], [fine columns][width] block indices
  std::vector<double> row_w, col_w;       ///< their weights
  std::vector<int64_t> cell;              ///< ICON: [n_fine][width] coarse indices, -1 = unused
  std::vector<double> cell_w;             ///< their weights (each fine cell's sum to 1)
};

/// What a limited-area ICON grid's patch map left out (docs/grids.md, "Limited-area grids").
struct LimitedAreaSummary {
  bool on = false;                  ///< the map is of a limited-area grid
  int64_t coarse_total = 0;         ///< coarse cells holding at least one fine cell of the domain
  int64_t left_out_partial = 0;     ///< ... with fewer than P fine cells in the domain
  int64_t left_out_boundary = 0;    ///< ... complete, but reaching into the lateral boundary zone
  int boundary_rows = 0;            ///< that zone: refin_c_ctrl 1..boundary_rows (0: none left out)
  bool rows_from_topology = false;  ///< the file had no refin_c_ctrl: rows counted from its boundary
  std::string hierarchy;            ///< "parent_cell_index" or "the uniform R2B6 grid"
};

/// One patch per coarse cell: P fine cells in a canonical order that is the same for every
/// patch, their normalised area weights, the coarse cell's edge neighbours and its centre.
struct PatchMap {
  enum class Kind { kIconTriangles, kLatLonBlocks };
  Kind kind = Kind::kIconTriangles;
  int64_t n_fine = 0;                          ///< cells of the fine field (global)
  int64_t n_coarse = 0;                        ///< patches
  int patch_size = 0;                          ///< P
  std::vector<int64_t> fine_of_patch;          ///< n_coarse*P global fine indices, canonical order
  std::vector<double> fine_weight;             ///< n_coarse*P area weights, each patch sums to 1
  std::vector<double> patch_area;              ///< n_coarse: each patch's area (its fine cells' sum)
  int n_neighbours = 0;                        ///< 3 (triangles) or 4 (blocks)
  std::vector<int64_t> neighbours;             ///< n_coarse*n_neighbours coarse indices; -1 = none
  std::vector<double> coarse_lon, coarse_lat;  ///< coarse cell centres, radians

  // Lat-lon blocks (0 on ICON): the block grid, for context rings and the bicubic base.
  int64_t block_rows = 0, block_cols = 0;  ///< blocks along y and x
  int block = 0;                           ///< k
  int64_t grid_columns = 0;                ///< columns of the full fine grid (nlon)
  bool wrap_columns = false;               ///< the kept columns close a longitude circle
  // ICON (empty on lat-lon): fine cell centres, radians, for the inverse-distance base.
  std::vector<double> fine_lon, fine_lat;

  // Built by prepare_patch_map (context_stencil.hpp) for the patch options that need them.
  int rings = 0;                    ///< patch.context_rings the ring table was built for
  int ring_count = 0;               ///< coarse cells per patch in ring_cells
  std::vector<int64_t> ring_cells;  ///< n_coarse*ring_count, canonical order; -1 = none
  CoarseInterpolation base;         ///< the residual base's interpolation weights
  /// patch.global_interpolant's weights, when it is not the base's (width 0: the base's)
  CoarseInterpolation global_base;

  LimitedAreaSummary limited_area;  ///< ICON limited-area grids: what was left out and why
};

}  // namespace finecast::coupling
