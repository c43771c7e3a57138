// SPDX-License-Identifier: BSD-3-Clause
// A trainer rank's set-up: its checkpoint and output places, the grid and its share of the
// patches, the device, the model (fresh or resumed) and the rolling buffer.
#pragma once

#include <memory>

#include "plugin/comin_plugin/plugin_comm.hpp"
#include "plugin/comin_plugin/plugin_state.hpp"
#include "plugin/comin_plugin/rank_layout.hpp"

namespace finecast::plugin {

/// A trainer rank: grid, its share of the patches, device, model (fresh or resumed), buffer.
/// Collective over the trainer ranks.
std::unique_ptr<TrainerState> setup_trainer(PluginState& s, const HostFacts& facts, const NodeLayout& node);

}  // namespace finecast::plugin
