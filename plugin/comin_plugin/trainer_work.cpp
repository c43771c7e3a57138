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
#include <regex>

#include "common/log.hpp"
#include "coupling/error.hpp"
#include "plugin/comin_plugin/guard.hpp"
#include "plugin/comin_plugin/setup.hpp"

namespace finecast::plugin {
namespace {

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

/// Removes buffer snapshots (all their parts) whose checkpoint is gone (rotated away, or never
/// written).
void remove_orphan_snapshots(const std::string& dir) {
  namespace fs = std::filesystem;
  static const std::regex snapshot("buffer_([0-9]+)(\\.p[0-9]+)?\\.h5");
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    std::smatch m;
    const std::string name = entry.path().filename().string();
    if (!std::regex_match(name, m, snapshot)) continue;
    if (!fs::exists(trainer_module().checkpoint_path_for_step(dir, std::stoll(m[1].str())), ec))
      fs::remove(entry.path(), ec);
  }
}

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
                (first == s.stats.steps ? std::string("now")
                                        : "in " + std::to_string(first - s.stats.steps) + " coupling steps"));
}

/// "; NaN/Inf host values so far: ts 81920 in 4 steps" (nothing when there were none).
std::string nonfinite_summary(const PluginState& s) {
  const TrainerState& t = *s.trainer;
  std::string out;
  for (size_t v = 0; v < t.nonfinite_values.size(); ++v)
    if (t.nonfinite_values[v] > 0)
      out += (out.empty() ? "" : ", ") + s.config.fields[v] + " " + std::to_string(t.nonfinite_values[v]) + " in " +
             std::to_string(t.nonfinite_steps[v]) + " step(s)";
  return out.empty() ? out : "; NaN/Inf host values so far: " + out;
}

/// Adds n doubles up over the trainer ranks, in place.
std::function<void(double*, int)> sum_over(MPI_Comm trainers) {
  return [trainers](double* values, int n) {
    CHECK_MPI(MPI_Allreduce(MPI_IN_PLACE, values, n, MPI_DOUBLE, MPI_SUM, trainers));
  };
}

/// Runs `fn` unless `failure` holds an error already; an exception becomes `failure`.
void capture_failure(std::string& failure, const std::function<void()>& fn) {
  if (!failure.empty()) return;
  try {
    fn();
  } catch (...) {
    failure = describe_current_exception();
  }
}

/// The lead's side of an output record's life cycle: opens the output at the first sampling (the
/// checkpoint it names: the latest written, else the one resumed from), then begins the record.
void begin_record(PluginState& s) {
  const Config& cfg = s.config;
  TrainerState& t = *s.trainer;
  s.faults.check(FaultPoint::kOutput, s.stats.steps, s.coupling->rank, true);
  if (!t.output) {
    auto attrs = output_attributes(t.map, !t.last_checkpoint.empty() ? t.last_checkpoint
                                          : !t.resumed_from.empty()
                                              ? t.resumed_from
                                              : "none written yet (checkpoint.dir " + cfg.checkpoint.dir + ")");
    attrs.insert(t.output_globals.begin(), t.output_globals.end());
    t.output = std::make_unique<Output>(cfg.sample.output, t.output_grid, target_field(cfg), t.output_attrs,
                                        cfg.sample.members, attrs, !t.resumed_from.empty(), s.stats.datetime,
                                        t.output_options);
    // One line per run that writes the file: every chunk of a restart chain names its command.
    t.output->add_history(
        (t.command.empty() ? std::string("(the host's command is unknown)") : t.command) + ": finecast samples from " +
        s.stats.datetime +
        (t.resumed_from.empty() ? std::string(", a fresh start") : ", resumed from " + t.resumed_from));
  }
  t.output->begin(s.stats.datetime);
}

/// Receives a piece of a record on the lead: cells first..first+count-1, members [member][cell].
using PutPiece =
    std::function<void(int64_t first, int64_t count, const float* members, const float* coarse, const float* host)>;

