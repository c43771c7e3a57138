// SPDX-License-Identifier: BSD-3-Clause
#include "common/checkpoint_files.hpp"

#include <algorithm>
#include <cstdio>
#include <filesystem>

namespace finecast::checkpoint_files {
namespace {

namespace fs = std::filesystem;

std::string in_dir(const std::string& dir, const char* name) { return (fs::path(dir) / name).string(); }

/// The number that `text` is entirely, nullopt when it is empty or holds anything but digits.
std::optional<long long> digits_of(const std::string& text) {
  if (text.empty() || text.size() > 18 || text.find_first_not_of("0123456789") != std::string::npos)
    return std::nullopt;
  return std::stoll(text);
}

bool starts_with(const std::string& s, const std::string& prefix) { return s.compare(0, prefix.size(), prefix) == 0; }

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

std::string checkpoint_path(const std::string& dir, long long step) {
  char name[40];
  std::snprintf(name, sizeof name, "ckpt_%08lld.h5", step);
  return in_dir(dir, name);
}

std::string best_path(const std::string& dir) { return in_dir(dir, "ckpt_best.h5"); }

std::string buffer_path(const std::string& dir, long long step, int index) {
  char name[64];
  if (index == 0)
    std::snprintf(name, sizeof name, "buffer_%08lld.h5", step);
  else
    std::snprintf(name, sizeof name, "buffer_%08lld.p%d.h5", step, index);
  return in_dir(dir, name);
}

std::optional<long long> checkpoint_step(const std::string& file_name) {
  if (!starts_with(file_name, "ckpt_") || !ends_with(file_name, ".h5") || file_name.size() < 9) return std::nullopt;
  return digits_of(file_name.substr(5, file_name.size() - 8));
}

std::optional<long long> buffer_step(const std::string& file_name) {
  if (!starts_with(file_name, "buffer_") || !ends_with(file_name, ".h5") || file_name.size() < 11) return std::nullopt;
  std::string middle = file_name.substr(7, file_name.size() - 10);  // "<step>" or "<step>.p<k>"
  if (const auto dot = middle.find(".p"); dot != std::string::npos) {
    if (!digits_of(middle.substr(dot + 2))) return std::nullopt;
    middle.resize(dot);
  }
  return digits_of(middle);
}

std::vector<std::pair<long long, std::string>> checkpoints_newest_first(const std::string& dir) {
  std::vector<std::pair<long long, std::string>> out;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return out;
  for (const auto& entry : fs::directory_iterator(dir, ec))
    if (const auto step = checkpoint_step(entry.path().filename().string()))
      out.emplace_back(*step, entry.path().string());
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  return out;
}

}  // namespace finecast::checkpoint_files
