// SPDX-License-Identifier: BSD-3-Clause
// checkpoint.resume: the checkpoint and buffer snapshot a trainer rank resumes from, and the
// resume itself (model, buffer, the run's counters).
#pragma once

#include <mpi.h>

#include <memory>
#include <string>

#include "coupling/buffer/rolling_buffer.hpp"
#include "plugin/comin_plugin/plugin_comm.hpp"
#include "plugin/comin_plugin/plugin_state.hpp"

namespace finecast::plugin {

/// A checkpoint to resume from, with its buffer snapshot when it was read already.
struct ResumeSource {
  std::string checkpoint;                           ///< "" = a fresh start
  bool buffer_read = false;                         ///< `buffer` is the paired snapshot (null: none)
  std::unique_ptr<coupling::RollingBuffer> buffer;  ///< for this trainer's patches
};

/// The checkpoint checkpoint.resume names: a file; the newest usable one of a directory; with
/// "auto" or "auto-or-fresh" the newest usable one in checkpoint.dir that is not later than the
/// host's restart time (a fresh start when there is no checkpoint). Usable: the checkpoint and its
/// buffer snapshot are intact; an older pair takes the place of a damaged one. When checkpoints
/// exist but none is usable, "auto" is an error naming each and why, "auto-or-fresh" a fresh
/// start with a warning. Collective over the trainer ranks.
ResumeSource choose_resume_source(const Config& cfg, const TrainerState& t, MPI_Comm trainers, const HostFacts& facts);

/// checkpoint.resume: the model from the checkpoint, the buffer from the snapshot written with
/// it, and the run's counters, so that a chain of runs continues where the last one stopped.
void resume(PluginState& s, TrainerState& t, ResumeSource source);

/// The host's restart time: ComIn's run_start when the run starts later than the experiment
/// (ICON's restarted chunks; finecast-host's chunks after the first), "" for a run that starts
/// the experiment (finecast-replay, ComIn's replay tool, a first chunk).
std::string host_restart_time(const HostFacts& facts);

}  // namespace finecast::plugin
