// SPDX-License-Identifier: BSD-3-Clause
#include "plugin/comin_plugin/placement.hpp"

#include <algorithm>

#include "common/log.hpp"

namespace finecast::plugin {
namespace {

bool is_cuda(const std::string& device) { return device.rfind("GPU-", 0) == 0 || device.rfind("cuda", 0) == 0; }

}  // namespace

PlacementReport placement_report(const std::vector<RankPlacement>& ranks, double memory_fraction) {
  PlacementReport report;
  for (size_t t = 0; t < ranks.size(); ++t) {
    const RankPlacement& me = ranks[t];
    if (me.trainer < 0) continue;
    // The host ranks on this trainer's node, and those of them that see the same GPUs (with a
    // GPU host, each of them may run on the trainer's GPU).
    std::vector<int> on_node, same_gpus;
    for (size_t r = 0; r < ranks.size(); ++r) {
      if (ranks[r].external || ranks[r].node != me.node) continue;
      on_node.push_back(static_cast<int>(r));
      if (ranks[r].visible == me.visible) same_gpus.push_back(static_cast<int>(r));
    }
    const bool cuda = is_cuda(me.device);
    std::string line = "Placement: trainer " + std::to_string(me.trainer) + " (rank " + std::to_string(t) +
                       (me.external ? ", finecast-trainer" : ", a host rank") + ") on node " + me.node + ": device " +
                       me.device;
    if (cuda)
      line += " (CUDA_VISIBLE_DEVICES " + me.visible + "), at most " +
              std::to_string(static_cast<int>(memory_fraction * 100 + 0.5)) + "% of its memory";
    line += on_node.empty() ? std::string("; no host rank on its node")
                            : "; host rank(s) on its node: " + log::rank_ranges(on_node);
    if (cuda && !same_gpus.empty()) line += ", seeing the same GPUs: " + log::rank_ranges(same_gpus);
    report.info.push_back(line);
    if (cuda && !same_gpus.empty())
      report.warnings.push_back(
          "trainer " + std::to_string(me.trainer) + " on GPU " + me.device + " of node " + me.node +
          " shares it with host rank(s) " + log::rank_ranges(same_gpus) +
          ": a host model on GPUs competes with it for the GPU's memory and time (the trainer may hold " +
          std::to_string(static_cast<int>(memory_fraction * 100 + 0.5)) +
          "% of its memory, train.device_memory_fraction). Give the trainers GPUs of their own: train.placement: "
          "external with finecast-trainer processes on other GPUs (docs/slurm.md), or a CUDA_VISIBLE_DEVICES / "
          "train.gpu_ids that names a GPU no host rank uses");
  }
  return report;
}

}  // namespace finecast::plugin
