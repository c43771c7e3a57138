// SPDX-License-Identifier: BSD-3-Clause
// finecast-bench SUBCOMMAND [options]: measured performance of each layer (not a test).
#include <cstdio>
#include <cstring>

#include "bench/registry.hpp"
#include "common/cli.hpp"

int main(int argc, char** argv) {
  auto& reg = finecast::bench::registry();
  if (argc < 2 || !std::strcmp(argv[1], "--help") || !std::strcmp(argv[1], "-h")) {
    std::printf(
        "Usage: finecast-bench SUBCOMMAND [--json] [options]\n       finecast-bench --version\n\n"
        "Measures finecast's performance; run `finecast-bench SUBCOMMAND --help` for details.\n\n"
        "Subcommands:\n");
    for (const auto& [name, sub] : reg) std::printf("  %-10s %s\n", name.c_str(), sub.summary.c_str());
    return argc < 2 ? 2 : 0;
  }
  if (!std::strcmp(argv[1], "--version")) {
    std::printf("finecast-bench %s\n", finecast::cli::version().c_str());
    return 0;
  }
  auto it = reg.find(argv[1]);
  if (it == reg.end()) {
    std::fprintf(stderr, "finecast-bench: unknown subcommand \"%s\" (see --help)\n", argv[1]);
    return 2;
  }
  return it->second.run(argc - 1, argv + 1);
}
