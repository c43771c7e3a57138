// SPDX-License-Identifier: BSD-3-Clause
#include "plugin/comin_plugin/coupling_step.hpp"

#include <chrono>
#include <cstdio>
#include <functional>

#include "coupling/error.hpp"
#include "common/log.hpp"
#include "plugin/comin_plugin/guard.hpp"
#include "plugin/comin_plugin/host_api.hpp"
#include "plugin/comin_plugin/trainer_work.hpp"

namespace finecast::plugin {
namespace {

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

bool working(const PluginState& s) { return s.phase() != Phase::kFailed && s.phase() != Phase::kStopped; }

/// Runs local work (no collectives inside). A failure makes this rank failed (on_error:
/// disable), or stops the run (abort). Returns whether the work ran and succeeded; after a
/// failure, later local work of the step is skipped.
bool local(PluginState& s, const char* what, const std::function<void()>& fn) {
  if (!working(s)) return false;
  try {
    fn();
    return true;
  } catch (...) {
    const std::string why = std::string(what) + " at " + s.stats.datetime + ": " + describe_current_exception();
    if (s.config.on_error != OnError::kDisable) stop_the_run(why);
    log::error(why);
    s.transition(Phase::kFailed, "finecast stops working after this error (on_error: disable); the simulation "
                                 "continues and finecast's outputs keep what was written");
    return false;
  }
}

/// What every rank tells the others once per step (MPI_Allreduce, maximum of each entry).
struct Agreement {
  int failed = 0;    ///< some rank failed
  int training = 0;  ///< the trainer runs its first session
  int ready = 0;     ///< the trainer has a model to sample
};

Agreement agree(PluginState& s) {
  int mine[3] = {s.phase() == Phase::kFailed ? 1 : 0, 0, 0};
  if (s.is_trainer()) {
    mine[1] = s.phase() == Phase::kTraining ? 1 : 0;
    mine[2] = s.phase() == Phase::kReady ? 1 : 0;
  }
  int all[3] = {0, 0, 0};
  CHECK_MPI(MPI_Allreduce(mine, all, 3, MPI_INT, MPI_MAX, s.coupling->comm));
  return {all[0], all[1], all[2]};
}

/// The others learn the trainer's phase from the agreement.
void follow_trainer(PluginState& s, const Agreement& a) {
  if (s.is_trainer()) return;
  if (a.ready && s.phase() != Phase::kReady) {
    s.transition(Phase::kReady);
  } else if (a.training && s.phase() == Phase::kBuffering) {
    s.transition(Phase::kTraining);
  }
}

/// The host variables gathered this step: the orography (the last input) is static, so it is
/// gathered with the first step of the run only (a resumed run counts on from the checkpoint's
/// step, so this is not "step 1").
int inputs_this_step(const PluginState& s) {
  return s.coupling->static_gathered ? static_cast<int>(s.config.fields.size()) : s.coupling->n_inputs();
}

void pack_fields(PluginState& s) {
  CouplingState& c = *s.coupling;
  s.faults.check(FaultPoint::kGather, s.stats.steps, c.rank, c.is_trainer);
  const int64_t n_owned = c.gatherer->n_owned();
  for (int f = 0; f < inputs_this_step(s); ++f) {
    const HostField& field = c.fields[f];
    const void* data = comin_var_get_ptr(field.handle);
    if (!data) throw InternalError("no data pointer for host variable " + field.name);
    float* out = c.local_values.data() + f * n_owned;
    if (field.datatype == COMIN_VAR_DATATYPE_FLOAT)
      coupling::pack(static_cast<const float*>(data), field.owned, out);
    else
      coupling::pack(static_cast<const double*>(data), field.owned, out);
  }
}

/// Step 5: the trainer's outcome (0 nothing sampled, 1 sampled, 2 failed), then the ensemble
/// mean for the ranks' own cells when there is one.
enum SamplingOutcome { kNothing = 0, kSampled = 1, kFailedSampling = 2 };

void write_back(PluginState& s, int outcome) {
  CouplingState& c = *s.coupling;
  CHECK_MPI(MPI_Bcast(&outcome, 1, MPI_INT, s.config.coupling.trainer_rank, c.comm));
  if (outcome != kSampled) return;
  c.write_back_values.resize(static_cast<size_t>(c.gatherer->n_owned()));
  c.gatherer->scatter(c.is_trainer ? s.trainer->ensemble_mean.data() : nullptr, c.write_back_values.data());
  local(s, "write_back", [&] {
    s.faults.check(FaultPoint::kWriteBack, s.stats.steps, c.rank, c.is_trainer);
    double* field = comin_var_get_ptr_double(c.write_back.handle);
    if (!field) throw InternalError("sample.write_back: no data pointer for host variable " + c.write_back.name);
    coupling::unpack(c.write_back_values.data(), c.write_back.owned, field);
  });
}

void sampling_step(PluginState& s, bool with_write_back) {
  const auto t0 = Clock::now();
  int outcome = kNothing;
  if (s.is_trainer() && working(s)) {
    if (s.phase() != Phase::kReady) {
      log::progress("Sampling at " + s.stats.datetime + " skipped: no trained model yet");
    } else {
      const bool ok = local(s, "sampling", [&] { draw_samples(s); }) && local(s, "output", [&] { write_samples(s); });
      outcome = ok ? kSampled : kFailedSampling;
      if (ok)
        log::progress("Sampled " + std::to_string(s.config.sample.members) + " member(s) at " + s.stats.datetime + " (" +
                      trainer::name(s.config.sample.sampler) + ") in " + std::to_string(seconds_since(t0)).substr(0, 5) + " s");
    }
  }
  if (with_write_back) write_back(s, outcome);
  s.stats.timers.sample += seconds_since(t0);
}

}  // namespace

void coupling_step(PluginState& s) {
  const Config& cfg = s.config;
  // Entry points inside the host's loop over domains run once per domain: couple on ours only.
  const int domain = comin_current_get_domain_id();
  if (domain != COMIN_DOMAIN_OUTSIDE_LOOP && domain != cfg.coupling.domain) return;
  if (s.phase() == Phase::kStopped || ++s.stats.calls % cfg.coupling.every != 0) return;
  ++s.stats.steps;
  s.stats.datetime = fortran_string(comin_current_get_datetime);
  if (s.phase() == Phase::kCoupled) s.transition(Phase::kBuffering);
  if (s.is_trainer() && !s.trainer->resumed_datetime.empty()) {
    // ISO 8601 times of one format compare as strings.
    if (s.stats.datetime <= s.trainer->resumed_datetime)
      log::warning("The host's model time " + s.stats.datetime + " is not later than that of the checkpoint this run "
                   "resumed from (" + s.trainer->resumed_datetime + "): the run restarts earlier than the checkpoint, "
                   "and the buffer holds steps from its future");
    s.trainer->resumed_datetime.clear();
  }

  const auto t0 = Clock::now();
  local(s, "gather", [&] { pack_fields(s); });                                       // 1
  const Agreement a = agree(s);                                                       // 2
  if (a.failed) {
    if (s.is_trainer()) s.trainer->session.wait();
    s.transition(Phase::kStopped, "finecast stopped at " + s.stats.datetime +
                                      " after an error (on_error: disable); the simulation continues");
    return;
  }
  follow_trainer(s, a);
  CouplingState& c = *s.coupling;
  c.gatherer->gather(inputs_this_step(s), c.local_values.data(),
                     c.is_trainer ? s.trainer->global_values.data() : nullptr);  // 3
  c.static_gathered = true;
  s.stats.timers.gather += seconds_since(t0);

  if (s.is_trainer()) {                                                               // 4
    local(s, "training", [&] { collect_session(s); });
    local(s, "buffer", [&] { buffer_step(s); });
    local(s, "checkpoint", [&] { checkpoint_if_due(s); });
    local(s, "training", [&] { train_if_due(s); });
  }
  if (cfg.sample.every > 0 && s.stats.steps % cfg.sample.every == 0)                 // 4, 5
    sampling_step(s, !cfg.sample.write_back.empty());
}

void host_restart(PluginState& s) {
  if (!s.is_trainer() || !working(s)) return;
  s.stats.datetime = fortran_string(comin_current_get_datetime);
  local(s, "checkpoint", [&] { write_restart_checkpoint(s, "the host's restart at " + s.stats.datetime); });
}

void finish_run(PluginState& s) {
  const Config& cfg = s.config;
  if (s.is_trainer() && working(s)) {
    TrainerState& t = *s.trainer;
    const auto t0 = Clock::now();
    t.session.wait();
    s.stats.timers.train_wait += seconds_since(t0);
    local(s, "training", [&] { collect_session(s); });
    // The run ends with a sampling of the final weights, unless the latest one already used them.
    // At the model time of the last sampling it replaces that record (the output keeps one record
    // per time).
    if (s.stats.steps > 0 && s.phase() == Phase::kReady && (cfg.sample.every == 0 || t.pending.sampling)) {
      if (t.output && t.output->last_datetime() == s.stats.datetime)
        log::info("Final weights: sampling " + s.stats.datetime + " again; the record of the last sampling is replaced");
      sampling_step(s, false);
    }
    local(s, "checkpoint", [&] { write_restart_checkpoint(s, "the end of the run"); });
  } else if (s.is_trainer()) {
    s.trainer->session.wait();
  }
  if (s.is_trainer()) {
    char line[400];
    std::snprintf(line, sizeof line,
                  "Summary: %lld coupling steps, %lld training sessions, %lld samplings; seconds in gather %.3f, "
                  "patches+buffer %.3f, waiting for training %.3f, sampling+output %.3f, checkpoints %.3f",
                  s.stats.steps, s.stats.sessions, s.stats.samplings, s.stats.timers.gather, s.stats.timers.patches,
                  s.stats.timers.train_wait, s.stats.timers.sample, s.stats.timers.checkpoint);
    log::info(line);
  }
}

}  // namespace finecast::plugin
