// SPDX-License-Identifier: BSD-3-Clause
// Spectral noise of the noise_spectral reference: per-block Fourier filtering on lat-lon blocks,
// per-band rescaling of the refinement hierarchy on unstructured patches.
#include "eval/noise.hpp"

#include <fftw3.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>

#include "common/error.hpp"
#include "eval/spectrum.hpp"

namespace finecast::eval {

namespace {

struct FftwFree {
  void operator()(void* p) const { fftw_free(p); }
};

}  // namespace

void add_residual_spectrum(const BlockLayout& L, const double* r, const std::vector<char>& valid, ResidualSpectrum& s) {
  // The residual over the whole window, zero in the blocks not used (and the non-finite ones).
  std::vector<double> field(L.size(), 0.0);
  bool any = false;
  for (int by = 0; by < L.nby(); ++by)
    for (int bx = 0; bx < L.nbx(); ++bx) {
      if (!valid[static_cast<std::size_t>(by) * L.nbx() + bx]) continue;
      bool finite = true;
      for (int i = 0; i < L.k && finite; ++i)
        for (int j = 0; j < L.k && finite; ++j)
          finite = std::isfinite(r[static_cast<std::size_t>(by * L.k + i) * L.nx + bx * L.k + j]);
      if (!finite) continue;
      any = true;
      for (int i = 0; i < L.k; ++i)
        for (int j = 0; j < L.k; ++j) {
          const std::size_t c = static_cast<std::size_t>(by * L.k + i) * L.nx + bx * L.k + j;
          field[c] = r[c];
        }
    }
  if (!any) return;
  const RadialSpectrum rs = radial_spectrum(field.data(), L.ny, L.nx);
  if (s.power.empty()) {
    s.wavenumber = rs.wavenumber;
    s.power.assign(rs.energy.size(), 0.0);
  }
  if (s.power.size() != rs.energy.size())
    throw InternalError("add_residual_spectrum: a spectrum of " + std::to_string(s.power.size()) + " bins for a " +
                        std::to_string(L.ny) + " x " + std::to_string(L.nx) + " window");
  // The mean power per mode of each bin: the spectral density's shape, whatever the window.
  for (std::size_t b = 0; b < rs.energy.size(); ++b)
    if (rs.modes[b] > 0) s.power[b] += rs.energy[b] / static_cast<double>(rs.modes[b]);
  s.weight += 1.0;
}

void add_residual_spectrum(const CellLayout& L, const double* r, const std::vector<char>& valid, ResidualSpectrum& s) {
  const int B = L.n_bands();
  if (s.power.empty()) s.power.assign(static_cast<std::size_t>(B), 0.0);
  if (s.power.size() != static_cast<std::size_t>(B))
    throw InternalError("add_residual_spectrum: a spectrum of " + std::to_string(s.power.size()) + " bands for " +
                        std::to_string(B));
  // Only whole finite patches; the others are zero, which puts nothing into any band.
  std::vector<double> field(static_cast<std::size_t>(L.size()), 0.0);
  std::vector<char> use(valid.size(), 0);
  for (int64_t p = 0; p < L.n_patches(); ++p) {
    if (!valid[p]) continue;
    bool finite = true;
    for (int k = 0; k < L.patch_size() && finite; ++k) finite = std::isfinite(r[L.cells(p)[k]]);
    use[p] = finite;
  }
  double w = 0.0;
  for (int64_t i = 0; i < L.size(); ++i)
    if (use[L.patch_of(i)]) {
      field[i] = r[i];
      w += L.w(i);
    }
  const std::vector<std::vector<double>> bands = hierarchy_bands(L, field.data());
  for (int b = 0; b < B; ++b)
    for (int64_t i = 0; i < L.size(); ++i) s.power[b] += L.w(i) * bands[b][i] * bands[b][i];
  s.weight += w;
}

std::vector<double> spectral_noise(const BlockLayout& L, const ResidualSpectrum& s, std::mt19937_64& rng) {
  if (s.empty() || s.wavenumber.size() != s.power.size() || s.power.empty())
    throw InternalError("spectral_noise: no residual spectrum of a lat-lon window");
  const int ny = L.ny, nx = L.nx, half = nx / 2 + 1;
  // The density at wavenumber f: linear between the bin centres, held beyond the outermost.
  auto density = [&](double f) {
    const std::vector<double>& w = s.wavenumber;
    if (f <= w.front()) return s.power.front() / s.weight;
    if (f >= w.back()) return s.power.back() / s.weight;
    const std::size_t b = static_cast<std::size_t>(std::upper_bound(w.begin(), w.end(), f) - w.begin());
    const double t = (f - w[b - 1]) / (w[b] - w[b - 1]);
    return ((1.0 - t) * s.power[b - 1] + t * s.power[b]) / s.weight;
  };
  const std::size_t n_in = static_cast<std::size_t>(ny) * nx, n_out = static_cast<std::size_t>(ny) * half;
  std::unique_ptr<double, FftwFree> x(fftw_alloc_real(n_in));
  std::unique_ptr<fftw_complex, FftwFree> X(fftw_alloc_complex(n_out));
  if (!x || !X) throw InternalError("spectral_noise: cannot allocate the FFT buffers");
  fftw_plan fwd = nullptr, bwd = nullptr;
  {
    std::lock_guard<std::mutex> lock(fftw_planner_mutex());
    fwd = fftw_plan_dft_r2c_2d(ny, nx, x.get(), X.get(), FFTW_ESTIMATE);
    bwd = fftw_plan_dft_c2r_2d(ny, nx, X.get(), x.get(), FFTW_ESTIMATE);
  }
  std::normal_distribution<double> normal;
  for (std::size_t i = 0; i < n_in; ++i) x.get()[i] = normal(rng);
  fftw_execute(fwd);
  for (int ky = 0; ky < ny; ++ky)
    for (int kx = 0; kx < half; ++kx) {
      const double fy = static_cast<double>(std::min(ky, ny - ky)) / ny, fx = static_cast<double>(kx) / nx;
      const double a = ky == 0 && kx == 0 ? 0.0 : std::sqrt(std::max(0.0, density(std::sqrt(fy * fy + fx * fx))));
      fftw_complex& c = X.get()[static_cast<std::size_t>(ky) * half + kx];
      c[0] *= a;
      c[1] *= a;
    }
  fftw_execute(bwd);
  std::vector<double> out(x.get(), x.get() + n_in);
  {
    std::lock_guard<std::mutex> lock(fftw_planner_mutex());
    fftw_destroy_plan(fwd);
    fftw_destroy_plan(bwd);
  }
  return out;
}

std::vector<double> spectral_noise(const CellLayout& L, const ResidualSpectrum& s, std::mt19937_64& rng) {
  const int B = L.n_bands();
  if (s.empty() || s.power.size() != static_cast<std::size_t>(B))
    throw InternalError("spectral_noise: no residual spectrum of " + std::to_string(B) + " refinement bands");
  std::normal_distribution<double> normal;
  std::vector<double> z(static_cast<std::size_t>(L.size()));
  for (double& v : z) v = normal(rng);
  const std::vector<std::vector<double>> bands = hierarchy_bands(L, z.data());
  double total_w = 0.0;
  for (int64_t i = 0; i < L.size(); ++i) total_w += L.w(i);
  std::vector<double> out(z.size(), 0.0);
  for (int b = 0; b < B; ++b) {
    double e = 0.0;
    for (int64_t i = 0; i < L.size(); ++i) e += L.w(i) * bands[b][i] * bands[b][i];
    const double scale = e > 0.0 ? std::sqrt((s.power[b] / s.weight) / (e / total_w)) : 0.0;
    for (int64_t i = 0; i < L.size(); ++i) out[i] += scale * bands[b][i];
  }
  return out;
}

}  // namespace finecast::eval
