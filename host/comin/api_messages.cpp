// SPDX-License-Identifier: BSD-3-Clause
// comin.h: stopping the run, printing, and the error state.
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "host/comin/host_state.hpp"

namespace ch = finecast::host::comin;
using ch::Host;

namespace finecast::host::comin {

const char* error_message(t_comin_error_code code) {
  switch (code) {
    case COMIN_SUCCESS:
      return "Success";
    case COMIN_INFO:
      return "Info";
    case COMIN_WARNING:
      return "Warning";
    case COMIN_ERROR_STATUS:
      return "Error";
    case COMIN_ERROR_CALLBACK_REGISTER_OUTSIDE_PRIMARYCONSTRUCTOR:
      return "Callbacks can be registered only in the primary constructor.";
    case COMIN_ERROR_CALLBACK_COMPLETE:
      return "The callback registration could not be completed.";
    case COMIN_ERROR_CALLBACK_EP_ID_UNKNOWN:
      return "Unknown entry point id.";
    case COMIN_ERROR_DESCRDATA_SET_FCT_GLB2LOC:
      return "No global-to-local index function.";
    case COMIN_ERROR_DESCRDATA_FINALIZE:
      return "The descriptive data could not be released.";
    case COMIN_ERROR_METADATA_SET_OUTSIDE_PRIMARYCONSTRUCTOR:
      return "Metadata can be set only in the primary constructor.";
    case COMIN_ERROR_METADATA_KEY_NOT_FOUND:
      return "No such metadata key.";
    case COMIN_ERROR_METADATA_GET_INSIDE_PRIMARYCONSTRUCTOR:
      return "Metadata cannot be read in the primary constructor.";
    case COMIN_ERROR_SETUP_FINALIZE:
      return "The set-up could not be finalized.";
    case COMIN_ERROR_SETUP_COMIN_ALREADY_INITIALIZED:
      return "ComIn is initialized already.";
    case COMIN_ERROR_PLUGIN_INIT_COMIN_VERSION:
      return "The host and the plugin use incompatible ComIn versions.";
    case COMIN_ERROR_PLUGIN_INIT_PRECISION:
      return "The host and the plugin use different working precisions.";
    case COMIN_ERROR_PLUGIN_INIT_STATE_INITIALIZED:
      return "The plugin's ComIn serves another host state already.";
    case COMIN_ERROR_SETUP_ERRHANDLER_NOT_ASSOCIATED:
      return "The host gave no error handler.";
    case COMIN_ERROR_SETUP_ERRHANDLER_NOT_SET:
      return "No error handler is set.";
    case COMIN_ERROR_SETUP_PRECISION_TEST_FAILED:
      return "The precision check failed.";
    case COMIN_ERROR_VAR_REQUEST_AFTER_PRIMARYCONSTRUCTOR:
      return "Variables can be requested only in the primary constructor.";
    case COMIN_ERROR_VAR_REQUEST_EXISTS_IS_LMODEXCLUSIVE:
      return "The requested variable exists already and is exclusive.";
    case COMIN_ERROR_VAR_REQUEST_EXISTS_REQUEST_LMODEXCLUSIVE:
      return "An exclusive request for a variable that exists already.";
    case COMIN_ERROR_VAR_DESCRIPTOR_NOT_FOUND:
      return "No such variable descriptor.";
    case COMIN_ERROR_VAR_ITEM_NOT_ASSOCIATED:
      return "No such variable.";
    case COMIN_ERROR_FIELD_NOT_ALLOCATED:
      return "The field is not allocated.";
    case COMIN_ERROR_POINTER_NOT_ASSOCIATED:
      return "Invalid (NULL) handle.";
    case COMIN_ERROR_TRACER_REQUEST_NOT_FOR_ALL_DOMAINS:
      return "Tracers must be requested for all domains (id -1).";
    case COMIN_ERROR_VAR_SYNC_DEVICE_MEM_NOT_ASSOCIATED:
      return "No device synchronization.";
    case COMIN_ERROR_VAR_SYNC_HALO_NOT_ASSOCIATED:
      return "No halo synchronization.";
    case COMIN_ERROR_VAR_GET_OUTSIDE_SECONDARY_CONSTRUCTOR:
      return "Variables can be obtained only in the secondary constructor.";
    case COMIN_ERROR_VAR_GET_NO_DEVICE:
      return "The host has no device.";
    case COMIN_ERROR_VAR_GET_VARIABLE_NOT_FOUND:
      return "The host has no such variable.";
    case COMIN_ERROR_VAR_GET_CONTAINER_CAN_NOT_HALO_SYNCHRONIZED:
      return "A container cannot be halo-synchronized.";
    case COMIN_ERROR_VAR_GET_IRREGULAR_VAR_CAN_NOT_HALO_SYNCHRONIZED:
      return "An irregular variable cannot be halo-synchronized.";
    case COMIN_ERROR_VAR_SYNC_HALO_NOT_SUPPORTED_ZAXIS:
      return "Halo synchronization does not support this vertical axis.";
    case COMIN_ERROR_VAR_METADATA_INCONSISTENT_TYPE:
      return "The metadata value has another type.";
    case COMIN_ERROR_FATAL:
      return "Fatal error.";
  }
  return "Unknown error code.";
}

}  // namespace finecast::host::comin

