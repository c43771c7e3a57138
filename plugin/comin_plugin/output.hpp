// SPDX-License-Identifier: BSD-3-Clause
// What a sampling step writes: the ensemble on the fine grid (NetCDF), and its mean.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "coupling/grid/patch_map.hpp"
#include "coupling/io/ensemble_writer.hpp"
#include "coupling/io/nc_metadata.hpp"

namespace finecast::plugin {

/// Turns sampled patches into fine fields and appends them to the run's NetCDF output.
class Output {
 public:
  /// `grid` describes the whole fine field (n_fine cells, in global cell order). With `append`
  /// (a resumed run) an existing output of the same layout whose last record is earlier than
  /// `first_datetime` is continued; otherwise a new file is written (an existing one that cannot
  /// be continued is kept, and the new file is named "<stem>_<first_datetime>.nc").
  Output(std::string path, const coupling::PatchMap& map, coupling::OutputGrid grid, std::string var,
         coupling::VarAttributes attrs, int members, std::string checkpoint_used, bool append,
         const std::string& first_datetime);

  /// samples is [n_coarse][members][P] as drawn by the trainer; coarse [n_coarse] the coarse
  /// field they were drawn from; host_field [n_fine] the host's own fine field (stored beside
  /// the ensemble as the truth). Appends one time step and fills `ensemble_mean` [n_fine]
  /// (cells outside every patch are NaN).
  void write(const std::string& datetime, const float* samples, const float* coarse, const float* host_field,
             std::vector<float>& ensemble_mean);

  /// Records the latest checkpoint of the model in the file (global finecast_checkpoint); a
  /// failure (a full disk) is logged as a warning, never thrown.
  void set_checkpoint(const std::string& path);
  /// Closes the file (its records are on disk after every write). Idempotent.
  void close();
  const std::string& path() const { return path_; }
  /// Model time of the latest record ("" before the first write); a write at the same time
  /// replaces that record.
  const std::string& last_datetime() const { return writer_->last_datetime(); }

 private:
  std::string path_;
  const coupling::PatchMap& map_;
  int members_;
  std::unique_ptr<coupling::EnsembleWriter> writer_;
  std::vector<float> patch_scratch_, by_cell_, coarse_on_fine_;
};

}  // namespace finecast::plugin
