// SPDX-License-Identifier: BSD-3-Clause
#include "plugin/comin_plugin/faults.hpp"

#include "coupling/error.hpp"

namespace finecast::plugin {

void Faults::check(FaultPoint here, long long step_now, int rank_now, bool is_trainer) const {
  if (point == FaultPoint::kNone || here != point) return;
  if (step != 0 && step != step_now) return;
  if (rank >= 0 ? rank != rank_now : !is_trainer) return;
  throw IoError(schema::name_of(here) + " failed at coupling step " + std::to_string(step_now) + " on rank " +
                std::to_string(rank_now) + ": fault injected by testing.fault");
}

}  // namespace finecast::plugin
