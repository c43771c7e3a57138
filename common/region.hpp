// SPDX-License-Identifier: BSD-3-Clause
// A latitude-longitude box given as "lat0,lat1,lon0,lon1" (finecast-eval's --region, --fit-on
// and --hold-out; the plugin's train.hold_out), and hold-outs of several boxes joined by ';'.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

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

/// Whether `text` is one box or several joined by ';' ("0,90,-180,0;-90,0,0,180"): the form of
/// every --hold-out and train.hold_out, where a patch or block is held out when it lies wholly
/// inside one of the boxes (the union of the boxes' hold-outs).
bool is_regions_text(const std::string& text);

/// Parses the boxes of is_regions_text, each as parse_region does (errors name `option`, the
/// whole text and the box at fault).
std::vector<Region> parse_regions(const std::string& text, const std::string& option);

/// The union of the boxes' masks: 1 where `mask_of(box)` (a 0/1 vector, the same length for every
/// box) is 1 for one of `boxes`.
template <class MaskOf>
std::vector<char> union_of_boxes(const std::vector<Region>& boxes, MaskOf mask_of) {
  std::vector<char> any;
  for (const Region& box : boxes) {
    const std::vector<char> mask = mask_of(box);
    if (any.empty()) any.assign(mask.size(), 0);
    for (std::size_t i = 0; i < mask.size(); ++i) any[i] = static_cast<char>(any[i] || mask[i]);
  }
  return any;
}

}  // namespace finecast
