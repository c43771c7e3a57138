// SPDX-License-Identifier: BSD-3-Clause
#include "plugin/comin_plugin/coupling_step.hpp"

#include <chrono>
#include <cstdio>
#include <functional>

#include "coupling/error.hpp"
#include "common/log.hpp"
#include "plugin/comin_plugin/guard.hpp"
#include "plugin/comin_plugin/host_api.hpp"
#include "plugin/comin_plugin/samples_output.hpp"
#include "plugin/comin_plugin/trainer_work.hpp"

namespace finecast::plugin {
namespace {

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

bool working(const RunPhase& phase) { return phase.phase() != Phase::kFailed && phase.phase() != Phase::kStopped; }

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
    s.transition(Phase::kFailed,
                 "finecast stops working after this error (on_error: disable); the simulation "
                 "continues and finecast's outputs keep what was written");
    return false;
  }
}

/// What every rank tells the others once per step (MPI_Allreduce, maximum of each entry).
struct Agreement {
  int failed = 0;     ///< some rank failed
  int training = 0;   ///< the trainers run their first session
  int ready = 0;      ///< the trainers have a model to sample
  int in_flight = 0;  ///< a trainer's session is still running (none may start or checkpoint)
};

/// `model`: this rank's, null when it is not a trainer.
Agreement agree(const RunPhase& phase, const Ranks& ranks, const TrainerModel* model) {
  int mine[4] = {phase.phase() == Phase::kFailed ? 1 : 0, 0, 0, 0};
  if (model) {
    mine[1] = phase.phase() == Phase::kTraining ? 1 : 0;
    mine[2] = phase.phase() == Phase::kReady ? 1 : 0;
    mine[3] = model->session.in_flight() ? 1 : 0;
  }
  int all[4] = {0, 0, 0, 0};
  CHECK_MPI(MPI_Allreduce(mine, all, 4, MPI_INT, MPI_MAX, ranks.comm));
  return {all[0], all[1], all[2], all[3]};
}

/// Before each collective among the trainer ranks: whether none of them failed. A trainer that
/// failed still calls it at the same points, so no trainer waits in a collective another skips.
bool trainers_agree(const RunPhase& phase, const Ranks& ranks) {
  int mine = working(phase) ? 0 : 1, any = 0;
  CHECK_MPI(MPI_Allreduce(&mine, &any, 1, MPI_INT, MPI_MAX, ranks.trainers));
  return any == 0;
}

/// The others learn the trainers' phase from the agreement.
void follow_trainer(const Ranks& ranks, RunPhase& phase, const Agreement& a) {
  if (ranks.is_trainer) return;
  if (a.ready && phase.phase() != Phase::kReady) {
    phase.transition(Phase::kReady);
  } else if (a.training && phase.phase() == Phase::kBuffering) {
    phase.transition(Phase::kTraining);
  } else if (!a.training && !a.ready && phase.phase() == Phase::kTraining) {
    phase.transition(Phase::kBuffering);  // the first session trained on nothing (collect_session)
  }
}

/// The host variables sent this step: the orography and the static covariates (the inputs after
/// the fields) are static, so they are sent with the first step of the run only (a resumed run
/// counts on from the checkpoint's step, so this is not "step 1"), unless patch.static_refresh
/// has them sent at every step.
int inputs_this_step(const Config& cfg, const CouplingState& c) {
  return c.static_gathered && !cfg.patch.static_refresh ? static_cast<int>(cfg.fields.size()) : input_count(cfg);
}

