// SPDX-License-Identifier: BSD-3-Clause
// Start-up: the primary constructor (comin_main) and the secondary constructor.
#pragma once

#include <string>

#include "comin.h"

namespace finecast::plugin {

/// comin_main: reads the options string ("CONFIG.yaml [key.path=value ...]"), validates the
/// config, creates the plugin state, requests the write-back variable. A second instance of the
/// plugin in one process is a ConfigError. Returns the coupling entry point.
t_comin_entry_point primary_constructor();

/// EP_SECONDARY_CONSTRUCTOR: communicator, host fields (checked against the host's variable
/// list, levels and types), the gatherer; on the trainer rank the grid, the model (fresh or
/// resumed), the buffer. Errors stop the run (start-up errors always do).
void secondary_constructor();

/// "<dir>/buffer_<step>.h5": the buffer snapshot that belongs to checkpoint "ckpt_<step>.h5".
std::string buffer_path_for_step(const std::string& dir, long long step);

}  // namespace finecast::plugin
