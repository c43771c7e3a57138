// SPDX-License-Identifier: BSD-3-Clause
// One rank's part of finecast-host: its cells, their surface and the fields in ICON's blocked
// layout.
#pragma once

#include <string>
#include <vector>

#include "host/comin/host.hpp"
#include "coupling/grid/icon_grid.hpp"
#include "host/model/decomposition.hpp"
#include "host/model/toy_atmosphere.hpp"

namespace finecast::host {

/// Where the model's surface and time come from.
struct HostModelSetup {
  std::string orography = "/usr/share/ferret-vis/data/etopo5.cdf";
  std::string orography_variable = "ROSE";
  Decomposition decomposition = Decomposition::kLatBands;
  int nproma = 32;
  double dt = 1800.0;
  double start_utc_hours = 0.0;  ///< time of day of the start, hours
  int nlev = 10;                 ///< full levels of the 3-D fields (temp, pres)
  double model_top = 30000.0;    ///< m, height of the uppermost half level
};

/// Where compute() writes the fields, each a blocked host array: 2-D (nproma, nblks), 3-D
/// (nproma, nlev, nblks). A null pointer skips that field.
struct FieldPointers {
  double* ts = nullptr;    ///< surface temperature, K
  double* ps = nullptr;    ///< surface pressure, Pa
  double* temp = nullptr;  ///< air temperature at the full levels, K (level 1 = model top)
  double* pres = nullptr;  ///< air pressure at the full levels, Pa
};

class HostModel {
 public:
  /// Decomposes `grid` for `rank` of `n_ranks` and averages the orography onto its cells.
  HostModel(const coupling::IconGrid& grid, const HostModelSetup& setup, int n_ranks, int rank);

  const LocalCells& cells() const { return cells_; }
  /// The ComIn descriptive data of this rank (copy it into comin::Host::add_domain).
  const comin::Domain& domain() const { return domain_; }
  /// Surface of each local cell (owned, then halo).
  const std::vector<CellSurface>& surface() const { return surface_; }
  int nproma() const { return setup_.nproma; }

  /// Writes the fields at `seconds` since the start, owned and halo cells alike (halo values
  /// equal their owners': same formulas). The 3-D fields follow the terrain: temperature falls
  /// with the lapse rate above the surface (not below 216.65 K), pressure is hydrostatic.
  void compute(double seconds, const FieldPointers& fields) const;
  /// Writes the surface height ("topography_c", m) into a blocked 2-D array.
  void write_topography(double* topography) const;
  /// Writes the land fraction ("fr_land", 0..1) into a blocked 2-D array.
  void write_land_fraction(double* fraction) const;
  /// Height of the half levels above sea level, m (nlev + 1 values, model top first), on a
  /// flat surface: ICON's vct_a.
  std::vector<double> vct_a() const;

 private:
  HostModelSetup setup_;
  LocalCells cells_;
  comin::Domain domain_;
  std::vector<CellSurface> surface_;
};

}  // namespace finecast::host