void pack_fields(const RunSettings& run, CouplingState& c, const RunStats& stats) {
  if (c.external) return;  // a finecast-trainer holds no host cells
  run.faults.check(FaultPoint::kGather, stats.steps, c.rank, c.is_lead);
  for (int f = 0; f < inputs_this_step(run.config, c); ++f) {
    const HostField& field = c.fields[f];
    float* out = c.local_values.data() + f * c.n_owned;
    if (c.device) {  // only the owned cells of the level, from the device copy (coupling.device_fields)
      const void* device = comin_var_get_device_ptr(field.handle);
      if (!device) throw InternalError("no device pointer for host variable " + field.name);
      const int64_t element = field.datatype == COMIN_VAR_DATATYPE_FLOAT ? sizeof(float) : sizeof(double);
      c.staging.resize(static_cast<size_t>((field.owned.region.elements() * element + 7) / 8));
      c.device->copy(device, field.owned.region, element, c.staging.data(), field.name);
      if (field.datatype == COMIN_VAR_DATATYPE_FLOAT)
        coupling::pack_staged(reinterpret_cast<const float*>(c.staging.data()), field.owned, out);
      else
        coupling::pack_staged(c.staging.data(), field.owned, out);
      continue;
    }
    const void* data = comin_var_get_ptr(field.handle);
    if (!data) throw InternalError("no data pointer for host variable " + field.name);
    if (field.datatype == COMIN_VAR_DATATYPE_FLOAT)
      coupling::pack(static_cast<const float*>(data), field.owned, out);
    else
      coupling::pack(static_cast<const double*>(data), field.owned, out);
  }
}

/// What the schedule (schedule.hpp) is told on this rank: on a trainer after the step was
/// buffered, the same on every trainer rank. `t`: null when this rank is not a trainer.
ScheduleState schedule_state(const RunPhase& phase, const TrainerState* t, bool in_flight) {
  ScheduleState state;
  state.ready = phase.phase() == Phase::kReady;
  state.in_flight = in_flight;
  if (t) {
    state.buffered = t->buffer->steps();
    state.owed = t->owed;
    state.fresh_weights = t->fresh_weights;
  }
  return state;
}

/// The trainers' patches and buffer. Returns whether the trainers agree that none failed (their
/// collectives come only after that).
bool buffer_stage(PluginState& s, const Agreement& a) {
  const Config& cfg = s.config;
  RunPhase& phase = s;
  const Ranks& ranks = *s.coupling;
  TrainerShare& share = *s.trainer;
  TrainerModel& model = *s.trainer;
  if (!a.in_flight) local(s, "training", [&] { collect_session(cfg, ranks, share, model, s.stats, phase); });
  local(s, "buffer", [&] { coarsen_step(cfg, share, s.stats.timers); });
  if (!trainers_agree(phase, ranks)) return false;
  share_coarse(cfg, ranks, share, s.stats);
  local(s, "buffer", [&] { buffer_step(cfg, ranks, share, s.stats, phase); });
  // From here on every trainer has the same state, so each decision is the same on all of them.
  return trainers_agree(phase, ranks);
}

/// Collective among the trainers: starts a training session (with train.async in the background;
/// a synchronous one has ended and been picked up when this returns).
void train(PluginState& s) {
  const RunSettings& run = s;
  RunPhase& phase = s;
  const Ranks& ranks = *s.coupling;
  const TrainerShare& share = *s.trainer;
  TrainerModel& model = *s.trainer;
  start_session(run, ranks, share, model, s.stats, phase);
  if (!run.config.train.async)
    local(s, "training", [&] { collect_session(run.config, ranks, share, model, s.stats, phase); });
}

/// Collective among the trainers: every trainer's part of the buffer snapshot, then, when none
/// failed, the lead's model checkpoint. Returns whether the trainers agreed that none failed
/// writing its part.
bool write_checkpoint(PluginState& s, bool training_due) {
  const RunSettings& run = s;
  const Ranks& ranks = *s.coupling;
  const TrainerShare& share = *s.trainer;
  TrainerModel& model = *s.trainer;
  TrainerOutput& out = *s.trainer;
  local(s, "checkpoint", [&] { write_buffer_part(run, ranks, share, model, s.stats); });
  if (!trainers_agree(s, ranks)) return false;  // no model checkpoint without every part of its buffer
  if (ranks.is_lead)
    local(s, "checkpoint", [&] { write_model_checkpoint(run, ranks, share, model, out, s.stats, training_due); });
  return true;
}

