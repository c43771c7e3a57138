// SPDX-License-Identifier: BSD-3-Clause
#include "coupling/io/input_files.hpp"

#include <sys/stat.h>

#include <filesystem>
#include <mutex>
#include <optional>
#include <vector>

namespace finecast::coupling {
namespace {

struct FileId {
  dev_t dev;
  ino_t ino;
  bool operator==(const FileId& o) const { return dev == o.dev && ino == o.ino; }
};

std::optional<FileId> file_id(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return std::nullopt;
  return FileId{st.st_dev, st.st_ino};
}

struct Noted {
  FileId id;
  std::string path;
};

/// One list per process: the host program and the plugin share the library that holds it.
struct Registry {
  std::mutex mutex;
  std::vector<Noted> files;
};

Registry& registry() {
  static Registry r;
  return r;
}

}  // namespace

void note_input_file(const std::string& path) {
  const auto id = file_id(path);
  if (!id) return;
  Registry& r = registry();
  const std::lock_guard<std::mutex> lock(r.mutex);
  for (const Noted& n : r.files)
    if (n.id == *id) return;
  r.files.push_back({*id, path});
}

std::string input_file_at(const std::string& path) {
  const auto id = file_id(path);
  if (!id) return "";
  Registry& r = registry();
  const std::lock_guard<std::mutex> lock(r.mutex);
  for (const Noted& n : r.files)
    if (n.id == *id) return n.path;
  return "";
}

bool same_file(const std::string& a, const std::string& b) {
  const auto x = file_id(a), y = file_id(b);
  if (x && y) return *x == *y;
  if (x || y) return false;
  std::error_code ea, eb;
  const auto ca = std::filesystem::weakly_canonical(std::filesystem::absolute(a, ea), ea);
  const auto cb = std::filesystem::weakly_canonical(std::filesystem::absolute(b, eb), eb);
  return !ea && !eb && ca == cb;
}

}  // namespace finecast::coupling
