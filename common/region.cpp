// SPDX-License-Identifier: BSD-3-Clause
#include "common/region.hpp"

#include <cmath>
#include <cstdlib>
#include <sstream>
#include <vector>

#include "common/error.hpp"

namespace finecast {

namespace {
double mod360(double x) {
  double r = std::fmod(x, 360.0);
  return r < 0 ? r + 360.0 : r;
}

std::vector<std::string> split(const std::string& text, char sep) {
  std::vector<std::string> out;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, sep)) out.push_back(item);
  if (!text.empty() && text.back() == sep) out.emplace_back();  // "a;" has an empty last box
  return out;
}
}  // namespace

bool Region::contains_lat(double lat) const { return lat >= lat0 && lat <= lat1; }

bool Region::contains_lon(double lon) const {
  const double span = mod360(lon1 - lon0);
  // A box given as e.g. -180,180 spans the whole circle, which mod 360 would shrink to zero.
  if (span == 0.0 && lon1 != lon0) return true;
  return mod360(lon - lon0) <= span + 1e-9;
}

bool is_region_text(const std::string& text) {
  std::stringstream ss(text);
  std::string item;
  int n = 0;
  while (std::getline(ss, item, ',')) {
    char* end = nullptr;
    std::strtod(item.c_str(), &end);
    if (item.empty() || end == item.c_str() || *end != '\0') return false;
    ++n;
  }
  return n == 4;
}

Region parse_region(const std::string& text, const std::string& option) {
  std::vector<double> v;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    char* end = nullptr;
    const double d = std::strtod(item.c_str(), &end);
    if (item.empty() || end == item.c_str() || *end != '\0' || !std::isfinite(d))
      throw ConfigError(option + " '" + text + "': '" + item +
                        "' is not a number (expected lat0,lat1,lon0,lon1 in degrees)");
    v.push_back(d);
  }
  if (v.size() != 4)
    throw ConfigError(option + " '" + text + "': expected 4 numbers lat0,lat1,lon0,lon1, got " +
                      std::to_string(v.size()));
  if (v[0] > v[1] || v[0] < -90 || v[1] > 90)
    throw ConfigError(option + " '" + text + "': latitudes must satisfy -90 <= lat0 <= lat1 <= 90");
  return Region{v[0], v[1], v[2], v[3]};
}

bool is_regions_text(const std::string& text) {
  const std::vector<std::string> boxes = split(text, ';');
  if (boxes.empty()) return false;
  for (const std::string& box : boxes)
    if (!is_region_text(box)) return false;
  return true;
}

std::vector<Region> parse_regions(const std::string& text, const std::string& option) {
  std::vector<Region> out;
  for (const std::string& box : split(text, ';')) out.push_back(parse_region(box, option + " '" + text + "': box"));
  if (out.empty()) throw ConfigError(option + ": expected lat0,lat1,lon0,lon1 (or several joined by ';')");
  return out;
}

}  // namespace finecast
