// SPDX-License-Identifier: BSD-3-Clause
#include "plugin/comin_plugin/guard.hpp"

#include <exception>
#include <string>

#include "comin.h"
#include "common/log.hpp"
#include "plugin/comin_plugin/plugin_context.hpp"

namespace finecast::plugin {
namespace {

std::string describe_current_exception() {
  try {
    throw;
  } catch (const std::bad_alloc&) {
    return "out of memory (std::bad_alloc)";
  } catch (const std::exception& e) {
    return e.what();
  } catch (...) {
    return "unknown exception";
  }
}

void finish(const char* where, const std::string& what) {
  // comin_plugin_finish prints on rank 0 only: log on every rank first.
  const std::string text = std::string(where) + ": " + what;
  log::error(text);
  comin_plugin_finish("finecast", text.c_str());
}

}  // namespace

void guard(const char* where, const std::function<void()>& fn) noexcept {
  PluginContext& ctx = plugin_context();
  try {
    fn();
  } catch (...) {
    const std::string what = describe_current_exception();
    if (ctx.config.on_error == "disable") {
      // The ranks agree on stopping at the start of the next coupling step (see
      // PluginContext::failed), so that no rank is left waiting in a collective.
      ctx.failed = true;
      log::error(std::string(where) + ": " + what);
      log::error("finecast stops working for the rest of the run (on_error: disable); the simulation continues");
      return;
    }
    finish(where, what);
  }
}

void guard_startup(const char* where, const std::function<void()>& fn) noexcept {
  try {
    fn();
  } catch (...) {
    finish(where, describe_current_exception());
  }
}

}  // namespace finecast::plugin
