// SPDX-License-Identifier: BSD-3-Clause
// What the benches report about the machine they ran on.
#pragma once

#include <fstream>
#include <string>

namespace finecast::bench {

/// The CPU's "model name" from /proc/cpuinfo ("unknown" elsewhere).
inline std::string cpu_model() {
  std::ifstream f("/proc/cpuinfo");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind("model name", 0) == 0) return line.substr(line.find(':') + 2);
  return "unknown";
}

}  // namespace finecast::bench