/// The trainers' work after the sampling: a due checkpoint (every trainer's buffer part, then the
/// lead's model checkpoint), then a due asynchronous session.
void checkpoint_and_train(PluginState& s, const Work& work) {
  const bool async_session = work.train && s.config.train.async;
  if (!work.checkpoint && !async_session) return;
  const Ranks& ranks = *s.coupling;
  if (!trainers_agree(s, ranks)) return;
  if (work.checkpoint) {
    // The session of this step starts after the checkpoint: a run resumed from it starts it.
    if (!write_checkpoint(s, s.trainer->owed.train || async_session)) return;
    if (!trainers_agree(s, ranks)) return;
  }
  if (async_session) train(s);
}

/// Step 5: the outcome of the sampling everywhere (0 nothing sampled, 1 sampled, 2 failed; the
/// maximum over the ranks), then the ensemble mean for the ranks' own cells when there is one.
/// What a sampling step did, agreed on over every rank with MPI_MAX: the worst wins.
/// kNotWrittenBack: sampled and written, but with masked (non-finite or implausible) values, so
/// the host's field keeps its last good value.
enum SamplingOutcome { kNothing = 0, kSampled = 1, kNotWrittenBack = 2, kFailedSampling = 3 };

void write_back(PluginState& s, int outcome) {
  CouplingState& c = *s.coupling;
  int all = kNothing;
  CHECK_MPI(MPI_Allreduce(&outcome, &all, 1, MPI_INT, MPI_MAX, c.comm));
  if (all != kSampled) return;
  c.write_back_values.resize(static_cast<size_t>(c.n_owned));
  c.redist->reverse(c.is_trainer ? s.trainer->slot_mean.data() : nullptr, c.write_back_values.data());
  if (c.external) return;
  local(s, "write_back", [&] {
    s.faults.check(FaultPoint::kWriteBack, s.stats.steps, c.rank, c.is_lead);
    // comin_var_get_ptr, not 0.3's comin_var_get_ptr_double: ComIn 0.2 has only the former. The
    // variable is finecast's own, requested as double (COMIN_VAR_DATATYPE_DOUBLE; 0.2: always).
    double* field = static_cast<double*>(comin_var_get_ptr(c.write_back.handle));
    if (!field) throw InternalError("sample.write_back: no data pointer for host variable " + c.write_back.name);
    coupling::unpack(c.write_back_values.data(), c.write_back.owned, field);
  });
}

/// Why the trainers have no model to sample (the first session still trains, the buffer is not
/// full yet, no session has trained on valid data).
std::string no_model_reason(const PluginState& s) {
  const Config& cfg = s.config;
  const TrainerState& t = *s.trainer;
  if (t.session.in_flight())
    return "training session " + std::to_string(s.stats.sessions) + " still trains (" + t.session.progress() + ")";
  const long long held = t.buffer->steps(), needed = cfg.train.min_steps;
  if (s.stats.sessions == 0 && held < needed)
    return "the buffer holds " + std::to_string(held) + " of the train.min_steps " + std::to_string(needed) +
           " steps the first session needs";
  return "no training session has trained on valid data yet";
}

/// "Sampling at T skipped: no trained model yet: <why>; the next sampling is due at coupling step
/// 100 (in 50 steps, ~15 s at this run's pace)": a scheduled sampling is never skipped silently.
std::string skipped_sampling_line(const PluginState& s) {
  const long long every = s.config.sample.every, step = s.stats.steps;
  std::string next = "; no more samplings are scheduled (the run's end samples a trained model)";
  if (every > 0) {
    const long long due = (step / every + 1) * every, ran = step - s.stats.first_step;
    next = "; the next sampling is due at coupling step " + std::to_string(due) + " (in " + std::to_string(due - step) +
           " steps";
    if (ran > 0) {
      const double in =
          seconds_since(s.stats.first_step_at) / static_cast<double>(ran) * static_cast<double>(due - step);
      next += ", ~" + log::duration(in) + " at this run's pace)";
      const double left = s.trainer->session.seconds_left();
      if (left > in) next += ", before the session ends: it will find no model either";
    } else {
      next += ")";
    }
  }
  return "Sampling at " + s.stats.datetime + " (coupling step " + std::to_string(step) +
         ") skipped: no trained model yet: " + no_model_reason(s) + next;
}

