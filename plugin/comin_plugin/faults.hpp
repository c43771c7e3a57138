// SPDX-License-Identifier: BSD-3-Clause
// Deliberate failures at named points of a coupling step (config `testing.fault`), so the tests
// can check that every failure leaves the run in a defined state. Off unless configured.
#pragma once

#include "plugin/config.hpp"

namespace finecast::plugin {

/// The configured failure: where, at which coupling step (0 = every time), on which rank.
struct Faults {
  FaultPoint point = FaultPoint::kNone;
  long long step = 0;
  int rank = -1;  ///< -1 = the trainer rank

  /// Throws IoError ("... fault injected by testing.fault ...") when the configured failure is
  /// at `here`, step `step` and on this rank.
  void check(FaultPoint here, long long step_now, int rank_now, bool is_trainer) const;
};

}  // namespace finecast::plugin
