// SPDX-License-Identifier: BSD-3-Clause
// A small mixed-radix FFT (no dependency) and radial binning of the 2-D power spectrum.
#include "coupling/eval/spectrum.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include "coupling/error.hpp"

namespace finecast::coupling::eval {

namespace {

using cd = std::complex<double>;

int smallest_factor(int n) {
  for (int p = 2; p * p <= n; ++p)
    if (n % p == 0) return p;
  return n;
}

/// exp(-2 pi i j / N) for j < N: one table serves every sub-length m dividing N, since
/// W_m^e = W_N^(e N / m). Cached per thread for the last N (rows, then columns, repeat N).
const std::vector<cd>& roots(int N) {
  thread_local std::vector<cd> table;
  if (static_cast<int>(table.size()) != N) {
    table.resize(static_cast<std::size_t>(N));
    for (int j = 0; j < N; ++j) {
      const double ang = -2.0 * M_PI * j / N;
      table[j] = cd(std::cos(ang), std::sin(ang));
    }
  }
  return table;
}

/// out[k] = DFT of in[0], in[stride], ..., in[(n-1) stride] (out must not alias in).
/// Decimation in time on the smallest prime factor p: the p sub-transforms of length n/p land
/// in out[r m ...], then each group {k + q m} is combined in place at O(p) per output. Prime
/// lengths fall back to a plain O(n^2) DFT, cheap at the few-hundred-point prime factors that
/// real grid sizes have.
void dft_rec(const cd* in, std::size_t stride, int n, cd* out, const cd* w, int N,
             std::vector<cd>& tmp) {
  if (n == 1) {
    out[0] = in[0];
    return;
  }
  const int step = N / n;  // W_n^e = w[(e mod n) * step]
  const int p = smallest_factor(n);
  if (p == n) {
    for (int k = 0; k < n; ++k) {
      cd s = 0.0;
      int e = 0;  // j k mod n, kept reduced so the table index stays in range
      for (int j = 0; j < n; ++j) {
        s += in[j * stride] * w[static_cast<std::size_t>(e) * step];
        e += k;
        if (e >= n) e -= n;
      }
      out[k] = s;
    }
    return;
  }
  const int m = n / p;
  for (int r = 0; r < p; ++r) dft_rec(in + r * stride, stride * p, m, out + r * m, w, N, tmp);
  tmp.resize(static_cast<std::size_t>(p));
  for (int k = 0; k < m; ++k) {
    for (int r = 0; r < p; ++r) tmp[r] = out[r * m + k];
    for (int q = 0; q < p; ++q) {
      const int kk = k + q * m;
      cd s = 0.0;
      for (int r = 0; r < p; ++r)
        s += tmp[r] * w[static_cast<std::size_t>((static_cast<int64_t>(r) * kk) % n) * step];
      out[kk] = s;
    }
  }
}

}  // namespace

void fft(std::vector<cd>& a) {
  if (a.empty()) return;
  const int n = static_cast<int>(a.size());
  std::vector<cd> out(a.size()), tmp;
  dft_rec(a.data(), 1, n, out.data(), roots(n).data(), n, tmp);
  a.swap(out);
}

void fft2(std::vector<cd>& a, int ny, int nx) {
  if (ny < 1 || nx < 1 || a.size() != static_cast<std::size_t>(ny) * nx)
    throw InternalError("fft2: array of " + std::to_string(a.size()) + " values is not " +
                        std::to_string(ny) + " x " + std::to_string(nx));
  std::vector<cd> line(static_cast<std::size_t>(nx));
  for (int i = 0; i < ny; ++i) {
    std::copy(a.begin() + static_cast<std::ptrdiff_t>(i) * nx,
              a.begin() + static_cast<std::ptrdiff_t>(i + 1) * nx, line.begin());
    fft(line);
    std::copy(line.begin(), line.end(), a.begin() + static_cast<std::ptrdiff_t>(i) * nx);
  }
  line.resize(static_cast<std::size_t>(ny));
  for (int j = 0; j < nx; ++j) {
    for (int i = 0; i < ny; ++i) line[i] = a[static_cast<std::size_t>(i) * nx + j];
    fft(line);
    for (int i = 0; i < ny; ++i) a[static_cast<std::size_t>(i) * nx + j] = line[i];
  }
}

RadialSpectrum radial_spectrum(const double* field, int ny, int nx) {
  std::vector<cd> a(static_cast<std::size_t>(ny) * nx);
  for (std::size_t i = 0; i < a.size(); ++i) a[i] = field[i];
  fft2(a, ny, nx);
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
    for (int j = 0; j < nx; ++j) {
      const int kx = j <= nx / 2 ? j : j - nx;
      const double fy = static_cast<double>(ky) / ny, fx = static_cast<double>(kx) / nx;
      const int b = static_cast<int>(std::lround(s.n * std::sqrt(fy * fy + fx * fx)));
      s.energy[b] += std::norm(a[static_cast<std::size_t>(i) * nx + j]) * norm;
      s.modes[b] += 1;
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

}  // namespace finecast::coupling::eval
