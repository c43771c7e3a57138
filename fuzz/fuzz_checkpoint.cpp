// SPDX-License-Identifier: BSD-3-Clause
// libFuzzer target: checkpoint verification and restore (trainer/checkpoint.hpp verify_checkpoint,
// Downscaler::restore) on the input written to a file, with the small model of the seed corpus
// (fuzz/make_seed_checkpoint.cpp). Both may only throw CheckpointError; a failed restore leaves
// the model unchanged.
#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include "common/error.hpp"
#include "fuzz/fuzz_util.hpp"
#include "fuzz/seed_model.hpp"
#include "trainer/checkpoint.hpp"
#include "trainer/downscaler.hpp"

namespace ft = finecast::trainer;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static finecast::fuzz::InputFile file(".h5");
  static ft::Downscaler model(finecast::fuzz::seed_model(), finecast::fuzz::seed_training(), "cpu");
  if (!file.write(data, size)) return 0;
  try {
    ft::verify_checkpoint(file.path());
  } catch (const finecast::CheckpointError&) {
  }
  const int64_t step = model.step();
  try {
    model.restore(file.path());
  } catch (const finecast::CheckpointError&) {
    if (model.step() != step) {
      std::fprintf(stderr, "a failed restore changed the model\n");
      std::abort();
    }
  }
  return 0;
}
