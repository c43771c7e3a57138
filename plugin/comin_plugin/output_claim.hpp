// SPDX-License-Identifier: BSD-3-Clause
// The run's output is its own: sample.output is no file the run reads, lies outside
// checkpoint.dir, and one run at a time writes it (docs/output.md#one-output-one-run).
#pragma once

#include "common/file_lock.hpp"
#include "plugin/config.hpp"

namespace finecast::plugin {

/// Refuses, with a ConfigError naming sample.output, its path and the other file or key, an
/// output that is a file the run reads (the same device and inode, also through links and other
/// spellings): the config, grid.file, a train.hold_out mask, the checkpoint.resume file, or any
/// NetCDF file this process read as input (the host's: finecast-replay's input and static files,
/// the grid and orography files; coupling/io/input_files.hpp); and an output in checkpoint.dir,
/// whose files checkpoint.keep and the snapshot clean-up remove. Creates and changes nothing.
void check_output_place(const Config& cfg);

/// Takes "<sample.output>.lock" for as long as the returned lock lives, so that a second run
/// writing the same output (a job resubmitted while the first runs) is refused before it
/// touches the file: a ConfigError naming the output and the run that holds it. A file system
/// without locks gets a warning and no lock.
FileLock lock_output(const Config& cfg);

}  // namespace finecast::plugin
