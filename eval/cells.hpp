// SPDX-License-Identifier: BSD-3-Clause
// Patches of an unstructured grid (ICON's coarse cells, each made of its fine cells): area
// weights, patch means, residuals, patch spread and the variance of a field by hierarchy level.
#pragma once

#include <cstdint>
#include <vector>

#include "eval/spectrum.hpp"

namespace finecast::eval {

/// What a CellLayout is built from. Indices are 0-based; angles in radians. The eval library
/// knows no grid files: finecast-eval fills this from an ICON grid and its patch maps.
struct CellLayoutSpec {
  int64_t n_cells = 0;                       ///< fine cells
  int patch_size = 0;                        ///< fine cells per patch (P)
  std::vector<int64_t> cell_of_patch;        ///< n_patches * P fine cell indices, patch-major
  std::vector<double> area;                  ///< n_cells positive cell areas (any unit)
  std::vector<double> lon, lat;              ///< n_cells fine cell centres
  std::vector<double> patch_lon, patch_lat;  ///< n_patches patch (coarse cell) centres
  int n_neighbours = 0;                      ///< edge neighbours per patch (3 for triangles)
  std::vector<int64_t> patch_neighbours;     ///< n_patches * n_neighbours; -1 = none
  /// The refinement levels strictly between the patches and the fine cells, coarsest first:
  /// levels[j][i] is the index of fine cell i's cell at that level. Each level must nest in the
  /// previous one (and in the patches); empty when the fine cells are the patches' children.
  std::vector<std::vector<int64_t>> levels;
  int coarse_level = -1;  ///< ICON: the R2B level of the patches (labels only; -1 = unknown)
  int fine_level = -1;    ///< ICON: the R2B level of the fine cells (labels only)
};

/// A validated CellLayoutSpec with the reverse maps the metrics need.
class CellLayout {
 public:
  /// Throws ConfigError when the spec is inconsistent: sizes, a fine cell in no patch or in
  /// two, non-positive areas, or levels that do not nest.
  explicit CellLayout(CellLayoutSpec spec);

  const CellLayoutSpec& spec() const { return spec_; }
  int64_t size() const { return spec_.n_cells; }
  int64_t n_patches() const { return n_patches_; }
  int patch_size() const { return spec_.patch_size; }
  double w(int64_t cell) const { return spec_.area[cell]; }
  int64_t patch_of(int64_t cell) const { return patch_of_[cell]; }
  /// Fine cells of patch p (patch_size() of them).
  const int64_t* cells(int64_t p) const { return spec_.cell_of_patch.data() + p * spec_.patch_size; }
  /// Number of scale bands of the hierarchy: levels + 1 (the last is the fine cells themselves).
  int n_bands() const { return static_cast<int>(spec_.levels.size()) + 1; }
  /// Number of cells at band b (1..n_bands()); band 0 is the patches.
  int64_t cells_at_band(int b) const { return band_cells_[b]; }

 private:
  CellLayoutSpec spec_;
  int64_t n_patches_ = 0;
  std::vector<int64_t> patch_of_;
  std::vector<int64_t> band_cells_;
};

/// Area-weighted patch means (n_patches); NaN where the patch holds a NaN.
std::vector<double> patch_means(const CellLayout& layout, const double* field);

/// Each value minus its patch's area-weighted mean.
std::vector<double> patch_residual(const CellLayout& layout, const double* field);

/// Area-weighted (population) standard deviation inside each patch.
std::vector<double> patch_std(const CellLayout& layout, const double* field);

/// The variance of a field by scale, from the refinement hierarchy: with m_b the area-weighted
/// mean over the cell of band b that holds a fine cell (m_0 the patch mean, m_B the field
/// itself), band b holds the area-weighted mean over all cells of (m_b - m_{b-1})^2. These
/// differences are orthogonal in the area-weighted inner product (nested conditional means), so
/// the bands sum to the area-weighted mean square of the field minus its patch means (Haar
/// wavelet variance). Bin b - 1 is labelled with wavenumber 0.5 / 2^(B - b) cycles per fine cell
/// (B = n_bands(): the finest band sits at 0.5, the Nyquist wavenumber of the fine cells, and
/// each coarser band at half the one below); `modes` counts the band's degrees of freedom.
/// `field` must be finite (zero out what is not scored first).
RadialSpectrum hierarchy_spectrum(const CellLayout& layout, const double* field);

/// The differences hierarchy_spectrum sums: bands[b - 1][i] = m_b(i) - m_{b-1}(i), b = 1..n_bands()
/// (they add up to the field minus its patch means; the spectral noise reference rescales them).
std::vector<std::vector<double>> hierarchy_bands(const CellLayout& layout, const double* field);

}  // namespace finecast::eval
