// SPDX-License-Identifier: BSD-3-Clause
// Checkpoint files and directories: the error type, the format version, keep-last-K and fallback.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/error.hpp"
#include "common/schema.hpp"
#include "trainer/options.hpp"

namespace finecast::trainer {

class Downscaler;

/// Every checkpoint failure throws finecast::CheckpointError (common/error.hpp); it is named
/// here too because it belongs to this API.
using finecast::CheckpointError;

/// Version of the HDF5 layout written by this build. Version 2 added model.activation,
/// model.attention, the new train options and the /validation group; version 1 files are read
/// with their defaults (silu, no attention, no validation record). Other versions are refused.
inline constexpr int kCheckpointFormatVersion = 2;
/// The oldest version this build reads.
inline constexpr int kCheckpointOldestReadableVersion = 1;
/// Value of the root attribute `format`, so that an unrelated HDF5 file is recognised as such.
inline constexpr const char* kCheckpointFormatName = "finecast-downscaler-checkpoint";

/// Reads every dataset of a checkpoint (checksums included) without building a model;
/// throws CheckpointError naming the first problem. Cheap enough for directory scans.
void verify_checkpoint(const std::string& path);

/// Groups of typed attributes a caller stores with a checkpoint, by group name: the plugin's
/// conditioning spec (/conditioning, written through its schema table). The trainer stores them
/// as they come (integers as int64, reals as float64, strings, arrays of them) without knowing
/// what they mean; a name of the checkpoint's own groups (/options, /model, ...) is refused.
using CheckpointGroups = std::map<std::string, schema::Record>;

/// The user metadata (string attributes of /metadata) of a checkpoint.
std::map<std::string, std::string> read_checkpoint_metadata(const std::string& path);

/// The typed attributes of group `group` of a checkpoint (one of its CheckpointGroups);
/// nullopt when the checkpoint has no such group (written before it, or without it).
std::optional<schema::Record> read_checkpoint_group(const std::string& path, const std::string& group);

/// How the run that wrote a checkpoint sampled (sample.* of its config): the CheckpointGroup
/// kSamplingGroup (trainer/options.hpp) read through sample_options_table(); its rows the group
/// lacks keep their defaults. nullopt when the checkpoint has no such group (written before
/// finecast recorded it, or by a program that does not sample). A stored value a row refuses is a
/// CheckpointError naming the file and the key.
std::optional<SampleOptions> read_checkpoint_sampling(const std::string& path);

/// Saves `model` as the checkpoint for its current step in `dir` (created if missing; the file
/// names are common/checkpoint_files.hpp's), then deletes all but the newest `keep` checkpoints
/// of that directory. Returns the path written. When the model keeps its best state
/// (train.keep_best), that state is also written to checkpoint_files::best_path(dir) unless the
/// file there already holds it; keep-last-K never deletes it.
std::string save_checkpoint_in_dir(const Downscaler& model, const std::string& dir, int keep,
                                   const std::map<std::string, std::string>& metadata = {},
                                   const CheckpointGroups& groups = {});

/// The newest checkpoint in `dir` that passes verify_checkpoint, skipping corrupt or truncated
/// ones (each skip is reported through `on_skip` when given); nullopt when there is none.
std::optional<std::string> newest_valid_checkpoint(const std::string& dir,
                                                   const std::function<void(const std::string&)>& on_skip = {});

}  // namespace finecast::trainer
