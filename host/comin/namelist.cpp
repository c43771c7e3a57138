// SPDX-License-Identifier: BSD-3-Clause
// Reads the plugin list from an ICON Fortran namelist group &comin_nml.
#include <algorithm>
#include <cctype>
#include <fstream>
#include <map>
#include <sstream>

#include "host/comin/host.hpp"

namespace finecast::host::comin {
namespace {

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return "";
  const auto e = s.find_last_not_of(" \t\r\n");
  return s.substr(b, e - b + 1);
}

// A cursor over the namelist text that knows its line number for messages.
struct Cursor {
  const std::string& text;
  size_t pos = 0;
  int line = 1;
  bool done() const { return pos >= text.size(); }
  char peek() const { return text[pos]; }
  char get() {
    const char c = text[pos++];
    if (c == '\n') ++line;
    return c;
  }
  [[noreturn]] void fail(const std::string& what) const {
    throw ConfigError("comin namelist, line " + std::to_string(line) + ": " + what);
  }
  // Skips blanks, separators and ! comments; stays on '/' (end of group).
  void skip() {
    while (!done()) {
      const char c = peek();
      if (c == '!') {
        while (!done() && peek() != '\n') get();
      } else if (std::isspace(static_cast<unsigned char>(c)) || c == ',') {
        get();
      } else {
        return;
      }
    }
  }
};

std::string read_value(Cursor& c) {
  c.skip();
  if (c.done()) c.fail("value missing at the end of the text");
  const char q = c.peek();
  if (q == '\'' || q == '"') {
    c.get();
    std::string value;
    for (;;) {
      if (c.done()) c.fail(std::string("unterminated string (missing closing ") + q + ")");
      const char ch = c.get();
      if (ch == q) {
        if (!c.done() && c.peek() == q) {  // Fortran escapes a quote by doubling it
          value += c.get();
          continue;
        }
        return value;
      }
      value += ch;
    }
  }
  std::string value;
  while (!c.done() && !std::isspace(static_cast<unsigned char>(c.peek())) && c.peek() != ',' && c.peek() != '/' &&
         c.peek() != '!')
    value += c.get();
  return value;
}

// A Fortran logical: .true. / .false. / t / f (case-insensitive).
bool parse_logical(const std::string& value, const std::string& key, int line) {
  const std::string v = lower(value);
  if (v == ".true." || v == "t" || v == ".t." || v == "true") return true;
  if (v == ".false." || v == "f" || v == ".f." || v == "false") return false;
  throw ConfigError("comin namelist, line " + std::to_string(line) + ": '" + key +
                    "' must be a logical (.true. or .false.), got '" + value + "'");
}

}  // namespace

std::vector<PluginSpec> parse_comin_namelist(const std::string& text) {
  // Find the group start "&comin_nml" (other groups may share the file).
  const std::string low = lower(text);
  size_t start = std::string::npos;
  for (size_t p = low.find("&comin_nml"); p != std::string::npos; p = low.find("&comin_nml", p + 1)) {
    const size_t after = p + 10;
    if (after >= low.size() || !(std::isalnum(static_cast<unsigned char>(low[after])) || low[after] == '_')) {
      start = after;
      break;
    }
  }
  if (start == std::string::npos) throw ConfigError("comin namelist: no &comin_nml group found");

  Cursor c{text};
  while (c.pos < start) c.get();
  std::map<int, PluginSpec> entries;
  std::map<int, int> entry_line;
  std::map<int, bool> has_library;
  for (;;) {
    c.skip();
    if (c.done()) c.fail("&comin_nml is not closed by '/'");
    if (c.peek() == '/') break;
    const int key_line = c.line;
    std::string key;
    while (!c.done() && c.peek() != '=' && c.peek() != '\n' && c.peek() != '/') key += c.get();
    if (c.done() || c.peek() != '=') c.fail("expected 'key = value', got '" + trim(key) + "'");
    c.get();
    key = lower(trim(key));
    key.erase(std::remove_if(key.begin(), key.end(), [](unsigned char ch) { return std::isspace(ch); }), key.end());
    const std::string value = read_value(c);
    if (key == "comin_debug" || key == "comin_config%nomp") continue;  // accepted, unused here
    const std::string prefix = "plugin_list(";
    const size_t close = key.find(")%");
    if (key.compare(0, prefix.size(), prefix) != 0 || close == std::string::npos)
      throw ConfigError("comin namelist, line " + std::to_string(key_line) + ": unknown key '" + key +
                        "' (expected plugin_list(i)%name, %plugin_library, %options or %comm)");
    int index = 0;
    try {
      index = std::stoi(key.substr(prefix.size(), close - prefix.size()));
    } catch (const std::exception&) {
      index = 0;
    }
    if (index < 1)
      throw ConfigError("comin namelist, line " + std::to_string(key_line) + ": bad index in '" + key +
                        "' (plugin_list indices start at 1)");
    const std::string field = key.substr(close + 2);
    PluginSpec& e = entries[index];
    entry_line.emplace(index, key_line);
    if (field == "name") {
      e.name = value;
    } else if (field == "plugin_library") {
      e.library = value;
      has_library[index] = true;
    } else if (field == "primary_constructor") {
      e.primary_constructor = value;
    } else if (field == "options") {
      e.options = value;
    } else if (field == "comm") {
      e.comm = value;
    } else if (field == "log_debug" || field == "log_info" || field == "log_warning") {
      bool& flag = field == "log_debug" ? e.log_debug : field == "log_info" ? e.log_info : e.log_warning;
      flag = parse_logical(value, key, key_line);
    } else {
      throw ConfigError("comin namelist, line " + std::to_string(key_line) + ": unknown field '" + field + "' in '" +
                        key +
                        "' (allowed: name, plugin_library, primary_constructor, options, comm, "
                        "log_debug, log_info, log_warning)");
    }
  }
  std::vector<PluginSpec> result;
  int expected = 1;
  for (auto& [index, spec] : entries) {
    const std::string where =
        "comin namelist, plugin_list(" + std::to_string(index) + ") (line " + std::to_string(entry_line[index]) + ")";
    if (index != expected) throw ConfigError(where + ": plugin_list(" + std::to_string(expected) + ") is missing");
    if (!has_library[index] || spec.library.empty()) throw ConfigError(where + ": no plugin_library");
    result.push_back(spec);
    ++expected;
  }
  return result;
}

std::vector<PluginSpec> read_comin_namelist(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw IoError("cannot open comin namelist file '" + path + "'");
  std::ostringstream text;
  text << in.rdbuf();
  try {
    return parse_comin_namelist(text.str());
  } catch (const ConfigError& e) {
    throw ConfigError(path + ": " + e.what());
  }
}

}  // namespace finecast::host::comin
