// SPDX-License-Identifier: BSD-3-Clause
// --time resolution by index or date.
#include "coupling/io/step_select.hpp"

#include <exception>

#include "coupling/error.hpp"
#include "coupling/io/cf_time.hpp"

namespace finecast::coupling {

int64_t select_step(const FieldReader& reader, const std::string& text, const std::string& flag) {
  size_t used = 0;
  long long index = -1;
  try {
    index = std::stoll(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (!text.empty() && used == text.size()) {
    if (index < 0 || index >= reader.n_times())
      throw ConfigError(flag + " " + text + ": " + reader.path() + ": " + reader.var() + " has " +
                        std::to_string(reader.n_times()) + " time step(s) (0.." + std::to_string(reader.n_times() - 1) +
                        ")");
    return index;
  }
  DateTime want;
  if (!parse_datetime(text, want))
    throw ConfigError(flag + " " + text + ": expected a 0-based step index or an ISO 8601 date (e.g. 2005-06-16)");
  if (!reader.has_time_axis())
    throw ConfigError(flag + " " + text + ": " + reader.path() + ": " + reader.var() +
                      " has no time coordinate, so steps can only be chosen by index (0.." +
                      std::to_string(reader.n_times() - 1) + ")");
  const std::string wanted = format_datetime(want);
  for (int64_t t = 0; t < reader.n_times(); ++t) {
    DateTime have;
    if (parse_datetime(reader.time_string(t), have) && format_datetime(have) == wanted) return t;
  }
  throw ConfigError(flag + " " + text + ": " + reader.path() + " has no step at " + wanted + " (steps " +
                    reader.time_string(0) + " .. " + reader.time_string(reader.n_times() - 1) + ")");
}

std::vector<int64_t> select_steps(const FieldReader& reader, const std::vector<std::string>& texts,
                                  const std::string& flag) {
  std::vector<int64_t> out;
  if (texts.empty()) {
    for (int64_t t = 0; t < reader.n_times(); ++t) out.push_back(t);
    return out;
  }
  for (const auto& text : texts) out.push_back(select_step(reader, text, flag));
  return out;
}

}  // namespace finecast::coupling
