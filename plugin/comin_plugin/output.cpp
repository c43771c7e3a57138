// SPDX-License-Identifier: BSD-3-Clause
#include "plugin/comin_plugin/output.hpp"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <utility>

#include "common/log.hpp"
#include "coupling/grid/patches.hpp"

namespace finecast::plugin {

namespace {
/// Checkpoint paths are stored absolute: the output is read from elsewhere.
std::string absolute_checkpoint(const std::string& path) {
  std::error_code ec;
  const auto abs = std::filesystem::absolute(path, ec);
  return ec || path.rfind("none", 0) == 0 ? path : abs.lexically_normal().string();
}

/// Where a run writes when the file at `path` is kept: "<stem>_<first_datetime>.nc" (':' as
/// '-'), or with "_2", "_3", ... before ".nc" when that names a file too.
std::string kept_output_path(const std::string& path, const std::string& first_datetime) {
  std::string stamp = first_datetime;
  std::replace(stamp.begin(), stamp.end(), ':', '-');
  const size_t dot = path.rfind(".nc");
  const std::string stem = (dot == std::string::npos ? path : path.substr(0, dot)) + "_" + stamp;
  std::string out = stem + ".nc";
  for (int k = 2; access(out.c_str(), F_OK) == 0; ++k) out = stem + "_" + std::to_string(k) + ".nc";
  return out;
}
}  // namespace

Output::Output(std::string path, const coupling::OutputGrid& grid, const std::string& var,
               const coupling::VarAttributes& attrs, int members, std::map<std::string, std::string> global_attrs,
               ExistingOutput existing, const std::string& first_datetime, const coupling::WriterOptions& options)
    : path_(std::move(path)) {
  const bool exists = existing != ExistingOutput::kReplace && access(path_.c_str(), F_OK) == 0;
  if (exists && existing == ExistingOutput::kContinue) {
    try {
      auto writer = std::make_unique<coupling::EnsembleWriter>(coupling::EnsembleWriter::Append{}, path_, var, members,
                                                               grid.n_cells());
      if (writer->last_datetime().empty() || writer->last_datetime() < first_datetime) {
        log::info("Appending to " + path_ + " (" + std::to_string(writer->steps_written()) + " records, the last at " +
                  writer->last_datetime() + ")");
        writer_ = std::move(writer);
        return;
      }
      log::warning(path_ + " ends at " + writer->last_datetime() + ", not before this run's first sampling at " +
                   first_datetime + ": it is kept as it is");
    } catch (const std::exception& e) {
      log::warning(std::string("cannot continue the output: ") + e.what() + "; it is kept as it is");
    }
  }
  if (exists) {
    const std::string kept = std::exchange(path_, kept_output_path(path_, first_datetime));
    log::info(existing == ExistingOutput::kKeep
                  ? kept + " exists and this run starts fresh: it is kept, and this run's samples go to " + path_
                  : "This run's samples go to " + path_);
  }
  if (auto it = global_attrs.find("finecast_checkpoint"); it != global_attrs.end())
    it->second = absolute_checkpoint(it->second);
  writer_ = std::make_unique<coupling::EnsembleWriter>(path_, grid, var, attrs, members, global_attrs,
                                                       "proleptic_gregorian", options);
}

void Output::set_checkpoint(const std::string& path) {
  try {
    writer_->set_global_attribute("finecast_checkpoint", absolute_checkpoint(path));
  } catch (const std::exception& e) {  // the checkpoint is written; only its mention is missing
    log::warning(std::string("cannot record the checkpoint in the output: ") + e.what());
  }
}

void Output::add_history(const std::string& text) {
  try {
    writer_->add_history(text);
  } catch (const std::exception& e) {  // the records matter, the history line does not
    log::warning(std::string("cannot add to the output's history: ") + e.what());
  }
}

void Output::close() { writer_->close(); }

void Output::publish() noexcept {
  try {
    close();
    log::info("Output written: " + path_);
  } catch (const std::exception& e) {
    log::error(std::string("publishing the output: ") + e.what());
  }
}

std::unique_ptr<Output> open_run_output(const std::string& path, const coupling::OutputGrid& grid,
                                        const std::string& var, const coupling::VarAttributes& attrs, int members,
                                        std::map<std::string, std::string> global_attrs,
                                        const coupling::WriterOptions& options, const std::string& datetime,
                                        const RunProvenance& run) {
  auto out = std::make_unique<Output>(path, grid, var, attrs, members, std::move(global_attrs),
                                      run.resumed_from.empty() ? ExistingOutput::kKeep : ExistingOutput::kContinue,
                                      datetime, options);
  out->add_history((run.command.empty() ? std::string("(the host's command is unknown)") : run.command) +
                   ": finecast samples from " + datetime +
                   (run.resumed_from.empty() ? std::string(", a fresh start") : ", resumed from " + run.resumed_from));
  return out;
}

std::string process_command_line() {
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  std::string line, arg;
  while (std::getline(in, arg, '\0')) {
    if (arg.find_first_of(" \t'\"\\$") != std::string::npos || arg.empty()) {
      std::string quoted = "'";
      for (char ch : arg) quoted += ch == '\'' ? std::string("'\\''") : std::string(1, ch);
      arg = quoted + "'";
    }
    line += (line.empty() ? "" : " ") + arg;
  }
  return line;
}

void write_patch_record(Output& out, const coupling::PatchMap& map, const std::string& datetime, const float* samples,
                        int members, const float* coarse, const float* host_field) {
  const int64_t n = map.n_coarse, P = map.patch_size, n_fine = map.n_fine;
  const float nan = std::numeric_limits<float>::quiet_NaN();
  std::vector<float> patch(static_cast<size_t>(n * P)), by_cell(static_cast<size_t>(members * n_fine), nan);
  for (int m = 0; m < members; ++m) {
    for (int64_t c = 0; c < n; ++c) {
      const float* src = samples + (c * members + m) * P;
      std::copy(src, src + P, patch.data() + c * P);
    }
    coupling::scatter_patches(map, patch.data(), by_cell.data() + m * n_fine);
  }
  std::vector<float> coarse_on_fine(static_cast<size_t>(n_fine), nan);
  for (int64_t c = 0; c < n; ++c)
    for (int64_t k = 0; k < P; ++k) coarse_on_fine[map.fine_of_patch[c * P + k]] = coarse[c];
  out.begin(datetime, host_field != nullptr);
  out.put(0, n_fine, by_cell.data(), coarse_on_fine.data(), host_field);
  out.end();
}

std::map<std::string, std::string> output_attributes(const coupling::PatchMap& map, const std::string& checkpoint,
                                                     const trainer::SampleOptions& sampling) {
  std::map<std::string, std::string> attrs{{"finecast_checkpoint", checkpoint},
                                           {"finecast_sampling", sampling_text(sampling)}};
  if (map.kind == coupling::PatchMap::Kind::kLatLonBlocks)
    attrs["finecast_block"] = std::to_string(std::lround(std::sqrt(static_cast<double>(map.patch_size))));
  return attrs;
}

}  // namespace finecast::plugin
