// SPDX-License-Identifier: BSD-3-Clause
#include "plugin/comin_plugin/trainer_work.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <limits>
#include <map>
#include <utility>

#include "common/checkpoint_files.hpp"
#include "common/log.hpp"
#include "coupling/error.hpp"
#include "coupling/grid/patch_regression.hpp"
#include "coupling/io/plausibility.hpp"
#include "plugin/comin_plugin/run_counters.hpp"

namespace finecast::plugin {
namespace {

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

/// Removes buffer snapshots (all their parts) whose checkpoint is gone (rotated away, or never
/// written).
void remove_orphan_snapshots(const std::string& dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const auto step = checkpoint_files::buffer_step(entry.path().filename().string());
    if (step && !fs::exists(checkpoint_files::checkpoint_path(dir, *step), ec)) fs::remove(entry.path(), ec);
  }
}

/// "Buffer 12/48 steps; first training session in 36 coupling steps": why the trainer is idle at
/// the start. About eight lines until the buffer holds train.min_steps, and the first and last
/// step; a first session that then waits for train.every is said once, when the buffer is full
/// (once a line per step said "Buffer 13/12 steps" until it came).
void report_buffer_progress(const Config& cfg, const TrainerShare& t, const RunStats& stats) {
  const long long held = t.buffer->steps(), needed = cfg.train.min_steps;
  const long long every = std::max(1LL, needed / 8);
  if (held > needed || (held != 1 && held != needed && held % every != 0)) return;
  const long long full_at = stats.steps + std::max(0LL, needed - held);  // the coupling step the buffer is full
  const long long first = (full_at + cfg.train.every - 1) / cfg.train.every * cfg.train.every;
  log::progress(
      "Buffer " + std::to_string(held) + "/" + std::to_string(needed) + " steps; first training session " +
      (first == stats.steps ? std::string("now") : "in " + std::to_string(first - stats.steps) + " coupling steps") +
      (held == needed && first != stats.steps
           ? " (the next multiple of train.every " + std::to_string(cfg.train.every) + ")"
           : std::string()));
}

/// "; NaN/Inf host values so far: ts 81920 in 4 steps" (nothing when there were none).
std::string nonfinite_summary(const Config& cfg, const TrainerShare& t) {
  std::string out;
  for (size_t v = 0; v < t.nonfinite_values.size(); ++v)
    if (t.nonfinite_values[v] > 0)
      out += (out.empty() ? "" : ", ") + cfg.fields[v] + " " + std::to_string(t.nonfinite_values[v]) + " in " +
             std::to_string(t.nonfinite_steps[v]) + " step(s)";
  return out.empty() ? out : "; NaN/Inf host values so far: " + out;
}

/// Adds n doubles up over the trainer ranks, in place.
std::function<void(double*, int)> sum_over(MPI_Comm trainers) {
  return [trainers](double* values, int n) {
    CHECK_MPI(MPI_Allreduce(MPI_IN_PLACE, values, n, MPI_DOUBLE, MPI_SUM, trainers));
  };
}

/// The step's NaN/Inf host values over every trainer (collective among them), counted for the
/// run; a field with no finite value at all is named in a warning (at its 1st, 2nd, 4th, 8th ...
/// such step, so that a field undefined for a long time does not flood the log).
void report_nonfinite(const Config& cfg, const Ranks& ranks, TrainerShare& t, const RunStats& stats) {
  const auto n = static_cast<int>(cfg.fields.size());
  t.nonfinite_step.resize(static_cast<size_t>(n), 0);
  CHECK_MPI(MPI_Allreduce(MPI_IN_PLACE, t.nonfinite_step.data(), n, MPI_INT64_T, MPI_SUM, ranks.trainers));
  t.nonfinite_values.resize(static_cast<size_t>(n), 0);
  t.nonfinite_steps.resize(static_cast<size_t>(n), 0);
  t.all_nonfinite_steps.resize(static_cast<size_t>(n), 0);
  for (size_t v = 0; v < static_cast<size_t>(n); ++v) {
    const int64_t bad = t.nonfinite_step[v];
    if (bad == 0) continue;
    t.nonfinite_values[v] += bad;
    ++t.nonfinite_steps[v];
    if (bad < t.map.n_coarse * t.map.patch_size) continue;  // (the cells of every patch)
    const int64_t k = ++t.all_nonfinite_steps[v];
    if (ranks.is_lead && (k & (k - 1)) == 0)
      log::warning("Host field " + cfg.fields[v] + " at " + stats.datetime + ": all " + std::to_string(bad) +
                   " values are NaN/Inf (" + std::to_string(k) +
                   " such coupling step(s) so far); its patches are left out of training");
  }
}

/// A field whose values float32 cannot resolve (every one below 1e-30 in magnitude: its squares
/// and differences vanish), or one that is constant over the grid, is named in a warning at the
/// run's first step: a constant 1e-40 field without units was downscaled without a word (and its
/// samples were 1e28 times the field). From the coarse values every trainer holds: no collective.
void check_field_scales(const Config& cfg, const Ranks& ranks, TrainerShare& t, const RunStats& stats) {
  if (t.scales_checked) return;
  t.scales_checked = true;
  if (!ranks.is_lead) return;
  constexpr double kTiny = 1e-30;
  const int64_t n = t.map.n_coarse;
  for (size_t v = 0; v < cfg.fields.size(); ++v) {
    const float* x = t.all_coarse.data() + v * static_cast<size_t>(n);
    double lo = std::numeric_limits<double>::infinity(), hi = -lo, largest = 0;
    for (int64_t i = 0; i < n; ++i)
      if (std::isfinite(x[i])) {
        lo = std::min(lo, static_cast<double>(x[i]));
        hi = std::max(hi, static_cast<double>(x[i]));
        largest = std::max(largest, std::abs(static_cast<double>(x[i])));
      }
    if (!(largest > 0)) continue;  // zero everywhere (or no finite value: report_nonfinite says so)
    char text[64];
    std::snprintf(text, sizeof text, "%g", largest < kTiny ? largest : hi);
    if (largest < kTiny)
      log::warning("Host field " + cfg.fields[v] + " at " + stats.datetime +
                   ": every value is below 1e-30 in magnitude (the largest is " + text +
                   "), too small for float32 arithmetic to resolve (its normal range starts at 1.2e-38, its "
                   "precision is 7 digits): give the field in units that make its values larger");
    else if (hi - lo <= 1e-6 * largest)
      log::warning("Host field " + cfg.fields[v] + " at " + stats.datetime + " is constant (" + text +
                   " on every coarse cell): there is nothing to downscale; its samples stay that value");
  }
}

/// "Waiting at the end of the run for training session 1 (epoch 2/12 done, ends in ~5 min 43 s),
/// then writes the checkpoint; a sampling takes ~0.4 s here".
std::string waiting_line(const RunStats& stats, const TrainerModel& model, const std::string& occasion,
                         const std::string& then) {
  const Timers& t = stats.timers;
  // The run's end samples the final weights after the wait: what a sampling took so far.
  const std::string sampling =
      t.sampled > 0 ? "; a sampling takes ~" + log::duration(t.sample / static_cast<double>(t.sampled)) + " here" : "";
  return "Waiting at " + occasion + " for training session " + std::to_string(stats.sessions) + " (" +
         model.session.progress() + "), " + then + sampling;
}

}  // namespace

