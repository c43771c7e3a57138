// SPDX-License-Identifier: BSD-3-Clause
// CF-compliant NetCDF-4 output of downscaled ensembles, written atomically.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/atomic_file.hpp"
#include "coupling/io/nc_metadata.hpp"

namespace finecast::coupling {

/// Writes var(time, member, ncells) for ICON grids or var(time, member, y, x) for lat-lon ones,
/// with the input's coordinates and attributes, a `member` dimension and an unlimited `time`
/// dimension that grows by one per write(). Global attributes: Conventions, source and
/// finecast_version (FINECAST_VERSION), history, finecast_checkpoint ("none" unless given in
/// global_attrs), then every entry of global_attrs. The file is written as "<path>.tmp" and
/// renamed to `path` by close(); until then a previous file at `path` is untouched.
class EnsembleWriter {
 public:
  /// `calendar` is the CF calendar of the model's dates. Throws IoError naming the file.
  EnsembleWriter(const std::string& path, const OutputGrid& grid, const std::string& var,
                 const VarAttributes& attrs, int members,
                 const std::map<std::string, std::string>& global_attrs,
                 const std::string& calendar = "proleptic_gregorian");
  /// Without close() (an exception, an interrupted run) the partial "<path>.tmp" is kept for
  /// inspection and `path` is left as it was; a warning names both. Never throws.
  ~EnsembleWriter();
  EnsembleWriter(const EnsembleWriter&) = delete;
  EnsembleWriter& operator=(const EnsembleWriter&) = delete;

  /// Appends one time step: members_by_cell is [members][n_cells] (NaN = missing), and
  /// coarse_on_fine (optional, [n_cells]) the coarse field on the fine grid, stored as
  /// "<var>_coarse". `datetime` is ISO 8601; when the first one is not a date, time holds the
  /// write index instead and every later one must not be a date either. host_field (optional,
  /// [n_cells]) is the host's own fine field at that time, stored as "<var>_host" (the truth,
  /// for evaluation and figures). A write with the same `datetime` as the previous one replaces
  /// that record (the newer data win) instead of adding a second record with the same time.
  void write(const std::string& datetime, const float* members_by_cell, const float* coarse_on_fine = nullptr,
             const float* host_field = nullptr);
  /// Flushes, closes and atomically publishes the file. Idempotent.
  void close();

  const std::string& path() const { return file_.path(); }
  int64_t steps_written() const { return steps_; }
  /// `datetime` of the latest record ("" before the first write).
  const std::string& last_datetime() const { return last_datetime_; }
  int64_t n_cells() const { return n_cells_; }

 private:
  std::string context() const;
  int define_companion(const std::string& suffix, const std::string& long_name);
  void put_companion(int varid, const std::string& suffix, const float* values, size_t record);

  AtomicFile file_;
  std::string var_, calendar_;
  int ncid_ = -1, varid_ = -1, coarse_varid_ = -1, host_varid_ = -1, time_varid_ = -1;
  int members_ = 0;
  int64_t n_cells_ = 0, steps_ = 0;
  std::string last_datetime_;  ///< `datetime` of the latest record
  std::vector<int> spatial_dimids_;
  std::vector<size_t> spatial_shape_;
  int time_dimid_ = -1;
  bool dated_ = false;
  std::string time_units_;
  std::vector<float> scratch_;
  bool closed_ = false;
};

}  // namespace finecast::coupling
