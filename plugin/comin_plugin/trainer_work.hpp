// SPDX-License-Identifier: BSD-3-Clause
// A trainer rank's work in a coupling step and at the end of the run. Functions marked
// "collective" are called by every trainer rank at the same point (after the trainers agreed
// that none failed, coupling_step.cpp); the others are local and may throw, and the step
// decides what a failure means. Each takes the parts of the plugin state (plugin_state.hpp) it
// reads (const) or writes: the run's settings or just its config, the ranks, the trainer's share
// of the patches, its model, its samples and output, the run's counters, the phase.
#pragma once

#include "plugin/comin_plugin/plugin_state.hpp"

namespace finecast::plugin {

/// Picks up a finished session (rethrowing its error): the model becomes ready to sample.
void collect_session(const Config& cfg, const Ranks& ranks, const TrainerShare& t, TrainerModel& model, RunStats& stats,
                     RunPhase& phase);
/// The coarse means and the fine values of this trainer's patches from the received fields.
void coarsen_step(const Config& cfg, TrainerShare& t, Timers& timers);
/// Collective: every trainer's coarse means to every trainer (the contexts' neighbours).
void share_coarse(const Config& cfg, const Ranks& ranks, TrainerShare& t, const RunStats& stats);
/// The contexts of this trainer's patches; pushes the step into its rolling buffer.
void buffer_step(const Config& cfg, const Ranks& ranks, TrainerShare& t, RunStats& stats, const RunPhase& phase);
/// This trainer's part of the buffer snapshot of the current optimizer step.
void write_buffer_part(const RunSettings& run, const Ranks& ranks, const TrainerShare& t, const TrainerModel& model,
                       RunStats& stats);
/// The lead: the model checkpoint of the buffer parts just written; older snapshots without
/// their checkpoint are removed. `training_due`: a session is due that the checkpointed model has
/// not had (a resumed run starts it at once).
void write_model_checkpoint(const RunSettings& run, const Ranks& ranks, const TrainerShare& t, TrainerModel& model,
                            TrainerOutput& out, RunStats& stats, bool training_due);
/// Collective: the rows of the session in the trainers' common numbering; then starts it (in
/// the background with train.async, all trainers together: they sum their gradients). A
/// synchronous session has ended when this returns; collect_session picks up its outcome.
void start_session(const RunSettings& run, const Ranks& ranks, const TrainerShare& t, TrainerModel& model,
                   RunStats& stats, RunPhase& phase);
/// Draws the ensemble of this trainer's patches of the latest step (writing the patches' scratch)
/// with the inflation of sampling_inflation, scores it (score_sampling), then masks its
/// implausible values (mask_implausible_samples).
void draw_samples(const RunSettings& run, const Ranks& ranks, TrainerShare& t, const TrainerModel& model,
                  TrainerOutput& out, const RunStats& stats);
/// Sets every drawn value that is non-finite or outside the plausible range of the field's units
/// and standard_name (coupling/io/plausibility.hpp) to NaN (missing in the output); returns and
/// keeps (out.masked) how many.
int64_t mask_implausible_samples(TrainerOutput& out);
/// sample.calibration prequential: the inflation of the next sampling, sqrt(e2 / s2) of the run's
/// sums (sample.inflation until there are some); otherwise sample.inflation.
double sampling_inflation(const Config& cfg, const TrainerOutput& out);
/// sample.calibration prequential: this trainer's sums of the drawn ensemble against the host's
/// field (valid patches, finite values, each patch's area weights): out.sampling_e2, the
/// ensemble mean's squared error, and out.sampling_s2, the members' variance (M - 1) before the
/// inflation out.inflation_used.
void score_sampling(const Config& cfg, const TrainerShare& t, TrainerOutput& out);
/// Collective among the trainers (sample.calibration prequential): adds the sampling's sums over
/// every trainer to the run's, those weighted by sample.calibration_decay first, unless the
/// sampled weights trained on this step (in sample), and says on the lead what the next
/// sampling's inflation is.
void update_calibration(const Config& cfg, const Ranks& ranks, const TrainerModel& model, TrainerOutput& out,
                        const RunStats& stats);
/// The ensemble mean of each of this trainer's slots (for write-back).
void compute_slot_mean(const Config& cfg, const TrainerShare& t, TrainerOutput& out);
/// Waits for a session in flight (a restart, the end of the run) and picks it up.
void finish_session(const Config& cfg, const Ranks& ranks, const TrainerShare& t, TrainerModel& model, RunStats& stats,
                    RunPhase& phase, const std::string& occasion);

/// Waits for a session in flight at `occasion` ("the end of the run"), first saying what the host
/// waits for and what comes `then` ("then writes the checkpoint"), as the host's own estimate of
/// its end cannot know; the wait counts in stats.timers.train_wait. Returns the seconds waited, or
/// -1 when no session was in flight. Does not collect the session.
double wait_for_session(RunStats& stats, TrainerModel& model, const std::string& occasion, const std::string& then);

}  // namespace finecast::plugin