double wait_for_session(RunStats& stats, TrainerModel& model, const std::string& occasion, const std::string& then) {
  if (!model.session.in_flight()) return -1;
  const auto t0 = Clock::now();
  log::progress(waiting_line(stats, model, occasion, then));
  model.session.wait();
  const double waited = seconds_since(t0);
  stats.timers.train_wait += waited;
  return waited;
}

void collect_session(const Config& cfg, const Ranks& ranks, const TrainerShare& t, TrainerModel& model, RunStats& stats,
                     RunPhase& phase) {
  if (!model.session.collect()) return;  // rethrows the error of a failed session
  const trainer::SessionStats& st = model.session.last_stats();
  stats.anatomy.add(stats.sessions, model.session.last_times(), st);
  if (ranks.is_lead) log::info(anatomy_line(stats.sessions, model.session.last_times(), st));
  int64_t good_batches = 0;
  for (const auto& e : st.epochs) good_batches += e.batches - e.bad_steps;
  // (Not after early stopping, or with the run's time budget spent: the model trained before.)
  if (good_batches <= 0 && !(st.stopped && !st.trained) && !(st.budget_spent && phase.phase() == Phase::kReady)) {
    // A session that took no optimizer step (every row dropped as NaN/Inf, or every step bad)
    // trained nothing: it does not count, and an untrained model is never sampled.
    --stats.sessions;
    if (ranks.is_lead)
      log::warning("The training session at " + stats.datetime + " trained on no batch (" +
                   std::to_string(st.train_samples) + " samples, NaN/Inf rows and steps skipped" +
                   nonfinite_summary(cfg, t) + "): it does not count" +
                   (phase.phase() == Phase::kReady ? std::string("; sampling goes on with the model trained before")
                                                   : std::string("; nothing is sampled until a session trains")));
    if (phase.phase() == Phase::kTraining) phase.transition(Phase::kBuffering);
    return;
  }
  if (st.validation_samples > 0) {
    char line[240], of[64] = "";
    // The split by samples (validation_split: patches) holds out no steps.
    if (st.validation_steps > 0)
      std::snprintf(of, sizeof of, " of the %lld most recent steps", static_cast<long long>(st.validation_steps));
    std::snprintf(line, sizeof line,
                  "Validation (%lld held-out samples%s): loss %.4f, CRPS %.4g; best %s %.4g at optimizer step %lld%s",
                  static_cast<long long>(st.validation_samples), of, st.validation_loss, st.validation_crps,
                  trainer::name(cfg.train.validation_metric).c_str(), st.best_score,
                  static_cast<long long>(st.best_step),
                  st.lr_scale < 1.0 ? (", learning rate x" + std::to_string(st.lr_scale).substr(0, 5)).c_str() : "");
    log::progress(line);
  }
  if (st.stopped && !st.trained)
    log::progress("Early stopping: training has stopped; sampling goes on with the best model");
  model.fresh_weights = true;
  model.trained_through = model.session_through;
  if (phase.phase() != Phase::kReady)
    phase.transition(Phase::kReady, ranks.is_lead ? "First model trained: sampling from now on" : "");
}

