// SPDX-License-Identifier: BSD-3-Clause
#include "plugin/comin_plugin/output.hpp"

#include <cmath>
#include <limits>
#include <map>

#include "coupling/grid/patches.hpp"

namespace finecast::plugin {

namespace {
/// What finecast-eval needs to score the file without being told: the checkpoint and, on
/// lat-lon grids, the block size k (patches are k x k).
std::map<std::string, std::string> output_attributes(const coupling::PatchMap& map, const std::string& checkpoint) {
  std::map<std::string, std::string> attrs{{"finecast_checkpoint", checkpoint}};
  if (map.kind == coupling::PatchMap::Kind::kLatLonBlocks)
    attrs["finecast_block"] = std::to_string(std::lround(std::sqrt(static_cast<double>(map.patch_size))));
  return attrs;
}
}  // namespace

Output::Output(std::string path, const coupling::PatchMap& map, coupling::OutputGrid grid, std::string var,
               coupling::VarAttributes attrs, int members, std::string checkpoint_used)
    : path_(std::move(path)),
      map_(map),
      members_(members),
      writer_(path_, grid, var, attrs, members, output_attributes(map, checkpoint_used)) {}

void Output::write(const std::string& datetime, const float* samples, const float* coarse, const float* host_field,
                   std::vector<float>& ensemble_mean) {
  const int64_t n = map_.n_coarse, P = map_.patch_size, n_fine = map_.n_fine;
  const float nan = std::numeric_limits<float>::quiet_NaN();
  patch_scratch_.resize(static_cast<size_t>(n * P));
  by_cell_.assign(static_cast<size_t>(members_ * n_fine), nan);
  for (int m = 0; m < members_; ++m) {
    for (int64_t c = 0; c < n; ++c) {
      const float* src = samples + (c * members_ + m) * P;
      std::copy(src, src + P, patch_scratch_.data() + c * P);
    }
    coupling::scatter_patches(map_, patch_scratch_.data(), by_cell_.data() + m * n_fine);
  }
  // The coarse field on the fine grid: each fine cell holds its patch's coarse value.
  coarse_on_fine_.assign(static_cast<size_t>(n_fine), nan);
  for (int64_t c = 0; c < n; ++c)
    for (int64_t k = 0; k < P; ++k) coarse_on_fine_[map_.fine_of_patch[c * P + k]] = coarse[c];
  writer_.write(datetime, by_cell_.data(), coarse_on_fine_.data(), host_field);

  ensemble_mean.assign(static_cast<size_t>(n_fine), 0.0f);
  for (int m = 0; m < members_; ++m)
    for (int64_t i = 0; i < n_fine; ++i) ensemble_mean[i] += by_cell_[m * n_fine + i] / members_;
}

void Output::close() { writer_.close(); }

}  // namespace finecast::plugin
