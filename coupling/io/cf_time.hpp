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

/// "" when `t` exists in `calendar` (one of CfTime's), else what is wrong, e.g. "1979-02 has 28
/// days in the proleptic_gregorian calendar". parse_datetime accepts any day 1..31 (it knows no
/// calendar: 360_day has a February 30), so a date from a config must be checked here too; an
/// unchecked 1979-02-30 became 1979-03-02 in the day arithmetic. Hours 0..23 (24:00:00 is the end
/// of the day), seconds below 60. Throws IoError for an unknown calendar.
std::string date_error(const DateTime& t, const std::string& calendar);

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
  /// Days of month m (1..12) of year y in this calendar.
  int days_in_month(int y, int m) const;
  /// "" when `t` exists in this calendar, else what is wrong (see the free date_error).
  std::string date_error(const DateTime& t) const;

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
