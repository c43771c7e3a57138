// SPDX-License-Identifier: BSD-3-Clause
// What a coupling step does (plugin/comin_plugin/schedule.hpp), as a table: sessions once the
// buffer is full and none is in flight, samplings and checkpoints on their steps, work owed while
// a session runs or before the first model, and the end of the run.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "plugin/comin_plugin/schedule.hpp"

namespace fp = finecast::plugin;

namespace {

struct Row {
  long long step;
  fp::ScheduleState state;
  fp::Work due, owed;
};

fp::ScheduleState at(bool ready, long long buffered, bool in_flight = false, fp::Work owed = {}) {
  fp::ScheduleState s;
  s.ready = ready;
  s.buffered = buffered;
  s.in_flight = in_flight;
  s.owed = owed;
  return s;
}

std::string text(const fp::Work& w) {
  return std::string(w.train ? "train " : "") + (w.sample ? "sample " : "") + (w.checkpoint ? "checkpoint" : "");
}

}  // namespace

TEST(Schedule, WhatIsDueAtEachStep) {
  // Sessions every 2 steps once 4 are buffered, sampling every 4, checkpoints every 8.
  const fp::ScheduleConfig cfg{2, 4, 4, 8};
  const fp::Work none{}, train{true, false, false}, sample{false, true, false}, ckpt{false, false, true};
  const fp::Work train_sample{true, true, false}, all{true, true, true};
  const std::vector<Row> table{
      {1, at(false, 1), none, none},
      {2, at(false, 2), none, none},                 // a session's step, but the buffer is not full
      {4, at(false, 4), train_sample, none},         // full: the first session; sampling is due (skipped: no model)
      {6, at(false, 5, true), none, train},          // the first session still runs: the next is owed
      {7, at(false, 5, false, train), train, none},  // ...and runs as soon as none is in flight
      {8, at(false, 6, true), sample, {true, false, true}},  // no model yet: the checkpoint is owed too
      {9, at(true, 6, false, {true, false, true}), {true, false, true}, none},
      {16, at(true, 8), all, none},  // everything at once
      {16, at(true, 8, true), sample, {true, false, true}},
      {25, at(true, 8, false, ckpt), ckpt, none},  // an owed checkpoint, once nothing is in flight
      {12, at(true, 3), sample, none},             // a resumed run with a short buffer: no session
      {3, at(true, 8), none, none},
  };
  for (const Row& r : table) {
    EXPECT_EQ(text(fp::due(r.step, cfg, r.state)), text(r.due)) << "step " << r.step;
    EXPECT_EQ(text(fp::owed_after(r.step, cfg, r.state)), text(r.owed)) << "step " << r.step;
  }

  // Every 0: neither samplings nor checkpoints during the run.
  const fp::ScheduleConfig only_end{1, 1, 0, 0};
  EXPECT_EQ(text(fp::due(5, only_end, at(true, 3))), text(train));
}

TEST(Schedule, TheEndOfTheRunSamplesFreshWeightsOnce) {
  const fp::ScheduleConfig every4{2, 4, 4, 8}, at_end{2, 4, 0, 0};
  fp::ScheduleState trained = at(true, 8);
  EXPECT_TRUE(fp::due_at_end(10, at_end, trained).sample);   // the run's only sampling
  EXPECT_FALSE(fp::due_at_end(10, every4, trained).sample);  // the latest sampling had these weights
  trained.fresh_weights = true;
  EXPECT_TRUE(fp::due_at_end(10, every4, trained).sample);
  EXPECT_FALSE(fp::due_at_end(10, at_end, at(false, 8)).sample);  // no model
  EXPECT_FALSE(fp::due_at_end(0, at_end, trained).sample);        // no step
  EXPECT_TRUE(fp::due_at_end(0, at_end, at(false, 0)).checkpoint);
  // sample.at_end: false (issue 43: an evaluation replay samples with finecast-downscale): no
  // final sampling, with or without samplings during the run; the checkpoint stays.
  const fp::ScheduleConfig none{2, 4, 0, 0, false}, every4_no_end{2, 4, 4, 8, false};
  EXPECT_FALSE(fp::due_at_end(10, none, trained).sample);
  EXPECT_FALSE(fp::due_at_end(10, every4_no_end, trained).sample);
  EXPECT_TRUE(fp::due_at_end(10, none, trained).checkpoint);
}
