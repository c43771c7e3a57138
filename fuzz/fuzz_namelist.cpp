// SPDX-License-Identifier: BSD-3-Clause
// libFuzzer target: the ComIn namelist parser (host/comin/host.hpp parse_comin_namelist),
// which finecast-host and finecast-replay read. It may only throw ConfigError; every plugin it
// returns has a library.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "common/error.hpp"
#include "host/comin/host.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    for (const auto& spec : finecast::host::comin::parse_comin_namelist(text))
      if (spec.library.empty()) {
        std::fprintf(stderr, "a plugin without a library was accepted\n");
        std::abort();
      }
  } catch (const finecast::ConfigError&) {
  }
  return 0;
}
