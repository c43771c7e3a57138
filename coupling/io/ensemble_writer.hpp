// SPDX-License-Identifier: BSD-3-Clause
// CF-compliant NetCDF output of downscaled ensembles, each record on disk when write() returns.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "coupling/io/nc_metadata.hpp"

namespace finecast::coupling {

/// The file format of the ensemble output (config key output.format).
enum class OutputFormat {
  kNetcdf4,  ///< NetCDF-4 (HDF5): chunked per record, member and block of cells, shuffle + deflate
  kCdf5,     ///< CDF-5 (NetCDF "64-bit data"): uncompressed, each record durable as soon as it is synced
};

/// How the output is stored and what its time axis counts from.
struct WriterOptions {
  OutputFormat format = OutputFormat::kNetcdf4;
  int deflate = 1;  ///< zlib level 0..9 of every variable (NetCDF-4 only); 0 = no compression
  /// ISO 8601 date `time` counts from (the experiment start: "seconds since <time_origin>");
  /// "" or no date = the first record's time.
  std::string time_origin;
};

/// Writes var(time, realization, ncells) for ICON grids or var(time, realization, y, x) for
/// lat-lon ones, with the grid's coordinates, cell bounds, grid mapping and identity
/// (OutputGrid), the input's units/standard_name/long_name, a CF ensemble dimension
/// `realization` (standard_name realization) and an unlimited `time` dimension that grows by one
/// per write(). Each record also stores "<var>_mean", the ensemble mean (cell_methods
/// "realization: mean"). Global attributes: Conventions, source and finecast_version
/// (FINECAST_VERSION), history, grid_file_uri, uuidOfHGrid and number_of_grid_used (ICON, when
/// known), finecast_checkpoint ("none" unless given in global_attrs), then every entry of
/// global_attrs (which may replace source). The file is NetCDF-4 or CDF-5 (WriterOptions; see
/// docs/output.md) under its final name from the start, and every record is synced to disk before
/// write() returns: readers see the records of a running job, and a job that is killed, or whose
/// disk fills up, keeps every record written before (a previous file at `path` is replaced).
class EnsembleWriter {
 public:
  /// `calendar` is the CF calendar of the model's dates. Throws IoError naming the file.
  EnsembleWriter(const std::string& path, const OutputGrid& grid, const std::string& var, const VarAttributes& attrs,
                 int members, const std::map<std::string, std::string>& global_attrs,
                 const std::string& calendar = "proleptic_gregorian", const WriterOptions& options = {});
  /// Opens an existing output written by this class (either format) to append to it: a resumed run
  /// continues the file of the runs before it. The variable `var` must have `members` members
  /// and `n_cells` cells; its records, time axis and companions are taken over, and the next
  /// write must be later than the last record. Throws IoError naming the file and the mismatch.
  struct Append {};
  EnsembleWriter(Append, const std::string& path, const std::string& var, int members, int64_t n_cells);
  /// Closes the file when close() was not called (its records are on disk). Never throws.
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
  /// A failed write (a full disk) throws IoError; the file keeps the records written before it
  /// and takes no more writes.
  void write(const std::string& datetime, const float* members_by_cell, const float* coarse_on_fine = nullptr,
             const float* host_field = nullptr);
  /// One record in parts, for writers that hold a chunk of cells at a time (the plugin's trainer
  /// ranks): begin() the record (its time; whether coarse/host companions come), put() cells
  /// first_cell..first_cell+count-1 (lat-lon: whole rows, see chunk_alignment) any number of
  /// times, end() (synced to disk). members is [members][count]; coarse and host [count] or
  /// nullptr. write() is begin, one put of every cell, end.
  void begin(const std::string& datetime, bool with_coarse, bool with_host);
  void put(int64_t first_cell, int64_t count, const float* members, const float* coarse, const float* host);
  void end();
  /// Between begin() and end(): how many of the record's member values were masked (non-finite
  /// or implausible, written as missing), in the 1-D variable <var>_masked(time).
  void set_masked(int64_t count);
  /// Cells per row of the grid (lat-lon), 1 on ICON: chunks start and end at multiples of it.
  int64_t chunk_alignment() const;

  /// Sets (or replaces) a global text attribute of the open file and syncs it to disk, e.g.
  /// finecast_checkpoint once a checkpoint is written. Throws IoError naming the file.
  void set_global_attribute(const std::string& name, const std::string& value);
  /// Adds the line "<UTC now>: <text>" to the global history attribute (the NCO/CDO
  /// convention: one line per program that wrote the file), e.g. each run of a restart chain
  /// that continues the file. Throws IoError naming the file.
  void add_history(const std::string& text);
  /// Closes the file. Idempotent.
  void close();
  /// The ensemble mean of the latest write, [n_cells] (NaN where no member has a value).
  const std::vector<float>& last_mean() const { return mean_; }

  const std::string& path() const { return path_; }
  int64_t steps_written() const { return steps_; }
  /// `datetime` of the latest record ("" before the first write).
  const std::string& last_datetime() const { return last_datetime_; }
  int64_t n_cells() const { return n_cells_; }

 private:
  std::string context() const;
  int define_companion(const std::string& suffix, const std::string& long_name, const std::string& cell_methods = "");
  /// Runs file I/O; a failure closes the file with the records written before and rethrows.
  void guarded(const std::function<void()>& io);
  /// NetCDF-4: chunks of one record, one member and a block of cells, compressed (deflate_).
  void set_storage(int varid, bool with_member);
  /// A chunk cache that holds a record's pieces until their chunks are whole.
  void set_chunk_cache(int varid, bool with_member);
  /// NetCDF-4: throws when the disk has no room for a whole record, before any of it is written.
  void check_record_space();
  /// Throws when the disk has no room for `need` more bytes (allocated and given back).
  void check_room(off_t need);
  /// Closes the file without writing more (a failed write): NetCDF-4's HDF5 handles are released
  /// with their descriptors pointed at an in-memory copy, so no flush reaches the disk and none
  /// is left for HDF5's clean-up at exit.
  void discard() noexcept;

  bool netcdf4_ = false;
  int deflate_ = 0;
  std::vector<size_t> chunk_;  ///< chunk of the main variable (time, member, cells...)
  std::string time_origin_;

  std::string path_;
  std::string var_, calendar_;
  int ncid_ = -1, varid_ = -1, coarse_varid_ = -1, host_varid_ = -1, mean_varid_ = -1, time_varid_ = -1;
  int masked_varid_ = -1;  ///< <var>_masked(time), from the first set_masked()
  int members_ = 0;
  int64_t n_cells_ = 0, steps_ = 0;
  std::string last_datetime_;  ///< `datetime` of the latest record
  std::vector<int> spatial_dimids_;
  std::vector<size_t> spatial_shape_;
  int time_dimid_ = -1;
  bool dated_ = false;
  double last_time_ = 0;  ///< time coordinate of the latest record
  std::string time_units_;
  std::vector<float> scratch_, mean_, chunk_mean_;
  // The record between begin() and end().
  bool in_record_ = false, replace_ = false;
  int64_t record_ = 0;
  double record_time_ = 0;
  std::string record_datetime_;
  bool closed_ = false;
  bool broken_ = false;  ///< a write failed: the file was closed with what it had
};

}  // namespace finecast::coupling
