// SPDX-License-Identifier: BSD-3-Clause
// Plausible ranges of geophysical fields by CF units and standard_name: what every NetCDF input
// is checked against where its own attributes (valid_range, valid_min/max) say nothing.
#pragma once

#include <limits>
#include <string>
#include <vector>

namespace finecast::coupling {

/// A closed range of plausible values in a field's own units, and where it comes from (for
/// messages). Unbounded on a side that is infinite; `none` when no check applies.
struct PlausibleRange {
  double min = -std::numeric_limits<double>::infinity();
  double max = std::numeric_limits<double>::infinity();
  std::string source;  ///< e.g. "air_temperature in K (finecast's table)"
  bool none() const;
  bool contains(double v) const { return v >= min && v <= max; }
  /// "[150, 350]", "[0, inf]".
  std::string text() const;
};

/// The range a field with these CF attributes gets from finecast's table (docs/reliability.md
/// lists it): an entry for its standard_name in its units when there is one, else one for its
/// units alone (wide enough for anomalies and differences in those units), else |value| below
/// 1e15 (no field finecast downscales comes near it; fill values such as 1e20 or netCDF's
/// 9.97e36 lie beyond). Units are compared after removing blanks' variants, "**" and "^"
/// ("kg m**-2 s**-1" = "kg m-2 s-1") and a few aliases (degK, kg/m2/s, hPa = mbar, ...).
PlausibleRange plausible_range(const std::string& units, const std::string& standard_name);

/// Parses an override: "LO,HI" (numbers; "-inf"/"inf" for no bound on that side) or "none" (no
/// plausibility check). `context` names where it was given; throws ConfigError.
PlausibleRange parse_plausible_range(const std::string& text, const std::string& context);

/// Process-wide overrides of the table, by variable name, for the NetCDF readers of a program
/// (FieldReader consults them when it opens a variable): each spec is "VAR=LO,HI", "VAR=none", or
/// without "VAR=" for every variable. Set once at start-up from the command line
/// (finecast-downscale, finecast-eval `--plausible`) or the run file (finecast-replay's
/// `input.variables[].plausible`). Throws ConfigError naming `context` for a bad spec; replaces
/// earlier overrides of the same variable.
void set_plausible_overrides(const std::vector<std::string>& specs, const std::string& context);
/// The override for `var` ("" key: every variable), or nullptr. Variable names win over "".
const PlausibleRange* plausible_override(const std::string& var);
/// Removes every override (tests).
void clear_plausible_overrides();

/// The help text of the `--plausible` option of the programs that read NetCDF fields.
inline constexpr const char* kPlausibleOptionHelp =
    "[VAR=]LO,HI or [VAR=]none: values of VAR (without VAR=: of every variable read) outside [LO, HI] are "
    "treated as missing, replacing finecast's plausibility table for its units and standard_name "
    "(docs/reliability.md); none: no plausibility check. Repeatable; write --plausible=-11000,9000 for a "
    "negative LO";

}  // namespace finecast::coupling
