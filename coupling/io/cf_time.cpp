// SPDX-License-Identifier: BSD-3-Clause
// CF time coordinate conversion for the NetCDF reader and writer.
#include "coupling/io/cf_time.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "common/error.hpp"

namespace finecast::coupling {
namespace {

std::string lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string trim(const std::string& s) {
  const auto a = s.find_first_not_of(" \t\n\r");
  if (a == std::string::npos) return "";
  return s.substr(a, s.find_last_not_of(" \t\n\r") - a + 1);
}

// Days since 0000-03-01 in the proleptic Gregorian calendar (H. Hinnant's algorithm).
int64_t gregorian_days(int64_t y, int m, int d) {
  y -= m <= 2;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const int64_t yoe = y - era * 400;
  const int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + doe;
}

void gregorian_civil(int64_t z, int& y, int& m, int& d) {
  const int64_t era = (z >= 0 ? z : z - 146096) / 146097;
  const int64_t doe = z - era * 146097;
  const int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  const int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const int64_t mp = (5 * doy + 2) / 153;
  d = static_cast<int>(doy - (153 * mp + 2) / 5 + 1);
  m = static_cast<int>(mp < 10 ? mp + 3 : mp - 9);
  y = static_cast<int>(yoe + era * 400 + (m <= 2));
}

constexpr int kMonthDays[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};

}  // namespace

bool parse_datetime(const std::string& text, DateTime& out) {
  const std::string s = trim(text);
  int y = 0, mo = 0, d = 0, h = 0, mi = 0, consumed = 0;
  double sec = 0;
  if (std::sscanf(s.c_str(), "%d-%d-%d%n", &y, &mo, &d, &consumed) != 3) return false;
  size_t pos = static_cast<size_t>(consumed);
  if (pos < s.size() && (s[pos] == 'T' || s[pos] == ' ')) {
    int c2 = 0;
    if (std::sscanf(s.c_str() + pos + 1, "%d:%d%n", &h, &mi, &c2) == 2) {
      pos += 1 + static_cast<size_t>(c2);
      if (pos < s.size() && s[pos] == ':') {
        char* end = nullptr;
        sec = std::strtod(s.c_str() + pos + 1, &end);
        pos = static_cast<size_t>(end - s.c_str());
      }
    } else if (std::sscanf(s.c_str() + pos + 1, "%d%n", &h, &c2) == 1) {
      pos += 1 + static_cast<size_t>(c2);  // CF allows "1850-01-01 0"
    }
  }
  while (pos < s.size() && (s[pos] == 'Z' || s[pos] == ' ')) ++pos;
  // A trailing time zone ("+00:00", " UTC") is accepted only as UTC.
  const std::string rest = s.substr(pos);
  if (!rest.empty() && rest != "+00:00" && rest != "+0000" && rest != "UTC" && rest != "+00") return false;
  if (mo < 1 || mo > 12 || d < 1 || d > 31 || h < 0 || h > 24 || mi < 0 || mi > 59 || sec < 0 || sec >= 61)
    return false;
  out = DateTime{y, mo, d, h, mi, sec};
  return true;
}

std::string format_datetime(const DateTime& t) {
  const double whole = std::floor(t.second + 1e-9);
  if (t.second - whole > 5e-4)
    return fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:06.3f}", t.year, t.month, t.day, t.hour, t.minute, t.second);
  return fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}", t.year, t.month, t.day, t.hour, t.minute,
                     static_cast<int>(whole));
}

CfTime::CfTime(const std::string& units, const std::string& calendar, const std::string& context)
    : units_(trim(units)), calendar_(lower(trim(calendar))), context_(context) {
  if (calendar_.empty() || calendar_ == "standard" || calendar_ == "gregorian" || calendar_ == "proleptic_gregorian" ||
      calendar_ == "julian_gregorian") {
    cal_ = Cal::kGregorian;
  } else if (calendar_ == "noleap" || calendar_ == "365_day") {
    cal_ = Cal::kNoLeap;
  } else if (calendar_ == "all_leap" || calendar_ == "366_day") {
    cal_ = Cal::kAllLeap;
  } else if (calendar_ == "360_day") {
    cal_ = Cal::k360;
  } else {
    throw IoError(context + ": unknown calendar \"" + calendar +
                  "\" (expected standard, gregorian, proleptic_gregorian, noleap, 365_day, "
                  "all_leap, 366_day or 360_day)");
  }
  const std::string u = lower(units_);
  if (u.rfind("day as %y%m%d", 0) == 0) {
    absolute_day_ = true;
    return;
  }
  const auto since = u.find(" since ");
  const std::string bad = context + ": time units \"" + units +
                          "\" are not \"<seconds|minutes|hours|days> since <date>\" or \"day as %Y%m%d.%f\"";
  if (since == std::string::npos) throw IoError(bad);
  const std::string unit = trim(u.substr(0, since));
  if (unit == "seconds" || unit == "second" || unit == "s" || unit == "sec" || unit == "secs")
    unit_seconds_ = 1;
  else if (unit == "minutes" || unit == "minute" || unit == "min" || unit == "mins")
    unit_seconds_ = 60;
  else if (unit == "hours" || unit == "hour" || unit == "h" || unit == "hr" || unit == "hrs")
    unit_seconds_ = 3600;
  else if (unit == "days" || unit == "day" || unit == "d")
    unit_seconds_ = 86400;
  else
    throw IoError(bad);
  if (!parse_datetime(units_.substr(since + 7), ref_)) throw IoError(bad);
  if (const std::string e = date_error(ref_); !e.empty()) throw IoError(bad + ": " + e);
  ref_days_ = days_from_epoch(ref_.year, ref_.month, ref_.day);
}