void coarsen_step(const Config& cfg, TrainerShare& t, Timers& timers) {
  const auto t0 = Clock::now();
  const int64_t n_slots = t.n_patches * t.map.patch_size;
  std::vector<const float*> fields;
  for (size_t v = 0; v < cfg.fields.size(); ++v) fields.push_back(t.slot_values.data() + v * n_slots);
  const float* orography = t.patch_options.orography ? t.slot_values.data() + cfg.fields.size() * n_slots : nullptr;
  coupling::coarsen_patches(t.shard, fields, orography, t.patch_options, t.patches);
  // NaN/Inf host values of this trainer's cells, per field (summed over the trainers in share_coarse).
  t.nonfinite_step.assign(cfg.fields.size(), 0);
  for (size_t v = 0; v < cfg.fields.size(); ++v)
    t.nonfinite_step[v] = std::count_if(fields[v], fields[v] + n_slots, [](float x) { return !std::isfinite(x); });
  timers.patches += seconds_since(t0);
}

void share_coarse(const Config& cfg, const Ranks& ranks, TrainerShare& t, const RunStats& stats) {
  const MPI_Comm trainers = ranks.trainers;
  // Rows [n_rows][n_patches] of this trainer to rows [n_rows][n_coarse] of every trainer.
  auto share = [&](const float* mine, int64_t n_rows, float* all) {
    for (int64_t v = 0; v < n_rows; ++v)
      CHECK_MPI(MPI_Allgatherv(mine + v * t.n_patches, static_cast<int>(t.n_patches), MPI_FLOAT,
                               all + v * t.map.n_coarse, t.trainer_patches.data(), t.trainer_first.data(), MPI_FLOAT,
                               trainers));
  };
  share(t.patches.coarse_vars.data(), static_cast<int64_t>(cfg.fields.size()), t.all_coarse.data());
  report_nonfinite(cfg, ranks, t, stats);
  check_field_scales(cfg, ranks, t, stats);
  // The static covariates arrive with the first step of the run (with patch.static_refresh, with
  // every step): normalised over the whole field, their block means known to every trainer.
  const auto n_static = static_cast<int64_t>(cfg.patch.statics.size());
  if (n_static > 0 && (t.conditioning.statics.empty() || cfg.patch.static_refresh)) {
    const int64_t n_slots = t.n_patches * t.map.patch_size;
    const auto first_static = static_cast<size_t>(first_static_input(cfg));
    std::vector<const float*> raw;
    for (int64_t k = 0; k < n_static; ++k) raw.push_back(t.slot_values.data() + (first_static + k) * n_slots);
    const std::vector<float> means = prepare_statics(cfg, t.shard, raw, t.conditioning, sum_over(trainers));
    t.all_static_means.resize(static_cast<size_t>(n_static * t.map.n_coarse));
    share(means.data(), n_static, t.all_static_means.data());
  }
}

