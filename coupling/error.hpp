// SPDX-License-Identifier: BSD-3-Clause
// finecast's error types: one class per cause, each carrying where it was raised.
#pragma once

#include <stdexcept>
#include <string>

namespace finecast {

/// Base of every finecast error; what() is the full user-facing message.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};
/// A config file, key or value is wrong (message names file:line and key path).
class ConfigError : public Error { using Error::Error; };
/// A file cannot be read or written, or its content is not what was expected.
class IoError : public Error { using Error::Error; };
/// An MPI call failed.
class MpiError : public Error { using Error::Error; };
/// A grid is inconsistent (e.g. the refinement hierarchy has unequal patch sizes).
class GridError : public Error { using Error::Error; };
/// A bug in finecast: an invariant that must hold did not.
class InternalError : public Error { using Error::Error; };

namespace detail {
[[noreturn]] void throw_mpi_error(int code, const char* call, const char* file, int line);
[[noreturn]] void throw_nc_error(int code, const char* call, const std::string& context, const char* file, int line);
}  // namespace detail

}  // namespace finecast

/// Turns a failed MPI call into an MpiError naming the call and its MPI error string.
#define CHECK_MPI(call)                                                              \
  do {                                                                               \
    const int finecast_mpi_rc_ = (call);                                             \
    if (finecast_mpi_rc_ != 0)                                                       \
      ::finecast::detail::throw_mpi_error(finecast_mpi_rc_, #call, __FILE__, __LINE__); \
  } while (0)

/// Turns a failed NetCDF-C call into an IoError; `context` names the file and variable.
#define CHECK_NC(call, context)                                                                \
  do {                                                                                         \
    const int finecast_nc_rc_ = (call);                                                        \
    if (finecast_nc_rc_ != 0)                                                                  \
      ::finecast::detail::throw_nc_error(finecast_nc_rc_, #call, (context), __FILE__, __LINE__); \
  } while (0)
