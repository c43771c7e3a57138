// SPDX-License-Identifier: BSD-3-Clause
#include "trainer/threads.hpp"

#include <torch/torch.h>

#ifdef _OPENMP
#include <omp.h>
#endif

namespace finecast::trainer {

void set_thread_count(int n) {
  if (n <= 0 || torch::get_num_threads() == n) return;  // (which also runs LibTorch's per-thread set-up first)
#ifdef _OPENMP
  // LibTorch's parallel loops and OpenMP OpenBLAS follow the calling thread's OpenMP count;
  // torch::set_num_threads also recreates a thread pool of LibTorch's own (for kernels finecast
  // does not use) at every call, 8-16 ms each on 2 busy cores, twice per session and sampling.
  omp_set_num_threads(n);
  if (torch::get_num_threads() == n) return;  // else LibTorch has an OpenMP runtime of its own (pip wheels)
#endif
  torch::set_num_threads(n);
}

ScopedTorchThreads::ScopedTorchThreads(int n) : previous_(n > 0 ? torch::get_num_threads() : 0) {
  if (n > 0 && n != previous_) set_thread_count(n);
}

ScopedTorchThreads::~ScopedTorchThreads() {
  if (previous_ > 0 && torch::get_num_threads() != previous_) set_thread_count(previous_);
}

int torch_threads() { return torch::get_num_threads(); }

}  // namespace finecast::trainer
