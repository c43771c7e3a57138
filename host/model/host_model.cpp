// SPDX-License-Identifier: BSD-3-Clause
// finecast-host's per-rank model state and field evaluation.
#include "host/model/host_model.hpp"

#include <algorithm>
#include <cmath>

#include "coupling/error.hpp"
#include "host/model/orography.hpp"

namespace finecast::host {
namespace {

constexpr double kGravity = 9.80665;
constexpr double kRd = 287.04;
constexpr double kLapseRate = 6.5e-3;    // K/m
constexpr double kTropopauseT = 216.65;  // K

// Height of half level k (0 = model top .. nlev = surface) above sea level for a surface at
// `h`: levels stretched towards the ground, following the terrain (a simple terrain-following
// coordinate in the spirit of ICON's).
double half_level_height(int k, int nlev, double top, double h) {
  const double eta = static_cast<double>(nlev - k) / nlev;  // 1 at the top, 0 at the surface
  return h + (top - h) * eta * eta;
}

}  // namespace

HostModel::HostModel(const coupling::IconGrid& grid, const HostModelSetup& setup, int n_ranks, int rank)
    : setup_(setup) {
  if (setup.nlev < 1) throw ConfigError("finecast-host: nlev must be >= 1, got " + std::to_string(setup.nlev));
  cells_ = decompose(grid, setup.decomposition, n_ranks, rank);
  domain_ = make_domain(grid, cells_, setup.nproma, setup.dt);
  const std::vector<int> local = cells_.all();
  const CellOrography oro = average_orography(setup.orography, setup.orography_variable, grid, local);
  surface_.resize(local.size());
  for (size_t j = 0; j < local.size(); ++j)
    surface_[j] = {grid.clon[local[j]], grid.clat[local[j]], oro.height[j], oro.land_fraction[j]};
  domain_.nlev = setup.nlev;
  domain_.hhl.resize(local.size() * (setup.nlev + 1));
  for (size_t j = 0; j < local.size(); ++j)
    for (int k = 0; k <= setup.nlev; ++k)
      domain_.hhl[j * (setup.nlev + 1) + k] = half_level_height(k, setup.nlev, setup.model_top, surface_[j].height);
}

void HostModel::compute(double seconds, const FieldPointers& f) const {
  const double utc_hours = setup_.start_utc_hours + seconds / 3600.0;
  const size_t np = static_cast<size_t>(setup_.nproma);
  const int nlev = setup_.nlev;
  // Cells are independent: the same values with any number of OpenMP threads.
#pragma omp parallel for schedule(static)
  for (size_t j = 0; j < surface_.size(); ++j) {
    const size_t o2 = j % np + np * (j / np);  // (jc, jb)
    const double t = surface_temperature(surface_[j], seconds, utc_hours);
    const double p = surface_pressure(surface_[j], seconds, t);
    if (f.ts) f.ts[o2] = t;
    if (f.ps) f.ps[o2] = p;
    if (!f.temp && !f.pres) continue;
    const double* hhl = domain_.hhl.data() + j * (nlev + 1);
    for (int k = 0; k < nlev; ++k) {
      const double dz = 0.5 * (hhl[k] + hhl[k + 1]) - surface_[j].height;  // above the surface
      const double tk = std::max(t - kLapseRate * dz, kTropopauseT);
      const size_t o3 = j % np + np * (k + static_cast<size_t>(nlev) * (j / np));  // (jc, jk, jb)
      if (f.temp) f.temp[o3] = tk;
      if (f.pres) f.pres[o3] = p * std::exp(-kGravity * dz / (kRd * 0.5 * (t + tk)));
    }
  }
}

void HostModel::write_topography(double* topography) const {
  const size_t np = static_cast<size_t>(setup_.nproma);
  for (size_t j = 0; j < surface_.size(); ++j) topography[j % np + np * (j / np)] = surface_[j].height;
}

void HostModel::write_land_fraction(double* fraction) const {
  const size_t np = static_cast<size_t>(setup_.nproma);
  for (size_t j = 0; j < surface_.size(); ++j) fraction[j % np + np * (j / np)] = surface_[j].land_fraction;
}

std::vector<double> HostModel::vct_a() const {
  std::vector<double> v(setup_.nlev + 1);
  for (int k = 0; k <= setup_.nlev; ++k) v[k] = half_level_height(k, setup_.nlev, setup_.model_top, 0.0);
  return v;
}

}  // namespace finecast::host
