// SPDX-License-Identifier: BSD-3-Clause
// Writes the seed checkpoint of the checkpoint fuzz target (fuzz/make_corpus.sh): the small
// model after one epoch on 16 synthetic samples, with metadata.
//   make_seed_checkpoint OUT_DIR
#include <cstdio>
#include <string>
#include <vector>

#include "fuzz/seed_model.hpp"

namespace ft = finecast::trainer;

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s OUT_DIR\n", argv[0]);
    return 2;
  }
  const std::string dir = argv[1];
  ft::Downscaler model(finecast::fuzz::seed_model(), finecast::fuzz::seed_training(), "cpu");
  const int64_t n = 16, C = 2, P = 4;
  std::vector<float> context(n * C), fine(n * P);
  for (int64_t i = 0; i < n; ++i) {
    context[i * C] = static_cast<float>(i % 5);
    context[i * C + 1] = static_cast<float>(i % 3) - 1.0f;
    for (int64_t j = 0; j < P; ++j) fine[i * P + j] = context[i * C] + 0.25f * static_cast<float>(j - 1);
  }
  model.train_epoch({context.data(), fine.data(), nullptr, n});
  model.publish();
  model.save_checkpoint(dir + "/trained.h5", {{"fields", "ts"}, {"datetime", "1979-01-01T02:00:00"}});
  return 0;
}
