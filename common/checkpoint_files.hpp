// SPDX-License-Identifier: BSD-3-Clause
// The names of the files in a checkpoint directory, in one place: the trainer writes and lists
// the checkpoints, the plugin writes, pairs and prunes the buffer snapshots beside them.
//   ckpt_<step>.h5             the model, optimizer and run counters at optimizer step <step>
//   ckpt_best.h5               the state at the best validation score (train.keep_best)
//   buffer_<step>.h5           the rolling buffer written with ckpt_<step>.h5 (trainer rank 0)
//   buffer_<step>.p<k>.h5      the part of trainer rank k > 0
// <step> has at least 8 digits. Temporary files of interrupted writes match none of these.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace finecast::checkpoint_files {

/// "<dir>/ckpt_<step>.h5".
std::string checkpoint_path(const std::string& dir, long long step);

/// "<dir>/ckpt_best.h5".
std::string best_path(const std::string& dir);

/// "<dir>/buffer_<step>.h5" for trainer rank 0, "<dir>/buffer_<step>.p<index>.h5" for the others.
std::string buffer_path(const std::string& dir, long long step, int index = 0);

/// The step of a file name (no directory) "ckpt_<digits>.h5"; nullopt for any other name.
std::optional<long long> checkpoint_step(const std::string& file_name);

/// The step of a buffer snapshot's file name "buffer_<digits>.h5" or "buffer_<digits>.p<k>.h5";
/// nullopt for any other name.
std::optional<long long> buffer_step(const std::string& file_name);

/// The checkpoint files of `dir` with their steps, the newest step first; none when `dir` does
/// not exist.
std::vector<std::pair<long long, std::string>> checkpoints_newest_first(const std::string& dir);

}  // namespace finecast::checkpoint_files
