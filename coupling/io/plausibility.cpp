// SPDX-License-Identifier: BSD-3-Clause
// The plausibility table (docs/reliability.md has it as a table) and its overrides.
#include "coupling/io/plausibility.hpp"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <map>

#include "common/error.hpp"

namespace finecast::coupling {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
/// Without a table entry: no field finecast downscales comes near this in its own units.
constexpr double kFallback = 1e15;

struct Entry {
  const char* standard_name;  ///< nullptr: an entry for the units alone
  const char* units;          ///< canonical (canonical_units)
  double lo, hi;
};

// Physical ranges of the quantities themselves (with margin beyond the observed records), then
// per units ranges wide enough for any quantity, anomaly or difference in them. Keep in step with
// the table in docs/reliability.md.
constexpr Entry kTable[] = {
    {"air_temperature", "K", 150, 350},
    {"air_temperature", "degC", -123.15, 76.85},
    {"surface_temperature", "K", 150, 360},
    {"surface_temperature", "degC", -123.15, 86.85},
    {"sea_surface_temperature", "K", 260, 320},
    {"sea_surface_temperature", "degC", -13.15, 46.85},
    {"dew_point_temperature", "K", 150, 350},
    {"soil_temperature", "K", 150, 360},
    {"air_pressure", "Pa", 0, 120000},
    {"air_pressure", "hPa", 0, 1200},
    {"surface_air_pressure", "Pa", 10000, 120000},
    {"surface_air_pressure", "hPa", 100, 1200},
    {"air_pressure_at_mean_sea_level", "Pa", 80000, 120000},
    {"air_pressure_at_mean_sea_level", "hPa", 800, 1200},
    {"surface_altitude", "m", -11000, 9000},
    {"land_area_fraction", "1", 0, 1},
    {"land_area_fraction", "%", 0, 100},
    {"sea_area_fraction", "1", 0, 1},
    {"cloud_area_fraction", "1", 0, 1},
    {"cloud_area_fraction", "%", 0, 100},
    {"sea_ice_area_fraction", "1", 0, 1},
    {"sea_ice_area_fraction", "%", 0, 100},
    {"specific_humidity", "kg kg-1", 0, 0.1},
    {"specific_humidity", "1", 0, 0.1},
    {"relative_humidity", "1", 0, 1.5},
    {"relative_humidity", "%", 0, 150},
    {"eastward_wind", "m s-1", -150, 150},
    {"northward_wind", "m s-1", -150, 150},
    {"wind_speed", "m s-1", 0, 150},
    {"precipitation_flux", "kg m-2 s-1", -0.01, 0.2},
    {nullptr, "K", -100, 400},
    {nullptr, "degC", -150, 150},
    {nullptr, "Pa", -20000, 120000},
    {nullptr, "hPa", -200, 1200},
    {nullptr, "m", -12000, 100000},
    {nullptr, "kg m-2", -1e4, 1e6},
    {nullptr, "kg m-2 s-1", -1, 1},
    {nullptr, "m s-1", -300, 300},
    {nullptr, "W m-2", -5000, 5000},
    {nullptr, "kg kg-1", -1, 1},
    {nullptr, "m2 s-2", -1e6, 2e6},
    {nullptr, "%", -200, 200},
};

std::string number_text(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

/// Units without blanks' variants, "**" or "^", with aliases mapped to the table's spelling.
std::string canonical_units(const std::string& units) {
  std::string u;
  for (size_t i = 0; i < units.size(); ++i) {
    const char c = units[i];
    if (c == '^' || (c == '*' && i + 1 < units.size() && units[i + 1] == '*')) {
      if (c == '*') ++i;
      continue;
    }
    if (c == ' ' || c == '\t') {
      if (!u.empty() && u.back() != ' ') u += ' ';
      continue;
    }
    u += c;
  }
  while (!u.empty() && u.back() == ' ') u.pop_back();
  static const std::map<std::string, std::string> aliases{
      {"degK", "K"},
      {"deg_K", "K"},
      {"degree_K", "K"},
      {"degrees_K", "K"},
      {"Kelvin", "K"},
      {"kelvin", "K"},
      {"C", "degC"},
      {"deg_C", "degC"},
      {"degree_C", "degC"},
      {"degrees_C", "degC"},
      {"Celsius", "degC"},
      {"celsius", "degC"},
      {"degree_Celsius", "degC"},
      {"degrees_Celsius", "degC"},
      {"Pascal", "Pa"},
      {"pascal", "Pa"},
      {"mbar", "hPa"},
      {"mb", "hPa"},
      {"millibar", "hPa"},
      {"millibars", "hPa"},
      {"meter", "m"},
      {"meters", "m"},
      {"metre", "m"},
      {"metres", "m"},
      {"mm", "kg m-2"},
      {"kg/m2", "kg m-2"},
      {"kg/m2/s", "kg m-2 s-1"},
      {"kg m-2s-1", "kg m-2 s-1"},
      {"mm s-1", "kg m-2 s-1"},
      {"mm/s", "kg m-2 s-1"},
      {"m/s", "m s-1"},
      {"W/m2", "W m-2"},
      {"kg/kg", "kg kg-1"},
      {"m2/s2", "m2 s-2"},
      {"percent", "%"},
      {"fraction", "1"},
  };
  const auto it = aliases.find(u);
  return it == aliases.end() ? u : it->second;
}

std::map<std::string, PlausibleRange>& overrides() {
  static std::map<std::string, PlausibleRange> map;
  return map;
}

bool parse_number(const std::string& text, double& out) {
  const char* begin = text.c_str();
  while (*begin == ' ') ++begin;
  char* end = nullptr;
  out = std::strtod(begin, &end);
  while (end && *end == ' ') ++end;
  return end != begin && end && *end == '\0' && !std::isnan(out);
}

}  // namespace

bool PlausibleRange::none() const { return min == -kInf && max == kInf; }

std::string PlausibleRange::text() const { return "[" + number_text(min) + ", " + number_text(max) + "]"; }

PlausibleRange plausible_range(const std::string& units, const std::string& standard_name) {
  const std::string u = canonical_units(units);
  for (const Entry& e : kTable)
    if (e.standard_name && standard_name == e.standard_name && u == e.units)
      return {e.lo, e.hi, standard_name + " in " + units + ", finecast's plausibility table"};
  for (const Entry& e : kTable)
    if (!e.standard_name && u == e.units) return {e.lo, e.hi, "units " + units + ", finecast's plausibility table"};
  return {-kFallback, kFallback,
          "no table entry for units \"" + units + "\"" +
              (standard_name.empty() ? std::string() : " and standard_name " + standard_name) +
              ": finecast's bound for any field"};
}

PlausibleRange parse_plausible_range(const std::string& text, const std::string& context) {
  if (text == "none") return {-kInf, kInf, context + ": none"};
  const size_t comma = text.find(',');
  double lo = 0, hi = 0;
  if (comma == std::string::npos || !parse_number(text.substr(0, comma), lo) ||
      !parse_number(text.substr(comma + 1), hi) || lo > hi)
    throw ConfigError(context + ": expected a plausible range LO,HI (numbers, LO <= HI; inf or -inf for no bound) " +
                      "or none, got \"" + text + "\"");
  return {lo, hi, context + " " + text};
}

void set_plausible_overrides(const std::vector<std::string>& specs, const std::string& context) {
  for (const auto& spec : specs) {
    const size_t eq = spec.find('=');
    const std::string var = eq == std::string::npos ? std::string() : spec.substr(0, eq);
    const std::string range = eq == std::string::npos ? spec : spec.substr(eq + 1);
    overrides()[var] = parse_plausible_range(range, context + (var.empty() ? "" : " for '" + var + "'"));
  }
}

const PlausibleRange* plausible_override(const std::string& var) {
  const auto& map = overrides();
  auto it = map.find(var);
  if (it == map.end()) it = map.find("");
  return it == map.end() ? nullptr : &it->second;
}

void clear_plausible_overrides() { overrides().clear(); }

}  // namespace finecast::coupling
