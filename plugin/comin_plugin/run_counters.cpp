// SPDX-License-Identifier: BSD-3-Clause
// The run's counters in checkpoints: the /run group, and the /metadata text of older checkpoints.
#include "plugin/comin_plugin/run_counters.hpp"

#include <limits>

#include "common/error.hpp"

namespace finecast::plugin {

const schema::Table<RunCounters>& run_counters_table() {
  using R = RunCounters;
  using namespace schema;
  constexpr long long kMax = std::numeric_limits<int64_t>::max();
  static const Table<R> t = [] {
    Table<R> s;
    s.push_back(integer("sessions", &R::sessions, 0, kMax, "training sessions so far"));
    s.push_back(integer("coupling_steps", &R::coupling_steps, 0, kMax, "coupling steps so far"));
    s.push_back(integer("samplings", &R::samplings, 0, kMax, "samplings so far"));
    s.push_back(boolean("training_due", &R::training_due, "a session was due that this model has not had"));
    s.push_back(real("calibration_e2", &R::calibration_e2, 0.0, std::numeric_limits<double>::max(),
                     "sample.calibration prequential: the samplings' summed squared error of the ensemble mean "
                     "(older ones weighted down by sample.calibration_decay)"));
    s.push_back(real("calibration_s2", &R::calibration_s2, 0.0, std::numeric_limits<double>::max(),
                     "sample.calibration prequential: the samplings' summed variance of the raw members (older ones "
                     "weighted down by sample.calibration_decay)"));
    return s;
  }();
  return t;
}

RunCounters read_run_counters(const std::optional<schema::Record>& group,
                              const std::map<std::string, std::string>& meta, const std::string& path) {
  RunCounters c;
  if (group) {
    try {
      schema::from_record(run_counters_table(), *group, c);
    } catch (const schema::BadValue& e) {
      throw CheckpointError(path + ": /" + kRunGroup + " " + e.what());
    }
    return c;
  }
  // Written before /run: the same keys as text in /metadata (training_due "1" or "0").
  for (const auto& f : run_counters_table()) {
    const auto it = meta.find(f.key);
    if (it == meta.end()) continue;
    const std::string text = f.kind == schema::Kind::kBool && (it->second == "1" || it->second == "0")
                                 ? (it->second == "1" ? "true" : "false")
                                 : it->second;
    try {
      f.set(c, text);
    } catch (const schema::BadValue& e) {
      throw CheckpointError(path + ": /metadata " + f.key + " " + e.what());
    }
  }
  return c;
}

}  // namespace finecast::plugin
