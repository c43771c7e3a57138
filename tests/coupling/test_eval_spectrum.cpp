// SPDX-License-Identifier: BSD-3-Clause
// Radial spectra against a plain DFT, of sinusoids and of noise (Parseval).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <complex>
#include <random>
#include <utility>
#include <vector>

#include "eval/spectrum.hpp"

namespace fe = finecast::eval;
using cd = std::complex<double>;

namespace {

/// The radial spectrum by definition: every mode of a plain O((ny nx)^2) 2-D DFT, binned.
fe::RadialSpectrum plain_dft_spectrum(const std::vector<double>& f, int ny, int nx) {
  fe::RadialSpectrum s;
  s.n = std::min(ny, nx);
  const int nbins = static_cast<int>(std::lround(s.n * std::sqrt(0.5))) + 1;
  s.energy.assign(nbins, 0.0);
  s.modes.assign(nbins, 0);
  for (int ky = 0; ky < ny; ++ky)
    for (int kx = 0; kx < nx; ++kx) {
      cd x = 0.0;
      for (int i = 0; i < ny; ++i)
        for (int j = 0; j < nx; ++j)
          x += f[static_cast<std::size_t>(i) * nx + j] *
               std::polar(1.0, -2.0 * M_PI * (static_cast<double>(ky) * i / ny + static_cast<double>(kx) * j / nx));
      const double fy = static_cast<double>(ky <= ny / 2 ? ky : ky - ny) / ny;
      const double fx = static_cast<double>(kx <= nx / 2 ? kx : kx - nx) / nx;
      const int b = static_cast<int>(std::lround(s.n * std::sqrt(fy * fy + fx * fx)));
      s.energy[b] += std::norm(x) / (static_cast<double>(ny) * nx * ny * nx);
      s.modes[b] += 1;
    }
  return s;
}

std::vector<double> wave(int ny, int nx, int ky, int kx) {
  std::vector<double> f(static_cast<std::size_t>(ny) * nx);
  for (int i = 0; i < ny; ++i)
    for (int j = 0; j < nx; ++j)
      f[static_cast<std::size_t>(i) * nx + j] =
          std::cos(2 * M_PI * (static_cast<double>(ky) * i / ny + static_cast<double>(kx) * j / nx));
  return f;
}

int peak(const fe::RadialSpectrum& s) {
  return static_cast<int>(std::max_element(s.energy.begin(), s.energy.end()) - s.energy.begin());
}

}  // namespace

TEST(EvalSpectrum, MatchesAPlainDftForOddEvenAndPrimeSizes) {
  // Odd and even lengths (the Nyquist column of the real transform), primes and mixed factors.
  std::mt19937 rng(11);
  std::normal_distribution<double> nd;
  const std::pair<int, int> sizes[] = {{1, 1},   {1, 7},   {3, 5},  {4, 9},  {7, 4},
                                       {12, 15}, {16, 30}, {5, 49}, {2, 97}, {3, 210}};
  for (const auto& [ny, nx] : sizes) {
    std::vector<double> f(static_cast<std::size_t>(ny) * nx);
    for (double& v : f) v = nd(rng);
    const fe::RadialSpectrum got = fe::radial_spectrum(f.data(), ny, nx);
    const fe::RadialSpectrum want = plain_dft_spectrum(f, ny, nx);
    ASSERT_EQ(got.energy.size(), want.energy.size()) << ny << " x " << nx;
    double total = 0;
    for (double e : want.energy) total += e;
    for (std::size_t b = 0; b < want.energy.size(); ++b) {
      EXPECT_NEAR(got.energy[b], want.energy[b], 1e-12 * total) << ny << " x " << nx << " bin " << b;
      EXPECT_EQ(got.modes[b], want.modes[b]) << ny << " x " << nx << " bin " << b;
    }
  }
}

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
  EXPECT_NEAR(fe::upper_half_energy(fe::radial_spectrum(wave(32, 32, 0, 12).data(), 32, 32)), 0.5, 1e-12);
  EXPECT_NEAR(fe::upper_half_energy(fe::radial_spectrum(wave(32, 32, 0, 4).data(), 32, 32)), 0.0, 1e-20);
}
