// SPDX-License-Identifier: BSD-3-Clause
#include "plugin/comin_plugin/trainer_work.hpp"

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <regex>

#include "coupling/error.hpp"
#include "common/log.hpp"
#include "plugin/comin_plugin/setup.hpp"
#include "trainer/checkpoint.hpp"
#include "trainer/threads.hpp"

namespace finecast::plugin {
namespace {

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

/// Removes buffer snapshots whose checkpoint is gone (rotated away, or never written).
void remove_orphan_snapshots(const std::string& dir) {
  namespace fs = std::filesystem;
  static const std::regex snapshot("buffer_([0-9]+)\\.h5");
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    std::smatch m;
    const std::string name = entry.path().filename().string();
    if (!std::regex_match(name, m, snapshot)) continue;
    if (!fs::exists(trainer::checkpoint_path_for_step(dir, std::stoll(m[1].str())), ec)) fs::remove(entry.path(), ec);
  }
}

void start_session(PluginState& s) {
  const Config& cfg = s.config;
  TrainerState& t = *s.trainer;
  Snapshot snap;
  t.buffer->snapshot(snap.context, snap.fine, snap.weights, &snap.step);
  snap.n = t.buffer->samples();
  ++s.stats.sessions;
  log::progress("Training session " + std::to_string(s.stats.sessions) + " at " + s.stats.datetime + ": " +
                std::to_string(t.buffer->steps()) + " steps in buffer = " + std::to_string(snap.n) + " samples");
  if (s.phase() == Phase::kBuffering) s.transition(Phase::kTraining);
  const long long step = s.stats.steps;
  const int rank = s.coupling->rank;
  const Faults faults = s.faults;
  const auto t0 = Clock::now();
  t.session.start(*t.model, std::move(snap), cfg.train.epochs, cfg.train.async, t.torch_threads,
                  [faults, step, rank] { faults.check(FaultPoint::kTraining, step, rank, true); });
  t.pending.training = false;
  if (!cfg.train.async) {
    s.stats.timers.train_wait += seconds_since(t0);
    collect_session(s);
  }
}

}  // namespace

void collect_session(PluginState& s) {
  TrainerState& t = *s.trainer;
  if (!t.session.collect()) return;  // rethrows the error of a failed session
  const trainer::SessionStats& st = t.session.last_stats();
  if (st.validation_samples > 0) {
    char line[240];
    std::snprintf(line, sizeof line,
                  "Validation (%lld held-out samples of the %lld most recent steps): loss %.4f, CRPS %.4g; best %s %.4g "
                  "at optimizer step %lld%s",
                  static_cast<long long>(st.validation_samples), static_cast<long long>(st.validation_steps),
                  st.validation_loss, st.validation_crps, trainer::name(s.config.train.validation_metric).c_str(),
                  st.best_score, static_cast<long long>(st.best_step),
                  st.lr_scale < 1.0 ? (", learning rate x" + std::to_string(st.lr_scale).substr(0, 5)).c_str() : "");
    log::progress(line);
  }
  if (st.stopped && !st.trained) log::progress("Early stopping: training has stopped; sampling goes on with the best model");
  t.pending.sampling = true;
  if (s.phase() != Phase::kReady) s.transition(Phase::kReady, "First model trained: sampling from now on");
}

namespace {
/// "Buffer 12/48 steps; first training session in 36 coupling steps": why the trainer is idle at
/// the start. About eight lines until the buffer is full, and the first and last step.
void report_buffer_progress(const PluginState& s) {
  const Config& cfg = s.config;
  const long long held = s.trainer->buffer->steps(), needed = cfg.train.min_steps;
  const long long every = std::max(1LL, needed / 8);
  if (held != 1 && held != needed && held % every != 0) return;
  const long long full_at = s.stats.steps + std::max(0LL, needed - held);  // the coupling step the buffer is full
  const long long first = (full_at + cfg.train.every - 1) / cfg.train.every * cfg.train.every;
  log::progress("Buffer " + std::to_string(held) + "/" + std::to_string(needed) + " steps; first training session " +
                (first == s.stats.steps ? std::string("now") : "in " + std::to_string(first - s.stats.steps) + " coupling steps"));
}
}  // namespace

void buffer_step(PluginState& s) {
  const Config& cfg = s.config;
  TrainerState& t = *s.trainer;
  const auto t0 = Clock::now();
  const int64_t n_fine = t.map.n_fine;
  const float* orography =
      t.patch_options.orography ? t.global_values.data() + cfg.fields.size() * static_cast<size_t>(n_fine) : nullptr;
  extract_step(cfg, t.map, t.field_pointers, orography, t.static_pointers, t.conditioning, t.patches, t.train_valid);
  t.buffer->push(s.stats.datetime, t.patches.context.data(), training_targets(cfg, t.patches), t.train_valid.data());
  if (t.patches.n_invalid > 0)
    log::debug(std::to_string(t.patches.n_invalid) + " patch(es) with missing values excluded at " + s.stats.datetime);
  if (s.phase() == Phase::kBuffering) report_buffer_progress(s);
  s.stats.timers.patches += seconds_since(t0);
}