/// Collective among the trainers: the drawn ensembles of every trainer's slots to the lead, in
/// pieces of t.output_chunk cells (whole grid rows), so that no rank holds a whole record. Each
/// trainer sends, for its slots in the piece (by cell), the cell (relative to the piece: exact
/// in a float below 2^24), every member, the coarse value and the host's value; the lead hands
/// each piece to `put` (cells no trainer sent stay NaN).
void gather_record(PluginState& s, const PutPiece& put) {
  const TrainerState& t = *s.trainer;
  const CouplingState& c = *s.coupling;
  const bool lead = s.is_lead();
  const int members = s.config.sample.members;
  const int64_t P = t.map.patch_size, n_fine = t.map.n_fine, chunk = t.output_chunk;
  const int n_trainers = static_cast<int>(c.trainer_ranks.size());
  const float* host_target = t.slot_values.data() + static_cast<size_t>(target_index(s.config)) * t.slot_cells.size();
  const int width = members + 3;
  std::vector<float> send, recv;
  std::vector<int> counts(static_cast<size_t>(n_trainers)), displs(static_cast<size_t>(n_trainers));
  std::vector<float> piece_members, piece_coarse, piece_host;
  auto lo = t.slots_by_cell.begin();
  for (int64_t first = 0; first < n_fine; first += chunk) {
    const int64_t count = std::min(chunk, n_fine - first);
    auto hi = std::partition_point(lo, t.slots_by_cell.end(), [&](int64_t slot) {
      return t.slot_cells[static_cast<size_t>(slot)] < first + count;
    });
    const auto k = static_cast<int>(hi - lo);
    send.resize(static_cast<size_t>(k) * width);
    for (int i = 0; i < k; ++i) {
      const int64_t slot = lo[i], patch = slot / P, pos = slot % P;
      float* row = send.data() + static_cast<size_t>(i) * width;
      row[0] = static_cast<float>(t.slot_cells[static_cast<size_t>(slot)] - first);
      for (int m = 0; m < members; ++m) row[1 + m] = t.samples[static_cast<size_t>((patch * members + m) * P + pos)];
      row[1 + members] = t.patches.coarse[static_cast<size_t>(patch)];
      row[2 + members] = host_target[slot];
    }
    const int mine = k * width;
    CHECK_MPI(MPI_Gather(&mine, 1, MPI_INT, counts.data(), 1, MPI_INT, 0, c.trainers));
    if (lead) {
      displs[0] = 0;
      for (int r = 1; r < n_trainers; ++r) displs[r] = displs[r - 1] + counts[r - 1];
      recv.resize(static_cast<size_t>(displs.back() + counts.back()));
    }
    CHECK_MPI(
        MPI_Gatherv(send.data(), mine, MPI_FLOAT, recv.data(), counts.data(), displs.data(), MPI_FLOAT, 0, c.trainers));
    if (lead) {
      const float nan = std::numeric_limits<float>::quiet_NaN();
      piece_members.assign(static_cast<size_t>(members * count), nan);
      piece_coarse.assign(static_cast<size_t>(count), nan);
      piece_host.assign(static_cast<size_t>(count), nan);
      for (size_t i = 0; i + width <= recv.size(); i += static_cast<size_t>(width)) {
        const auto cell = static_cast<int64_t>(recv[i]);
        for (int m = 0; m < members; ++m) piece_members[static_cast<size_t>(m * count + cell)] = recv[i + 1 + m];
        piece_coarse[static_cast<size_t>(cell)] = recv[i + 1 + members];
        piece_host[static_cast<size_t>(cell)] = recv[i + 2 + members];
      }
      put(first, count, piece_members.data(), piece_coarse.data(), piece_host.data());
    }
    lo = hi;
  }
}

/// The step's NaN/Inf host values over every trainer (collective among them), counted for the
/// run; a field with no finite value at all is named in a warning (at its 1st, 2nd, 4th, 8th ...
/// such step, so that a field undefined for a long time does not flood the log).
void report_nonfinite(PluginState& s) {
  const Config& cfg = s.config;
  TrainerState& t = *s.trainer;
  const auto n = static_cast<int>(cfg.fields.size());
  t.nonfinite_step.resize(static_cast<size_t>(n), 0);
  CHECK_MPI(MPI_Allreduce(MPI_IN_PLACE, t.nonfinite_step.data(), n, MPI_INT64_T, MPI_SUM, s.coupling->trainers));
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
    if (s.is_lead() && (k & (k - 1)) == 0)
      log::warning("Host field " + cfg.fields[v] + " at " + s.stats.datetime + ": all " + std::to_string(bad) +
                   " values are NaN/Inf (" + std::to_string(k) +
                   " such coupling step(s) so far); its patches are left out of training");
  }
}

}  // namespace

