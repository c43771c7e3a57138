// SPDX-License-Identifier: BSD-3-Clause
#include "plugin/comin_plugin/resume.hpp"

#include <algorithm>
#include <filesystem>
#include <optional>
#include <tuple>
#include <vector>

#include "common/checkpoint_files.hpp"
#include "common/log.hpp"
#include "common/schema.hpp"
#include "coupling/error.hpp"
#include "coupling/io/cf_time.hpp"
#include "plugin/comin_plugin/run_counters.hpp"
#include "plugin/comin_plugin/trainer_module.hpp"

namespace finecast::plugin {
namespace {

bool is_file(const std::string& path) {
  std::error_code ec;
  return std::filesystem::is_regular_file(path, ec);
}

/// The files of the buffer snapshot written with checkpoint step `step` in `dir`: trainer rank
/// 0's part, then those of the other trainer ranks that wrote it; none when rank 0's is missing.
std::vector<std::string> snapshot_parts(const std::string& dir, long long step) {
  std::vector<std::string> parts;
  for (int k = 0; is_file(checkpoint_files::buffer_path(dir, step, k)); ++k)
    parts.push_back(checkpoint_files::buffer_path(dir, step, k));
  return parts;
}

/// Whether model time `a` is later than `b`, by their calendar fields (the host's and the
/// checkpoint's texts may differ in form); nullopt when one of them is no date.
std::optional<bool> later_than(const std::string& a, const std::string& b) {
  coupling::DateTime x, y;
  if (!coupling::parse_datetime(a, x) || !coupling::parse_datetime(b, y)) return std::nullopt;
  return std::tie(x.year, x.month, x.day, x.hour, x.minute, x.second) >
         std::tie(y.year, y.month, y.day, y.hour, y.minute, y.second);
}

/// The buffer snapshot written with checkpoint `path` (optimizer step `step`), all its parts,
/// read for this trainer's patches; null when there is none beside the checkpoint. Throws when
/// it is damaged.
std::unique_ptr<coupling::RollingBuffer> read_paired_buffer(const Config& cfg, const TrainerState& t,
                                                            const std::string& path, long long step) {
  const std::string parent = std::filesystem::path(path).parent_path().string();
  const std::string dir = parent.empty() ? "." : parent;
  // The parts of the trainer ranks that wrote it (any number of them), re-sharded to this
  // trainer's patches.
  const std::vector<std::string> parts = snapshot_parts(dir, step);
  if (parts.empty()) return nullptr;
  return std::make_unique<coupling::RollingBuffer>(
      coupling::RollingBuffer::load_h5_range(parts, cfg.buffer.capacity, t.first_patch, t.n_patches,
                                             t.buffer->context_size(), t.buffer->patch_size(), t.map.n_coarse));
}

/// The conditioning checkpoint `path` was trained with, when it is this run's: a model resumes
/// only with the conditioning it was trained on, the same grid type, patch size, fields (names
/// and units), context and residual (restore checks the architecture and shapes). ConfigError
/// naming each difference otherwise.
coupling::StoredSpec resumable_conditioning(const Config& cfg, const TrainerState& t, const std::string& path,
                                            const std::map<std::string, std::string>& meta) {
  coupling::StoredSpec stored =
      coupling::read_spec(trainer_module().checkpoint_group(path, coupling::kConditioningGroup), meta, path);
  if (const std::string d = coupling::resume_differences(stored, t.conditioning.spec, cfg.source); !d.empty())
    throw ConfigError(cfg.source + ": checkpoint.resume: checkpoint " + path +
                      " was trained with another conditioning (" + d +
                      "); resume it with the config it was trained with, or start fresh (checkpoint.resume: \"\")");
  return stored;
}

/// "" when checkpoint `path` (optimizer step `step`) and its buffer snapshot are intact on every
/// trainer rank (the snapshot, read for this trainer's patches, goes to `source`); else why not.
/// Collective over the trainer ranks: a damaged chunk of the snapshot may lie in one trainer's
/// patches only, and all of them must resume from the same pair.
std::string check_resume_pair(const Config& cfg, const TrainerState& t, MPI_Comm trainers, const std::string& path,
                              long long step, ResumeSource& source) {
  std::string why;
  try {
    trainer_module().verify_checkpoint(path);
  } catch (const std::exception& e) {
    why = std::string("skipping invalid checkpoint: ") + e.what();
  }
  // A checkpoint of another grid or conditioning is refused for what it is (the same on every
  // trainer rank), before its buffer snapshot, whose shapes differ too, is taken for damaged.
  if (why.empty()) resumable_conditioning(cfg, t, path, trainer_module().checkpoint_metadata(path));
  if (why.empty() && cfg.checkpoint.buffer) {
    try {
      source.buffer = read_paired_buffer(cfg, t, path, step);
      source.buffer_read = true;
    } catch (const GridError& e) {
      why = "skipping checkpoint " + path + ": its buffer snapshot is of another grid (" + e.what() +
            "; checkpoint.buffer: false resumes the model without it)";
    } catch (const std::exception& e) {
      why = "skipping checkpoint " + path + ": its buffer snapshot is damaged (" + e.what() + ")";
    }
  }
  int mine = why.empty() ? 0 : 1, any = 0;
  CHECK_MPI(MPI_Allreduce(&mine, &any, 1, MPI_INT, MPI_MAX, trainers));
  if (any && why.empty())
    why = "skipping checkpoint " + path + ": another trainer rank cannot read its buffer snapshot";
  return why;
}

}  // namespace

/// The host's restart time: ComIn's run_start when the run starts later than the experiment
/// (ICON's restarted chunks; finecast-host's chunks after the first), "" for a run that starts
/// the experiment (finecast-replay, ComIn's replay tool, a first chunk).
std::string host_restart_time(const HostFacts& facts) {
  return later_than(facts.run_start, facts.exp_start).value_or(false) ? facts.run_start : std::string();
}

/// The checkpoint checkpoint.resume names: a file; the newest usable one of a directory; with
/// "auto" or "auto-or-fresh" the newest usable one in checkpoint.dir that is not later than the
/// host's restart time (a fresh start when there is no checkpoint). Usable: the checkpoint and its
/// buffer snapshot are intact; an older pair takes the place of a damaged one. When checkpoints
/// exist but none is usable, "auto" is an error naming each and why, "auto-or-fresh" a fresh
/// start with a warning. Collective over the trainer ranks.
ResumeSource choose_resume_source(const Config& cfg, const TrainerState& t, MPI_Comm trainers, const HostFacts& facts) {
  const std::string& resume = cfg.checkpoint.resume;
  const bool automatic = resume == "auto" || resume == "auto-or-fresh";
  ResumeSource source;
  if (std::error_code ec;
      !automatic && !std::filesystem::is_directory(resume, ec)) {  // a file: that one (restore() names its problems)
    source.checkpoint = resume;
    return source;
  }
  const std::string dir = automatic ? cfg.checkpoint.dir : resume;
  const std::string restart = automatic ? host_restart_time(facts) : std::string();
  struct Candidate {
    long long step;
    std::string path, datetime;
  };
  std::vector<Candidate> candidates;
  std::vector<std::string> rejected;
  for (const auto& [step, path] : checkpoint_files::checkpoints_newest_first(dir)) {
    std::string datetime;
    try {
      const auto meta = trainer_module().checkpoint_metadata(path);
      if (auto it = meta.find("datetime"); it != meta.end()) datetime = it->second;
    } catch (const std::exception& e) {
      rejected.push_back(std::string("skipping invalid checkpoint: ") + e.what());
      log::warning(rejected.back());
      continue;
    }
    if (!restart.empty() && later_than(datetime, restart).value_or(false)) {
      // A future the host does not follow (it restarts from an earlier restart file): kept.
      rejected.push_back(path + " holds model time " + datetime + ", later than the host's restart time " + restart +
                         ": left alone");
      log::info("checkpoint.resume: " + resume + ": " + rejected.back());
      continue;
    }
    candidates.push_back({step, path, datetime});
  }
  // After a restart from an earlier time, the newest model time (not the highest optimizer step)
  // is where the host goes on; checkpoints without a model time come last.
  if (!restart.empty()) {
    auto key = [](const Candidate& c) {
      coupling::DateTime d;
      const bool known = coupling::parse_datetime(c.datetime, d);
      return std::make_tuple(known, d.year, d.month, d.day, d.hour, d.minute, d.second, c.step);
    };
    std::stable_sort(candidates.begin(), candidates.end(),
                     [&](const Candidate& a, const Candidate& b) { return key(a) > key(b); });
  }
  for (const Candidate& c : candidates) {
    std::string why = check_resume_pair(cfg, t, trainers, c.path, c.step, source);
    if (why.empty()) {
      source.checkpoint = c.path;
      if (!restart.empty() && later_than(restart, c.datetime).value_or(false))
        log::warning("checkpoint.resume: " + resume + ": the newest usable checkpoint, " + c.path +
                     ", holds model time " + c.datetime + ", earlier than the host's restart time " + restart +
                     ": the buffer lacks the steps between");
      return source;
    }
    rejected.push_back(why);
    log::warning(why);
  }
  source = ResumeSource();
  if (rejected.empty()) {
    if (!automatic) throw ConfigError(cfg.source + ": checkpoint.resume: no checkpoint in directory " + resume);
    log::info("checkpoint.resume: " + resume + ": no valid checkpoint in " + dir + ": a fresh start");
    return source;
  }
  std::string list;
  for (const auto& why : rejected) list += "\n  " + why;
  const std::string what = "checkpoint.resume: " + resume + ": no usable checkpoint in " + dir +
                           (restart.empty() ? std::string() : " at or before the host's restart time " + restart) +
                           " (" + std::to_string(rejected.size()) + " rejected):" + list;
  if (resume == "auto-or-fresh") {
    log::warning(what + "\na fresh start (checkpoint.resume: auto-or-fresh)");
    return source;
  }
  throw ConfigError(cfg.source + ": " + what +
                    (automatic ? "\n(checkpoint.resume: auto-or-fresh starts fresh instead)" : std::string()));
}

/// checkpoint.resume: the model from the checkpoint, the buffer from the snapshot written with
/// it, and the run's counters, so that a chain of runs continues where the last one stopped.
void resume(PluginState& s, TrainerState& t, ResumeSource source) {
  const Config& cfg = s.config;
  const std::string& path = source.checkpoint;
  const auto meta = trainer_module().checkpoint_metadata(path);
  const coupling::StoredSpec stored = resumable_conditioning(cfg, t, path, meta);
  const RunCounters counters = read_run_counters(trainer_module().checkpoint_group(path, kRunGroup), meta, path);
  t.model->restore(path);  // checks architecture, shapes and version against this config
  s.stats.sessions = counters.sessions;
  s.stats.steps = counters.coupling_steps;
  s.stats.samplings = counters.samplings;
  t.calibration_e2 = counters.calibration_e2;
  t.calibration_s2 = counters.calibration_s2;
  t.trained_through = counters.coupling_steps;
  if (auto it = meta.find("datetime"); it != meta.end()) t.resumed_datetime = it->second;
  // The static covariates keep the normalisation the model was trained with, and the residual
  // the regression base it learned the residual of.
  if (stored.has("patch.static_norm") && !cfg.patch.statics.empty())
    t.conditioning.spec.static_norms = stored.spec.static_norms;
  if (!stored.spec.regression.empty() && cfg.patch.residual == Residual::kRegression) {
    t.patch_options.regression = stored.spec.regression;
    t.patch_options.global_regression = stored.spec.global_regression;
    if (cfg.patch.global_blend < 1.0 && stored.spec.global_regression.empty())
      throw ConfigError(cfg.source + ": patch.global_blend " + schema::format_real(cfg.patch.global_blend) +
                        " moves the members' mean toward the global regression, but checkpoint " + path +
                        " has no patch.global_regression (written before it existed): train anew, or set "
                        "patch.global_blend: 1");
    if (cfg.patch.spread_regression > 0.0 && stored.spec.global_regression.empty())
      throw ConfigError(cfg.source + ": patch.spread_regression " + schema::format_real(cfg.patch.spread_regression) +
                        " spreads the members by the global regression's term, but checkpoint " + path +
                        " has no patch.global_regression (written before it existed): train anew, or set "
                        "patch.spread_regression: 0");
  }
  t.resumed_from = path;
  log::info("Resumed from " + path + " (optimizer step " + std::to_string(t.model->step()) + ", " +
            std::to_string(s.stats.sessions) + " training sessions and " + std::to_string(s.stats.steps) +
            " coupling steps so far" + (t.resumed_datetime.empty() ? "" : ", model time " + t.resumed_datetime) + ")");
  if (cfg.checkpoint.buffer) {
    const std::string dir = std::filesystem::path(path).parent_path().string();
    const std::string paired = checkpoint_files::buffer_path(dir.empty() ? "." : dir, t.model->step());
    const std::string legacy = (dir.empty() ? std::string(".") : dir) + "/buffer.h5";
    if (!source.buffer_read) source.buffer = read_paired_buffer(cfg, t, path, t.model->step());
    if (source.buffer) {
      *t.buffer = std::move(*source.buffer);
      const size_t parts = snapshot_parts(dir.empty() ? "." : dir, t.model->step()).size();
      log::info("Resumed the rolling buffer from " + paired +
                (parts > 1 ? " (" + std::to_string(parts) + " parts)" : std::string()) + ": " +
                std::to_string(t.buffer->steps()) + " steps");
    } else if (is_file(legacy)) {
      *t.buffer = coupling::RollingBuffer::load_h5_range({legacy}, cfg.buffer.capacity, t.first_patch, t.n_patches,
                                                         t.buffer->context_size(), t.buffer->patch_size());
      log::warning("Resumed the rolling buffer from " + legacy + " (" + std::to_string(t.buffer->steps()) +
                   " steps), written by an older finecast without a link to the checkpoint: it may be older or "
                   "newer than " +
                   path);
    } else {
      log::warning("No buffer snapshot " + paired + " beside the checkpoint: the buffer starts empty");
    }
  }
  // A checkpoint written before the first session holds an untrained model: keep buffering.
  t.fresh_weights = s.stats.sessions > 0;
  // The step count goes on from the checkpoint, so sessions fall due on the same steps as in one
  // long run; a session that was due when the last run ended runs at once.
  t.owed.train = counters.training_due && t.buffer->steps() >= cfg.train.min_steps;
}

}  // namespace finecast::plugin