namespace {

// ComIn prints on the rank that prints the host's messages (rank 0), when the plugin's namelist
// entry allows that kind of message, as "KIND(plugin): message".
void print(const char* kind, bool is_warning, bool ch::PluginSpec::*allowed, const char* msg) {
  Host::State* s = ch::current_state();
  if (s == nullptr || s->rank != 0) return;
  const ch::Plugin* p = s->plugin();
  if (p != nullptr && !(p->spec.*allowed)) return;
  ch::print_line(is_warning, std::string(kind) + "(" + (p != nullptr ? p->spec.name : "host") +
                                 "): " + (msg != nullptr ? msg : ""));
}

std::string vformat(const char* fmt, va_list args) {
  va_list copy;
  va_copy(copy, args);
  const int n = std::vsnprintf(nullptr, 0, fmt, copy);
  va_end(copy);
  if (n < 0) return fmt;
  std::vector<char> buf(static_cast<size_t>(n) + 1);
  std::vsnprintf(buf.data(), buf.size(), fmt, args);
  return std::string(buf.data(), static_cast<size_t>(n));
}

}  // namespace

extern "C" {

void comin_plugin_finish(const char* routine, const char* text) {
  ch::fatal(routine != nullptr ? routine : "(null)", text != nullptr ? text : "(null)");
}

void comin_print_debug(const char* msg) { print("DEBUG", false, &ch::PluginSpec::log_debug, msg); }
void comin_print_info(const char* msg) { print("INFO", false, &ch::PluginSpec::log_info, msg); }
void comin_print_warning(const char* msg) { print("WARNING", true, &ch::PluginSpec::log_warning, msg); }

void comin_print_debug_f(const char* fmt, ...) {
  va_list args;
  va_start(args, fmt);
  const std::string msg = vformat(fmt, args);
  va_end(args);
  comin_print_debug(msg.c_str());
}

void comin_print_info_f(const char* fmt, ...) {
  va_list args;
  va_start(args, fmt);
  const std::string msg = vformat(fmt, args);
  va_end(args);
  comin_print_info(msg.c_str());
}

void comin_print_warning_f(const char* fmt, ...) {
  va_list args;
  va_start(args, fmt);
  const std::string msg = vformat(fmt, args);
  va_end(args);
  comin_print_warning(msg.c_str());
}

void comin_error_get_message(t_comin_error_code error_code, char category[11],
                             char message[COMIN_MAX_LEN_ERR_MESSAGE]) {
  if (error_code < COMIN_SUCCESS || error_code > COMIN_ERROR_FATAL) {
    ch::fatal("comin_error_get_message", "unknown error code " + std::to_string(error_code));
    return;
  }
  const char* kind = error_code == COMIN_SUCCESS       ? "SUCCESS"
                     : error_code < COMIN_WARNING      ? "INFO"
                     : error_code < COMIN_ERROR_STATUS ? "WARNING"
                     : error_code < COMIN_ERROR_FATAL  ? "ERROR"
                                                       : "FATAL"; /* fits 11 with NUL */
  std::snprintf(category, 11, "%s", kind);
  std::snprintf(message, COMIN_MAX_LEN_ERR_MESSAGE, "%s", ch::error_message(error_code));
}

// comin.h declares two arguments; ComIn's implementation reads none of them and checks the
// current error state. So does this one.
void comin_error_check(t_comin_error_code /*error_code*/, const char* /*scope*/) {
  Host::State* s = ch::current_state();
  if (s == nullptr || s->error == COMIN_SUCCESS) return;
  if (s->error < COMIN_ERROR_STATUS) {
    if (s->rank == 0) ch::print_line(false, std::string("ComIn: ") + ch::error_message(s->error));
    return;
  }
  const ch::Plugin* p = s->plugin();
  ch::fatal(p != nullptr ? p->spec.name : "comin_error_check",
            std::string("ERROR: ") + ch::error_message(s->error) + " " + s->error_detail);
}

void comin_error_set_errors_return(bool errors_return) {
  const char* routine = "comin_error_set_errors_return";
  Host::State* s = ch::state_or_fatal(routine);
  if (s == nullptr) return;
  if (s->plugin() == nullptr) {
    ch::fatal(routine, "called while no plugin function is running");
    return;
  }
  s->plugin()->errors_return = errors_return;
}

t_comin_error_code comin_error_get(void) {
  Host::State* s = ch::current_state();
  return s == nullptr ? COMIN_SUCCESS : s->error;
}

void comin_error_reset(void) {
  if (Host::State* s = ch::current_state()) {
    s->error = COMIN_SUCCESS;
    s->error_detail.clear();
  }
}

}  // extern "C"
