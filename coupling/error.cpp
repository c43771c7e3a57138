// SPDX-License-Identifier: BSD-3-Clause
#include "coupling/error.hpp"

#include <mpi.h>
#include <netcdf.h>

namespace finecast::detail {
namespace {

/// The library function of a checked call ("nc_put_vara_float" of "nc_put_vara_float(ncid, ...)"):
/// users read the message, so it names what failed, not finecast's source file or expression.
std::string function_of(const char* call) {
  const std::string text = call;
  return text.substr(0, text.find('('));
}

}  // namespace

void throw_mpi_error(int code, const char* call, const char* /*file*/, int /*line*/) {
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  if (MPI_Error_string(code, text, &len) != MPI_SUCCESS) len = 0;
  throw MpiError(function_of(call) + " failed: " + std::string(text, static_cast<size_t>(len)));
}

void throw_nc_error(int code, const char* call, const std::string& context, const char* /*file*/, int /*line*/) {
  throw IoError(context + ": " + nc_strerror(code) + " (" + function_of(call) + ")");
}

}  // namespace finecast::detail
