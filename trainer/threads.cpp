// SPDX-License-Identifier: BSD-3-Clause
#include "trainer/threads.hpp"

#include <torch/torch.h>

namespace finecast::trainer {

ScopedTorchThreads::ScopedTorchThreads(int n) : previous_(n > 0 ? torch::get_num_threads() : 0) {
  if (n > 0 && n != previous_) torch::set_num_threads(n);
}

ScopedTorchThreads::~ScopedTorchThreads() {
  if (previous_ > 0 && torch::get_num_threads() != previous_) torch::set_num_threads(previous_);
}

int torch_threads() { return torch::get_num_threads(); }

}  // namespace finecast::trainer
