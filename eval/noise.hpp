// SPDX-License-Identifier: BSD-3-Clause
// The noise of the stochastic references (issue 26): white noise, and noise with the spectrum of
// a training residual (row noise_spectral), both with zero area-weighted block (patch) mean.
#pragma once

#include <cstdint>
#include <random>
#include <vector>

#include "eval/blocks.hpp"
#include "eval/cells.hpp"

namespace finecast::eval {

/// A residual's spectrum, summed over the steps (patches) it was measured on. Lat-lon: the
/// radial spectrum (radial_spectrum) of the residual over the window, zero outside the blocks
/// used, as the mean power per mode of each bin (the spectral density's shape), summed over
/// steps (`weight` counts them), with the bins' centres. ICON: the area-weighted energy of each
/// refinement band (hierarchy_spectrum's bands), summed over patches (`weight` sums the area).
struct ResidualSpectrum {
  std::vector<double> wavenumber;  ///< lat-lon: bin centres, cycles per grid spacing; ICON: empty
  std::vector<double> power;
  double weight = 0.0;
  bool empty() const { return !(weight > 0.0); }
};

/// Adds the residual of the blocks flagged in `valid` (n_blocks flags) to `spectrum`; blocks
/// with a non-finite value are left out.
void add_residual_spectrum(const BlockLayout& layout, const double* residual, const std::vector<char>& valid,
                           ResidualSpectrum& spectrum);
/// The same for the patches of an unstructured grid.
void add_residual_spectrum(const CellLayout& layout, const double* residual, const std::vector<char>& valid,
                           ResidualSpectrum& spectrum);

/// One field of noise with the spectrum's mean shape (its amplitude is the caller's to set).
/// Lat-lon: white noise over the whole window, filtered in Fourier space by the square root of the
/// spectral density (interpolated between the bins' centres at each mode's radial wavenumber; the
/// mean mode set to zero), so its expected radial spectrum is the residual's. ICON: white noise
/// split into its refinement bands (nested area-weighted means, hierarchy_bands), each band
/// scaled so that its energy over the whole field is the residual's mean band energy, and summed.
/// Block (patch) means are not removed here (noise_reference_members does that).
std::vector<double> spectral_noise(const BlockLayout& layout, const ResidualSpectrum& spectrum, std::mt19937_64& rng);
std::vector<double> spectral_noise(const CellLayout& layout, const ResidualSpectrum& spectrum, std::mt19937_64& rng);

}  // namespace finecast::eval
