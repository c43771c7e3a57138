// SPDX-License-Identifier: BSD-3-Clause
// Subcommands of finecast-bench register themselves here (one bench_<name>.cpp each).
#pragma once

#include <functional>
#include <map>
#include <string>

namespace finecast::bench {

struct Subcommand {
  std::string summary;                  ///< one line for `finecast-bench --help`
  std::function<int(int, char**)> run;  ///< argv[0] is the subcommand name
};

inline std::map<std::string, Subcommand>& registry() {
  static std::map<std::string, Subcommand> r;
  return r;
}

/// `static Register reg("trainer", {...});` in a bench_*.cpp adds a subcommand.
struct Register {
  Register(const std::string& name, Subcommand sub) { registry()[name] = std::move(sub); }
};

}  // namespace finecast::bench
