// SPDX-License-Identifier: BSD-3-Clause
#include "plugin/comin_plugin/faults.hpp"

#include "coupling/error.hpp"

namespace finecast::plugin {

namespace {
const struct {
  FaultPoint point;
  const char* name;
} kNames[] = {{FaultPoint::kNone, "none"},         {FaultPoint::kGather, "gather"},
              {FaultPoint::kTraining, "training"}, {FaultPoint::kCheckpoint, "checkpoint"},
              {FaultPoint::kSampling, "sampling"}, {FaultPoint::kOutput, "output"},
              {FaultPoint::kWriteBack, "write_back"}};
}  // namespace

FaultPoint parse_fault_point(const std::string& name) {
  for (const auto& n : kNames)
    if (name == n.name) return n.point;
  throw ConfigError("testing.fault: unknown fault point \"" + name + "\"");
}

const char* fault_point_name(FaultPoint point) {
  for (const auto& n : kNames)
    if (point == n.point) return n.name;
  return "?";
}

void Faults::check(FaultPoint here, long long step_now, int rank_now, bool is_trainer) const {
  if (point == FaultPoint::kNone || here != point) return;
  if (step != 0 && step != step_now) return;
  if (rank >= 0 ? rank != rank_now : !is_trainer) return;
  throw IoError(std::string(fault_point_name(here)) + " failed at coupling step " + std::to_string(step_now) +
                " on rank " + std::to_string(rank_now) + ": fault injected by testing.fault");
}

}  // namespace finecast::plugin