void checkpoint_if_due(PluginState& s) {
  const Config& cfg = s.config;
  TrainerState& t = *s.trainer;
  // A due checkpoint goes first: when sessions run back to back, the gap between two of them is
  // the only moment the model is not being trained.
  if (cfg.checkpoint.every > 0 && s.stats.steps % cfg.checkpoint.every == 0) t.pending.checkpoint = true;
  if (t.pending.checkpoint && s.phase() == Phase::kReady && !t.session.in_flight()) write_checkpoint(s);
}

void train_if_due(PluginState& s) {
  const Config& cfg = s.config;
  TrainerState& t = *s.trainer;
  if (s.stats.steps % cfg.train.every == 0 && t.buffer->steps() >= cfg.train.min_steps) t.pending.training = true;
  if (t.pending.training && !t.session.in_flight()) start_session(s);
}

void draw_samples(PluginState& s) {
  const Config& cfg = s.config;
  TrainerState& t = *s.trainer;
  s.faults.check(FaultPoint::kSampling, s.stats.steps, s.coupling->rank, true);
  const int64_t n = t.map.n_coarse, P = t.map.patch_size, members = cfg.sample.members;
  t.samples.resize(static_cast<size_t>(n * members * P));
  const trainer::SampleOptions& so = cfg.sample;  // the trainer's part of the sample section
  const trainer::ScopedTorchThreads threads(t.torch_threads);
  t.model->sample(t.patches.context.data(), sampler_coarse(cfg, t.patches, t.conditioning), t.patches.weights.data(), n,
                  so, cfg.seed + 7919 * static_cast<uint64_t>(s.stats.samplings + 1), t.samples.data());
  add_base(cfg, t.patches, members, t.samples.data());
}

void write_samples(PluginState& s) {
  const Config& cfg = s.config;
  TrainerState& t = *s.trainer;
  s.faults.check(FaultPoint::kOutput, s.stats.steps, s.coupling->rank, true);
  if (!t.output)
    t.output = std::make_unique<Output>(cfg.sample.output, t.map, t.output_grid, target_field(cfg), t.output_attrs,
                                        cfg.sample.members,
                                        !t.last_checkpoint.empty() ? t.last_checkpoint
                                        : !t.resumed_from.empty() ? t.resumed_from
                                                                  : "none written yet (checkpoint.dir " + cfg.checkpoint.dir + ")",
                                        !t.resumed_from.empty(), s.stats.datetime);
  t.output->write(s.stats.datetime, t.samples.data(), t.patches.coarse.data(), t.field_pointers[target_index(cfg)],
                  t.ensemble_mean);
  ++s.stats.samplings;
  t.pending.sampling = false;
}

void write_checkpoint(PluginState& s) {
  const Config& cfg = s.config;
  TrainerState& t = *s.trainer;
  s.faults.check(FaultPoint::kCheckpoint, s.stats.steps, s.coupling->rank, true);
  const auto t0 = Clock::now();
  if (cfg.checkpoint.buffer) t.buffer->save_h5(buffer_path_for_step(cfg.checkpoint.dir, t.model->step()));
  // What the context holds, so that finecast-downscale can rebuild it (and ask for the static
  // fields it needs): conditioning.cpp's context_metadata.
  std::map<std::string, std::string> meta{{"sessions", std::to_string(s.stats.sessions)},
                                          {"coupling_steps", std::to_string(s.stats.steps)},
                                          {"samplings", std::to_string(s.stats.samplings)},
                                          {"training_due", t.pending.training ? "1" : "0"},
                                          {"datetime", s.stats.datetime},
                                          {"config", cfg.source}};
  for (const auto& [key, value] : context_metadata(cfg, t.conditioning)) meta[key] = value;
  const std::string path = trainer::save_checkpoint_in_dir(*t.model, cfg.checkpoint.dir, cfg.checkpoint.keep, meta);
  remove_orphan_snapshots(cfg.checkpoint.dir);
  t.last_checkpoint = path;
  t.pending.checkpoint = false;
  if (t.output) t.output->set_checkpoint(path);
  s.stats.timers.checkpoint += seconds_since(t0);
  log::info("Checkpoint written: " + path + " (optimizer step " + std::to_string(t.model->step()) + ")");
}

void write_restart_checkpoint(PluginState& s, const std::string& occasion) {
  TrainerState& t = *s.trainer;
  if (t.session.in_flight()) {
    const auto t0 = Clock::now();
    t.session.wait();
    s.stats.timers.train_wait += seconds_since(t0);
    log::info("Waited " + std::to_string(seconds_since(t0)).substr(0, 5) + " s for the training session to finish (" +
              occasion + ")");
  }
  collect_session(s);
  if (s.stats.sessions == 0)
    log::warning("Checkpoint at " + occasion + " before any training session: it keeps the buffer (" +
                 std::to_string(t.buffer->steps()) + " of train.min_steps " + std::to_string(s.config.train.min_steps) +
                 " steps) and an untrained model; a resumed run goes on buffering");
  write_checkpoint(s);
}

}  // namespace finecast::plugin
