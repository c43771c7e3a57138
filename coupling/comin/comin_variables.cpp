// SPDX-License-Identifier: BSD-3-Clause
// comin.h: variable requests, handles, data pointers, shapes and the variable list.
#include <cstring>
#include <string>

#include "coupling/comin/comin.h"
#include "coupling/comin/host_state.hpp"

using finecast::coupling::comin_host::api_error;
using finecast::coupling::comin_host::current_state;
using finecast::coupling::comin_host::Host;
using finecast::coupling::comin_host::make_variable;
using finecast::coupling::comin_host::Phase;
using finecast::coupling::comin_host::Variable;

namespace {

// The descriptor's name, or "" after reporting a name without NUL in its buffer.
std::string descriptor_name(const t_comin_var_descriptor& d, const char* routine) {
  const void* nul = std::memchr(d.name, '\0', sizeof(d.name));
  if (nul == nullptr) {
    api_error(routine, "variable name is not NUL-terminated within COMIN_MAX_LEN_VAR_NAME+1 chars");
    return "";
  }
  return std::string(d.name);
}

Variable* handle_variable(t_comin_var_handle* handle, const char* routine) {
  Host::State* s = current_state();
  if (s == nullptr) {
    api_error(routine, "no finecast host is running in this process");
    return nullptr;
  }
  if (handle == nullptr || handle->variable < 0 ||
      handle->variable >= static_cast<int>(s->variables.size())) {
    api_error(routine, "invalid (NULL) variable handle");
    return nullptr;
  }
  return &s->variables[handle->variable];
}

}  // namespace

