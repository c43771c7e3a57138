// SPDX-License-Identifier: BSD-3-Clause
// The text form of option values: numbers in their shortest round-trip form, parsed in full; and
// the typed form of scalar rows.
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

std::string type_name(const Value& v) {
  static const char* const names[] = {"an integer",       "a real number", "a string",
                                      "an integer array", "a real array",  "a string array"};
  return names[v.index()];
}

namespace {

/// The text of each alternative of a Value (to_text).
struct Text {
  std::string operator()(int64_t x) const { return std::to_string(x); }
  std::string operator()(double x) const { return format_real(x); }
  std::string operator()(const std::string& x) const { return x; }
  template <class T>
  std::string operator()(const std::vector<T>& xs) const {
    std::string out;
    for (size_t i = 0; i < xs.size(); ++i) out += (i ? "," : "") + (*this)(xs[i]);
    return out;
  }
};

}  // namespace

std::string to_text(const Value& v) { return std::visit(Text{}, v); }

Value scalar_value(Kind kind, const std::string& text) {
  switch (kind) {
    case Kind::kInteger: {
      long long v = 0;
      unsigned long long u = 0;
      if (!parse_integer(text, v) && parse_unsigned(text, u)) v = static_cast<long long>(u);
      return static_cast<int64_t>(v);
    }
    case Kind::kReal: {
      double v = 0;
      parse_real(text, v);
      return v;
    }
    case Kind::kBool:
      return static_cast<int64_t>(text == "true");
    case Kind::kText:
      break;
  }
  return text;
}

std::string scalar_text(Kind kind, const std::string& rule, const Value& v) {
  switch (kind) {
    case Kind::kInteger: {
      const int64_t x = value_as<int64_t>(v);
      return x < 0 && rule == "a non-negative integer" ? std::to_string(static_cast<uint64_t>(x)) : std::to_string(x);
    }
    case Kind::kReal:
      if (const auto* x = std::get_if<int64_t>(&v)) return format_real(static_cast<double>(*x));
      return format_real(value_as<double>(v));
    case Kind::kBool: {
      const int64_t x = value_as<int64_t>(v);
      if (x != 0 && x != 1) throw BadValue("must be 0 or 1 (false or true), got " + std::to_string(x));
      return x ? "true" : "false";
    }
    case Kind::kText:
      if (const auto* x = std::get_if<int64_t>(&v)) return std::to_string(*x);
      return value_as<std::string>(v);
  }
  return {};
}

}  // namespace finecast::schema