void sampling_step(PluginState& s, bool with_write_back) {
  const auto t0 = Clock::now();
  int outcome = kNothing;
  if (s.is_trainer() && s.phase() != Phase::kStopped) {
    const RunSettings& run = s;
    const Ranks& ranks = *s.coupling;
    TrainerShare& share = *s.trainer;
    const TrainerModel& model = *s.trainer;
    TrainerOutput& out = *s.trainer;
    if (!trainers_agree(s, ranks)) {
      outcome = kFailedSampling;
    } else if (s.phase() != Phase::kReady) {  // the same phase on every trainer
      log::progress(skipped_sampling_line(s));
    } else {
      const auto t_draw = Clock::now();
      bool ok = local(s, "sampling", [&] {
        // A background session on the same cores waits meanwhile (docs/plugin.md, "Sampling").
        const trainer::PauseGate::Hold hold(model.session.in_flight() ? model.pause.get() : nullptr);
        draw_samples(run, ranks, share, model, out, s.stats);
      });
      s.stats.timers.sample_draw += seconds_since(t_draw);
      ++s.stats.timers.sampled;
      // Over every trainer's patches (the same on each): values masked, patches drawn, and of
      // those the patches whose context leaves the training range.
      int64_t masked = 0, drawn = 0, beyond = 0;
      if (trainers_agree(s, ranks)) {
        const int64_t mine[3] = {out.masked, out.drawn_patches, out.beyond_range};
        int64_t all[3];
        CHECK_MPI(MPI_Allreduce(mine, all, 3, MPI_INT64_T, MPI_SUM, ranks.trainers));
        masked = all[0], drawn = all[1], beyond = all[2];
        update_calibration(run.config, ranks, model, out, s.stats);
        // Collective among the trainers; a failure to write (on the lead) comes after the last piece.
        const auto t_output = Clock::now();
        ok = local(s, "output", [&] { write_samples(s.config, *s.trainer, *s.coupling, s.faults, s.stats, masked); }) &&
             ok;
        s.stats.timers.sample_output += seconds_since(t_output);
        if (ok && with_write_back && masked == 0)
          ok = local(s, "write_back", [&] { compute_slot_mean(run.config, share, out); });
      } else {
        ok = false;
      }
      outcome = !ok ? kFailedSampling : masked > 0 && with_write_back ? kNotWrittenBack : kSampled;
      if (ok && masked > 0 && ranks.is_lead)
        log::warning("Sampling at " + s.stats.datetime + ": " + std::to_string(masked) +
                     " sampled values are non-finite or implausible for " + target_field(run.config) +
                     " (written as missing" +
                     (with_write_back ? "; not written back: " + run.config.sample.write_back + " keeps its last value"
                                      : std::string()) +
                     ")");
      if (ok)
        log::progress("Sampled " + std::to_string(run.config.sample.members) + " member(s) at " + s.stats.datetime +
                      " (" + trainer::name(run.config.sample.sampler) + ") in " +
                      std::to_string(seconds_since(t0)).substr(0, 5) + " s" +
                      (beyond > 0 ? "; " + trainer::beyond_training_range_text(beyond, drawn, run.config.sample)
                                  : std::string()));
    }
  }
  if (with_write_back) write_back(s, outcome);
  s.stats.timers.sample += seconds_since(t0);
}

