// SPDX-License-Identifier: BSD-3-Clause
#include "host/time_loop.hpp"

#include <chrono>
#include <thread>

#include "coupling/program/mpi_program.hpp"

namespace finecast::host {

void run_time_loop(const TimeLoop& loop, const EntryPointCalls& calls) {
  const int outside = COMIN_DOMAIN_OUTSIDE_LOOP, inside = kIntegrationDomain;
  calls.at(EP_ATM_INIT_FINALIZE, outside, loop.start);
  calls.at(EP_ATM_TIMELOOP_BEFORE, outside, loop.start);
  std::string datetime = loop.start;
  for (int64_t step = 1; step <= loop.steps; ++step) {
    const double step_start = coupling::now();
    datetime = loop.datetime(step);
    calls.at(EP_ATM_TIMELOOP_START, outside, datetime);
    calls.at(EP_ATM_INTEGRATE_BEFORE, outside, datetime);
    calls.at(EP_ATM_INTEGRATE_START, inside, datetime);
    loop.integrate(step);
    // ICON integrates a nest inside its parent's step, after the parent's own dynamics and
    // physics; ComIn's current datetime stays the step's.
    for (const int nest : loop.nests)
      for (int sub = 1; sub <= kNestSubsteps; ++sub) {
        calls.at(EP_ATM_INTEGRATE_START, nest, datetime);
        loop.integrate_nest(step, nest, sub);
        calls.at(EP_ATM_INTEGRATE_END, nest, datetime);
      }
    calls.at(EP_ATM_INTEGRATE_END, inside, datetime);
    calls.at(EP_ATM_INTEGRATE_AFTER, outside, datetime);
    if (loop.output_due && loop.output_due(step)) {
      calls.at(EP_ATM_WRITE_OUTPUT_BEFORE, outside, datetime);
      calls.at(EP_ATM_WRITE_OUTPUT_AFTER, outside, datetime);
    }
    if (loop.restart_due && loop.restart_due(step)) {
      calls.at(EP_ATM_CHECKPOINT_BEFORE, outside, datetime);
      calls.at(EP_ATM_CHECKPOINT_AFTER, outside, datetime);
    }
    calls.at(EP_ATM_TIMELOOP_END, outside, datetime);
    if (loop.min_step_seconds > 0) {
      const double left = loop.min_step_seconds - (coupling::now() - step_start);
      if (left > 0) std::this_thread::sleep_for(std::chrono::duration<double>(left));
    }
    if (loop.step_done) loop.step_done(step, datetime);
  }
  if (loop.steps_done) loop.steps_done();
  calls.at(EP_ATM_TIMELOOP_AFTER, outside, datetime);
  calls.finish();
}

}  // namespace finecast::host
