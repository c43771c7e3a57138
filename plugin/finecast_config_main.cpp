// SPDX-License-Identifier: BSD-3-Clause
// finecast-config FILE: validate a run config before submitting a long job, print it resolved.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <iostream>

#include "common/cli.hpp"
#include "common/error.hpp"
#include "plugin/config.hpp"

int main(int argc, char** argv) {
  CLI::App app{
      "Validates a finecast config and prints it fully resolved (every key, defaults filled in).\n"
      "Exits non-zero when the config is invalid, listing every error found (file:line, the key and\n"
      "what was expected), one per line. Every key is documented in configs/reference.yaml."};
  std::string path;
  std::vector<std::string> overrides;
  bool quiet = false, reference = false;
  // Required unless --reference (the same message as add_config's when it is required).
  auto* config_file = finecast::cli::add_config(app, path, "YAML config file", false);
  app.callback([&] {
    if (!reference && config_file->count() == 0) throw CLI::RequiredError("a run/config file (FILE or --config FILE)");
  });
  finecast::cli::add_set(app, overrides, "override a key before validation, e.g. --set train.epochs=3.");
  app.add_flag("-q,--quiet", quiet, "print nothing when the config is valid");
  app.add_flag("--reference", reference,
               "print the reference config (every key, its default and comment; configs/reference.yaml) and exit")
      ->excludes(config_file);
  finecast::cli::add_version(app, "finecast-config");
  CLI11_PARSE(app, argc, argv);
  if (reference) {
    std::cout << finecast::plugin::reference_yaml();
    return 0;
  }
  try {
    const auto config = finecast::plugin::load_config(path, overrides);
    if (!quiet) std::cout << "# " << path << ": valid; fully resolved:\n" << finecast::plugin::to_yaml(config);
    return 0;
  } catch (const finecast::ConfigError& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
}
