// SPDX-License-Identifier: BSD-3-Clause
// The time loop finecast-host and finecast-replay share (host/time_loop.hpp): ICON's order of
// entry points, their domain ids and model times, and where the programs' hooks run.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "host/comin/host.hpp"
#include "coupling/program/mpi_program.hpp"
#include "host/time_loop.hpp"

namespace fc = finecast::coupling;
namespace fh = finecast::host;
namespace ch = finecast::host::comin;

namespace {

/// A loop whose hooks and entry points all write one line to `record`: "EP_NAME domain datetime"
/// for an entry point, "integrate step" and so on for the hooks.
struct RecordedLoop {
  std::vector<std::string> record;
  fh::TimeLoop loop;
  fh::EntryPointCalls calls;

  RecordedLoop(int64_t steps, int64_t output_every, int64_t restart_step) {
    loop.steps = steps;
    loop.start = "T0";
    loop.datetime = [](int64_t step) { return "T" + std::to_string(step); };
    loop.integrate = [this](int64_t step) { record.push_back("integrate " + std::to_string(step)); };
    loop.output_due = [output_every](int64_t step) { return step % output_every == 0; };
    loop.restart_due = [restart_step](int64_t step) { return step == restart_step; };
    loop.step_done = [this](int64_t step, const std::string& datetime) {
      record.push_back("step_done " + std::to_string(step) + " " + datetime);
    };
    loop.steps_done = [this] { record.push_back("steps_done"); };
    calls.at = [this](t_comin_entry_point ep, int domain, const std::string& datetime) {
      record.push_back(std::string(ch::Host::entry_point_name(ep)) + " " + std::to_string(domain) + " " + datetime);
    };
    calls.finish = [this] { record.push_back("finish"); };
  }
};

}  // namespace

TEST(HostTimeLoop, CallsIconsEntryPointsInOrderWithTheirDomainIds) {
  RecordedLoop r(3, 2, 2);
  fh::run_time_loop(r.loop, r.calls);
  const std::string out = std::to_string(COMIN_DOMAIN_OUTSIDE_LOOP);
  ASSERT_EQ(out, "-1");
  const std::vector<std::string> expected = {
      "EP_ATM_INIT_FINALIZE -1 T0",
      "EP_ATM_TIMELOOP_BEFORE -1 T0",
      // step 1: no output, no restart
      "EP_ATM_TIMELOOP_START -1 T1",
      "EP_ATM_INTEGRATE_BEFORE -1 T1",
      "EP_ATM_INTEGRATE_START 1 T1",
      "integrate 1",
      "EP_ATM_INTEGRATE_END 1 T1",
      "EP_ATM_INTEGRATE_AFTER -1 T1",
      "EP_ATM_TIMELOOP_END -1 T1",
      "step_done 1 T1",
      // step 2: output (every 2 steps), then the restart
      "EP_ATM_TIMELOOP_START -1 T2",
      "EP_ATM_INTEGRATE_BEFORE -1 T2",
      "EP_ATM_INTEGRATE_START 1 T2",
      "integrate 2",
      "EP_ATM_INTEGRATE_END 1 T2",
      "EP_ATM_INTEGRATE_AFTER -1 T2",
      "EP_ATM_WRITE_OUTPUT_BEFORE -1 T2",
      "EP_ATM_WRITE_OUTPUT_AFTER -1 T2",
      "EP_ATM_CHECKPOINT_BEFORE -1 T2",
      "EP_ATM_CHECKPOINT_AFTER -1 T2",
      "EP_ATM_TIMELOOP_END -1 T2",
      "step_done 2 T2",
      // step 3: neither
      "EP_ATM_TIMELOOP_START -1 T3",
      "EP_ATM_INTEGRATE_BEFORE -1 T3",
      "EP_ATM_INTEGRATE_START 1 T3",
      "integrate 3",
      "EP_ATM_INTEGRATE_END 1 T3",
      "EP_ATM_INTEGRATE_AFTER -1 T3",
      "EP_ATM_TIMELOOP_END -1 T3",
      "step_done 3 T3",
      "steps_done",
      // after the loop: at the last step's model time, then EP_FINISH and EP_DESTRUCTOR
      "EP_ATM_TIMELOOP_AFTER -1 T3",
      "finish",
  };
  EXPECT_EQ(r.record, expected);
}

TEST(HostTimeLoop, NestsIntegrateTwoSubstepsInsideTheirParentsStepWithTheirDomainIds) {
  RecordedLoop r(1, 2, 0);
  r.loop.nests = {2, 3};
  r.loop.integrate_nest = [&](int64_t step, int domain, int substep) {
    r.record.push_back("integrate " + std::to_string(step) + " domain " + std::to_string(domain) + "." +
                       std::to_string(substep));
  };
  fh::run_time_loop(r.loop, r.calls);
  const std::vector<std::string> expected = {
      "EP_ATM_INIT_FINALIZE -1 T0",
      "EP_ATM_TIMELOOP_BEFORE -1 T0",
      "EP_ATM_TIMELOOP_START -1 T1",
      "EP_ATM_INTEGRATE_BEFORE -1 T1",
      "EP_ATM_INTEGRATE_START 1 T1",
      "integrate 1",
      "EP_ATM_INTEGRATE_START 2 T1",
      "integrate 1 domain 2.1",
      "EP_ATM_INTEGRATE_END 2 T1",
      "EP_ATM_INTEGRATE_START 2 T1",
      "integrate 1 domain 2.2",
      "EP_ATM_INTEGRATE_END 2 T1",
      "EP_ATM_INTEGRATE_START 3 T1",
      "integrate 1 domain 3.1",
      "EP_ATM_INTEGRATE_END 3 T1",
      "EP_ATM_INTEGRATE_START 3 T1",
      "integrate 1 domain 3.2",
      "EP_ATM_INTEGRATE_END 3 T1",
      "EP_ATM_INTEGRATE_END 1 T1",
      "EP_ATM_INTEGRATE_AFTER -1 T1",
      "EP_ATM_TIMELOOP_END -1 T1",
      "step_done 1 T1",
      "steps_done",
      "EP_ATM_TIMELOOP_AFTER -1 T1",
      "finish",
  };
  EXPECT_EQ(r.record, expected);
}

TEST(HostTimeLoop, WithoutStepsTheRunStillStartsAndEndsAtTheStartTime) {
  RecordedLoop r(0, 1, 1);
  r.loop.output_due = nullptr;  // empty predicates and hooks: never due, nothing to do
  r.loop.restart_due = nullptr;
  r.loop.step_done = nullptr;
  fh::run_time_loop(r.loop, r.calls);
  const std::vector<std::string> expected = {"EP_ATM_INIT_FINALIZE -1 T0", "EP_ATM_TIMELOOP_BEFORE -1 T0", "steps_done",
                                             "EP_ATM_TIMELOOP_AFTER -1 T0", "finish"};
  EXPECT_EQ(r.record, expected);
}

TEST(HostTimeLoop, PacingMakesEveryStepLastAtLeastTheMinimumWallTime) {
  RecordedLoop r(3, 1, 0);
  r.loop.min_step_seconds = 0.05;
  std::vector<double> done;
  r.loop.step_done = [&](int64_t, const std::string&) { done.push_back(fc::now()); };
  const double t0 = fc::now();
  fh::run_time_loop(r.loop, r.calls);
  ASSERT_EQ(done.size(), 3u);
  EXPECT_GE(done[0] - t0, 0.05);
  EXPECT_GE(done[1] - done[0], 0.05);
  EXPECT_GE(done[2] - done[1], 0.05);
}
