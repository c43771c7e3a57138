// SPDX-License-Identifier: BSD-3-Clause
// Constructors and cropping of output grid descriptions.
#include "coupling/io/nc_metadata.hpp"

#include <stdexcept>

namespace finecast::coupling {

OutputGrid OutputGrid::icon(std::vector<double> clon, std::vector<double> clat) {
  if (clon.size() != clat.size())
    throw std::invalid_argument("OutputGrid::icon: clon has " + std::to_string(clon.size()) +
                                " values, clat " + std::to_string(clat.size()));
  OutputGrid g;
  g.kind = Kind::kIcon;
  g.clon = std::move(clon);
  g.clat = std::move(clat);
  return g;
}

OutputGrid OutputGrid::latlon(std::vector<double> lat_deg, std::vector<double> lon_deg) {
  OutputGrid g;
  g.kind = Kind::kLatLon;
  g.y = CoordVar{"lat",
                 std::move(lat_deg),
                 {{"units", "degrees_north"},
                  {"standard_name", "latitude"},
                  {"long_name", "latitude"},
                  {"axis", "Y"}},
                 {}};
  g.x = CoordVar{"lon",
                 std::move(lon_deg),
                 {{"units", "degrees_east"},
                  {"standard_name", "longitude"},
                  {"long_name", "longitude"},
                  {"axis", "X"}},
                 {}};
  return g;
}

OutputGrid OutputGrid::cropped(int64_t y0, int64_t ny, int64_t x0, int64_t nx) const {
  if (kind != Kind::kLatLon)
    throw std::invalid_argument("OutputGrid::cropped: only lat-lon grids can be cropped");
  const auto sy = static_cast<int64_t>(y.values.size()), sx = static_cast<int64_t>(x.values.size());
  if (y0 < 0 || ny < 1 || y0 + ny > sy || x0 < 0 || nx < 1 || x0 + nx > sx)
    throw std::invalid_argument("OutputGrid::cropped: window rows " + std::to_string(y0) + "+" +
                                std::to_string(ny) + ", columns " + std::to_string(x0) + "+" +
                                std::to_string(nx) + " is outside the " + std::to_string(sy) +
                                " x " + std::to_string(sx) + " grid");
  OutputGrid g = *this;
  g.y.values.assign(y.values.begin() + y0, y.values.begin() + y0 + ny);
  g.x.values.assign(x.values.begin() + x0, x.values.begin() + x0 + nx);
  return g;
}

}  // namespace finecast::coupling
