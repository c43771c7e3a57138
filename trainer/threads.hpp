// SPDX-License-Identifier: BSD-3-Clause
// LibTorch's CPU thread count for a stretch of work, restored afterwards. LibTorch's count is the
// OpenMP thread count of the calling thread, which a host model shares: finecast sets it only
// around its own work, so the host's OpenMP settings are as it left them.
#pragma once

namespace finecast::trainer {

/// Sets LibTorch's thread count to `n` (n <= 0: leave it) for its lifetime, then restores the
/// count the calling thread had. Not copyable; use on the thread that does the work.
class ScopedTorchThreads {
 public:
  explicit ScopedTorchThreads(int n);
  ~ScopedTorchThreads();
  ScopedTorchThreads(const ScopedTorchThreads&) = delete;
  ScopedTorchThreads& operator=(const ScopedTorchThreads&) = delete;

 private:
  int previous_ = 0;
};

/// LibTorch's (and OpenMP's) thread count on the calling thread.
int torch_threads();

/// Sets LibTorch's thread count on the calling thread (n <= 0 or the count it has: nothing),
/// through the thread's OpenMP count where LibTorch shares finecast's OpenMP runtime.
void set_thread_count(int n);

}  // namespace finecast::trainer
