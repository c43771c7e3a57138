// SPDX-License-Identifier: BSD-3-Clause
// The time steps finecast-replay plays: the steps of one or many NetCDF files in file order,
// restricted to a range and a stride.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "coupling/io/field_reader.hpp"
#include "host/replay/run_config.hpp"

namespace finecast::host::replay {

/// Expands file names and glob patterns (each pattern's matches sorted); throws ConfigError
/// naming a pattern that matches nothing.
std::vector<std::string> expand_files(const std::vector<std::string>& patterns, const std::string& context);

/// The selected steps of the replayed variables. Reads one step of one variable at a time.
class ReplayInput {
 public:
  /// Opens every file, checks that every variable has the same spatial shape in every file and
  /// the same number of steps as the first variable of its file, and selects the steps of the
  /// configured range. Throws ConfigError / IoError naming the file, variable or key.
  explicit ReplayInput(const ReplayRunConfig& config);
  ~ReplayInput();

  const std::vector<std::string>& files() const { return files_; }
  /// Values per step (cells of the global field).
  int64_t n_values() const { return n_values_; }
  /// {ny, nx} or {n_cells}.
  const std::vector<size_t>& spatial_shape() const { return shape_; }
  coupling::FieldReader::GridKind grid_kind() const { return kind_; }
  /// Steps in all files, and the selected ones (one replay epoch).
  int64_t n_steps_total() const { return static_cast<int64_t>(steps_.size()); }
  int64_t n_selected() const { return static_cast<int64_t>(selected_.size()); }
  /// Model time of selected step i: the files' ISO 8601 date, or the step index when the files
  /// have no time coordinate.
  const std::string& datetime(int64_t i) const;
  /// Seconds between the first two selected steps (0 when undated or a single step).
  double step_seconds() const { return step_seconds_; }
  /// Units, long and standard name of variable v (index into config.variables), as the first
  /// file has them.
  const coupling::VarAttributes& attributes(int v) const { return attributes_.at(v); }
  /// Reads selected step i of variable v (index into config.variables) into out[n_values()];
  /// returns how many values lay outside the variable's valid range and became missing
  /// (FieldReader::read).
  int64_t read(int64_t i, int v, float* out);
  /// Values of variable v made missing for lying outside its valid range, in all reads so far.
  int64_t out_of_range(int v) const { return out_of_range_.at(v); }
  /// Variable v's range checks in words (FieldReader::valid_range_text of the file read last).
  std::string valid_range_text(int v) const;

 private:
  struct Step {
    int file;
    int64_t t;  ///< step within its file
    std::string datetime;
  };
  void open_file(int file);

  std::vector<ReplayVariable> variables_;
  std::vector<std::string> files_;
  std::vector<Step> steps_;
  std::vector<int64_t> selected_;
  int64_t n_values_ = 0;
  std::vector<size_t> shape_;
  std::vector<coupling::VarAttributes> attributes_;
  coupling::FieldReader::GridKind kind_ = coupling::FieldReader::GridKind::kLatLon;
  double step_seconds_ = 0;
  int open_file_ = -1;
  std::vector<std::unique_ptr<coupling::FieldReader>> readers_;  ///< one per variable, of open_file_
  std::vector<int64_t> out_of_range_;                            ///< per variable, all files
};

}  // namespace finecast::host::replay
