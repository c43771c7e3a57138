// SPDX-License-Identifier: BSD-3-Clause
// An exclusive lock held through a lock file: one process at a time, released by the kernel when
// the holder dies, however it dies.
#pragma once

#include <string>

namespace finecast {

/// flock(LOCK_EX) on a lock file, taken without waiting. The kernel releases it when the holding
/// process ends, also on kill -9, so a stale lock file never blocks the next taker: the file's
/// text (who held it) is only for messages. The holder removes the file when it lets go; a taker
/// that locked a file removed meanwhile takes the new one. NFS: Linux maps flock to NFS's byte-range
/// locks, which hold across clients unless the file system is mounted with `nolock` (then, as on
/// Lustre without `-o flock`, locks are refused or local to one node; docs/output.md).
class FileLock {
 public:
  enum class State {
    kHeld,         ///< this process holds the lock
    kBusy,         ///< another process holds it; text() is what it wrote in the file
    kUnsupported,  ///< the file system does not lock; text() says why
  };
  /// Creates `path` when missing and tries to lock it; when it gets the lock, writes `note` (who
  /// holds it) into the file. Throws IoError naming the file when it cannot be created or opened.
  static FileLock try_take(const std::string& path, const std::string& note);
  /// A lock that holds nothing (state kUnsupported, empty text).
  FileLock() = default;
  FileLock(FileLock&& other) noexcept;
  FileLock& operator=(FileLock&& other) noexcept;
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;
  /// Lets go when held: removes the file, then releases the lock.
  ~FileLock();

  State state() const { return state_; }
  const std::string& text() const { return text_; }
  const std::string& path() const { return path_; }

 private:
  void release() noexcept;
  int fd_ = -1;
  State state_ = State::kUnsupported;
  std::string path_, text_;
};

}  // namespace finecast
