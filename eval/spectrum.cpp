// SPDX-License-Identifier: BSD-3-Clause
// Radial binning of the 2-D power spectrum; the transform is FFTW3's real-to-complex DFT.
#include "eval/spectrum.hpp"

#include <fftw3.h>

#include <algorithm>
#include <cmath>
#include <complex>
#include <memory>
#include <mutex>
#include <string>

#include "common/error.hpp"

namespace finecast::eval {

namespace {

/// FFTW's planner is not thread-safe (executing a plan is); evaluations may run in threads.
std::mutex& planner_mutex() {
  static std::mutex m;
  return m;
}

struct FftwFree {
  void operator()(void* p) const { fftw_free(p); }
};
struct PlanDestroy {
  void operator()(fftw_plan p) const {
    std::lock_guard<std::mutex> lock(planner_mutex());
    fftw_destroy_plan(p);
  }
};

/// |X[ky][kx]|^2 of a real ny x nx field for kx = 0 .. nx/2 (the other half of the spectrum is
/// the complex conjugate of this one), row-major [ny][nx/2 + 1].
std::vector<double> half_power(const double* field, int ny, int nx) {
  const size_t n_in = static_cast<size_t>(ny) * nx;
  const size_t n_out = static_cast<size_t>(ny) * (nx / 2 + 1);
  std::unique_ptr<double, FftwFree> in(fftw_alloc_real(n_in));
  std::unique_ptr<fftw_complex, FftwFree> out(fftw_alloc_complex(n_out));
  if (!in || !out)
    throw InternalError("radial_spectrum: cannot allocate the FFT buffers of a " + std::to_string(ny) + " x " +
                        std::to_string(nx) + " field");
  std::unique_ptr<fftw_plan_s, PlanDestroy> plan;
  {
    // FFTW_ESTIMATE plans without touching the arrays, so the field is copied in afterwards.
    std::lock_guard<std::mutex> lock(planner_mutex());
    plan.reset(fftw_plan_dft_r2c_2d(ny, nx, in.get(), out.get(), FFTW_ESTIMATE));
  }
  if (!plan)
    throw InternalError("radial_spectrum: FFTW cannot plan a " + std::to_string(ny) + " x " + std::to_string(nx) +
                        " transform");
  std::copy(field, field + n_in, in.get());
  fftw_execute(plan.get());
  std::vector<double> power(n_out);
  for (size_t i = 0; i < n_out; ++i) power[i] = out.get()[i][0] * out.get()[i][0] + out.get()[i][1] * out.get()[i][1];
  return power;
}

}  // namespace

std::mutex& fftw_planner_mutex() { return planner_mutex(); }

RadialSpectrum radial_spectrum(const double* field, int ny, int nx) {
  if (ny < 1 || nx < 1)
    throw InternalError("radial_spectrum: a " + std::to_string(ny) + " x " + std::to_string(nx) +
                        " field has no spectrum");
  const std::vector<double> power = half_power(field, ny, nx);
  const int half = nx / 2 + 1;
  RadialSpectrum s;
  s.n = std::min(ny, nx);
  const double fmax = std::sqrt(0.25 + 0.25);  // the corner mode (Nyquist, Nyquist)
  const int nbins = static_cast<int>(std::lround(s.n * fmax)) + 1;
  s.wavenumber.resize(nbins);
  s.energy.assign(nbins, 0.0);
  s.modes.assign(nbins, 0);
  for (int b = 0; b < nbins; ++b) s.wavenumber[b] = static_cast<double>(b) / s.n;
  const double norm = 1.0 / (static_cast<double>(ny) * nx * static_cast<double>(ny) * nx);
  for (int i = 0; i < ny; ++i) {
    const int ky = i <= ny / 2 ? i : i - ny;  // signed frequency index
    for (int j = 0; j < half; ++j) {
      // Column j > 0 stands for itself and its mirror -j (same radius, same power), except the
      // Nyquist column j = nx/2 of an even nx, which is its own mirror.
      const int copies = (j == 0 || 2 * j == nx) ? 1 : 2;
      const double fy = static_cast<double>(ky) / ny, fx = static_cast<double>(j) / nx;
      const int b = static_cast<int>(std::lround(s.n * std::sqrt(fy * fy + fx * fx)));
      s.energy[b] += copies * power[static_cast<size_t>(i) * half + j] * norm;
      s.modes[b] += copies;
    }
  }
  return s;
}

double upper_half_energy(const RadialSpectrum& s) {
  double e = 0.0;
  for (std::size_t b = 0; b < s.energy.size(); ++b)
    if (s.wavenumber[b] > 0.25) e += s.energy[b];
  return e;
}

}  // namespace finecast::eval
