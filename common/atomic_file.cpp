// SPDX-License-Identifier: BSD-3-Clause
#include "common/atomic_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace finecast {
namespace {

std::string folder_of(const std::string& path) {
  const auto slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

// Without these fsyncs a crash right after rename can leave an empty file under the new name.
void fsync_path(const std::string& path, bool directory, ErrorCode code) {
  const int fd = ::open(path.c_str(), directory ? O_RDONLY | O_DIRECTORY : O_RDONLY);
  if (fd < 0) {
    if (directory) return;  // some file systems do not allow opening folders; the rename holds
    throw_error(code, "cannot open " + path + " to flush it: " + std::strerror(errno));
  }
  const int rc = ::fsync(fd);
  const int err = errno;
  ::close(fd);
  if (rc != 0 && !directory) throw_error(code, "cannot flush " + path + " to disk: " + std::strerror(err));
}

}  // namespace

AtomicFile::AtomicFile(std::string path, ErrorCode code) : path_(std::move(path)), tmp_(path_ + ".tmp"), code_(code) {
  if (path_.empty()) throw_error(code_, "output path is empty");
  struct stat st {};
  const std::string dir = folder_of(path_);
  if (::stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
    throw_error(code_, "cannot write " + path_ + ": folder " + dir + " does not exist");
}

AtomicFile::~AtomicFile() {
  if (!committed_ && remove_on_abandon_) std::remove(tmp_.c_str());
}

void AtomicFile::commit() {
  if (committed_) return;
  fsync_path(tmp_, false, code_);
  if (std::rename(tmp_.c_str(), path_.c_str()) != 0)
    throw_error(code_, "cannot rename " + tmp_ + " to " + path_ + ": " + std::strerror(errno));
  committed_ = true;
  fsync_path(folder_of(path_), true, code_);
}

}  // namespace finecast