/// A checkpoint of every trainer (their buffer parts, then the lead's model checkpoint) at a
/// restart or the end of the run, whatever the phase: a chain of runs shorter than
/// train.min_steps keeps its buffer.
void restart_checkpoint(PluginState& s, const std::string& occasion) {
  const Config& cfg = s.config;
  RunPhase& phase = s;
  const Ranks& ranks = *s.coupling;
  TrainerState& t = *s.trainer;
  const TrainerShare& share = t;
  TrainerModel& model = t;
  local(s, "training", [&] { finish_session(cfg, ranks, share, model, s.stats, phase, occasion); });
  if (!trainers_agree(phase, ranks)) return;
  if (s.stats.sessions == 0 && ranks.is_lead)
    log::warning("Checkpoint at " + occasion + " before any training session: it keeps the buffer (" +
                 std::to_string(share.buffer->steps()) + " of train.min_steps " + std::to_string(cfg.train.min_steps) +
                 " steps) and an untrained model; a resumed run goes on "
                 "buffering");
  write_checkpoint(s, model.owed.train);
  model.owed.checkpoint = false;  // this checkpoint is the one owed
}

}  // namespace

void coupling_step(PluginState& s, const std::string& datetime) {
  const Config& cfg = s.config;
  if (s.phase() == Phase::kStopped || ++s.stats.calls % cfg.coupling.every != 0) return;
  if (s.stats.first_step_at == Clock::time_point{}) {
    s.stats.first_step = s.stats.steps;
    s.stats.first_step_at = Clock::now();
  }
  ++s.stats.steps;
  s.stats.datetime = datetime;
  if (s.phase() == Phase::kCoupled) s.transition(Phase::kBuffering);
  if (s.is_trainer() && !s.trainer->resumed_datetime.empty()) {
    // ISO 8601 times of one format compare as strings.
    if (s.stats.datetime <= s.trainer->resumed_datetime && s.is_lead())
      log::warning("The host's model time " + s.stats.datetime +
                   " is not later than that of the checkpoint this run "
                   "resumed from (" +
                   s.trainer->resumed_datetime +
                   "): the run restarts earlier than the checkpoint, "
                   "and the buffer holds steps from its future");
    s.trainer->resumed_datetime.clear();
  }

  const RunSettings& run = s;
  RunPhase& phase = s;
  CouplingState& c = *s.coupling;
  TrainerState* t = s.trainer.get();  // null when this rank is not a trainer
  const auto t0 = Clock::now();
  local(s, "gather", [&] { pack_fields(run, c, s.stats); });  // 1
  const Agreement a = agree(phase, c, t);                     // 2
  if (a.failed) {
    if (t) t->session.wait();
    phase.transition(Phase::kStopped, "finecast stopped at " + s.stats.datetime +
                                          " after an error (on_error: disable); the simulation continues");
    return;
  }
  follow_trainer(c, phase, a);
  // 3: every owned cell straight to the trainer rank of its patch (no rank holds a field).
  c.redist->forward(inputs_this_step(cfg, c), c.local_values.data(), t ? t->slot_values.data() : nullptr);
  c.static_gathered = true;
  s.stats.timers.gather += seconds_since(t0);

  // 4: the trainers' patches and buffer, then the step's work (schedule.hpp), in its order.
  const ScheduleConfig schedule = schedule_config(cfg);
  Work work = due(s.stats.steps, schedule, schedule_state(phase, t, a.in_flight != 0));
  if (t) {
    if (buffer_stage(s, a)) {
      const ScheduleState state = schedule_state(phase, t, a.in_flight != 0);
      work = due(s.stats.steps, schedule, state);
      t->owed = owed_after(s.stats.steps, schedule, state);
      if (work.train && !cfg.train.async) {
        train(s);
        // The synchronous session has trained the model this step samples: a checkpoint due at
        // this step is written now, after the sampling, instead of owed to the next step. (Every
        // trainer has the same phase here: a failed session of a trainer group aborts the run.)
        const ScheduleState trained = schedule_state(phase, t, false);
        work.checkpoint = due(s.stats.steps, schedule, trained).checkpoint;
        t->owed = owed_after(s.stats.steps, schedule, trained);
      }
    } else {
      work.train = work.checkpoint = false;  // a trainer failed: the step's sampling reports it
    }
  }
  if (work.sample) sampling_step(s, !cfg.sample.write_back.empty());  // 4, 5
  if (t) checkpoint_and_train(s, work);
}

