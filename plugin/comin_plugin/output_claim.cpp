// SPDX-License-Identifier: BSD-3-Clause
#include "plugin/comin_plugin/output_claim.hpp"

#include <unistd.h>

#include <ctime>
#include <filesystem>
#include <utility>
#include <vector>

#include "common/error.hpp"
#include "common/log.hpp"
#include "common/region.hpp"
#include "coupling/io/input_files.hpp"
#include "coupling/io/static_field.hpp"

namespace finecast::plugin {

void check_output_place(const Config& cfg) {
  const std::string& out = cfg.sample.output;
  auto refuse = [&](const std::string& why) {
    throw ConfigError(cfg.source + ": sample.output: " + out + " " + why + "; name another output file");
  };
  std::error_code ec;
  if (std::filesystem::is_regular_file(out, ec)) {
    // The plugin's own inputs, by key; then whatever the host read.
    std::vector<std::pair<std::string, std::string>> read{{"the config file", cfg.source},
                                                          {"grid.file", cfg.grid.file}};
    if (!cfg.train.hold_out.empty() && !is_regions_text(cfg.train.hold_out))
      read.emplace_back("the train.hold_out mask", coupling::split_file_var(cfg.train.hold_out).first);
    if (cfg.checkpoint.resume != "auto" && cfg.checkpoint.resume != "auto-or-fresh")
      read.emplace_back("checkpoint.resume", cfg.checkpoint.resume);
    for (const auto& [key, path] : read)
      if (!path.empty() && std::filesystem::is_regular_file(path, ec) && coupling::same_file(out, path))
        refuse("is " + key + " " + path + " (the same file), which this run reads");
    if (const std::string input = coupling::input_file_at(out); !input.empty())
      refuse("is the input file " + input + " (the same file), which the host reads");
  }
  const std::string parent = std::filesystem::path(out).parent_path().string();
  if (coupling::same_file(parent.empty() ? "." : parent, cfg.checkpoint.dir.empty() ? "." : cfg.checkpoint.dir))
    refuse("lies in checkpoint.dir " + cfg.checkpoint.dir +
           ", whose files checkpoint.keep and the snapshot clean-up remove");
}

FileLock lock_output(const Config& cfg) {
  const std::string path = cfg.sample.output + ".lock";
  char host[256] = {0};
  gethostname(host, sizeof host - 1);
  char since[32] = {0};
  const std::time_t now = std::time(nullptr);
  std::tm utc{};
  std::strftime(since, sizeof since, "%Y-%m-%dT%H:%M:%SZ", gmtime_r(&now, &utc));
  FileLock lock = FileLock::try_take(path, "pid " + std::to_string(getpid()) + " on " + host + " since " + since);
  if (lock.state() == FileLock::State::kBusy)
    throw ConfigError(cfg.source + ": sample.output: " + cfg.sample.output + " is being written by another run (" +
                      (lock.text().empty() ? std::string("its lock holds no note") : lock.text()) + "; lock file " +
                      path + "); wait for it to end, or name another output file");
  if (lock.state() == FileLock::State::kUnsupported)
    log::warning("sample.output: cannot lock " + path + " (" + lock.text() +
                 "): this file system does not lock files, so a second run writing " + cfg.sample.output +
                 " at the same time is not detected");
  return lock;
}

}  // namespace finecast::plugin
