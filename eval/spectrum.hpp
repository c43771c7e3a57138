// SPDX-License-Identifier: BSD-3-Clause
// The radially averaged power spectrum of a 2-D field (its DFT computed by FFTW3).
#pragma once

#include <cstdint>
#include <mutex>
#include <vector>

namespace finecast::eval {

/// Power of a 2-D field binned by radial wavenumber. With n = min(ny, nx), mode (ky, kx) has
/// wavenumber f = sqrt((ky/ny)^2 + (kx/nx)^2) cycles per grid spacing and falls in bin
/// round(n f); bin b is centred on b / n. Every mode falls in a bin (the corners beyond the
/// Nyquist circle included), so the energies sum to the mean square of the field (Parseval).
/// On unstructured grids the same container holds the bands of hierarchy_spectrum (cells.hpp).
struct RadialSpectrum {
  int n = 0;                       ///< min(ny, nx): the bin width is 1/n cycles per spacing
  std::vector<double> wavenumber;  ///< bin centres, cycles per grid spacing
  std::vector<double> energy;      ///< sum over the bin's modes of |X|^2 / (ny nx)^2
  std::vector<int64_t> modes;      ///< number of modes in each bin
};

/// The radial spectrum of one ny x nx row-major field (NaNs must be replaced beforehand), from
/// its 2-D DFT X[ky][kx] = sum x[i][j] exp(-2 pi i (ky i / ny + kx j / nx)), any ny, nx >= 1.
RadialSpectrum radial_spectrum(const double* field, int ny, int nx);

/// FFTW's planner is not thread-safe (executing a plan is): every plan is made and destroyed
/// under this mutex.
std::mutex& fftw_planner_mutex();

/// Sum of energies in the upper half of wavenumbers: bins centred above 0.25 cycles per grid
/// spacing (half the Nyquist wavenumber 0.5).
double upper_half_energy(const RadialSpectrum& s);

}  // namespace finecast::eval