std::string buffer_part_path(const std::string& dir, long long step, int index) {
  if (index == 0) return buffer_path_for_step(dir, step);
  char name[64];
  std::snprintf(name, sizeof name, "buffer_%08lld.p%d.h5", step, index);
  return (std::filesystem::path(dir) / name).string();
}

void collect_session(PluginState& s) {
  TrainerState& t = *s.trainer;
  if (!t.session.collect()) return;  // rethrows the error of a failed session
  const trainer::SessionStats& st = t.session.last_stats();
  int64_t good_batches = 0;
  for (const auto& e : st.epochs) good_batches += e.batches - e.bad_steps;
  // (Not after early stopping, or with the run's time budget spent: the model trained before.)
  if (good_batches <= 0 && !(st.stopped && !st.trained) && !(st.budget_spent && s.phase() == Phase::kReady)) {
    // A session that took no optimizer step (every row dropped as NaN/Inf, or every step bad)
    // trained nothing: it does not count, and an untrained model is never sampled.
    --s.stats.sessions;
    if (s.is_lead())
      log::warning("The training session at " + s.stats.datetime + " trained on no batch (" +
                   std::to_string(st.train_samples) + " samples, NaN/Inf rows and steps skipped" +
                   nonfinite_summary(s) + "): it does not count" +
                   (s.phase() == Phase::kReady ? std::string("; sampling goes on with the model trained before")
                                               : std::string("; nothing is sampled until a session trains")));
    if (s.phase() == Phase::kTraining) s.transition(Phase::kBuffering);
    return;
  }
  if (st.validation_samples > 0) {
    char line[240];
    std::snprintf(
        line, sizeof line,
        "Validation (%lld held-out samples of the %lld most recent steps): loss %.4f, CRPS %.4g; best %s %.4g "
        "at optimizer step %lld%s",
        static_cast<long long>(st.validation_samples), static_cast<long long>(st.validation_steps), st.validation_loss,
        st.validation_crps, trainer::name(s.config.train.validation_metric).c_str(), st.best_score,
        static_cast<long long>(st.best_step),
        st.lr_scale < 1.0 ? (", learning rate x" + std::to_string(st.lr_scale).substr(0, 5)).c_str() : "");
    log::progress(line);
  }
  if (st.stopped && !st.trained)
    log::progress("Early stopping: training has stopped; sampling goes on with the best model");
  t.fresh_weights = true;
  if (s.phase() != Phase::kReady)
    s.transition(Phase::kReady, s.is_lead() ? "First model trained: sampling from now on" : "");
}

void coarsen_step(PluginState& s) {
  const Config& cfg = s.config;
  TrainerState& t = *s.trainer;
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
  s.stats.timers.patches += seconds_since(t0);
}

void share_coarse(PluginState& s) {
  const Config& cfg = s.config;
  TrainerState& t = *s.trainer;
  const MPI_Comm trainers = s.coupling->trainers;
  // Rows [n_rows][n_patches] of this trainer to rows [n_rows][n_coarse] of every trainer.
  auto share = [&](const float* mine, int64_t n_rows, float* all) {
    for (int64_t v = 0; v < n_rows; ++v)
      CHECK_MPI(MPI_Allgatherv(mine + v * t.n_patches, static_cast<int>(t.n_patches), MPI_FLOAT,
                               all + v * t.map.n_coarse, t.trainer_patches.data(), t.trainer_first.data(), MPI_FLOAT,
                               trainers));
  };
  share(t.patches.coarse_vars.data(), static_cast<int64_t>(cfg.fields.size()), t.all_coarse.data());
  report_nonfinite(s);
  // The static covariates arrive with the first step of the run: normalised over the whole
  // field, their block means known to every trainer.
  const auto n_static = static_cast<int64_t>(cfg.patch.statics.size());
  if (n_static > 0 && t.conditioning.statics.empty()) {
    const int64_t n_slots = t.n_patches * t.map.patch_size;
    const size_t first_static = cfg.fields.size() + (cfg.patch.orography.empty() ? 0 : 1);
    std::vector<const float*> raw;
    for (int64_t k = 0; k < n_static; ++k) raw.push_back(t.slot_values.data() + (first_static + k) * n_slots);
    const std::vector<float> means = prepare_statics(cfg, t.shard, raw, t.conditioning, sum_over(trainers));
    t.all_static_means.resize(static_cast<size_t>(n_static * t.map.n_coarse));
    share(means.data(), n_static, t.all_static_means.data());
  }
}

