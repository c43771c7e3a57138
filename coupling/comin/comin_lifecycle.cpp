// SPDX-License-Identifier: BSD-3-Clause
// comin.h: callback registration, the current plugin / entry point / time, communicators,
// printing and the error state.
#include <string>

#include "coupling/comin/comin.h"
#include "coupling/comin/host_state.hpp"

using finecast::coupling::comin_host::api_error;
using finecast::coupling::comin_host::current_state;
using finecast::coupling::comin_host::fatal;
using finecast::coupling::comin_host::FortranString;
using finecast::coupling::comin_host::Host;
using finecast::coupling::comin_host::Phase;

namespace {

// The live host, or nullptr after reporting that there is none.
Host::State* state_or_error(const char* routine) {
  Host::State* s = current_state();
  if (s == nullptr) api_error(routine, "no finecast host is running in this process");
  return s;
}

void give_string(const FortranString& str, char const** val, int* len) {
  *val = str.buffer.data();
  *len = str.length;
}

// The current plugin, or nullptr after reporting that no plugin function is running.
const finecast::coupling::comin_host::Plugin* current_plugin(const char* routine) {
  Host::State* s = state_or_error(routine);
  if (s == nullptr) return nullptr;
  if (s->current_plugin < 0) {
    api_error(routine, "called while no plugin function is running");
    return nullptr;
  }
  return &s->plugins[s->current_plugin];
}

}  // namespace

extern "C" {

void comin_callback_register(t_comin_entry_point entry_point_id,
                             t_comin_callback_function fct_ptr) {
  const char* routine = "comin_callback_register";
  Host::State* s = state_or_error(routine);
  if (s == nullptr) return;
  if (s->phase != Phase::kPrimaryConstructor) {
    api_error(routine, std::string("callbacks can be registered only in the primary constructor "
                                   "(comin_main); tried to register for ") +
                           Host::entry_point_name(entry_point_id));
    return;
  }
  if (entry_point_id < EP_SECONDARY_CONSTRUCTOR || entry_point_id > EP_DESTRUCTOR) {
    api_error(routine,
              "unknown entry point id " + std::to_string(static_cast<int>(entry_point_id)));
    return;
  }
  if (fct_ptr == nullptr) {
    api_error(routine, std::string("NULL callback for ") + Host::entry_point_name(entry_point_id));
    return;
  }
  s->callbacks[entry_point_id].push_back({s->current_plugin, fct_ptr});
}

t_comin_entry_point comin_current_get_ep(void) {
  Host::State* s = state_or_error("comin_current_get_ep");
  return static_cast<t_comin_entry_point>(s == nullptr ? 0 : s->current_ep);
}

int comin_current_get_domain_id(void) {
  Host::State* s = state_or_error("comin_current_get_domain_id");
  return s == nullptr ? 0 : s->current_domain;
}

void comin_current_get_plugin_name(char const** val, int* len) {
  *val = nullptr;
  *len = 0;
  if (const auto* p = current_plugin("comin_current_get_plugin_name"))
    give_string(p->name, val, len);
}

void comin_current_get_plugin_options(char const** val, int* len) {
  *val = nullptr;
  *len = 0;
  if (const auto* p = current_plugin("comin_current_get_plugin_options"))
    give_string(p->options, val, len);
}

void comin_current_get_datetime(char const** val, int* len) {
  *val = nullptr;
  *len = 0;
  if (Host::State* s = state_or_error("comin_current_get_datetime"))
    give_string(s->datetime, val, len);
}

int comin_parallel_get_plugin_mpi_comm(void) {
  const char* routine = "comin_parallel_get_plugin_mpi_comm";
  const auto* p = current_plugin(routine);
  if (p == nullptr) return MPI_Comm_c2f(MPI_COMM_NULL);
  if (p->comm == MPI_COMM_NULL) {
    // ComIn aborts here too: the namelist gave this plugin no `comm`.
    fatal(routine, "plugin '" + p->spec.name +
                       "' has no communicator (its plugin_list entry sets no comm); use "
                       "comin_parallel_get_host_mpi_comm");
    return MPI_Comm_c2f(MPI_COMM_NULL);
  }
  return MPI_Comm_c2f(p->comm);
}

int comin_parallel_get_host_mpi_comm(void) {
  Host::State* s = state_or_error("comin_parallel_get_host_mpi_comm");
  return MPI_Comm_c2f(s == nullptr ? MPI_COMM_NULL : s->comm);
}

int comin_parallel_get_host_mpi_rank(void) {
  Host::State* s = state_or_error("comin_parallel_get_host_mpi_rank");
  return s == nullptr ? -1 : s->rank;
}

void comin_plugin_finish(const char* routine, const char* text) {
  fatal(routine != nullptr ? routine : "(null)", text != nullptr ? text : "(null)");
}

void comin_print_info(const char* msg) {
  Host::State* s = current_state();
  if (s != nullptr && s->rank != 0) return;
  finecast::coupling::comin_host::print_line(false, msg != nullptr ? msg : "");
}

void comin_print_warning(const char* msg) {
  Host::State* s = current_state();
  if (s != nullptr && s->rank != 0) return;
  finecast::coupling::comin_host::print_line(true, msg != nullptr ? msg : "");
}

t_comin_error_code comin_error_get(void) {
  Host::State* s = current_state();
  return s == nullptr ? COMIN_SUCCESS : s->error;
}

void comin_error_reset(void) {
  if (Host::State* s = current_state()) {
    s->error = COMIN_SUCCESS;
    s->error_message.clear();
  }
}

void comin_error_set_errors_return(bool errors_return) {
  if (Host::State* s = state_or_error("comin_error_set_errors_return"))
    s->errors_return = errors_return;
}

}  // extern "C"
