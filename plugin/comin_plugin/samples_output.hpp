// SPDX-License-Identifier: BSD-3-Clause
// A sampling's record in the run's output: the trainers' ensembles to the lead (the reverse
// exchange of coupling::RecordGather), the lead's file (output.hpp), and what a failure to write
// means for the other trainers.
#pragma once

#include "plugin/comin_plugin/plugin_state.hpp"

namespace finecast::plugin {

/// Collective among the trainers (`c.trainers`): the drawn ensembles (t.samples), the coarse
/// condition and the host's field of every trainer's slots go to the lead, which opens the output
/// at the first sampling and writes the record at stats.datetime. A failure to write on the lead is
/// thrown there after the last piece, so that no trainer waits for it in a piece's exchange; the
/// step then treats it as any local failure. `masked`: the values the trainers masked
/// (mask_implausible_samples), recorded with the record. Counts the sampling.
void write_samples(const Config& cfg, TrainerState& t, const CouplingState& c, const Faults& faults, RunStats& stats,
                   int64_t masked);

}  // namespace finecast::plugin
