// SPDX-License-Identifier: BSD-3-Clause
// finecast-host's fields: closed-form near-surface temperature and surface pressure with
// large-scale patterns moving around the globe and fine-scale structure from real orography.
#pragma once

namespace finecast::host {

/// The static facts of one cell that the fields depend on.
struct CellSurface {
  double lon = 0, lat = 0;   ///< radians
  double height = 0;         ///< m, >= 0
  double land_fraction = 0;  ///< 0..1
};

/// Parameters of the fields; the defaults are what finecast-host runs.
struct ToyAtmosphereParams {
  double rotation_period_s = 5.0 * 86400.0;   ///< solid-body rotation of the temperature pattern
  double axis_tilt_deg = 40.0;                ///< rotation axis tilted from the pole towards 0E
  double pressure_period_s = -3.5 * 86400.0;  ///< weather pattern of ps (negative: westward)
  double lapse_rate = 6.5e-3;                 ///< K per m
  double diurnal_land_k = 7.0;                ///< half the diurnal range over land at the equator
  double diurnal_sea_k = 1.0;                 ///< ... over sea
};

/// Near-surface temperature "ts" (K) of a cell at `seconds` since the start, `utc_hours` being
/// the time of day (hours) at that moment: zonal climate + the advected anomaly + diurnal cycle
/// in local solar time (amplitude by land fraction, maximum at 15 h) - lapse rate * height.
double surface_temperature(const CellSurface& cell, double seconds, double utc_hours,
                           const ToyAtmosphereParams& p = {});

/// Surface pressure "ps" (Pa): a moving sea-level pressure pattern reduced hydrostatically to
/// the cell's height with the column temperature implied by `ts`.
double surface_pressure(const CellSurface& cell, double seconds, double ts, const ToyAtmosphereParams& p = {});

/// The large-scale temperature anomaly (K) at a point given by its unit vector in the frame
/// that moves with the pattern (exposed so tests can check the advection).
double temperature_anomaly(double x, double y, double z);

/// Rotates the unit vector (x, y, z) by `angle` (radians) about the axis tilted `tilt_deg`
/// from the north pole towards 0E.
void rotate_about_tilted_axis(double& x, double& y, double& z, double angle, double tilt_deg);

}  // namespace finecast::host
