// SPDX-License-Identifier: BSD-3-Clause
#include "plugin/comin_plugin/guard.hpp"

#include <exception>
#include <new>
#include <string>

#include "comin.h"
#include "common/log.hpp"

namespace finecast::plugin {

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

namespace {

void finish_through_comin(const std::string& why) { comin_plugin_finish("finecast", why.c_str()); }

void (*g_stopper)(const std::string&) = finish_through_comin;

}  // namespace

void set_run_stopper(void (*stopper)(const std::string& why)) { g_stopper = stopper; }

void stop_the_run(const std::string& why) {
  // comin_plugin_finish prints on rank 0 only: log on every rank first.
  log::error(why);
  g_stopper(why);
  throw RunStopped{};
}

void guard(const char* where, const std::function<void()>& fn) noexcept {
  try {
    fn();
  } catch (const RunStopped&) {
  } catch (...) {
    try {
      stop_the_run(std::string(where) + ": " + describe_current_exception());
    } catch (const RunStopped&) {
    }
  }
}

void guard_startup(const char* where, const std::function<void()>& fn) noexcept { guard(where, fn); }

}  // namespace finecast::plugin
