// SPDX-License-Identifier: BSD-3-Clause
// One rank's part of finecast-host: its cells, their surface and the fields in ICON's blocked
// layout.
#pragma once

#include <string>
#include <vector>

#include "coupling/comin/host.hpp"
#include "coupling/grid/icon_grid.hpp"
#include "coupling/host/decomposition.hpp"
#include "coupling/host/toy_atmosphere.hpp"

namespace finecast::coupling::host {

/// Where the model's surface and time come from.
struct HostModelSetup {
  std::string orography = "/usr/share/ferret-vis/data/etopo5.cdf";
  std::string orography_variable = "ROSE";
  Decomposition decomposition = Decomposition::kLatBands;
  int nproma = 32;
  double dt = 1800.0;
  double start_utc_hours = 0.0;  ///< time of day of the start, hours
};

class HostModel {
 public:
  /// Decomposes `grid` for `rank` of `n_ranks` and averages the orography onto its cells.
  HostModel(const IconGrid& grid, const HostModelSetup& setup, int n_ranks, int rank);

  const LocalCells& cells() const { return cells_; }
  /// The ComIn descriptive data of this rank (copy it into comin_host::Host::add_domain).
  const comin_host::Domain& domain() const { return domain_; }
  /// Surface of each local cell (owned, then halo).
  const std::vector<CellSurface>& surface() const { return surface_; }
  int nproma() const { return setup_.nproma; }

  /// Writes "ts" and "ps" at `seconds` since the start into blocked (nproma, 1, nblks) arrays,
  /// owned and halo cells alike (halo values equal their owners': same formulas).
  void compute(double seconds, double* ts, double* ps) const;
  /// Writes the surface height ("topography_c", m) into a blocked array.
  void write_topography(double* topography) const;

 private:
  HostModelSetup setup_;
  LocalCells cells_;
  comin_host::Domain domain_;
  std::vector<CellSurface> surface_;
};

}  // namespace finecast::coupling::host