void buffer_step(const Config& cfg, const Ranks& ranks, TrainerShare& t, RunStats& stats, const RunPhase& phase) {
  const auto t0 = Clock::now();
  const int n_vars = static_cast<int>(cfg.fields.size());
  // patch.regression_refit: the patches are built on the interpolant alone and fitted anew below,
  // the global regression (patch.global_blend's target) with them.
  const bool refit = cfg.patch.regression_refit && !t.patch_options.regression.empty();
  const std::vector<double> before = refit ? std::exchange(t.patch_options.regression, {}) : std::vector<double>();
  const std::vector<double> before_global =
      refit ? std::exchange(t.patch_options.global_regression, {}) : std::vector<double>();
  t.sampling_options.reset();
  coupling::fill_contexts(t.map, t.first_patch, t.shard, t.all_coarse.data(), n_vars, t.all_static_means.data(),
                          static_pointers(t.conditioning), t.patch_options, t.patches);
  training_valid(t.conditioning, t.first_patch, t.patches, t.train_valid);
  bool refitted = refit;
  try {
    fit_regression_base(cfg, t.map, t.patch_options, t.train_valid, t.patches, t.conditioning, sum_over(ranks.trainers),
                        refit ? stats.datetime : std::string());
  } catch (const ConfigError& e) {
    if (!refit) throw;
    // Every trainer solved the same summed system, so all keep the step before's coefficients.
    if (ranks.is_lead) log::warning(std::string(e.what()) + "; this step keeps the coefficients of the step before");
    t.patch_options.regression = before;
    t.patch_options.global_regression = before_global;
    coupling::add_regression_base(t.map, n_vars, t.patch_options, t.patches);
    refitted = false;
  }
  t.buffer->push(stats.datetime, t.patches.context.data(), training_targets(cfg, t.patches), t.train_valid.data());
  if (refitted) {
    // The step is buffered with its own fit; a sampling of it takes the fit of the step before,
    // as a sampling of the next step will take this one: no sampling uses a base fitted on its
    // own step's fine field. The regression is linear in its coefficients, so adding the
    // difference of the two fits moves the base from this step's fit to the step before's.
    coupling::PatchOptions back = t.patch_options;
    for (size_t j = 0; j < back.regression.size(); ++j) back.regression[j] = before[j] - t.patch_options.regression[j];
    coupling::add_regression_base(t.map, n_vars, back, t.patches);
    // A sampling of this step blends toward the step before's global regression as well.
    t.sampling_options = t.patch_options;
    t.sampling_options->regression = before;
    t.sampling_options->global_regression = before_global;
  }
  if (t.patches.n_invalid > 0)
    log::debug(std::to_string(t.patches.n_invalid) + " patch(es) with missing values excluded at " + stats.datetime);
  if (phase.phase() == Phase::kBuffering) report_buffer_progress(cfg, t, stats);
  stats.timers.patches += seconds_since(t0);
}

void write_buffer_part(const RunSettings& run, const Ranks& ranks, const TrainerShare& t, const TrainerModel& model,
                       RunStats& stats) {
  const Config& cfg = run.config;
  run.faults.check(FaultPoint::kCheckpoint, stats.steps, ranks.rank, ranks.is_lead);
  const auto t0 = Clock::now();
  if (cfg.checkpoint.buffer)
    t.buffer->save_h5(checkpoint_files::buffer_path(cfg.checkpoint.dir, model.model->step(), ranks.trainer_index),
                      t.first_patch, t.map.n_coarse);
  stats.timers.checkpoint += seconds_since(t0);
}

