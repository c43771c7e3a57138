// SPDX-License-Identifier: BSD-3-Clause
#include "common/file_lock.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "common/error.hpp"

namespace finecast {
namespace {

std::string read_all(int fd) {
  std::string text;
  char buf[512];
  ssize_t n;
  while ((n = ::pread(fd, buf, sizeof buf, static_cast<off_t>(text.size()))) > 0 && text.size() < 4096)
    text.append(buf, static_cast<size_t>(n));
  while (!text.empty() && (text.back() == '\n' || text.back() == '\0')) text.pop_back();
  return text;
}

/// Whether `fd` is still the file at `path` (its holder may have removed it while we locked it).
bool still_at(int fd, const std::string& path) {
  struct stat open {
  }, named{};
  return ::fstat(fd, &open) == 0 && ::stat(path.c_str(), &named) == 0 && open.st_dev == named.st_dev &&
         open.st_ino == named.st_ino;
}

}  // namespace

FileLock FileLock::try_take(const std::string& path, const std::string& note) {
  FileLock lock;
  lock.path_ = path;
  // A few rounds: each one that fails found the file removed by a holder that let go meanwhile.
  for (int round = 0; round < 100; ++round) {
    const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) throw IoError("cannot create the lock file " + path + ": " + std::strerror(errno));
    if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
      const int err = errno;
      lock.text_ = err == EWOULDBLOCK ? read_all(fd) : std::strerror(err);
      lock.state_ = err == EWOULDBLOCK ? State::kBusy : State::kUnsupported;
      ::close(fd);
      if (err == EWOULDBLOCK || err == ENOLCK || err == ENOSYS || err == EOPNOTSUPP || err == EINVAL) return lock;
      throw IoError("cannot lock " + path + ": " + lock.text_);
    }
    if (!still_at(fd, path)) {
      ::close(fd);
      continue;
    }
    // The note is for messages only: the lock holds without it.
    const std::string line = note + "\n";
    if (::ftruncate(fd, 0) == 0 && ::pwrite(fd, line.data(), line.size(), 0) == static_cast<ssize_t>(line.size()))
      lock.text_ = note;
    lock.fd_ = fd;
    lock.state_ = State::kHeld;
    return lock;
  }
  throw IoError("cannot lock " + path + ": it was removed and created again 100 times while finecast locked it");
}

FileLock::FileLock(FileLock&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)),
      state_(std::exchange(other.state_, State::kUnsupported)),
      path_(std::move(other.path_)),
      text_(std::move(other.text_)) {}

FileLock& FileLock::operator=(FileLock&& other) noexcept {
  if (this != &other) {
    release();
    fd_ = std::exchange(other.fd_, -1);
    state_ = std::exchange(other.state_, State::kUnsupported);
    path_ = std::move(other.path_);
    text_ = std::move(other.text_);
  }
  return *this;
}

FileLock::~FileLock() { release(); }

void FileLock::release() noexcept {
  if (fd_ < 0) return;
  // Removed while still locked: a taker that opened it meanwhile sees it gone and starts again.
  if (still_at(fd_, path_)) ::unlink(path_.c_str());
  ::close(fd_);
  fd_ = -1;
}

}  // namespace finecast
