// SPDX-License-Identifier: BSD-3-Clause
// The calling thread's CPU time, for what a part of the work cost its own thread (not the threads
// it starts) whatever else holds the cores.
#pragma once

#include <time.h>

namespace finecast {

/// Seconds of CPU time the calling thread has used (CLOCK_THREAD_CPUTIME_ID).
inline double thread_cpu_seconds() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

}  // namespace finecast
