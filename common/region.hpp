// SPDX-License-Identifier: BSD-3-Clause
// A latitude-longitude box given as "lat0,lat1,lon0,lon1" (finecast-eval's --region, --fit-on
// and --hold-out; the plugin's train.hold_out).
#pragma once

#include <string>

namespace finecast {

/// A latitude-longitude box in degrees; longitudes are compared modulo 360, so lon0 > lon1
/// means the box crosses the date line (or 0 degrees, for a 0..360 grid).
struct Region {
  double lat0 = 0, lat1 = 0, lon0 = 0, lon1 = 0;
  bool contains_lat(double lat) const;
  bool contains_lon(double lon) const;
};

/// Parses "lat0,lat1,lon0,lon1"; throws ConfigError quoting `option` and the text when it is
/// not 4 numbers or lat0 > lat1.
Region parse_region(const std::string& text, const std::string& option = "--region");

/// Whether `text` is four comma-separated numbers (a region rather than a file name).
bool is_region_text(const std::string& text);

}  // namespace finecast
