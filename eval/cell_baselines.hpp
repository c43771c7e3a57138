// SPDX-License-Identifier: BSD-3-Clause
// Interpolation baselines on unstructured grids: patch (coarse cell) means brought back to the
// fine cells without learning (the list of baselines: baseline_list.hpp).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "eval/baseline_list.hpp"
#include "eval/cells.hpp"

namespace finecast::eval {

/// Inverse-distance weighting: the `neighbours` patch centres nearest to a fine cell centre
/// (great-circle distance d), among the patches within `rings` edge-neighbour steps of the fine
/// cell's own patch, weighted by 1 / d^power; a centre closer than 1e-12 rad takes all the
/// weight. Three rings hold every patch that shares a vertex with the own patch on a triangular
/// grid. A layout without neighbour lists searches every patch.
struct IdwOptions {
  int neighbours = 6;
  double power = 2.0;
  int rings = 3;
  int gradient_rings = 1;  ///< kLinear: the neighbours of its least-squares gradient (1: the edge neighbours)
};

/// The interpolation weights of a layout, computed once.
class CellInterpolator {
 public:
  /// Throws ConfigError for neighbours < 1, power <= 0 or rings < 1. `layout` must outlive this.
  explicit CellInterpolator(const CellLayout& layout, IdwOptions options = {});

  /// The fine field of one interpolation of n_patches coarse values. Patch values that are NaN
  /// are left out of the IDW weights (renormalised); a fine cell with none left is NaN.
  std::vector<double> interpolate(const std::vector<double>& coarse, CellInterp interp) const;
  /// interpolate() and, for a conservative baseline, restore_patch_means().
  std::vector<double> run(const std::vector<double>& coarse, const CellBaseline& baseline) const;
  const IdwOptions& options() const { return options_; }
  const CellLayout& layout() const { return layout_; }

 private:
  const CellLayout& layout_;
  IdwOptions options_;
  std::vector<int64_t> idw_patch_;                   ///< size() * neighbours patch indices (-1 = unused slot)
  std::vector<double> idw_weight_;                   ///< matching weights, each cell's summing to 1
  std::vector<std::array<double, 3>> cell_xyz_;      ///< fine cell centres (unit vectors)
  std::vector<std::array<double, 3>> centroid_;      ///< per patch: area-weighted mean of its cells' cell_xyz_
  std::vector<std::vector<int64_t>> gradient_from_;  ///< per patch: the patches its gradient is fitted to
  std::vector<double> linear(const std::vector<double>& coarse) const;
};

/// Adds to every cell of each patch the patch's coarse value minus the area-weighted mean of
/// `fine` over the patch, so that patch_means(fine) equals `coarse` afterwards.
void restore_patch_means(const CellLayout& layout, const std::vector<double>& coarse, std::vector<double>& fine);

}  // namespace finecast::eval