void buffer_step(PluginState& s) {
  const Config& cfg = s.config;
  TrainerState& t = *s.trainer;
  const auto t0 = Clock::now();
  coupling::fill_contexts(t.map, t.first_patch, t.shard, t.all_coarse.data(), static_cast<int>(cfg.fields.size()),
                          t.all_static_means.data(), static_pointers(t.conditioning), t.patch_options, t.patches);
  training_valid(t.conditioning, t.first_patch, t.patches, t.train_valid);
  fit_regression_base(cfg, t.map, t.patch_options, t.train_valid, t.patches, t.conditioning,
                      sum_over(s.coupling->trainers));
  t.buffer->push(s.stats.datetime, t.patches.context.data(), training_targets(cfg, t.patches), t.train_valid.data());
  if (t.patches.n_invalid > 0)
    log::debug(std::to_string(t.patches.n_invalid) + " patch(es) with missing values excluded at " + s.stats.datetime);
  if (s.phase() == Phase::kBuffering) report_buffer_progress(s);
  s.stats.timers.patches += seconds_since(t0);
}

void write_buffer_part(PluginState& s) {
  const Config& cfg = s.config;
  TrainerState& t = *s.trainer;
  s.faults.check(FaultPoint::kCheckpoint, s.stats.steps, s.coupling->rank, s.is_lead());
  const auto t0 = Clock::now();
  if (cfg.checkpoint.buffer)
    t.buffer->save_h5(buffer_part_path(cfg.checkpoint.dir, t.model->step(), s.coupling->trainer_index), t.first_patch,
                      t.map.n_coarse);
  s.stats.timers.checkpoint += seconds_since(t0);
}

void write_model_checkpoint(PluginState& s, bool training_due) {
  const Config& cfg = s.config;
  TrainerState& t = *s.trainer;
  const auto t0 = Clock::now();
  // The conditioning spec, so that finecast-downscale can rebuild the context without the config
  // (and ask for the static fields it needs), and a resumed run can check its own against it.
  std::map<std::string, std::string> meta{{"sessions", std::to_string(s.stats.sessions)},
                                          {"coupling_steps", std::to_string(s.stats.steps)},
                                          {"samplings", std::to_string(s.stats.samplings)},
                                          {"training_due", training_due ? "1" : "0"},
                                          {"datetime", s.stats.datetime},
                                          {"config", cfg.source},
                                          {"config_hash", config_hash(s.config_text)},
                                          {"config_resolved", s.config_text},
                                          {"trainer_ranks", std::to_string(s.coupling->trainer_ranks.size())},
                                          // What finecast-export passes on as the module's attributes.
                                          {"units", t.output_attrs.units},
                                          {"grid", schema::name_of(s.config.grid.type) + " " + s.config.grid.file}};
  const trainer::CheckpointGroups groups{
      {coupling::kConditioningGroup, coupling::spec_record(checkpoint_spec(t.conditioning, t.patch_options))}};
  const std::string path = t.model->save_in_dir(cfg.checkpoint.dir, cfg.checkpoint.keep, meta, groups);
  remove_orphan_snapshots(cfg.checkpoint.dir);
  t.last_checkpoint = path;
  if (t.output) t.output->set_checkpoint(path);
  s.stats.timers.checkpoint += seconds_since(t0);
  log::info("Checkpoint written: " + path + " (optimizer step " + std::to_string(t.model->step()) + ")");
}

