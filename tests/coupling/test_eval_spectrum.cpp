// SPDX-License-Identifier: BSD-3-Clause
// The FFT against a plain DFT, and radial spectra of sinusoids and of noise (Parseval).
#include <gtest/gtest.h>

#include <cmath>
#include <complex>
#include <random>
#include <vector>

#include "coupling/eval/spectrum.hpp"

namespace fe = finecast::coupling::eval;
using cd = std::complex<double>;

TEST(EvalSpectrum, FftMatchesPlainDftForManyLengths) {
  std::mt19937 rng(11);
  std::normal_distribution<double> nd;
  for (int n : {1, 2, 3, 4, 5, 6, 7, 8, 9, 12, 15, 16, 30, 49, 97, 128, 210}) {
    std::vector<cd> a(n);
    for (cd& v : a) v = cd(nd(rng), nd(rng));
    std::vector<cd> ref(n);
    for (int k = 0; k < n; ++k)
      for (int j = 0; j < n; ++j) ref[k] += a[j] * std::polar(1.0, -2.0 * M_PI * j * k / n);
    fe::fft(a);
    for (int k = 0; k < n; ++k) ASSERT_LT(std::abs(a[k] - ref[k]), 1e-9 * n) << "n=" << n;
  }
}

namespace {

std::vector<double> wave(int ny, int nx, int ky, int kx) {
  std::vector<double> f(static_cast<std::size_t>(ny) * nx);
  for (int i = 0; i < ny; ++i)
    for (int j = 0; j < nx; ++j)
      f[static_cast<std::size_t>(i) * nx + j] = std::cos(
          2 * M_PI * (static_cast<double>(ky) * i / ny + static_cast<double>(kx) * j / nx));
  return f;
}

int peak(const fe::RadialSpectrum& s) {
  return static_cast<int>(std::max_element(s.energy.begin(), s.energy.end()) - s.energy.begin());
}

}  // namespace

TEST(EvalSpectrum, SinusoidPeaksAtItsWavenumber) {
  const fe::RadialSpectrum s = fe::radial_spectrum(wave(32, 32, 0, 4).data(), 32, 32);
  EXPECT_EQ(peak(s), 4);
  EXPECT_NEAR(s.energy[4], 0.5, 1e-12);  // mean square of a unit cosine
  EXPECT_DOUBLE_EQ(s.wavenumber[4], 4.0 / 32);
  // An oblique wave (3, 4) has radius 5.
  const fe::RadialSpectrum o = fe::radial_spectrum(wave(32, 32, 3, 4).data(), 32, 32);
  EXPECT_EQ(peak(o), 5);
  EXPECT_NEAR(o.energy[5], 0.5, 1e-12);
  // Non-square: 6 cycles over 48 columns is 0.125 cycles per spacing, bin 0.125 * 16 = 2.
  const fe::RadialSpectrum r = fe::radial_spectrum(wave(16, 48, 0, 6).data(), 16, 48);
  EXPECT_EQ(peak(r), 2);
  EXPECT_NEAR(r.energy[2], 0.5, 1e-12);
}

TEST(EvalSpectrum, ParsevalOnNoise) {
  std::mt19937 rng(5);
  std::normal_distribution<double> nd;
  const int ny = 24, nx = 40;
  std::vector<double> f(ny * nx);
  double ms = 0;
  for (double& v : f) {
    v = nd(rng);
    ms += v * v / (ny * nx);
  }
  const fe::RadialSpectrum s = fe::radial_spectrum(f.data(), ny, nx);
  double e = 0;
  int64_t modes = 0;
  for (std::size_t b = 0; b < s.energy.size(); ++b) {
    e += s.energy[b];
    modes += s.modes[b];
  }
  EXPECT_NEAR(e, ms, 1e-12 * ms);
  EXPECT_EQ(modes, ny * nx);
}

TEST(EvalSpectrum, UpperHalfEnergySplitsAtAQuarterCyclePerSpacing) {
  EXPECT_NEAR(fe::upper_half_energy(fe::radial_spectrum(wave(32, 32, 0, 12).data(), 32, 32)), 0.5,
              1e-12);
  EXPECT_NEAR(fe::upper_half_energy(fe::radial_spectrum(wave(32, 32, 0, 4).data(), 32, 32)), 0.0,
              1e-20);
}
