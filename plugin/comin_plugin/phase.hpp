// SPDX-License-Identifier: BSD-3-Clause
// The plugin's phases and the transitions between them, in one place.
#pragma once

#include <string>

namespace finecast::plugin {

/// Where the plugin is in its run. Every rank tracks it; the trainer rank decides the training
/// phases and the others learn them from each step's agreement.
enum class Phase {
  kConfigured,  ///< comin_main ran: config valid, callbacks registered
  kCoupled,     ///< the secondary constructor ran: host fields, communicator, model built
  kBuffering,   ///< coupling steps fill the buffer; no trained model yet
  kTraining,    ///< the first training session runs; no model to sample yet
  kReady,       ///< a trained (or resumed) model samples; later sessions run in the background
  kFailed,      ///< this rank failed (on_error: disable); it still joins the step's agreement
  kStopped      ///< every rank agreed to stop: no more work, no more collectives
};

/// "configured", "coupled", ...
const char* phase_name(Phase phase);

/// The current phase and the table of allowed transitions (phase.cpp):
///   configured -> coupled -> buffering -> training -> ready
///   coupled -> ready (resumed from a checkpoint), buffering -> ready (a synchronous session)
///   training -> buffering (the first session trained on nothing: every sample was NaN/Inf)
///   any working phase -> failed -> stopped, any working phase -> stopped.
class PhaseMachine {
 public:
  Phase current() const { return phase_; }
  /// Moves to `to`; InternalError naming both phases when the table does not allow it. Moving
  /// to the current phase is a no-op.
  void move_to(Phase to);
  static bool allowed(Phase from, Phase to);

 private:
  Phase phase_ = Phase::kConfigured;
};

}  // namespace finecast::plugin
