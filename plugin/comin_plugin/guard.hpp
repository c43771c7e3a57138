// SPDX-License-Identifier: BSD-3-Clause
// The C boundary: every ComIn callback runs through guard(), which stops every exception there.
#pragma once

#include <functional>

namespace finecast::plugin {

/// Runs `fn` for entry point `where`. Any exception (finecast's, LibTorch's, yaml-cpp's,
/// std::bad_alloc, or anything else) is logged with the rank and entry point, then handled by
/// the config's on_error: abort (comin_plugin_finish, which ends the run) or disable (log once,
/// mark this rank failed; at the next coupling step all ranks stop working together and the
/// host finishes its time loop). Never throws.
void guard(const char* where, const std::function<void()>& fn) noexcept;

/// Start-up (comin_main, the secondary constructor): errors always stop the run through
/// comin_plugin_finish, before the first time step, whatever on_error says.
void guard_startup(const char* where, const std::function<void()>& fn) noexcept;

}  // namespace finecast::plugin
