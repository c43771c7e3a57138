// SPDX-License-Identifier: BSD-3-Clause
// Atomic replacement of a file: write "<path>.tmp", then fsync and rename over the target.
#pragma once

#include <string>

#include "common/error.hpp"

namespace finecast {

/// Write to tmp_path(), then commit(): the target is either its previous complete version or
/// the new complete one, never a partial file. Without commit() the target is left untouched.
/// Every NetCDF output, rolling-buffer snapshot, checkpoint and report goes through it.
class AtomicFile {
 public:
  /// Failures raise `code` (IoError by default, CheckpointError for checkpoints); throws when
  /// the target's folder does not exist.
  explicit AtomicFile(std::string path, ErrorCode code = ErrorCode::kIo);
  /// Removes the temporary file when commit() was never called (and remove_on_abandon is set).
  ~AtomicFile();
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  const std::string& path() const { return path_; }
  const std::string& tmp_path() const { return tmp_; }
  /// fsyncs the temporary file, renames it over path() and fsyncs the folder.
  void commit();
  bool committed() const { return committed_; }
  /// Whether an abandoned temporary file is deleted (default) or kept for inspection.
  void set_remove_on_abandon(bool remove) { remove_on_abandon_ = remove; }

 private:
  std::string path_, tmp_;
  ErrorCode code_;
  bool committed_ = false;
  bool remove_on_abandon_ = true;
};

}  // namespace finecast
