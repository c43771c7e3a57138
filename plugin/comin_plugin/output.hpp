// SPDX-License-Identifier: BSD-3-Clause
// What a sampling step writes: the ensemble on the fine grid (NetCDF), and its mean.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "coupling/grid/patch_map.hpp"
#include "coupling/io/ensemble_writer.hpp"
#include "coupling/io/nc_metadata.hpp"
#include "trainer/options.hpp"

namespace finecast::plugin {

/// What an Output does with a file that is already at its path.
enum class ExistingOutput {
  kReplace,   ///< replaces it (finecast-downscale: its command names the file to write)
  kKeep,      ///< keeps it and writes "<stem>_<first_datetime>.nc" (a plugin run that starts fresh)
  kContinue,  ///< continues it when it can (a resumed run), else keeps it as kKeep does
};

/// The run's NetCDF output, on the lead trainer rank: records arrive in pieces of cells (from
/// every trainer rank's patches) and go to disk as they come.
class Output {
 public:
  /// `grid` describes the whole fine field (in global cell order); `global_attrs` go into the
  /// file (finecast_checkpoint made absolute). An existing file at `path` is treated as
  /// `existing` says: continued (kContinue) when it has the same layout and its last record is
  /// earlier than `first_datetime`; otherwise kept, and the new file is named
  /// "<stem>_<first_datetime>.nc" (with "_2", "_3", ... before ".nc" when that exists too).
  Output(std::string path, const coupling::OutputGrid& grid, const std::string& var,
         const coupling::VarAttributes& attrs, int members, std::map<std::string, std::string> global_attrs,
         ExistingOutput existing, const std::string& first_datetime, const coupling::WriterOptions& options = {});

  /// One record: begin, then cells first..first+count-1 as many times as it takes (members
  /// [members][count], the coarse condition and the host's field [count] each), then end.
  void begin(const std::string& datetime, bool with_host = true) { writer_->begin(datetime, true, with_host); }
  void put(int64_t first, int64_t count, const float* members, const float* coarse, const float* host) {
    writer_->put(first, count, members, coarse, host);
  }
  void end() { writer_->end(); }
  /// Between begin() and end(): how many member values the record masks (EnsembleWriter::set_masked).
  void set_masked(int64_t count) { writer_->set_masked(count); }
  /// Cells per grid row (lat-lon) or 1: pieces start at multiples of it.
  int64_t alignment() const { return writer_->chunk_alignment(); }

  /// Records the latest checkpoint of the model in the file (global finecast_checkpoint); a
  /// failure (a full disk) is logged as a warning, never thrown.
  void set_checkpoint(const std::string& path);
  /// Adds a line to the file's history (the command of a run that writes to it); a failure is
  /// logged as a warning, never thrown.
  void add_history(const std::string& text);
  /// Closes the file (its records are on disk after every write). Idempotent.
  void close();
  /// The end of a run: closes the file and logs where it is; a failure is logged as an error,
  /// never thrown (the records written before are on disk).
  void publish() noexcept;
  const std::string& path() const { return path_; }
  /// Model time of the latest record ("" before the first write); a write at the same time
  /// replaces that record.
  const std::string& last_datetime() const { return writer_->last_datetime(); }

 private:
  std::string path_;
  std::unique_ptr<coupling::EnsembleWriter> writer_;
};

/// What a plugin run's output says of the run: the host's command line ("" = unknown) and the
/// checkpoint the run resumed from ("" = a fresh start).
struct RunProvenance {
  std::string command;
  std::string resumed_from;
};

/// The output of a plugin run, opened by the lead at the first sampling (`datetime`): a resumed
/// run continues the file of the run before it (ExistingOutput::kContinue), a fresh one keeps an
/// existing file (kKeep), and the file's history gets one line naming the command and where the
/// run started (every run of a restart chain that writes to the file).
std::unique_ptr<Output> open_run_output(const std::string& path, const coupling::OutputGrid& grid,
                                        const std::string& var, const coupling::VarAttributes& attrs, int members,
                                        std::map<std::string, std::string> global_attrs,
                                        const coupling::WriterOptions& options, const std::string& datetime,
                                        const RunProvenance& run);

/// A whole record from patch samples [n_coarse][members][P] (finecast-downscale, which holds
/// every patch): the members and the coarse condition on the fine cells, the host's (or the
/// input's) fine field when given. Cells in no patch stay missing.
void write_patch_record(Output& out, const coupling::PatchMap& map, const std::string& datetime, const float* samples,
                        int members, const float* coarse, const float* host_field);

/// This process's command line (/proc/self/cmdline; arguments with spaces or quotes in single
/// quotes), "" where the system does not tell.
std::string process_command_line();

/// The global attributes of an ensemble output: those finecast-eval reads (the checkpoint and, on
/// lat-lon grids, the block size k: patches are k x k) and how the members were sampled
/// (finecast_sampling: trainer::sampling_text).
std::map<std::string, std::string> output_attributes(const coupling::PatchMap& map, const std::string& checkpoint,
                                                     const trainer::SampleOptions& sampling);

}  // namespace finecast::plugin
