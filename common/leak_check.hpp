// SPDX-License-Identifier: BSD-3-Clause
// LeakSanitizer around MPI in ASan builds (scripts/sanitize.sh); nothing otherwise. The check
// runs before MPI_Finalize. Open MPI unloads its components in MPI_Finalize, after which the leaks
// they made can no longer be attributed to a library (and so not suppressed as Open MPI's), while
// finecast's own state is released before (the plugin at EP_DESTRUCTOR). The usual check at
// exit does not run after this one.
#pragma once

#if defined(__SANITIZE_ADDRESS__)
#define FINECAST_LEAK_CHECK 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define FINECAST_LEAK_CHECK 1
#endif
#endif

#ifdef FINECAST_LEAK_CHECK
#include <sanitizer/lsan_interface.h>
#endif

namespace finecast {

/// Checks for leaks now (ASan builds; a report ends the process with ASan's exit code).
inline void leak_check_before_mpi_finalize() {
#ifdef FINECAST_LEAK_CHECK
  __lsan_do_leak_check();
#endif
}

/// Allocations made on this thread during its lifetime are not reported as leaks (ASan builds).
/// For MPI_Init only: Open MPI leaks a few strings there from components it loads, selects
/// against and unloads again, whose leaks no suppression can name.
class IgnoreLeaksHere {
 public:
  IgnoreLeaksHere() {
#ifdef FINECAST_LEAK_CHECK
    __lsan_disable();
#endif
  }
  ~IgnoreLeaksHere() {
#ifdef FINECAST_LEAK_CHECK
    __lsan_enable();
#endif
  }
  IgnoreLeaksHere(const IgnoreLeaksHere&) = delete;
  IgnoreLeaksHere& operator=(const IgnoreLeaksHere&) = delete;
};

}  // namespace finecast