void write_model_checkpoint(const RunSettings& run, const Ranks& ranks, const TrainerShare& t, TrainerModel& model,
                            TrainerOutput& out, RunStats& stats, bool training_due) {
  const Config& cfg = run.config;
  const auto t0 = Clock::now();
  // The conditioning spec, so that finecast-downscale can rebuild the context without the config
  // (and ask for the static fields it needs), and a resumed run can check its own against it.
  std::map<std::string, std::string> meta{{"datetime", stats.datetime},
                                          {"config", cfg.source},
                                          {"config_hash", config_hash(run.config_text)},
                                          {"config_resolved", run.config_text},
                                          {"trainer_ranks", std::to_string(ranks.trainer_ranks.size())},
                                          // What finecast-export passes on as the module's attributes.
                                          {"units", out.output_attrs.units},
                                          {"grid", schema::name_of(cfg.grid.type) + " " + cfg.grid.file}};
  // How this run samples, so that finecast-downscale and finecast-export sample the same way.
  // The run's counters, so that a resumed run counts on (typed: /run).
  const RunCounters counters{stats.sessions, stats.steps,        stats.samplings,
                             training_due,   out.calibration_e2, out.calibration_s2};
  // With sample.calibration prequential, the inflation the next sampling would use.
  trainer::SampleOptions sampling = cfg.sample;
  sampling.inflation = sampling_inflation(cfg, out);
  const trainer::CheckpointGroups groups{
      {coupling::kConditioningGroup, coupling::spec_record(checkpoint_spec(t.conditioning, t.patch_options))},
      {kRunGroup, schema::to_record(run_counters_table(), counters)},
      {trainer::kSamplingGroup, schema::to_record(trainer::sample_options_table(), sampling)}};
  const std::string path = model.model->save_in_dir(cfg.checkpoint.dir, cfg.checkpoint.keep, meta, groups);
  remove_orphan_snapshots(cfg.checkpoint.dir);
  model.last_checkpoint = path;
  if (out.output) out.output->set_checkpoint(path);
  stats.timers.checkpoint += seconds_since(t0);
  log::info("Checkpoint written: " + path + " (optimizer step " + std::to_string(model.model->step()) + ")");
}

void start_session(const RunSettings& run, const Ranks& ranks, const TrainerShare& t, TrainerModel& model,
                   RunStats& stats, RunPhase& phase) {
  const Config& cfg = run.config;
  const auto t_snapshot = Clock::now();
  Snapshot snap = model.session.recycled();
  t.buffer->snapshot(snap.context, snap.fine, snap.weights, &snap.step);
  snap.n = t.buffer->samples();
  // The rows in the order one trainer holding every patch would have them (by step, then by
  // patch): each trainer's rows of a step follow those of the trainers before it.
  const int n_trainers = static_cast<int>(ranks.trainer_ranks.size());
  const int steps = t.buffer->steps(), me = ranks.trainer_index;
  std::vector<int64_t> mine(static_cast<size_t>(steps), 0), all(static_cast<size_t>(steps) * n_trainers, 0);
  for (int64_t step : snap.step) ++mine[static_cast<size_t>(step)];
  CHECK_MPI(MPI_Allgather(mine.data(), steps, MPI_INT64_T, all.data(), steps, MPI_INT64_T, ranks.trainers));
  std::vector<int64_t> step_offset(static_cast<size_t>(steps), 0), before_me(static_cast<size_t>(steps), 0);
  int64_t total = 0;
  for (int i = 0; i < steps; ++i) {
    step_offset[static_cast<size_t>(i)] = total;
    for (int k = 0; k < n_trainers; ++k) {
      const int64_t c = all[static_cast<size_t>(k) * steps + i];
      if (k < me) before_me[static_cast<size_t>(i)] += c;
      total += c;
    }
  }
  snap.global_row.resize(static_cast<size_t>(snap.n));
  std::vector<int64_t> seen(static_cast<size_t>(steps), 0);
  for (int64_t r = 0; r < snap.n; ++r) {
    const auto i = static_cast<size_t>(snap.step[static_cast<size_t>(r)]);
    snap.global_row[static_cast<size_t>(r)] = step_offset[i] + before_me[i] + seen[i]++;
  }
  snap.global_rows = total;
  snap.seconds = seconds_since(t_snapshot);

  if (total == 0) {
    // Every buffered patch held NaN/Inf (a coupled field not yet defined, e.g.): a session
    // would train on nothing and the untrained model would then be sampled. It waits for data.
    if (ranks.is_lead)
      log::warning("Training session at " + stats.datetime + " not run: the " + std::to_string(steps) +
                   " buffered step(s) hold 0 valid samples (every patch had NaN/Inf values" +
                   nonfinite_summary(cfg, t) + "); nothing is sampled until a session trains on valid data");
    return;
  }
  ++stats.sessions;
  model.session_through = stats.steps;
  log::progress("Training session " + std::to_string(stats.sessions) + " at " + stats.datetime + ": " +
                std::to_string(steps) + " steps in buffer = " + std::to_string(total) + " samples" +
                (n_trainers > 1 ? " on " + std::to_string(n_trainers) + " trainer ranks" : std::string()));
  if (phase.phase() == Phase::kBuffering) phase.transition(Phase::kTraining);
  const long long step = stats.steps;
  const int rank = ranks.rank;
  const bool lead = ranks.is_lead;
  const Faults faults = run.faults;
  const auto t0 = Clock::now();
  model.session.start(*model.model, std::move(snap), cfg.train.epochs, cfg.train.async, model.torch_threads,
                      [faults, step, rank, lead] { faults.check(FaultPoint::kTraining, step, rank, lead); });
  if (!cfg.train.async) stats.timers.train_wait += seconds_since(t0);
}

