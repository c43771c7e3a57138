// SPDX-License-Identifier: BSD-3-Clause
// Scores of a (possibly ensemble) prediction against a fine truth, accumulated over time steps.
#pragma once

#include <cstdint>
#include <vector>

#include "eval/blocks.hpp"
#include "eval/cells.hpp"
#include "eval/spectrum.hpp"

namespace finecast::eval {

/// CRPS of an m-member ensemble x for observation y with the empirical-distribution formula
/// E|X - y| - 1/2 E|X - X'|, the second mean over all m^2 pairs (m = 1 gives |x - y|).
double crps_ensemble(const double* x, int m, double y);

/// The "fair" CRPS: like crps_ensemble but E|X - X'| over the m(m - 1) distinct pairs, an
/// unbiased estimate of the CRPS of the distribution the members are drawn from. m = 1: |x - y|.
double crps_ensemble_fair(const double* x, int m, double y);

/// Final scores of one prediction. Means are area-weighted over the scored fine cells.
struct Scores {
  int members = 0;
  int64_t n_points = 0;  ///< fine cells scored (summed over time steps)
  /// Fine cells of scored blocks (patches) left out because a member is not finite there (NaN,
  /// infinite, or made missing by the reader as implausible), summed over time steps: reported,
  /// so that a broken prediction is not scored silently on what is left of it.
  int64_t n_nonfinite = 0;
  double rmse = 0.0;                ///< of the ensemble mean
  double bias = 0.0;                ///< ensemble mean minus truth
  double mae = 0.0;                 ///< of the ensemble mean
  double crps = 0.0;                ///< crps_ensemble (= MAE for one member)
  double crps_fair = 0.0;           ///< crps_ensemble_fair
  double spread = 0.0;              ///< sqrt of the mean unbiased ensemble variance; 0 for one member
  double std_ratio = 0.0;           ///< mean per-block (patch) std of the members over that of the truth
  double upper_energy_ratio = 0.0;  ///< residual energy above 0.25 cycles/spacing, pred / truth
  /// Residual energy by scale, mean over members and time steps: the radial spectrum on lat-lon
  /// windows, the hierarchy's bands (hierarchy_spectrum) on unstructured grids.
  RadialSpectrum spectrum;
};

/// Running sums for one prediction. Only blocks (patches) flagged valid (truth finite
/// everywhere in them) are scored, and inside them only cells where every member is finite (the
/// others are counted: Scores::n_nonfinite).
class ScoreAccumulator {
 public:
  /// Adds one time step: truth and the members, each layout.size() values in layout order.
  void add(const BlockLayout& layout, const double* truth, const std::vector<const double*>& members,
           const std::vector<char>& block_valid);
  /// The same on an unstructured grid: patches instead of blocks, the hierarchy's bands
  /// instead of the radial spectrum.
  void add(const CellLayout& layout, const double* truth, const std::vector<const double*>& members,
           const std::vector<char>& patch_valid);
  /// Final scores; truth_spectrum is the truth's residual spectrum summed over the same steps.
  Scores result(const RadialSpectrum& truth_spectrum) const;
  int steps() const { return steps_; }

 private:
  /// The pointwise sums of one step; patch_of(i) is the block or patch of fine cell i.
  template <class PatchOf, class Weight>
  void add_points(int64_t n, PatchOf patch_of, Weight w, const double* truth, const std::vector<const double*>& members,
                  const std::vector<char>& valid);
  /// The per-block (patch) std sums of one step.
  void add_spread(const std::vector<double>& truth_std, const std::vector<double>& member_std,
                  const std::vector<char>& valid);
  /// The members' part of one step on either grid: their mean block (patch) std against the
  /// truth's (add_spread) and their residual spectra; std_of(field) and spectrum_of(residual)
  /// are the grid's.
  template <class Layout, class StdOf, class SpectrumOf>
  void add_members(const Layout& layout, const double* truth, const std::vector<const double*>& members,
                   const std::vector<char>& valid, StdOf std_of, SpectrumOf spectrum_of);
  void begin_step(int members);

  int members_ = 0;
  int steps_ = 0;
  int64_t n_ = 0, n_nonfinite_ = 0;
  double sw_ = 0, se_ = 0, se2_ = 0, sae_ = 0, scrps_ = 0, scrps_fair_ = 0, svar_ = 0;
  double pred_block_std_ = 0, truth_block_std_ = 0;
  RadialSpectrum spectrum_;
};

/// The residual (field minus block mean) with zeros in invalid blocks and at non-finite cells,
/// so that truth and predictions are transformed over the same support.
std::vector<double> masked_residual(const BlockLayout& layout, const double* field,
                                    const std::vector<char>& block_valid);

/// The same for patches of an unstructured grid.
std::vector<double> masked_residual(const CellLayout& layout, const double* field,
                                    const std::vector<char>& patch_valid);

/// Adds b's energies to a's (a empty: copies b), scaled by `scale`.
void accumulate_spectrum(RadialSpectrum& a, const RadialSpectrum& b, double scale);

}  // namespace finecast::eval