void start_session(PluginState& s) {
  const Config& cfg = s.config;
  TrainerState& t = *s.trainer;
  Snapshot snap;
  t.buffer->snapshot(snap.context, snap.fine, snap.weights, &snap.step);
  snap.n = t.buffer->samples();
  // The rows in the order one trainer holding every patch would have them (by step, then by
  // patch): each trainer's rows of a step follow those of the trainers before it.
  const int n_trainers = static_cast<int>(s.coupling->trainer_ranks.size());
  const int steps = t.buffer->steps(), me = s.coupling->trainer_index;
  std::vector<int64_t> mine(static_cast<size_t>(steps), 0), all(static_cast<size_t>(steps) * n_trainers, 0);
  for (int64_t step : snap.step) ++mine[static_cast<size_t>(step)];
  CHECK_MPI(MPI_Allgather(mine.data(), steps, MPI_INT64_T, all.data(), steps, MPI_INT64_T, s.coupling->trainers));
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

  if (total == 0) {
    // Every buffered patch held NaN/Inf (a coupled field not yet defined, e.g.): a session
    // would train on nothing and the untrained model would then be sampled. It waits for data.
    if (s.is_lead())
      log::warning("Training session at " + s.stats.datetime + " not run: the " + std::to_string(steps) +
                   " buffered step(s) hold 0 valid samples (every patch had NaN/Inf values" + nonfinite_summary(s) +
                   "); nothing is sampled until a session trains on valid data");
    return;
  }
  ++s.stats.sessions;
  log::progress("Training session " + std::to_string(s.stats.sessions) + " at " + s.stats.datetime + ": " +
                std::to_string(steps) + " steps in buffer = " + std::to_string(total) + " samples" +
                (n_trainers > 1 ? " on " + std::to_string(n_trainers) + " trainer ranks" : std::string()));
  if (s.phase() == Phase::kBuffering) s.transition(Phase::kTraining);
  const long long step = s.stats.steps;
  const int rank = s.coupling->rank;
  const bool lead = s.is_lead();
  const Faults faults = s.faults;
  const auto t0 = Clock::now();
  t.session.start(*t.model, std::move(snap), cfg.train.epochs, cfg.train.async, t.torch_threads,
                  [faults, step, rank, lead] { faults.check(FaultPoint::kTraining, step, rank, lead); });
  if (!cfg.train.async) s.stats.timers.train_wait += seconds_since(t0);
}

void draw_samples(PluginState& s) {
  const Config& cfg = s.config;
  TrainerState& t = *s.trainer;
  s.faults.check(FaultPoint::kSampling, s.stats.steps, s.coupling->rank, s.is_lead());
  const int64_t n = t.n_patches, P = t.map.patch_size, members = cfg.sample.members;
  t.samples.resize(static_cast<size_t>(n * members * P));
  const trainer::SampleOptions& so = cfg.sample;  // the trainer's part of the sample section
  // Each trainer draws its own patches with a seed of its own.
  const uint64_t seed = coupling::sampling_seed(cfg.seed, s.stats.samplings + 1, s.coupling->trainer_index);
  coupling::sample_fine(
      t.patches, members, seed, t.samples.data(),
      [&](const float* context, const float* coarse, const float* weights, int64_t count, uint64_t draw_seed,
          float* out) { t.model->sample(context, coarse, weights, count, so, draw_seed, t.torch_threads, out); });
}

void write_samples(PluginState& s) {
  TrainerState& t = *s.trainer;
  const bool lead = s.is_lead();
  // The lead keeps receiving after a failure to write, so that no trainer waits in a piece's
  // gather; the first failure is reported after the last piece.
  std::string failure;
  if (lead) capture_failure(failure, [&] { begin_record(s); });
  gather_record(s, [&](int64_t first, int64_t count, const float* members, const float* coarse, const float* host) {
    capture_failure(failure, [&] { t.output->put(first, count, members, coarse, host); });
  });
  if (lead) capture_failure(failure, [&] { t.output->end(); });
  if (!failure.empty()) throw IoError("output at " + s.stats.datetime + ": " + failure);
  ++s.stats.samplings;
  t.fresh_weights = false;
}

void compute_slot_mean(PluginState& s) {
  TrainerState& t = *s.trainer;
  const int members = s.config.sample.members;
  const int64_t P = t.map.patch_size, n_slots = t.n_patches * P;
  t.slot_mean.assign(static_cast<size_t>(n_slots), 0.0f);
  for (int64_t slot = 0; slot < n_slots; ++slot) {
    const int64_t patch = slot / P, pos = slot % P;
    double sum = 0;
    for (int m = 0; m < members; ++m) sum += t.samples[static_cast<size_t>((patch * members + m) * P + pos)];
    t.slot_mean[static_cast<size_t>(slot)] = static_cast<float>(sum / members);
  }
}

void finish_session(PluginState& s, const std::string& occasion) {
  TrainerState& t = *s.trainer;
  if (t.session.in_flight()) {
    const auto t0 = Clock::now();
    t.session.wait();
    s.stats.timers.train_wait += seconds_since(t0);
    log::info("Waited " + std::to_string(seconds_since(t0)).substr(0, 5) + " s for the training session to finish (" +
              occasion + ")");
  }
  collect_session(s);
}

}  // namespace finecast::plugin