void draw_samples(const RunSettings& run, const Ranks& ranks, TrainerShare& t, const TrainerModel& model,
                  TrainerOutput& out, const RunStats& stats) {
  const Config& cfg = run.config;
  run.faults.check(FaultPoint::kSampling, stats.steps, ranks.rank, ranks.is_lead);
  const int64_t n = t.n_patches, P = t.map.patch_size, members = cfg.sample.members;
  out.samples.resize(static_cast<size_t>(n * members * P));
  trainer::SampleOptions so = cfg.sample;  // the trainer's part of the sample section
  so.inflation = sampling_inflation(cfg, out);
  out.inflation_used = so.inflation;
  out.drawn_patches = out.beyond_range = 0;
  // Each trainer draws its own patches with a seed of its own.
  const uint64_t seed = coupling::sampling_seed(cfg.seed, stats.samplings + 1, ranks.trainer_index);
  coupling::sample_fine(
      t.patches, members, seed, out.samples.data(),
      [&](const float* context, const float* coarse, const float* weights, int64_t count, uint64_t draw_seed,
          float* drawn) {
        out.drawn_patches += count;
        out.beyond_range += model.model->rows_beyond_training_range(context, count, so.clip_margin);
        model.model->sample(context, coarse, weights, count, so, draw_seed, model.torch_threads, drawn);
      },
      t.map, static_cast<int>(cfg.fields.size()), t.sampling_options ? *t.sampling_options : t.patch_options);
  score_sampling(cfg, t, out);
  mask_implausible_samples(out);
}

double sampling_inflation(const Config& cfg, const TrainerOutput& out) {
  if (cfg.sample.calibration != Calibration::kPrequential || out.calibration_s2 <= 0.0) return cfg.sample.inflation;
  return std::sqrt(out.calibration_e2 / out.calibration_s2);
}

void score_sampling(const Config& cfg, const TrainerShare& t, TrainerOutput& out) {
  out.sampling_e2 = out.sampling_s2 = 0.0;
  if (cfg.sample.calibration != Calibration::kPrequential) return;
  const int64_t P = t.map.patch_size, M = cfg.sample.members;
  // The members' deviations from their mean were multiplied by the inflation: the raw variance is
  // the drawn one over its square.
  const double f2 = out.inflation_used * out.inflation_used;
  for (int64_t c = 0; c < t.n_patches; ++c) {
    if (!t.patches.valid[static_cast<size_t>(c)]) continue;
    for (int64_t p = 0; p < P; ++p) {
      const float* member = out.samples.data() + (c * M) * P + p;  // member m at member[m * P]
      double mean = 0, sq = 0;
      for (int64_t m = 0; m < M; ++m) mean += member[m * P];
      mean /= static_cast<double>(M);
      for (int64_t m = 0; m < M; ++m) sq += (member[m * P] - mean) * (member[m * P] - mean);
      const double y = t.patches.fine[static_cast<size_t>(c * P + p)];
      const double w = t.patches.weights[static_cast<size_t>(c * P + p)];
      if (!std::isfinite(mean) || !std::isfinite(sq) || !std::isfinite(y)) continue;
      out.sampling_e2 += w * (mean - y) * (mean - y);
      out.sampling_s2 += w * sq / static_cast<double>(M - 1) / f2;
    }
  }
}

