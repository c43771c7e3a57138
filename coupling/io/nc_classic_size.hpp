// SPDX-License-Identifier: BSD-3-Clause
// Expected size of a classic-format NetCDF file, from its header (to detect truncation).
#pragma once

#include <cstdint>
#include <string>

namespace finecast::coupling {

/// The number of bytes a classic (CDF-1), 64-bit-offset (CDF-2) or CDF-5 file needs to hold all
/// the data its header declares, or -1 when the file is not in one of these formats (NetCDF-4
/// files are HDF5, which detects truncation itself) or its record count is "streaming".
/// The NetCDF library reads zeros past the end of a truncated classic file without an error;
/// comparing this number with the file size turns that into a clear IoError.
int64_t nc_classic_expected_size(const std::string& path);

/// "" unless the file is classic, 64-bit-offset or CDF-5 and its header declares more than the
/// file holds (a name, an attribute's values or a list longer than the rest of the file) or a
/// string attribute or variable (no classic type); then what and where, for an error message.
/// The NetCDF library allocates what a header declares before reading it, and netCDF 4.9
/// divides by zero for a string variable, so a damaged header must be refused before nc_open.
std::string nc_classic_header_damage(const std::string& path);

/// "" unless the file is classic, 64-bit-offset or CDF-5 and shorter than its header says (the
/// library reads zeros past the end without an error); then the two sizes, for an error message.
std::string nc_classic_truncation(const std::string& path);

}  // namespace finecast::coupling
