// SPDX-License-Identifier: BSD-3-Clause
// libFuzzer target: the plugin's YAML config (plugin/config.hpp parse_config) with overrides.
// Input: YAML text; after a line "#--set", each further line is one "key.path=value" override,
// as `--set` and the plugin's options string give them. parse_config may only throw ConfigError;
// a config it accepts must survive to_yaml -> parse_config unchanged.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "common/error.hpp"
#include "plugin/config.hpp"

namespace fp = finecast::plugin;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string input(reinterpret_cast<const char*>(data), size);
  std::string yaml = input;
  std::vector<std::string> overrides;
  const std::string marker = "#--set\n";
  if (const size_t at = input.find(marker); at != std::string::npos) {
    yaml = input.substr(0, at);
    size_t pos = at + marker.size();
    while (pos < input.size()) {
      size_t end = input.find('\n', pos);
      if (end == std::string::npos) end = input.size();
      overrides.push_back(input.substr(pos, end - pos));
      pos = end + 1;
    }
  }
  fp::Config config;
  try {
    config = fp::parse_config(yaml, "fuzz.yaml", overrides);
  } catch (const finecast::ConfigError&) {
    return 0;  // a clear error is the expected answer to most inputs
  }
  // What finecast-config prints must read back as the same config.
  const std::string resolved = fp::to_yaml(config);
  try {
    const std::string again = fp::to_yaml(fp::parse_config(resolved, "resolved.yaml"));
    if (again != resolved) {
      std::fprintf(stderr, "to_yaml round trip changed the config:\n--- first\n%s\n--- second\n%s\n", resolved.c_str(),
                   again.c_str());
      std::abort();
    }
  } catch (const finecast::ConfigError& e) {
    std::fprintf(stderr, "to_yaml output is refused by parse_config: %s\n--- resolved\n%s\n", e.what(),
                 resolved.c_str());
    std::abort();
  }
  return 0;
}
