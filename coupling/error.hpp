// SPDX-License-Identifier: BSD-3-Clause
// The coupling layer's checks: failed MPI and NetCDF-C calls become errors of finecast's one
// error family (common/error.hpp, included here for every user of the coupling layer).
#pragma once

#include <string>

#include "common/error.hpp"

namespace finecast {

namespace detail {
[[noreturn]] void throw_mpi_error(int code, const char* call, const char* file, int line);
[[noreturn]] void throw_nc_error(int code, const char* call, const std::string& context, const char* file, int line);
}  // namespace detail

}  // namespace finecast

/// Turns a failed MPI call into an MpiError naming the call and its MPI error string.
#define CHECK_MPI(call)                                                                                          \
  do {                                                                                                           \
    const int finecast_mpi_rc_ = (call);                                                                         \
    if (finecast_mpi_rc_ != 0) ::finecast::detail::throw_mpi_error(finecast_mpi_rc_, #call, __FILE__, __LINE__); \
  } while (0)

/// Turns a failed NetCDF-C call into an IoError; `context` names the file and variable.
#define CHECK_NC(call, context)                                                                  \
  do {                                                                                           \
    const int finecast_nc_rc_ = (call);                                                          \
    if (finecast_nc_rc_ != 0)                                                                    \
      ::finecast::detail::throw_nc_error(finecast_nc_rc_, #call, (context), __FILE__, __LINE__); \
  } while (0)
