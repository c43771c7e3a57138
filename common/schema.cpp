// SPDX-License-Identifier: BSD-3-Clause
// The text form of option values: numbers in their shortest round-trip form, parsed in full.
#include "common/schema.hpp"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>

namespace finecast::schema {

std::string format_real(double v) {
  char buf[64];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, r.ptr);
}

bool parse_integer(const std::string& text, long long& out) {
  if (text.empty()) return false;
  const char* first = text.data();
  if (*first == '+') ++first;
  const auto r = std::from_chars(first, text.data() + text.size(), out);
  return r.ec == std::errc() && r.ptr == text.data() + text.size();
}

bool parse_unsigned(const std::string& text, unsigned long long& out) {
  if (text.empty() || text[0] == '-') return false;
  const char* first = text.data();
  if (*first == '+') ++first;
  const auto r = std::from_chars(first, text.data() + text.size(), out);
  return r.ec == std::errc() && r.ptr == text.data() + text.size();
}

bool parse_real(const std::string& text, double& out) {
  if (text.empty() || std::isspace(static_cast<unsigned char>(text[0]))) return false;
  errno = 0;
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (end != text.c_str() + text.size() || errno == ERANGE || !std::isfinite(v)) return false;
  out = v;
  return true;
}

bool parse_bool(const std::string& text, bool& out) {
  std::string t = text;
  std::transform(t.begin(), t.end(), t.begin(), [](unsigned char c) { return std::tolower(c); });
  if (t == "true" || t == "yes" || t == "on") return out = true, true;
  if (t == "false" || t == "no" || t == "off") return out = false, true;
  return false;
}

std::string integer_rule(long long lo, long long hi) {
  constexpr long long kMax = std::numeric_limits<int>::max();
  if (lo == 1 && hi >= kMax) return "a positive integer";
  if (lo == 0 && hi >= kMax) return "a non-negative integer";
  return "an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]";
}

}  // namespace finecast::schema
