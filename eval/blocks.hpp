// SPDX-License-Identifier: BSD-3-Clause
// k x k blocks of a lat-lon field: area weights, block means, fine-scale residuals, block spread.
#pragma once

#include <cstddef>
#include <vector>

namespace finecast::eval {

/// k x k blocks tiling a row-major ny x nx field (ny and nx multiples of k) with area weights.
struct BlockLayout {
  int ny = 0;                  ///< rows (latitudes)
  int nx = 0;                  ///< columns (longitudes)
  int k = 0;                   ///< block edge in fine cells
  std::vector<double> weight;  ///< ny*nx positive area weights (any scale); empty = uniform
  bool periodic_x = false;     ///< columns close a longitude circle (interpolation wraps)

  int nby() const { return ny / k; }
  int nbx() const { return nx / k; }
  std::size_t size() const { return static_cast<std::size_t>(ny) * nx; }
  std::size_t n_blocks() const { return static_cast<std::size_t>(nby()) * nbx(); }
  double w(std::size_t i) const { return weight.empty() ? 1.0 : weight[i]; }
  /// Throws ConfigError when k < 1, ny or nx is not a positive multiple of k, or weights are bad.
  void validate() const;
};

/// Area weights of a regular lat-lon grid: cos(lat) per row (lat in degrees), repeated nx times.
std::vector<double> latlon_weights(const std::vector<double>& lat_deg, int nx);

/// Area-weighted k x k block means (nby*nbx, row-major); NaN where the block holds a NaN.
std::vector<double> block_means(const BlockLayout& layout, const double* field);

/// The fine-scale residual: each value minus its block's area-weighted mean.
std::vector<double> block_residual(const BlockLayout& layout, const double* field);

/// Area-weighted (population) standard deviation inside each block (nby*nbx).
std::vector<double> block_std(const BlockLayout& layout, const double* field);

}  // namespace finecast::eval