void update_calibration(const Config& cfg, const Ranks& ranks, const TrainerModel& model, TrainerOutput& out,
                        const RunStats& stats) {
  if (cfg.sample.calibration != Calibration::kPrequential) return;
  double sums[2] = {out.sampling_e2, out.sampling_s2};
  CHECK_MPI(MPI_Allreduce(MPI_IN_PLACE, sums, 2, MPI_DOUBLE, MPI_SUM, ranks.trainers));
  const bool seen = model.trained_through >= stats.steps;
  if (!seen && sums[1] > 0.0) {
    out.calibration_e2 = cfg.sample.calibration_decay * out.calibration_e2 + sums[0];
    out.calibration_s2 = cfg.sample.calibration_decay * out.calibration_s2 + sums[1];
  }
  if (!ranks.is_lead) return;
  char line[320];
  if (seen || sums[1] <= 0.0)
    std::snprintf(line, sizeof line,
                  "Calibration (sample.calibration prequential): the sampling at %s not scored (%s); the next "
                  "sampling's inflation stays %.4g",
                  stats.datetime.c_str(), seen ? "the model trained on this step" : "no valid value",
                  sampling_inflation(cfg, out));
  else
    std::snprintf(line, sizeof line,
                  "Calibration (sample.calibration prequential): at %s the raw members' spread/RMSE is %.4g "
                  "(sampled with inflation %.4g); over the samplings so far (decay %.3g) %.4g, so the next "
                  "sampling's inflation is %.4g",
                  stats.datetime.c_str(), std::sqrt(sums[1] / sums[0]), out.inflation_used,
                  cfg.sample.calibration_decay, std::sqrt(out.calibration_s2 / out.calibration_e2),
                  sampling_inflation(cfg, out));
  log::progress(line);
}

int64_t mask_implausible_samples(TrainerOutput& out) {
  // The field's plausible range by its units and standard_name (finecast's table, the one every
  // NetCDF input is checked against): a sampler that blew up gives NaN, Inf or values no such
  // field holds, which must neither be written as data nor reach the host.
  const coupling::PlausibleRange range =
      coupling::plausible_range(out.output_attrs.units, out.output_attrs.standard_name);
  int64_t masked = 0;
  for (float& v : out.samples)
    if (!std::isfinite(v) || !range.contains(v)) {
      v = std::numeric_limits<float>::quiet_NaN();
      ++masked;
    }
  out.masked = masked;
  return masked;
}

void compute_slot_mean(const Config& cfg, const TrainerShare& t, TrainerOutput& out) {
  const int members = cfg.sample.members;
  const int64_t P = t.map.patch_size, n_slots = t.n_patches * P;
  out.slot_mean.assign(static_cast<size_t>(n_slots), 0.0f);
  for (int64_t slot = 0; slot < n_slots; ++slot) {
    const int64_t patch = slot / P, pos = slot % P;
    double sum = 0;
    for (int m = 0; m < members; ++m) sum += out.samples[static_cast<size_t>((patch * members + m) * P + pos)];
    out.slot_mean[static_cast<size_t>(slot)] = static_cast<float>(sum / members);
  }
}

void finish_session(const Config& cfg, const Ranks& ranks, const TrainerShare& t, TrainerModel& model, RunStats& stats,
                    RunPhase& phase, const std::string& occasion) {
  if (const double waited = wait_for_session(stats, model, occasion, "then writes the checkpoint"); waited >= 0)
    log::info("Waited " + std::to_string(waited).substr(0, 5) + " s for the training session to finish (" + occasion +
              ")");
  collect_session(cfg, ranks, t, model, stats, phase);
}

}  // namespace finecast::plugin
