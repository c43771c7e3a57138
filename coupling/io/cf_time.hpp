// SPDX-License-Identifier: BSD-3-Clause
// CF time coordinates: "<unit> since <date>" with the CF calendars, to and from ISO 8601.
#pragma once

#include <cstdint>
#include <string>

namespace finecast::coupling {

/// A calendar date-time; seconds may carry a fraction.
struct DateTime {
  int year = 1, month = 1, day = 1, hour = 0, minute = 0;
  double second = 0;
};

/// Parses ISO 8601-like text: "YYYY-MM-DD", "YYYY-MM-DDThh:mm[:ss[.fff]]" (also with a space
/// instead of 'T', a trailing 'Z', and 1-4 digit years as CF writes "1-1-1"). Returns false
/// when the text is not a date.
bool parse_datetime(const std::string& text, DateTime& out);

/// "YYYY-MM-DDThh:mm:ss" (with ".fff" only when the seconds have a fraction).
std::string format_datetime(const DateTime& t);

/// A CF time axis: units "seconds|minutes|hours|days since <date>" or ICON's absolute
/// "day as %Y%m%d.%f", and a calendar (standard, gregorian, proleptic_gregorian, noleap,
/// 365_day, all_leap, 366_day, 360_day). Dates before 1582-10-15 in "standard" are treated
/// as proleptic Gregorian.
class CfTime {
 public:
  /// Throws IoError naming `context` (file and variable) when the units or calendar are unknown.
  CfTime(const std::string& units, const std::string& calendar, const std::string& context);
  /// The date of a coordinate value; throws IoError naming the context for a value that is no
  /// date (NaN, infinite, or a million years or more from the reference).
  DateTime to_datetime(double value) const;
  /// The coordinate value of a date; throws IoError for an absolute ("day as") axis.
  double from_datetime(const DateTime& t) const;
  const std::string& units() const { return units_; }
  const std::string& calendar() const { return calendar_; }

 private:
  enum class Cal { kGregorian, kNoLeap, kAllLeap, k360 };
  int64_t days_from_epoch(int y, int m, int d) const;
  void civil_from_days(int64_t days, int& y, int& m, int& d) const;

  std::string units_, calendar_, context_;
  Cal cal_ = Cal::kGregorian;
  bool absolute_day_ = false;  // "day as %Y%m%d.%f"
  double unit_seconds_ = 86400;
  DateTime ref_;
  int64_t ref_days_ = 0;
};

}  // namespace finecast::coupling
