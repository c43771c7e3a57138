// SPDX-License-Identifier: BSD-3-Clause
// finecast-host's per-rank model state and field evaluation.
#include "coupling/host/host_model.hpp"

#include "coupling/host/orography.hpp"

namespace finecast::coupling::host {

HostModel::HostModel(const IconGrid& grid, const HostModelSetup& setup, int n_ranks, int rank)
    : setup_(setup) {
  cells_ = decompose(grid, setup.decomposition, n_ranks, rank);
  domain_ = make_domain(grid, cells_, setup.nproma, setup.dt);
  const std::vector<int> local = cells_.all();
  const CellOrography oro =
      average_orography(setup.orography, setup.orography_variable, grid, local);
  surface_.resize(local.size());
  for (size_t j = 0; j < local.size(); ++j)
    surface_[j] = {grid.clon[local[j]], grid.clat[local[j]], oro.height[j], oro.land_fraction[j]};
}

void HostModel::compute(double seconds, double* ts, double* ps) const {
  const double utc_hours = setup_.start_utc_hours + seconds / 3600.0;
  const size_t np = static_cast<size_t>(setup_.nproma);
  for (size_t j = 0; j < surface_.size(); ++j) {
    const size_t o = j % np + np * (j / np);  // (jc, 1, jb) with nlev = 1
    const double t = surface_temperature(surface_[j], seconds, utc_hours);
    ts[o] = t;
    ps[o] = surface_pressure(surface_[j], seconds, t);
  }
}

void HostModel::write_topography(double* topography) const {
  const size_t np = static_cast<size_t>(setup_.nproma);
  for (size_t j = 0; j < surface_.size(); ++j)
    topography[j % np + np * (j / np)] = surface_[j].height;
}

}  // namespace finecast::coupling::host
