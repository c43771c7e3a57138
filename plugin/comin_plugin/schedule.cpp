// SPDX-License-Identifier: BSD-3-Clause
#include "plugin/comin_plugin/schedule.hpp"

#include "plugin/config.hpp"

namespace finecast::plugin {
namespace {

/// What the settings ask for at `step`, whether or not it can run.
Work scheduled(long long step, const ScheduleConfig& c, const ScheduleState& state) {
  Work w;
  w.train = c.train_every > 0 && step % c.train_every == 0 && state.buffered >= c.min_steps;
  w.sample = c.sample_every > 0 && step % c.sample_every == 0;
  w.checkpoint = c.checkpoint_every > 0 && step % c.checkpoint_every == 0;
  return w;
}

}  // namespace

ScheduleConfig schedule_config(const Config& cfg) {
  return {cfg.train.every, cfg.train.min_steps, cfg.sample.every, cfg.checkpoint.every, cfg.sample.at_end};
}

Work due(long long step, const ScheduleConfig& config, const ScheduleState& state) {
  const Work s = scheduled(step, config, state);
  Work w;
  w.train = (s.train || state.owed.train) && !state.in_flight;
  w.sample = s.sample;
  w.checkpoint = (s.checkpoint || state.owed.checkpoint) && state.ready && !state.in_flight;
  return w;
}

Work owed_after(long long step, const ScheduleConfig& config, const ScheduleState& state) {
  const Work s = scheduled(step, config, state), now = due(step, config, state);
  Work w;
  w.train = (s.train || state.owed.train) && !now.train;
  w.checkpoint = (s.checkpoint || state.owed.checkpoint) && !now.checkpoint;
  return w;
}

Work due_at_end(long long steps, const ScheduleConfig& config, const ScheduleState& state) {
  Work w;
  w.sample = config.sample_at_end && steps > 0 && state.ready && (config.sample_every == 0 || state.fresh_weights);
  w.checkpoint = true;
  return w;
}

}  // namespace finecast::plugin
