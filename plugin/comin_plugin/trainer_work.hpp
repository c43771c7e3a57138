// SPDX-License-Identifier: BSD-3-Clause
// A trainer rank's work in a coupling step and at the end of the run. Functions marked
// "collective" are called by every trainer rank at the same point (after the trainers agreed
// that none failed, coupling_step.cpp); the others are local and may throw, and the step
// decides what a failure means.
#pragma once

#include "plugin/comin_plugin/plugin_state.hpp"

namespace finecast::plugin {

/// Picks up a finished session (rethrowing its error): the model becomes ready to sample.
void collect_session(PluginState& s);
/// The coarse means and the fine values of this trainer's patches from the received fields.
void coarsen_step(PluginState& s);
/// Collective: every trainer's coarse means to every trainer (the contexts' neighbours).
void share_coarse(PluginState& s);
/// The contexts of this trainer's patches; pushes the step into its rolling buffer.
void buffer_step(PluginState& s);
/// This trainer's part of the buffer snapshot of the current optimizer step.
void write_buffer_part(PluginState& s);
/// The lead: the model checkpoint of the buffer parts just written; older snapshots without
/// their checkpoint are removed. `training_due`: a session is due that the checkpointed model has
/// not had (a resumed run starts it at once).
void write_model_checkpoint(PluginState& s, bool training_due);
/// Collective: the rows of the session in the trainers' common numbering; then starts it (in
/// the background with train.async, all trainers together: they sum their gradients). A
/// synchronous session has ended when this returns; collect_session picks up its outcome.
void start_session(PluginState& s);
/// Draws the ensemble of this trainer's patches of the latest step.
void draw_samples(PluginState& s);
/// The ensemble mean of each of this trainer's slots (for write-back).
void compute_slot_mean(PluginState& s);
/// Waits for a session in flight (a restart, the end of the run) and picks it up.
void finish_session(PluginState& s, const std::string& occasion);

/// Buffer snapshot file of trainer `index` for checkpoint step `step`: "buffer_<step>.h5" for
/// trainer 0, "buffer_<step>.p<index>.h5" for the others.
std::string buffer_part_path(const std::string& dir, long long step, int index);

}  // namespace finecast::plugin
