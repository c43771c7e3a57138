// SPDX-License-Identifier: BSD-3-Clause
// Interpolation baselines on lat-lon blocks: the coarse block means brought back to the fine grid
// without learning (the list of baselines: baseline_list.hpp).
#pragma once

#include <string>
#include <vector>

#include "eval/baseline_list.hpp"
#include "eval/blocks.hpp"

namespace finecast::eval {

/// Interpolates nby*nbx block values to the ny*nx fine grid. Beyond the outer block centres
/// values are held constant (kBspline: extended linearly), except along x when
/// layout.periodic_x (columns wrap). kBspline fills NaN blocks from their neighbours before the
/// prefilter (which couples every block of a row or column) and returns NaN in their cells.
std::vector<double> interpolate(const BlockLayout& layout, const std::vector<double>& coarse, Interp interp);

/// Adds to every cell of each block the block's coarse value minus the block's area-weighted
/// mean of `fine`, so that block_means(fine) equals `coarse` afterwards.
void restore_block_means(const BlockLayout& layout, const std::vector<double>& coarse, std::vector<double>& fine);

/// interpolate() and, for a conservative baseline, restore_block_means().
std::vector<double> run_baseline(const BlockLayout& layout, const std::vector<double>& coarse,
                                 const Baseline& baseline);

}  // namespace finecast::eval
