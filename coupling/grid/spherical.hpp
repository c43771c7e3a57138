// SPDX-License-Identifier: BSD-3-Clause
// Small spherical-geometry helpers shared by the grid readers, the generator and the patch maps.
#pragma once

#include <array>
#include <cmath>

namespace finecast::coupling::sphere {

/// Earth radius used by ICON (m); areas computed here are on this sphere.
inline constexpr double kEarthRadius = 6371229.0;
inline constexpr double kPi = 3.14159265358979323846;
inline constexpr double kDeg = kPi / 180.0;

using Vec3 = std::array<double, 3>;

/// Unit vector of a point given in radians.
inline Vec3 to_xyz(double lon, double lat) {
  const double c = std::cos(lat);
  return {c * std::cos(lon), c * std::sin(lon), std::sin(lat)};
}

inline double dot(const Vec3& a, const Vec3& b) { return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]; }

inline Vec3 cross(const Vec3& a, const Vec3& b) {
  return {a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]};
}

inline Vec3 add(const Vec3& a, const Vec3& b) { return {a[0] + b[0], a[1] + b[1], a[2] + b[2]}; }
inline Vec3 sub(const Vec3& a, const Vec3& b) { return {a[0] - b[0], a[1] - b[1], a[2] - b[2]}; }

inline Vec3 normalised(const Vec3& a) {
  const double n = std::sqrt(dot(a, a));
  return {a[0] / n, a[1] / n, a[2] / n};
}

/// The unit vector of p reflected through m (2m - p, normalised): the mirror image of a
/// limited-area grid's boundary cell across its boundary edge (m the edge centre), which stands
/// for the missing second cell.
inline Vec3 mirrored(const Vec3& p, const Vec3& m) { return normalised(sub(add(m, m), p)); }

/// Great-circle distance (radians) between unit vectors a and b; atan2 keeps short arcs exact.
inline double arc_length(const Vec3& a, const Vec3& b) {
  const Vec3 c = cross(a, b);
  return std::atan2(std::sqrt(dot(c, c)), dot(a, b));
}

/// The local unit vectors east and north at (lon, lat) in radians (east is defined at the poles).
inline Vec3 east(double lon) { return {-std::sin(lon), std::cos(lon), 0.0}; }
inline Vec3 north(double lon, double lat) {
  return {-std::cos(lon) * std::sin(lat), -std::sin(lon) * std::sin(lat), std::cos(lat)};
}

/// (lon, lat) in radians of a non-zero vector.
inline void to_lonlat(const Vec3& v, double& lon, double& lat) {
  lon = std::atan2(v[1], v[0]);
  lat = std::atan2(v[2], std::hypot(v[0], v[1]));
}

/// Circumcentre of the spherical triangle (a, b, c) (unit vectors), on the side of the sphere
/// the triangle lies on whatever its orientation: ICON grid files' cell centres (clon, clat).
inline Vec3 circumcentre(const Vec3& a, const Vec3& b, const Vec3& c) {
  const Vec3 n = normalised(cross({b[0] - a[0], b[1] - a[1], b[2] - a[2]}, {c[0] - a[0], c[1] - a[1], c[2] - a[2]}));
  const double side = dot(n, {a[0] + b[0] + c[0], a[1] + b[1] + c[1], a[2] + b[2] + c[2]});
  return side < 0 ? Vec3{-n[0], -n[1], -n[2]} : n;
}

/// Area of the spherical triangle (a, b, c) on the unit sphere (Van Oosterom & Strackee), exact
/// for small triangles where L'Huilier's formula loses digits.
inline double triangle_area(const Vec3& a, const Vec3& b, const Vec3& c) {
  const double num = std::fabs(dot(a, cross(b, c)));
  const double den = 1.0 + dot(a, b) + dot(b, c) + dot(c, a);
  return 2.0 * std::atan2(num, den);
}

/// Geographic (lon, lat) in degrees of a point given in rotated-pole coordinates (degrees), for
/// the CF rotated_latitude_longitude mapping whose north pole lies at (pole_lon, pole_lat).
/// Same formulas as COSMO's rlarot2rla / phirot2phi (grid_north_pole_longitude convention).
inline void unrotate(double rlon, double rlat, double pole_lon, double pole_lat, double& lon, double& lat) {
  const double sp = std::sin(pole_lat * kDeg), cp = std::cos(pole_lat * kDeg);
  const double lp = pole_lon * kDeg;
  const double x = rlon * kDeg, y = rlat * kDeg;
  lat = std::asin(cp * std::cos(y) * std::cos(x) + sp * std::sin(y)) / kDeg;
  const double t = -sp * std::cos(x) * std::cos(y) + cp * std::sin(y);
  const double a1 = std::sin(lp) * t - std::cos(lp) * std::sin(x) * std::cos(y);
  const double a2 = std::cos(lp) * t + std::sin(lp) * std::sin(x) * std::cos(y);
  lon = std::atan2(a1, a2) / kDeg;
}

}  // namespace finecast::coupling::sphere
