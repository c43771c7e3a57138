// SPDX-License-Identifier: BSD-3-Clause
// The checkpoint layout shared by writer, loader and verifier (internal, torch-free).
#pragma once

#include <string>

#include "common/h5.hpp"
#include "trainer/downscaler.hpp"

namespace finecast::trainer::format {

// Layout: root attributes format, format_version, step, ...; groups
//   /options (ModelOptions as attributes), /train_options (TrainOptions as attributes),
//   /model/<tensor>, /ema/<tensor>, /optimizer/exp_avg/<tensor>, /optimizer/exp_avg_sq/<tensor>,
//   /normalisation/{context_count, context_sum, context_sumsq, residual_count, residual_sumsq,
//   fine_sumsq (optional: written since the residual scale's floor follows the field)},
//   /rng/state (uint8 generator state), /metadata (user string attributes),
//   /validation (attributes: best_score, best_step, sessions_without_improvement,
//   sessions_since_reduction, lr_scale, stopped, sessions; version 2), and the caller's typed
//   attribute groups (CheckpointGroups: the plugin's /conditioning, /run and /sampling).

/// How checkpoint files report failures: as CheckpointError, the message starting with the path.
inline const h5::Reporting kCheckpointReporting{ErrorCode::kCheckpoint, ""};

/// Throws CheckpointError unless `f` is a finecast checkpoint of a readable format version.
void check_header(const h5::File& f);
void write_model_options(h5::File& f, const ModelOptions& o);
ModelOptions read_model_options(const h5::File& f);
void write_train_options(h5::File& f, const TrainOptions& o);
TrainOptions read_train_options(const h5::File& f);
/// "" when equal, else one "key: file has X, this model has Y" per difference, joined by "; ".
std::string describe_differences(const ModelOptions& file, const ModelOptions& model);

}  // namespace finecast::trainer::format
