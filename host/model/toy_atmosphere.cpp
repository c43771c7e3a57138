// SPDX-License-Identifier: BSD-3-Clause
// Closed-form fields of finecast-host; every value is a function of one cell and the time, so
// any decomposition gives bit-identical values.
#include "host/model/toy_atmosphere.hpp"

#include <algorithm>
#include <cmath>

namespace finecast::host {
namespace {

constexpr double kPi = 3.14159265358979323846;
constexpr double kGravity = 9.80665;
constexpr double kRd = 287.04;

void to_xyz(double lon, double lat, double& x, double& y, double& z) {
  x = std::cos(lat) * std::cos(lon);
  y = std::cos(lat) * std::sin(lon);
  z = std::sin(lat);
}

// Sea-level pressure anomaly pattern (Pa) in its moving frame: a few highs and lows.
double pressure_anomaly(double x, double y, double z) {
  return 1800.0 * (x * y) * 2.0 + 1200.0 * z * (x * x - y * y) * 2.0 - 900.0 * (y * z) * 2.0;
}

}  // namespace

void rotate_about_tilted_axis(double& x, double& y, double& z, double angle, double tilt_deg) {
  const double t = tilt_deg * kPi / 180.0;
  const double ax = std::sin(t), ay = 0.0, az = std::cos(t);
  const double c = std::cos(angle), s = std::sin(angle);
  const double d = ax * x + ay * y + az * z;
  // Rodrigues: v c + (a x v) s + a (a.v)(1 - c)
  const double cx = ay * z - az * y, cy = az * x - ax * z, cz = ax * y - ay * x;
  const double nx = x * c + cx * s + ax * d * (1 - c);
  const double ny = y * c + cy * s + ay * d * (1 - c);
  const double nz = z * c + cz * s + az * d * (1 - c);
  x = nx;
  y = ny;
  z = nz;
}

double temperature_anomaly(double x, double y, double z) {
  const double lon = std::atan2(y, x);
  const double rho = std::sqrt(std::max(0.0, 1.0 - z * z));
  return 6.0 * x * z + 5.0 * (x * x - y * y) + 4.0 * std::sin(3.0 * lon) * rho * rho * rho;
}

double surface_temperature(const CellSurface& cell, double seconds, double utc_hours, const ToyAtmosphereParams& p) {
  const double s = std::sin(cell.lat);
  const double zonal = 300.0 - 48.0 * s * s;
  double x, y, z;
  to_xyz(cell.lon, cell.lat, x, y, z);
  // The pattern turns with the flow: look it up at the point it came from.
  rotate_about_tilted_axis(x, y, z, -2.0 * kPi * seconds / p.rotation_period_s, p.axis_tilt_deg);
  const double anomaly = temperature_anomaly(x, y, z);
  const double local_hours = utc_hours + cell.lon * 12.0 / kPi;
  const double amplitude =
      (p.diurnal_sea_k + (p.diurnal_land_k - p.diurnal_sea_k) * cell.land_fraction) * std::cos(cell.lat);
  const double diurnal = amplitude * std::cos(2.0 * kPi * (local_hours - 15.0) / 24.0);
  return zonal + anomaly + diurnal - p.lapse_rate * cell.height;
}

double surface_pressure(const CellSurface& cell, double seconds, double ts, const ToyAtmosphereParams& p) {
  double x, y, z;
  to_xyz(cell.lon, cell.lat, x, y, z);
  rotate_about_tilted_axis(x, y, z, -2.0 * kPi * seconds / p.pressure_period_s, -p.axis_tilt_deg);
  const double msl = 101325.0 + pressure_anomaly(x, y, z);
  // Mean temperature of the column between sea level and the surface.
  const double t_mean = ts + 0.5 * p.lapse_rate * cell.height;
  return msl * std::exp(-kGravity * cell.height / (kRd * t_mean));
}

}  // namespace finecast::host
