// SPDX-License-Identifier: BSD-3-Clause
// comin.h: the hand-over to a plugin (comin_plugin_init), callback registration, the current
// plugin / entry point / domain / time, and the communicators.
#include <cstring>
#include <string>

#include "host/comin/host_state.hpp"

using finecast::host::comin::api_error;
using finecast::host::comin::current_state;
using finecast::host::comin::fatal;
using finecast::host::comin::FortranString;
using finecast::host::comin::Host;
using finecast::host::comin::Phase;
using finecast::host::comin::Plugin;
using finecast::host::comin::state_or_fatal;

namespace {

void give_string(const FortranString& str, char const** val, int* len) {
  *val = str.buffer.data();
  *len = str.length;
}

// The plugin whose code runs now; fatal when none does (ComIn would dereference a null
// pointer here).
Plugin* current_plugin(const char* routine) {
  Host::State* s = state_or_fatal(routine);
  if (s == nullptr) return nullptr;
  if (s->plugin() == nullptr) {
    fatal(routine,
          "called while no plugin function is running (only inside a plugin's "
          "primary constructor or callbacks)");
    return nullptr;
  }
  return s->plugin();
}

}  // namespace

extern "C" {

struct finecast_comin_version {
  int major, minor, patch;
};

/// ComIn's Fortran module function comin_setup_utils::comin_setup_get_version under the name a
/// gfortran build of ComIn exports it by (ComIn 0.2 and 0.3 alike; a BIND(C) record of three ints,
/// returned as C returns such a struct). Plugins that must tell ComIn versions apart at run time
/// (finecast's: plugin/comin_plugin/comin_library.hpp) look it up with dlsym; finecast's library
/// answers the version whose C interface it implements.
finecast_comin_version __comin_setup_utils_MOD_comin_setup_get_version() {
  return {COMIN_VERSION_MAJOR, COMIN_VERSION_MINOR, COMIN_VERSION_PATCH};
}

/// Called by a ComIn host right after loading a plugin: makes this libcomin use the host's
/// state. Like ComIn, it refuses another major version or another working precision, and a
/// state other than the one this library already serves. In finecast-host the plugin's
/// libcomin is the host's own, so the state handed over is always this library's.
void comin_plugin_init(void* state, const finecast_comin_version* host_version, const int* host_wp) {
  Host::State* s = current_state();
  if (s == nullptr) return;  // no finecast host in this process: nothing to hand over to
  if (host_version == nullptr || host_version->major != COMIN_VERSION_MAJOR) {
    s->error = COMIN_ERROR_PLUGIN_INIT_COMIN_VERSION;
    return;
  }
  if (host_wp == nullptr || *host_wp != static_cast<int>(sizeof(double))) {
    s->error = COMIN_ERROR_PLUGIN_INIT_PRECISION;
    return;
  }
  if (state != s) s->error = COMIN_ERROR_PLUGIN_INIT_STATE_INITIALIZED;
}

void comin_callback_register(t_comin_entry_point entry_point_id, t_comin_callback_function fct_ptr) {
  const char* routine = "comin_callback_register";
  Host::State* s = state_or_fatal(routine);
  if (s == nullptr) return;
  if (s->phase != Phase::kPrimaryConstructor) {
    api_error(COMIN_ERROR_CALLBACK_REGISTER_OUTSIDE_PRIMARYCONSTRUCTOR, routine,
              std::string("(tried to register for ") + Host::entry_point_name(entry_point_id) + ")");
    return;
  }
  if (entry_point_id < EP_SECONDARY_CONSTRUCTOR || entry_point_id > EP_DESTRUCTOR) {
    api_error(COMIN_ERROR_CALLBACK_EP_ID_UNKNOWN, routine,
              "(" + std::to_string(static_cast<int>(entry_point_id)) + ")");
    return;
  }
  if (fct_ptr == nullptr) {
    fatal(routine, std::string("NULL callback for ") + Host::entry_point_name(entry_point_id));
    return;
  }
  auto& slot = s->callbacks[entry_point_id][s->current_plugin];
  if (slot != nullptr && s->rank == 0)
    finecast::host::comin::print_line(
        true, std::string("WARNING: plugin '") + s->plugin()->spec.name + "' registered a second callback for " +
                  Host::entry_point_name(entry_point_id) +
                  ": it replaces the first (ComIn keeps one callback per entry point and plugin)");
  slot = fct_ptr;
}

void comin_callback_get_ep_name(t_comin_entry_point iep, char out_ep_name[COMIN_MAX_LEN_EP_NAME + 1]) {
  const char* name = Host::entry_point_name(iep);
  std::strncpy(out_ep_name, name, COMIN_MAX_LEN_EP_NAME);
  out_ep_name[COMIN_MAX_LEN_EP_NAME] = '\0';
  if (iep < 0 || iep > EP_DESTRUCTOR)
    api_error(COMIN_ERROR_CALLBACK_EP_ID_UNKNOWN, "comin_callback_get_ep_name",
              "(" + std::to_string(static_cast<int>(iep)) + ")");
}

t_comin_entry_point comin_current_get_ep(void) {
  Host::State* s = state_or_fatal("comin_current_get_ep");
  return static_cast<t_comin_entry_point>(s == nullptr ? 0 : s->current_ep);
}

int comin_current_get_domain_id(void) {
  Host::State* s = state_or_fatal("comin_current_get_domain_id");
  return s == nullptr ? COMIN_DOMAIN_OUTSIDE_LOOP : s->current_domain;
}

int comin_current_get_plugin_id(void) {
  const Plugin* p = current_plugin("comin_current_get_plugin_id");
  return p == nullptr ? 0 : p->id;
}

void comin_current_get_plugin_name(char const** val, int* len) {
  *val = nullptr;
  *len = 0;
  if (const Plugin* p = current_plugin("comin_current_get_plugin_name")) give_string(p->name, val, len);
}

void comin_current_get_plugin_options(char const** val, int* len) {
  *val = nullptr;
  *len = 0;
  if (const Plugin* p = current_plugin("comin_current_get_plugin_options")) give_string(p->options, val, len);
}

void comin_current_get_plugin_comm(char const** val, int* len) {
  *val = nullptr;
  *len = 0;
  if (const Plugin* p = current_plugin("comin_current_get_plugin_comm")) give_string(p->comm_name, val, len);
}

void comin_current_get_datetime(char const** val, int* len) {
  *val = nullptr;
  *len = 0;
  if (Host::State* s = state_or_fatal("comin_current_get_datetime")) give_string(s->datetime, val, len);
}

int comin_parallel_get_plugin_mpi_comm(void) {
  const char* routine = "comin_parallel_get_plugin_mpi_comm";
  const Plugin* p = current_plugin(routine);
  if (p == nullptr) return MPI_Comm_c2f(MPI_COMM_NULL);
  if (p->comm == MPI_COMM_NULL) {
    // ComIn stops the run here too: the namelist gave this plugin no `comm`.
    fatal(routine, "plugin '" + p->spec.name +
                       "' has no communicator (its plugin_list entry sets no comm); use "
                       "comin_parallel_get_host_mpi_comm");
    return MPI_Comm_c2f(MPI_COMM_NULL);
  }
  return MPI_Comm_c2f(p->comm);
}

int comin_parallel_get_host_mpi_comm(void) {
  Host::State* s = state_or_fatal("comin_parallel_get_host_mpi_comm");
  return MPI_Comm_c2f(s == nullptr ? MPI_COMM_NULL : s->comm);
}

int comin_parallel_get_host_mpi_rank(void) {
  Host::State* s = state_or_fatal("comin_parallel_get_host_mpi_rank");
  return s == nullptr ? -1 : s->rank;
}

}  // extern "C"
