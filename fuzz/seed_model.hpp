// SPDX-License-Identifier: BSD-3-Clause
// The small model of the checkpoint fuzz target and its seed checkpoints.
#pragma once

#include "trainer/downscaler.hpp"

namespace finecast::fuzz {

inline trainer::ModelOptions seed_model() {
  trainer::ModelOptions o;
  o.context_size = 2;
  o.patch_size = 4;
  o.hidden = 4;
  o.depth = 1;
  o.time_embedding = 4;
  o.diffusion_steps = 4;
  return o;
}

inline trainer::TrainOptions seed_training() {
  trainer::TrainOptions t;
  t.batch_size = 4;
  t.warmup_steps = 1;
  t.seed = 1;
  return t;
}

}  // namespace finecast::fuzz
