// SPDX-License-Identifier: BSD-3-Clause
// What work a coupling step does: a pure function of the step number, the schedule's settings
// and what the trainers know (the same on every trainer rank), tested as a table. The step
// (coupling_step.cpp) runs the work in one order: a synchronous session, the sampling, the
// checkpoint, then an asynchronous session. A synchronous session ends within the step, so the
// step's samples and checkpoint have its weights; the sampling comes before the checkpoint, so a
// run resumed from that checkpoint has every sampling up to it; an asynchronous session starts
// last, so the checkpoint falls in the gap between two sessions (when they run back to back it
// is the only moment the model is not being trained).
#pragma once

namespace finecast::plugin {

struct Config;

/// The settings the schedule follows (train.every, train.min_steps, sample.every, checkpoint.every,
/// sample.at_end).
struct ScheduleConfig {
  long long train_every = 48;
  long long min_steps = 48;        ///< buffered steps before the first session
  long long sample_every = 0;      ///< 0 = only at the end of the run
  long long checkpoint_every = 0;  ///< 0 = only at the end of the run (and at the host's restarts)
  bool sample_at_end = true;       ///< sample.at_end: sample the final weights at the end of the run
};
ScheduleConfig schedule_config(const Config& config);

/// Work of a step.
struct Work {
  bool train = false;       ///< start a training session
  bool sample = false;      ///< a sampling step: every rank joins, the trainers sample when they have a model
  bool checkpoint = false;  ///< write a checkpoint (the trainers' buffer parts, then the lead's model)
  bool operator==(const Work& o) const { return train == o.train && sample == o.sample && checkpoint == o.checkpoint; }
};

/// What the trainers know at a step, after it was buffered.
struct ScheduleState {
  bool ready = false;          ///< a trained model (phase ready): it may be checkpointed
  long long buffered = 0;      ///< steps in the rolling buffer
  bool in_flight = false;      ///< a session runs (agreed by every rank): none may start, no checkpoint
  Work owed;                   ///< a session or checkpoint that fell due at an earlier step and could not run
  bool fresh_weights = false;  ///< a session finished (or the run resumed a trained model) after the latest sampling
};

/// The work of coupling step `step` (1, 2, ...):
///  - train: every train_every steps once the buffer holds min_steps steps, or owed; not while a
///    session runs;
///  - sample: every sample_every steps (never when 0);
///  - checkpoint: every checkpoint_every steps (never when 0), or owed, once there is a trained
///    model; not while a session runs.
Work due(long long step, const ScheduleConfig& config, const ScheduleState& state);

/// What is owed after the step: the session or checkpoint that fell due (or was owed) and is not
/// due now (a session in flight; no trained model yet).
Work owed_after(long long step, const ScheduleConfig& config, const ScheduleState& state);

/// The work at the end of a run of `steps` coupling steps: a sampling of the final weights when
/// the model is trained,
/// unless the latest sampling already used them (with sample_every 0 the run's only sampling) or
/// sample_at_end is false, and a checkpoint.
Work due_at_end(long long steps, const ScheduleConfig& config, const ScheduleState& state);

}  // namespace finecast::plugin
