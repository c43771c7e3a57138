// SPDX-License-Identifier: BSD-3-Clause
#include "plugin/comin_plugin/phase.hpp"

#include "coupling/error.hpp"

namespace finecast::plugin {

const char* phase_name(Phase phase) {
  switch (phase) {
    case Phase::kConfigured:
      return "configured";
    case Phase::kCoupled:
      return "coupled";
    case Phase::kBuffering:
      return "buffering";
    case Phase::kTraining:
      return "training";
    case Phase::kReady:
      return "ready";
    case Phase::kFailed:
      return "failed";
    case Phase::kStopped:
      return "stopped";
  }
  return "?";
}

bool PhaseMachine::allowed(Phase from, Phase to) {
  if (from == to) return true;
  switch (to) {
    case Phase::kConfigured:
      return false;
    case Phase::kCoupled:
      return from == Phase::kConfigured;
    case Phase::kBuffering:
      return from == Phase::kCoupled || from == Phase::kTraining;
    case Phase::kTraining:
      return from == Phase::kBuffering;
    case Phase::kReady:
      return from == Phase::kCoupled || from == Phase::kBuffering || from == Phase::kTraining;
    case Phase::kFailed:
      return from != Phase::kStopped && from != Phase::kConfigured;
    case Phase::kStopped:
      return from != Phase::kConfigured;
  }
  return false;
}

void PhaseMachine::move_to(Phase to) {
  if (!allowed(phase_, to))
    throw InternalError(std::string("finecast: no transition from phase ") + phase_name(phase_) + " to " +
                        phase_name(to));
  phase_ = to;
}

}  // namespace finecast::plugin