void host_restart(PluginState& s, const std::string& datetime) {
  if (!s.is_trainer() || s.phase() == Phase::kStopped) return;
  s.stats.datetime = datetime;
  restart_checkpoint(s, "the host's restart at " + s.stats.datetime);
}

void finish_run(PluginState& s) {
  const Config& cfg = s.config;
  if (s.is_trainer() && s.phase() != Phase::kStopped) {
    RunPhase& phase = s;
    const Ranks& ranks = *s.coupling;
    TrainerState& t = *s.trainer;
    const TrainerShare& share = t;
    TrainerModel& model = t;
    wait_for_session(s.stats, model, "the end of the run", "then samples its weights and checkpoints");
    local(s, "training", [&] { collect_session(cfg, ranks, share, model, s.stats, phase); });
    // No agreement of all ranks comes after the last step: the trainers settle it among them.
    if (!trainers_agree(phase, ranks)) {
      if (working(phase))
        phase.transition(Phase::kFailed, "another trainer rank failed: no final sampling or checkpoint");
      return;
    }
    // The run ends with a sampling of the final weights, unless the latest one already used them.
    // At the model time of the last sampling it replaces that record (the output keeps one record
    // per time).
    if (due_at_end(s.stats.steps, schedule_config(cfg), schedule_state(phase, &t, false)).sample) {
      if (t.output && t.output->last_datetime() == s.stats.datetime)
        log::info("Final weights: sampling " + s.stats.datetime +
                  " again; the record of the last sampling is replaced");
      sampling_step(s, false);
    }
    if (model.owed.train && ranks.is_lead)
      log::warning(
          "A training session fell due while the one before it was still training, and the run ended "
          "before it could start: it was not run (the final checkpoint records it as due: a run resumed "
          "from it starts it at once)");
    restart_checkpoint(s, "the end of the run");
  } else if (s.is_trainer()) {
    s.trainer->session.wait();
  }
  // Every rank, whatever log.all_ranks says: what finecast's process costs the host's rank.
  log::info("Peak resident memory " + std::to_string(static_cast<long long>(peak_resident_mib())) + " MiB; LibTorch " +
            (libtorch_loaded() ? "loaded" : "not loaded") + (s.is_trainer() ? " (trainer rank)" : ""));
  if (s.is_lead()) {
    char line[400];
    std::snprintf(
        line, sizeof line,
        "Summary: %lld coupling steps, %lld training sessions, %lld samplings; seconds in redistribution %.3f, "
        "patches+buffer %.3f, waiting for training %.3f, sampling+output %.3f, checkpoints %.3f",
        s.stats.steps, s.stats.sessions, s.stats.samplings, s.stats.timers.gather, s.stats.timers.patches,
        s.stats.timers.train_wait, s.stats.timers.sample, s.stats.timers.checkpoint);
    log::info(line);
    if (s.is_trainer() && s.stats.anatomy.sessions > 0) log::info(s.stats.anatomy.line());
    if (s.is_trainer() && s.stats.timers.sampled > 0) {
      const Timers& t = s.stats.timers;
      std::snprintf(line, sizeof line,
                    "Sampling anatomy (%lld samplings): %.3f s: drawing %.3f, output %.3f, write-back and the "
                    "ranks' agreement %.3f",
                    t.sampled, t.sample, t.sample_draw, t.sample_output, t.sample - t.sample_draw - t.sample_output);
      log::info(line);
    }
  }
}

}  // namespace finecast::plugin
