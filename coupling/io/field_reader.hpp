// SPDX-License-Identifier: BSD-3-Clause
// Reads one field of a NetCDF file one time step at a time (CF lat-lon, rotated pole, ICON).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "coupling/io/cf_time.hpp"
#include "coupling/io/nc_metadata.hpp"
#include "coupling/io/plausibility.hpp"

namespace finecast::coupling {

/// A field of a NetCDF file. Dimensions: an optional time dimension first (the unlimited one,
/// or one named/marked as time), then at most one further non-spatial dimension of size > 1
/// (a level, chosen by `level`), then the spatial dimensions: one cell dimension for ICON
/// unstructured fields (recognised by `coordinates = "clon clat"`, `grid_type = unstructured`,
/// a cell dimension name, or being the only one), else the last two (y, x). Values are
/// unpacked with scale_factor/add_offset; _FillValue, missing_value, values outside
/// valid_min/valid_max/valid_range (and the NetCDF default fill when no _FillValue is set)
/// become NaN. Without valid_* attributes an explicit _FillValue bounds the valid range as the
/// NetCDF User Guide says (a positive fill: values above it are invalid; a negative one: values
/// below it), so 3e38 in a file whose _FillValue is 1e20 is missing, not data. Without
/// valid_* attributes the unpacked values must also lie in the plausible range of the field's
/// units and standard_name (plausible_range(): 1e30 K is no temperature), unless an override
/// (set_plausible_overrides) says otherwise. Values made missing for being out of range or
/// implausible are counted (out_of_range()) and the first read that finds some logs one warning
/// naming the file, variable, step, count, and the first such index and value.
/// A time axis must increase strictly (a repeated or decreasing time is refused at open).
/// Only one time step is in memory at a time.
class FieldReader {
 public:
  enum class GridKind { kLatLon, kRotatedPole, kUnstructured };

  /// Throws IoError naming the file and variable: file missing/unreadable/truncated, variable
  /// missing (the message lists the variables there are), dimensions not as described above,
  /// level out of range, unknown time units, a time axis that does not increase strictly (the
  /// file, time variable and step named).
  FieldReader(const std::string& path, const std::string& var, int level = 0);
  ~FieldReader();
  FieldReader(FieldReader&&) noexcept;
  FieldReader& operator=(FieldReader&&) noexcept;
  FieldReader(const FieldReader&) = delete;
  FieldReader& operator=(const FieldReader&) = delete;

  const std::string& path() const { return path_; }
  const std::string& var() const { return var_; }
  GridKind grid_kind() const { return kind_; }
  /// Time steps (1 when the field has no time dimension).
  int64_t n_times() const { return n_times_; }
  /// Values per time step: the product of the spatial shape.
  int64_t n_values() const { return n_values_; }
  /// {ny, nx} for lat-lon grids, {n_cells} for unstructured ones.
  std::vector<size_t> spatial_shape() const { return spatial_shape_; }
  std::vector<std::string> spatial_dims() const { return spatial_dims_; }
  /// Levels of the non-spatial, non-time dimension (1 when there is none) and the one read.
  int64_t n_levels() const { return n_levels_; }
  int level() const { return level_; }
  const VarAttributes& attributes() const { return attrs_; }
  bool has_time_axis() const { return time_ != nullptr; }
  /// The time axis's CF calendar ("" = standard, also without a time axis).
  std::string calendar() const { return time_ ? time_->calendar() : std::string(); }

  /// ISO 8601 date of step t from the CF time coordinate; the step index ("0", "1", ...) when
  /// the field has no time coordinate. Throws IoError when t is out of range.
  std::string time_string(int64_t t) const;
  /// Reads step t into out[n_values()] (row-major [y][x] or cell order). Returns how many of
  /// its values lay outside the valid range (or beyond set_max_abs) and became missing; values
  /// equal to _FillValue / missing_value are missing without being counted. Throws IoError.
  int64_t read(int64_t t, float* out);

  /// Values whose magnitude (after unpacking) exceeds `bound` become missing and are counted
  /// like values outside the valid range: a plausibility bound for files without valid_*
  /// attributes (a config's io.max_abs). <= 0, NaN or infinity: no bound (the default).
  void set_max_abs(double bound);
  /// Values made missing by the range checks in all reads so far.
  int64_t out_of_range() const { return out_of_range_; }
  /// The range checks in words for log lines, e.g. "valid range [0, 400]",
  /// "beyond _FillValue 1e+20", "plausible range [150, 350] (air_temperature in K, ...)",
  /// "|value| > 1000"; "none" when there is none.
  std::string valid_range_text() const;
  /// The plausibility range in force (none() when the file's valid_* attributes decide alone).
  const PlausibleRange& plausible() const { return plausible_; }
  /// One line for a log: the file, variable, how many values the range checks made missing so
  /// far and the first of them (step, index, value); "" when none.
  std::string out_of_range_report() const;

  /// The 1-D coordinates of a lat-lon grid (values and attributes of the coordinate variables
  /// named like the spatial dimensions, the grid mapping of rotated grids), or for unstructured
  /// fields clon/clat (converted to radians) when the file holds them. Throws IoError otherwise
  /// (an ICON data file without clon/clat needs its grid file: use OutputGrid::icon).
  OutputGrid output_grid() const;

 private:
  std::string context() const;
  std::vector<double> read_coord(const std::string& name) const;
  /// The time axis of `n` steps along dimension `dim`, with its CF units when it has some.
  void read_time_axis(const std::string& dim, size_t n);
  /// Units and names; packing; missing values (_FillValue, missing_value, the type's default);
  /// the valid range (valid_range/min/max, else beyond a _FillValue as the NUG says).
  void read_value_attributes(int nc_type);

  std::string path_, var_;
  int ncid_ = -1, varid_ = -1;
  GridKind kind_ = GridKind::kLatLon;
  int n_dims_ = 0, time_dim_pos_ = -1, level_dim_pos_ = -1;
  int64_t n_times_ = 1, n_values_ = 0, n_levels_ = 1;
  int level_ = 0;
  std::vector<size_t> spatial_shape_;
  std::vector<std::string> spatial_dims_;
  std::vector<size_t> start_, count_;
  VarAttributes attrs_;
  double scale_ = 1, offset_ = 0;
  std::vector<double> missing_;  // raw (packed) values that mean "missing"
  double valid_min_, valid_max_;
  std::string range_source_;  // where valid_min_/valid_max_ come from, for valid_range_text()
  double max_abs_ = 0;        // 0 = no bound
  PlausibleRange plausible_;  // from the table or an override; none() with valid_* attributes
  int64_t out_of_range_ = 0;
  int64_t first_bad_step_ = -1, first_bad_index_ = -1;  // the first value the range checks dropped
  double first_bad_value_ = 0;
  std::unique_ptr<CfTime> time_;
  std::vector<double> time_values_;
  std::vector<double> raw_;
};

}  // namespace finecast::coupling
