// SPDX-License-Identifier: BSD-3-Clause
// A NetCDF file opened read-only for the lifetime of a scope.
#pragma once

#include <netcdf.h>

#include <string>

#include "common/error.hpp"
#include "coupling/io/input_files.hpp"
#include "coupling/io/nc_classic_size.hpp"

namespace finecast::coupling {

/// Opens `path` read-only and closes it on every path out of the scope. `what` names the
/// file's role in the error (e.g. "ICON grid file"). A damaged classic header and a truncated
/// classic file are refused, as FieldReader refuses them: the NetCDF library reads zeros past the
/// end of a truncated file without an error (finecast-host once ran on a cut grid file, rc 0).
struct NcReadFile {
  int id = -1;
  NcReadFile(const std::string& path, const std::string& what) {
    if (const std::string damage = nc_classic_header_damage(path); !damage.empty())
      throw IoError(what + " '" + path + "' is damaged: " + damage);
    const int rc = nc_open(path.c_str(), NC_NOWRITE, &id);
    if (rc != NC_NOERR) throw IoError("cannot open " + what + " '" + path + "': " + nc_strerror(rc));
    note_input_file(path);
    if (const std::string cut = nc_classic_truncation(path); !cut.empty()) {
      nc_close(id);
      id = -1;
      throw IoError(what + " '" + path + "' is truncated: " + cut);
    }
  }
  ~NcReadFile() {
    if (id >= 0) nc_close(id);
  }
  NcReadFile(const NcReadFile&) = delete;
  NcReadFile& operator=(const NcReadFile&) = delete;
};

}  // namespace finecast::coupling
