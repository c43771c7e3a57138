// SPDX-License-Identifier: BSD-3-Clause
#include "plugin/comin_plugin/output.hpp"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>

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
}  // namespace

Output::Output(std::string path, const coupling::OutputGrid& grid, const std::string& var,
               const coupling::VarAttributes& attrs, int members, std::map<std::string, std::string> global_attrs,
               bool append, const std::string& first_datetime, const coupling::WriterOptions& options)
    : path_(std::move(path)) {
  if (append && access(path_.c_str(), F_OK) == 0) {
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
    std::string stamp = first_datetime;
    std::replace(stamp.begin(), stamp.end(), ':', '-');
    const size_t dot = path_.rfind(".nc");
    path_ = (dot == std::string::npos ? path_ : path_.substr(0, dot)) + "_" + stamp + ".nc";
    log::info("This run's samples go to " + path_);
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
                                      !run.resumed_from.empty(), datetime, options);
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
