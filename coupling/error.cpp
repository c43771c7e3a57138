// SPDX-License-Identifier: BSD-3-Clause
#include "coupling/error.hpp"

#include <mpi.h>
#include <netcdf.h>

namespace finecast::detail {

void throw_mpi_error(int code, const char* call, const char* file, int line) {
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  if (MPI_Error_string(code, text, &len) != MPI_SUCCESS) len = 0;
  throw MpiError(std::string(call) + " failed: " + std::string(text, static_cast<size_t>(len)) + " (" + file + ":" +
                 std::to_string(line) + ")");
}

void throw_nc_error(int code, const char* call, const std::string& context, const char* file, int line) {
  throw IoError(context + ": " + nc_strerror(code) + " (in " + call + " at " + file + ":" + std::to_string(line) + ")");
}

}  // namespace finecast::detail
