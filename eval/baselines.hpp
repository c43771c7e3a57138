// SPDX-License-Identifier: BSD-3-Clause
// Interpolation baselines: the coarse block means brought back to the fine grid without learning.
#pragma once

#include <string>
#include <vector>

#include "eval/blocks.hpp"

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

/// One baseline: an interpolation, optionally followed by restore_block_means.
struct Baseline {
  std::string name;  ///< e.g. "bilinear_cons"
  Interp interp;
  bool conservative;
};

/// The eight baselines in report order: nearest, bilinear, bicubic, bspline, then their
/// conservative forms.
const std::vector<Baseline>& all_baselines();

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
