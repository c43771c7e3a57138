// SPDX-License-Identifier: BSD-3-Clause
// Helpers of the libFuzzer targets (scripts/fuzz.sh): the fuzz input as a file, for readers that
// take a path (NetCDF, HDF5).
#pragma once

#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace finecast::fuzz {

/// One scratch file per process (libFuzzer runs inputs one after another in a process),
/// rewritten for every input and removed at exit.
class InputFile {
 public:
  explicit InputFile(const char* suffix) {
    const char* dir = std::getenv("TMPDIR");
    path_ = std::string(dir && *dir ? dir : "/tmp") + "/finecast_fuzz_" + std::to_string(::getpid()) + suffix;
  }
  ~InputFile() { std::remove(path_.c_str()); }
  /// Writes the input; false when the disk refuses (then the input is skipped, not a finding).
  bool write(const uint8_t* data, size_t size) {
    std::FILE* f = std::fopen(path_.c_str(), "wb");
    if (!f) return false;
    const bool ok = std::fwrite(data, 1, size, f) == size;
    return std::fclose(f) == 0 && ok;
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace finecast::fuzz