extern "C" {

void comin_var_request_add(t_comin_var_descriptor var_descriptor, bool lmodexclusive) {
  const char* routine = "comin_var_request_add";
  Host::State* s = current_state();
  if (s == nullptr) {
    api_error(routine, "no finecast host is running in this process");
    return;
  }
  const std::string name = descriptor_name(var_descriptor, routine);
  if (name.empty()) {
    if (std::memchr(var_descriptor.name, '\0', sizeof(var_descriptor.name)) != nullptr)
      api_error(routine, "empty variable name");
    return;
  }
  const std::string what =
      "variable '" + name + "' (domain " + std::to_string(var_descriptor.id) + ")";
  if (s->phase != Phase::kPrimaryConstructor) {
    api_error(routine,
              what + ": variables can be requested only in the primary constructor (comin_main)");
    return;
  }
  if (var_descriptor.id < 1 || var_descriptor.id > static_cast<int>(s->domains.size())) {
    api_error(routine,
              what + ": no such domain (the host has " + std::to_string(s->domains.size()) + ")");
    return;
  }
  const int existing = s->find_variable(name, var_descriptor.id);
  if (existing >= 0) {
    Variable& v = s->variables[existing];
    if (lmodexclusive || v.exclusive) {
      const std::string owner = v.requested_by < 0
                                    ? std::string("the host")
                                    : "plugin '" + s->plugins[v.requested_by].spec.name + "'";
      api_error(routine, what + ": exists already (created by " + owner +
                             ") and an exclusive request cannot share it");
    }
    return;
  }
  Variable v = make_variable(s->domains[var_descriptor.id - 1], name, var_descriptor.id, 1);
  v.requested_by = s->current_plugin;
  v.exclusive = lmodexclusive;
  s->variables.push_back(std::move(v));
}

t_comin_var_handle* comin_var_get(int context_len, t_comin_entry_point* context,
                                  t_comin_var_descriptor var_descriptor, int flag) {
  const char* routine = "comin_var_get";
  Host::State* s = current_state();
  if (s == nullptr) {
    api_error(routine, "no finecast host is running in this process");
    return nullptr;
  }
  const std::string name = descriptor_name(var_descriptor, routine);
  const std::string what =
      "variable '" + name + "' (domain " + std::to_string(var_descriptor.id) + ")";
  if (s->phase != Phase::kSecondaryConstructor) {
    api_error(routine, what + ": comin_var_get works only during EP_SECONDARY_CONSTRUCTOR");
    return nullptr;
  }
  if (context_len < 0 || (context_len > 0 && context == nullptr)) {
    api_error(routine,
              what + ": invalid context (" + std::to_string(context_len) + " entry points)");
    return nullptr;
  }
  t_comin_var_handle h;
  for (int i = 0; i < context_len; ++i) {
    if (context[i] < EP_SECONDARY_CONSTRUCTOR || context[i] > EP_DESTRUCTOR) {
      api_error(routine, what + ": context entry " + std::to_string(i) + " is no entry point (" +
                             std::to_string(static_cast<int>(context[i])) + ")");
      return nullptr;
    }
    h.context.push_back(context[i]);
  }
  const int index = s->find_variable(name, var_descriptor.id);
  if (index < 0) return nullptr;  // ComIn: NULL for a variable that does not exist
  Variable& v = s->variables[index];
  if ((flag & COMIN_FLAG_WRITE) != 0) {
    if (v.exclusive && v.requested_by != s->current_plugin) {
      api_error(routine, what + ": requested exclusively by plugin '" +
                             s->plugins[v.requested_by].spec.name +
                             "', no other plugin may write it");
      return nullptr;
    }
    if (v.writer < 0) v.writer = s->current_plugin;
  }
  h.variable = index;
  h.flag = flag;
  h.plugin = s->current_plugin;
  s->handles.push_back(std::move(h));
  return &s->handles.back();
}

void* comin_var_get_ptr(t_comin_var_handle* handle) {
  Variable* v = handle_variable(handle, "comin_var_get_ptr");
  return v == nullptr ? nullptr : v->data.data();
}

double* comin_var_get_ptr_double(t_comin_var_handle* handle) {
  Variable* v = handle_variable(handle, "comin_var_get_ptr_double");
  return v == nullptr ? nullptr : v->data.data();
}

float* comin_var_get_ptr_float(t_comin_var_handle* handle) {
  Variable* v = handle_variable(handle, "comin_var_get_ptr_float");
  if (v != nullptr)
    api_error("comin_var_get_ptr_float", "variable '" + v->name + "' holds double, not float");
  return nullptr;
}

void comin_var_get_shape(t_comin_var_handle* handle, int shape[5]) {
  Variable* v = handle_variable(handle, "comin_var_get_shape");
  for (int i = 0; i < 5; ++i) shape[i] = v == nullptr ? 0 : v->shape[i];
}

void comin_var_get_dim_semantics(t_comin_var_handle* handle, int dim_semantics[5]) {
  Variable* v = handle_variable(handle, "comin_var_get_dim_semantics");
  for (int i = 0; i < 5; ++i)
    dim_semantics[i] = v == nullptr ? COMIN_DIM_SEMANTICS_UNDEF : v->dim_semantics[i];
}

t_comin_var_descr_list_iterator* comin_var_get_descr_list_head(void) {
  Host::State* s = current_state();
  if (s == nullptr) {
    api_error("comin_var_get_descr_list_head", "no finecast host is running in this process");
    return nullptr;
  }
  if (s->variables.empty()) return nullptr;
  s->iterators.push_back({0});
  return &s->iterators.back();
}

t_comin_var_descr_list_iterator* comin_var_get_descr_list_next(
    t_comin_var_descr_list_iterator* current) {
  Host::State* s = current_state();
  if (s == nullptr || current == nullptr) return nullptr;
  // Advances in place, as a Fortran iterator would, and signals the end with NULL.
  if (current->variable + 1 >= static_cast<int>(s->variables.size())) return nullptr;
  ++current->variable;
  return current;
}

void comin_var_get_descr_list_var_desc(t_comin_var_descr_list_iterator* current,
                                       t_comin_var_descriptor* var_desc) {
  Host::State* s = current_state();
  if (s == nullptr || current == nullptr || var_desc == nullptr ||
      current->variable >= static_cast<int>(s->variables.size())) {
    api_error("comin_var_get_descr_list_var_desc", "invalid iterator");
    return;
  }
  const Variable& v = s->variables[current->variable];
  std::memset(var_desc->name, 0, sizeof(var_desc->name));
  std::memcpy(var_desc->name, v.name.data(), v.name.size());
  var_desc->id = v.domain;
}

}  // extern "C"
