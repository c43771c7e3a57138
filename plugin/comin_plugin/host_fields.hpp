// SPDX-License-Identifier: BSD-3-Clause
// The host's variables the plugin couples: each read field, the static fields and the write-back
// variable, checked against the host's variable list, levels and types, with the cells this rank
// owns.
#pragma once

#include <string>

#include "plugin/comin_plugin/plugin_state.hpp"
#include "plugin/config.hpp"

namespace finecast::plugin {

/// The long_name finecast gives its write-back variable: how the plugin recognises its own
/// variable (a host that hands over an existing field instead keeps that field's metadata).
std::string write_back_marker(const Config& cfg);

/// The fields of `s`'s config, its static fields and its write-back variable, from the host
/// (ComIn) at the coupling entry point, into s.coupling->fields and write_back; the device reader
/// with coupling.device_fields. ConfigError naming the key for a variable the host lacks, of
/// another type, shape or level, or one of the host's own fields named for write-back.
void couple_fields(PluginState& s);

}  // namespace finecast::plugin
