// SPDX-License-Identifier: BSD-3-Clause
// The files this process reads as input (every NetCDF reader notes its file), and file identity:
// a writer can refuse to write over a file the run reads (docs/output.md).
#pragma once

#include <string>

namespace finecast::coupling {

/// Notes `path` (a file this process opened for reading) by its device and inode. Thread-safe.
void note_input_file(const std::string& path);

/// The path, as noted, of a noted input file that is the file at `path` (the same device and
/// inode, so also through links and other spellings of the path); "" when none is, or when
/// nothing is at `path`.
std::string input_file_at(const std::string& path);

/// Whether `a` and `b` name the same file or directory: the same device and inode where both
/// exist, else the same absolute path after resolving what exists of it.
bool same_file(const std::string& a, const std::string& b);

}  // namespace finecast::coupling
