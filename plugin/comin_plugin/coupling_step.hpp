// SPDX-License-Identifier: BSD-3-Clause
// One coupling step, and the end of the run, arranged so that a failure on one rank can never
// leave another waiting in a collective:
//   1. every rank packs its owned values (local work that can fail);
//   2. one agreement (MPI_Allreduce) on every rank's failure flag and the trainer's phase: if
//      any rank failed, every rank stops here, together;
//   3. the redistribution of the fields to the trainers (every rank);
//   4. the trainers' work: buffer, then what is due (schedule.hpp) in its order: a synchronous
//      session, the sampling and output, a checkpoint, an asynchronous session;
//   5. with write-back, one agreement on the sampling's outcome, then the reverse redistribution
//      of the ensemble mean only when the trainers succeeded;
//   6. the trainer's checkpoint when due (after the sampling: the checkpoint holds a step that
//      is done), then an asynchronous session that waited for it.
// A failure in local work makes the rank "failed" under on_error: disable (it still joins the
// collectives of the step, and the next step's agreement stops every rank), or stops the run at
// once under on_error: abort. A failure inside a collective cannot be survived and aborts.
#pragma once

#include <string>

#include "plugin/comin_plugin/plugin_state.hpp"

namespace finecast::plugin {

/// A call of the coupling entry point on the coupled domain, at model time `datetime`.
void coupling_step(PluginState& s, const std::string& datetime);

/// EP_ATM_CHECKPOINT_AFTER (the host writes its restart): the trainer writes a checkpoint and
/// buffer snapshot too, so a chain of runs restarts from matching states. Local work only.
void host_restart(PluginState& s, const std::string& datetime);

/// EP_DESTRUCTOR: the trainer waits for its session, samples the final weights, writes the final
/// checkpoint; every rank prints its summary. Local work only; failures are logged (disable) or
/// stop the run (abort). The caller then releases the state.
void finish_run(PluginState& s);

}  // namespace finecast::plugin
