// SPDX-License-Identifier: BSD-3-Clause
// The run's counters a checkpoint records, so that a restart chain goes on where the last run
// stopped: typed attributes of the checkpoint's /run group.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "common/schema.hpp"

namespace finecast::plugin {

/// The checkpoint group of the run's counters.
inline constexpr const char* kRunGroup = "run";

/// What a resumed run counts on from (docs/restarts.md).
struct RunCounters {
  int64_t sessions = 0;        ///< training sessions so far
  int64_t coupling_steps = 0;  ///< coupling steps so far
  int64_t samplings = 0;       ///< samplings so far
  bool training_due = false;   ///< a session was due that the checkpointed model has not had
  /// sample.calibration prequential: the sums over the samplings so far (area-weighted, per patch,
  /// each older sampling weighted down by sample.calibration_decay at every later one) of the
  /// ensemble mean's squared error and of the members' variance before inflation.
  double calibration_e2 = 0.0;
  double calibration_s2 = 0.0;
};

/// The group's rows (int64 and boolean attributes).
const schema::Table<RunCounters>& run_counters_table();

/// The counters a checkpoint `path` recorded: its /run group (`group`), or for a checkpoint written
/// before it, the same keys as text in its /metadata (`meta`); a key neither holds counts 0. Throws
/// CheckpointError naming the file, the key and what was expected for a value that is not one.
RunCounters read_run_counters(const std::optional<schema::Record>& group,
                              const std::map<std::string, std::string>& meta, const std::string& path);

}  // namespace finecast::plugin
