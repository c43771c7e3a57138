// SPDX-License-Identifier: BSD-3-Clause
// The trainer rank's work in a coupling step and at the end of the run. Each function is local
// (no collectives) and may throw; the step decides what a failure means (coupling_step.cpp).
#pragma once

#include "plugin/comin_plugin/plugin_state.hpp"

namespace finecast::plugin {

/// Picks up a finished session (rethrowing its error): the model becomes ready to sample.
void collect_session(PluginState& s);
/// Extracts the patches of the gathered fields and pushes them into the rolling buffer.
void buffer_step(PluginState& s);
/// Writes a checkpoint when one is due and no session is training the weights.
void checkpoint_if_due(PluginState& s);
/// Starts a training session when one is due and none is in flight.
void train_if_due(PluginState& s);
/// Draws the ensemble of the latest coarse field into the trainer's sample buffer.
void draw_samples(PluginState& s);
/// Appends the drawn ensemble to the NetCDF output and computes the ensemble mean.
void write_samples(PluginState& s);
/// The buffer snapshot, then the checkpoint of the same optimizer step (the pair a resumed run
/// loads together); older snapshots without their checkpoint are removed.
void write_checkpoint(PluginState& s);
/// A checkpoint for a restart (the host's restart, the end of the run): waits for a session in
/// flight, then writes the checkpoint whatever the phase, so that a chain of runs shorter than
/// train.min_steps keeps its buffer (a warning says when no model was trained yet).
void write_restart_checkpoint(PluginState& s, const std::string& occasion);

}  // namespace finecast::plugin
