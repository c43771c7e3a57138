// SPDX-License-Identifier: BSD-3-Clause
// Where the trainers run beside the host: the lead trainer logs each trainer's device and the host
// ranks that share its node and GPU, and warns when a trainer shares a GPU with a host rank (a
// GPU model runs one rank per GPU, and a trainer on that rank's GPU competes for its memory).
#pragma once

#include <string>
#include <vector>

namespace finecast::plugin {

/// One rank of the plugin's communicator, as the placement report sees it.
struct RankPlacement {
  std::string node;       ///< MPI_Get_processor_name
  std::string visible;    ///< CUDA_VISIBLE_DEVICES ("*" when unset: every GPU of the node)
  std::string device;     ///< a trainer's device: "cpu", or a CUDA device's UUID ("" = not a trainer)
  int trainer = -1;       ///< trainer index (-1 = not a trainer)
  bool external = false;  ///< a finecast-trainer process, not a host rank
};

/// The report of `ranks` (index = rank): one info line per trainer, and one warning per trainer on
/// a CUDA device that host ranks on its node can see too (the same CUDA_VISIBLE_DEVICES). A pure
/// function of its arguments, so that it is tested without GPUs.
struct PlacementReport {
  std::vector<std::string> info, warnings;
};
PlacementReport placement_report(const std::vector<RankPlacement>& ranks, double memory_fraction);

}  // namespace finecast::plugin
