// SPDX-License-Identifier: BSD-3-Clause
// ICON's order of ComIn entry points over a run, written once for finecast's host programs
// (finecast-host, finecast-replay); what differs between them comes in as callbacks.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "comin.h"

namespace finecast::host {

/// The domain id of the base domain's EP_ATM_INTEGRATE_START/_END: ICON calls them inside its
/// recursive integration of one domain (mo_nh_stepping's integrate_nh), with that domain's id.
/// EP_ATM_INTEGRATE_BEFORE/_AFTER around it, and the other time-loop entry points, are called
/// outside the loop over domains (COMIN_DOMAIN_OUTSIDE_LOOP).
inline constexpr int kIntegrationDomain = 1;

/// Steps a nest takes per step of its parent (ICON: half the parent's time step, two steps).
inline constexpr int kNestSubsteps = 2;

/// Where the loop's entry points go: a host's plugins (ch::Host::run_entry_point and
/// ch::Host::finish, timed or not) or, in tests, a record.
struct EntryPointCalls {
  /// Runs the plugins' callbacks of one entry point on `domain` at model time `datetime`.
  std::function<void(t_comin_entry_point ep, int domain, const std::string& datetime)> at;
  /// Ends the run: EP_FINISH, then EP_DESTRUCTOR (ch::Host::finish).
  std::function<void()> finish;
};

/// What one host program's run does around ICON's entry points. Steps count from 1; the model
/// time of a step's entry points is the time at the end of that step.
struct TimeLoop {
  int64_t steps = 0;
  std::string start;                                  ///< model time of EP_ATM_INIT_FINALIZE and _TIMELOOP_BEFORE
  std::function<std::string(int64_t step)> datetime;  ///< model time of `step`'s entry points
  /// The model's integration of `step`: fills the host's fields, between EP_ATM_INTEGRATE_START
  /// and EP_ATM_INTEGRATE_END, so that plugins see the new step from INTEGRATE_END on.
  std::function<void(int64_t step)> integrate;
  /// Domain 1's child domains (ICON's nests; ids 2, 3, ...), empty: none. Each integrates
  /// kNestSubsteps steps inside its parent's step, each between its own EP_ATM_INTEGRATE_START
  /// and _END with its domain id, before the parent's EP_ATM_INTEGRATE_END (as ICON does).
  std::vector<int> nests;
  /// A nest's integration: sub-step `substep` (1 .. kNestSubsteps) of `step` on `domain`.
  std::function<void(int64_t step, int domain, int substep)> integrate_nest;
  /// Whether ICON writes output after `step` (EP_ATM_WRITE_OUTPUT_BEFORE/_AFTER); empty: never.
  std::function<bool(int64_t step)> output_due;
  /// Whether ICON writes a restart after `step` (EP_ATM_CHECKPOINT_BEFORE/_AFTER); empty: never.
  std::function<bool(int64_t step)> restart_due;
  /// Pacing: a step takes at least this much wall time, from EP_ATM_TIMELOOP_START to the end of
  /// a sleep after EP_ATM_TIMELOOP_END (a host as slow as ICON); 0: no sleep.
  double min_step_seconds = 0;
  /// After each step and its pacing (diagnostics, progress lines); empty: nothing.
  std::function<void(int64_t step, const std::string& datetime)> step_done;
  /// After the last step, before EP_ATM_TIMELOOP_AFTER (timings, a progress bar's end); empty: nothing.
  std::function<void()> steps_done;
};

/// A run in ICON's order: EP_ATM_INIT_FINALIZE and EP_ATM_TIMELOOP_BEFORE at `loop.start`; per
/// step EP_ATM_TIMELOOP_START, EP_ATM_INTEGRATE_BEFORE, _START (domain kIntegrationDomain), the
/// integration, the nests' sub-steps (each within _START and _END on its domain), _END (domain
/// kIntegrationDomain), _AFTER, EP_ATM_WRITE_OUTPUT_BEFORE/_AFTER when output is due,
/// EP_ATM_CHECKPOINT_BEFORE/_AFTER when a restart is due, EP_ATM_TIMELOOP_END; then
/// EP_ATM_TIMELOOP_AFTER at the last step's time (`loop.start` without steps) and the finish.
/// The secondary constructors come before, from the caller, as ICON's set-up does.
void run_time_loop(const TimeLoop& loop, const EntryPointCalls& calls);

}  // namespace finecast::host