int CfTime::days_in_month(int y, int m) const {
  if (m < 1 || m > 12) return 0;
  switch (cal_) {
    case Cal::k360:
      return 30;
    case Cal::kNoLeap:
      return kMonthDays[m - 1];
    case Cal::kAllLeap:
      return kMonthDays[m - 1] + (m == 2);
    case Cal::kGregorian:
      break;
  }
  const bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
  return kMonthDays[m - 1] + (m == 2 && leap);
}

std::string date_error(const DateTime& t, const std::string& calendar) {
  return CfTime("days since 2000-01-01", calendar, "calendar").date_error(t);
}

std::string CfTime::date_error(const DateTime& t) const {
  const std::string name = calendar_.empty() ? std::string("standard") : calendar_;
  if (t.month < 1 || t.month > 12) return "month " + std::to_string(t.month) + " does not exist";
  const int days = days_in_month(t.year, t.month);
  if (t.day < 1 || t.day > days)
    return fmt::format("{:04}-{:02} has {} days in the {} calendar, not {}", t.year, t.month, days, name, t.day);
  const bool end_of_day = t.hour == 24 && t.minute == 0 && t.second == 0;
  if (t.hour < 0 || (t.hour > 23 && !end_of_day) || t.minute < 0 || t.minute > 59)
    return fmt::format("{:02}:{:02} is no time of day", t.hour, t.minute);
  if (t.second < 0 || !(t.second < 60)) return fmt::format("{:g} seconds is no time of day", t.second);
  return "";
}

int64_t CfTime::days_from_epoch(int y, int m, int d) const {
  switch (cal_) {
    case Cal::kGregorian:
      return gregorian_days(y, m, d);
    case Cal::k360:
      return static_cast<int64_t>(y) * 360 + (m - 1) * 30 + (d - 1);
    case Cal::kNoLeap:
    case Cal::kAllLeap: {
      int64_t days = static_cast<int64_t>(y) * (cal_ == Cal::kNoLeap ? 365 : 366);
      for (int i = 0; i < m - 1; ++i) days += kMonthDays[i] + (cal_ == Cal::kAllLeap && i == 1);
      return days + d - 1;
    }
  }
  return 0;
}

void CfTime::civil_from_days(int64_t days, int& y, int& m, int& d) const {
  if (cal_ == Cal::kGregorian) return gregorian_civil(days, y, m, d);
  const int year_len = cal_ == Cal::k360 ? 360 : cal_ == Cal::kNoLeap ? 365 : 366;
  int64_t yy = days >= 0 ? days / year_len : (days - year_len + 1) / year_len;
  int64_t doy = days - yy * year_len;
  y = static_cast<int>(yy);
  if (cal_ == Cal::k360) {
    m = static_cast<int>(doy / 30) + 1;
    d = static_cast<int>(doy % 30) + 1;
    return;
  }
  m = 1;
  for (int i = 0; i < 12; ++i) {
    const int len = kMonthDays[i] + (cal_ == Cal::kAllLeap && i == 1);
    if (doy < len) break;
    doy -= len;
    ++m;
  }
  d = static_cast<int>(doy) + 1;
}

DateTime CfTime::to_datetime(double value) const {
  // A damaged or foreign time axis may hold anything: a value that is no date (NaN, infinite,
  // a million years or more away) is refused before any conversion to an integer.
  constexpr double kMaxYears = 1e6;
  const double years = absolute_day_ ? value / 10000.0 : value * unit_seconds_ / (365.25 * 86400.0);
  if (!(std::fabs(years) < kMaxYears)) {
    char v[32];
    std::snprintf(v, sizeof v, "%g", value);
    throw IoError(context_ + ": time value " + v + " (" + units_ + ") is not a date (" +
                  (std::isfinite(value) ? "a million years or more away" : "not a finite number") + ")");
  }
  DateTime t;
  if (absolute_day_) {
    // YYYYMMDD.fraction-of-day
    const double ymd = std::floor(value);
    const int64_t v = static_cast<int64_t>(ymd);
    t.year = static_cast<int>(v / 10000);
    t.month = static_cast<int>(v / 100 % 100);
    t.day = static_cast<int>(v % 100);
    double secs = std::round((value - ymd) * 86400.0 * 1000.0) / 1000.0;
    t.hour = static_cast<int>(secs / 3600);
    secs -= t.hour * 3600.0;
    t.minute = static_cast<int>(secs / 60);
    t.second = secs - t.minute * 60.0;
    return t;
  }
  // Round to milliseconds so that e.g. 0.1 h is exactly 6 minutes.
  const double total_ms = std::round(value * unit_seconds_ * 1000.0) +
                          std::round((ref_.hour * 3600.0 + ref_.minute * 60.0 + ref_.second) * 1000.0);
  const double day_ms = 86400000.0;
  const double days = std::floor(total_ms / day_ms);
  double ms = total_ms - days * day_ms;
  civil_from_days(ref_days_ + static_cast<int64_t>(days), t.year, t.month, t.day);
  t.hour = static_cast<int>(ms / 3600000.0);
  ms -= t.hour * 3600000.0;
  t.minute = static_cast<int>(ms / 60000.0);
  ms -= t.minute * 60000.0;
  t.second = ms / 1000.0;
  return t;
}

double CfTime::from_datetime(const DateTime& t) const {
  if (absolute_day_) throw IoError(context_ + ": cannot encode dates on an absolute \"day as %Y%m%d.%f\" axis");
  const double days = static_cast<double>(days_from_epoch(t.year, t.month, t.day) - ref_days_);
  const double secs =
      days * 86400.0 + (t.hour - ref_.hour) * 3600.0 + (t.minute - ref_.minute) * 60.0 + (t.second - ref_.second);
  return secs / unit_seconds_;
}

}  // namespace finecast::coupling
