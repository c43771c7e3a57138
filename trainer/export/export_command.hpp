// SPDX-License-Identifier: BSD-3-Clause
// finecast-export's command line and work, shared by its two builds: the trainer-only build writes
// the module alone; the full build adds an extension that writes the grid tables a caller needs
// around it (plugin/export, which sees the grids). For programs (CLI11).
#pragma once

#include <CLI/CLI.hpp>
#include <string>

#include "trainer/downscaler.hpp"
#include "trainer/torchscript_export.hpp"

namespace finecast::trainer {

/// What a build adds to finecast-export: flags of its own, and submodules of the module once the
/// checkpoint is loaded.
class ExportExtension {
 public:
  virtual ~ExportExtension() = default;
  /// Registers the extension's flags.
  virtual void add_flags(CLI::App& app) = 0;
  /// Adds to options.submodules what a caller of checkpoint `path` needs (options.conditioning
  /// holds its conditioning spec when the checkpoint has the typed group, options.metadata its
  /// metadata). Returns a sentence for the log saying what was
  /// added, or why nothing was. Throws finecast's errors (ConfigError, GridError, IoError, ...)
  /// naming the file and flag.
  virtual std::string extend(const std::string& path, const Downscaler& model, ExportOptions& options) = 0;
};

/// finecast-export's main: parses the command line (with the extension's flags when there is one),
/// loads the checkpoint, exports. Returns 0, or 1 with the error logged; CLI11's codes for bad usage.
int export_main(int argc, char** argv, ExportExtension* extension);

}  // namespace finecast::trainer
