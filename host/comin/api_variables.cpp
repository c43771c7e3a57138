// SPDX-License-Identifier: BSD-3-Clause
// comin.h: variable requests, handles, data pointers, shapes and the list of variables.
#include <algorithm>
#include <cstring>
#include <string>

#include "host/comin/host_state.hpp"

namespace ch = finecast::host::comin;
using ch::api_error;
using ch::Host;
using ch::Phase;
using ch::Variable;

namespace {

// The descriptor's name; a name that fills the whole buffer without a NUL is cut there, as
// ComIn's conversion of a C string does.
std::string descriptor_name(const t_comin_var_descriptor& d) {
  const void* nul = std::memchr(d.name, '\0', sizeof(d.name));
  return nul == nullptr ? std::string(d.name, sizeof(d.name))
                        : std::string(d.name, static_cast<const char*>(nul) - d.name);
}

std::string describe(const t_comin_var_descriptor& d) {
  return "(variable '" + descriptor_name(d) + "', domain " + std::to_string(d.id) + ")";
}

Variable* handle_variable(t_comin_var_handle* handle, const char* routine) {
  Host::State* s = ch::state_or_fatal(routine);
  if (s == nullptr) return nullptr;
  if (handle == nullptr || handle->variable < 0 || handle->variable >= static_cast<int>(s->variables.size())) {
    api_error(COMIN_ERROR_POINTER_NOT_ASSOCIATED, routine, "(variable handle)");
    return nullptr;
  }
  return &s->variables[handle->variable];
}

// The data pointer of a handle when the variable has the expected datatype, else NULL with
// ComIn's error (a double pointer to float data would be read as garbage).
void* typed_pointer(t_comin_var_handle* handle, int datatype, const char* routine) {
  Variable* v = handle_variable(handle, routine);
  if (v == nullptr) return nullptr;
  if (v->datatype != datatype) {
    static const char* const names[] = {"", "double", "float", "int"};
    api_error(COMIN_ERROR_VAR_METADATA_INCONSISTENT_TYPE, routine,
              "(variable '" + v->name + "' holds " + names[v->datatype] + " data)");
    return nullptr;
  }
  return v->data();
}

void request_one(Host::State& s, const std::string& name, int domain, bool exclusive, const char* routine) {
  for (ch::Request& r : s.requests) {
    if (r.name != name || r.domain != domain) continue;
    const std::string what = "(variable '" + name + "', domain " + std::to_string(domain) + ")";
    if (r.exclusive) {
      api_error(COMIN_ERROR_VAR_REQUEST_EXISTS_IS_LMODEXCLUSIVE, routine, what);
      return;
    }
    if (exclusive) {
      api_error(COMIN_ERROR_VAR_REQUEST_EXISTS_REQUEST_LMODEXCLUSIVE, routine, what);
      return;
    }
    r.plugins.push_back(s.current_plugin);
    return;
  }
  s.requests.push_back({name, domain, exclusive, {s.current_plugin}, {}});
}

}  // namespace

extern "C" {

void comin_var_request_add(t_comin_var_descriptor var_descriptor, bool lmodexclusive) {
  const char* routine = "comin_var_request_add";
  Host::State* s = ch::state_or_fatal(routine);
  if (s == nullptr) return;
  const std::string name = descriptor_name(var_descriptor);
  if (s->phase != Phase::kPrimaryConstructor) {
    api_error(COMIN_ERROR_VAR_REQUEST_AFTER_PRIMARYCONSTRUCTOR, routine, describe(var_descriptor));
    return;
  }
  if (name.empty()) {
    ch::fatal(routine, "empty variable name");
    return;
  }
  const int n_dom = static_cast<int>(s->domains.size());
  if (var_descriptor.id == -1) {  // every domain
    for (int jg = 1; jg <= n_dom; ++jg) request_one(*s, name, jg, lmodexclusive, routine);
    return;
  }
  if (var_descriptor.id < 1 || var_descriptor.id > n_dom) {
    ch::fatal(routine, describe(var_descriptor) + ": no such domain (the host has " + std::to_string(n_dom) + ")");
    return;
  }
  request_one(*s, name, var_descriptor.id, lmodexclusive, routine);
}

t_comin_var_handle* comin_var_get(int context_len, t_comin_entry_point* context, t_comin_var_descriptor var_descriptor,
                                  int flag) {
  const char* routine = "comin_var_get";
  Host::State* s = ch::state_or_fatal(routine);
  if (s == nullptr) return nullptr;
  if (s->phase != Phase::kSecondaryConstructor) {
    api_error(COMIN_ERROR_VAR_GET_OUTSIDE_SECONDARY_CONSTRUCTOR, routine, describe(var_descriptor));
    return nullptr;
  }
  if ((flag & COMIN_FLAG_DEVICE) != 0 && !s->has_device) {
    api_error(COMIN_ERROR_VAR_GET_NO_DEVICE, routine, describe(var_descriptor));
    return nullptr;
  }
  if (context_len < 0 || (context_len > 0 && context == nullptr)) {
    ch::fatal(routine,
              describe(var_descriptor) + ": invalid context (" + std::to_string(context_len) + " entry points)");
    return nullptr;
  }
  for (int i = 0; i < context_len; ++i)
    if (context[i] < EP_SECONDARY_CONSTRUCTOR || context[i] > EP_DESTRUCTOR) {
      api_error(COMIN_ERROR_CALLBACK_EP_ID_UNKNOWN, routine,
                describe(var_descriptor) + ": context entry " + std::to_string(i) + " is " +
                    std::to_string(static_cast<int>(context[i])));
      return nullptr;
    }
  const int index = s->find_variable(descriptor_name(var_descriptor), var_descriptor.id);
  if (index < 0) {
    api_error(COMIN_ERROR_VAR_GET_VARIABLE_NOT_FOUND, routine, describe(var_descriptor));
    return nullptr;
  }
  // finecast-host's fields are always up to date on every rank: halo synchronization needs no
  // action. The contexts are remembered for the device synchronisation (host.cpp); a variable
  // asked for again at the same entry point keeps its first flags, as in ComIn.
  for (int i = 0; i < context_len; ++i) {
    if (context[i] == EP_SECONDARY_CONSTRUCTOR) continue;
    auto& list = s->access[{static_cast<int>(context[i]), s->current_plugin}];
    const bool known =
        std::any_of(list.begin(), list.end(), [&](const ch::VariableAccess& a) { return a.variable == index; });
    if (!known) list.push_back({index, flag});
  }
  return s->handle(index);
}

void* comin_var_get_ptr(t_comin_var_handle* handle) {
  Variable* v = handle_variable(handle, "comin_var_get_ptr");
  return v == nullptr ? nullptr : v->data();
}

double* comin_var_get_ptr_double(t_comin_var_handle* handle) {
  return static_cast<double*>(typed_pointer(handle, COMIN_VAR_DATATYPE_DOUBLE, "comin_var_get_ptr_double"));
}

float* comin_var_get_ptr_float(t_comin_var_handle* handle) {
  return static_cast<float*>(typed_pointer(handle, COMIN_VAR_DATATYPE_FLOAT, "comin_var_get_ptr_float"));
}

int* comin_var_get_ptr_int(t_comin_var_handle* handle) {
  return static_cast<int*>(typed_pointer(handle, COMIN_VAR_DATATYPE_INT, "comin_var_get_ptr_int"));
}

// The device copy the host registered (Host::set_device_pointer); null on a host without a
// device, and for a variable the host keeps on the host only.
void* comin_var_get_device_ptr(t_comin_var_handle* handle) {
  Variable* v = handle_variable(handle, "comin_var_get_device_ptr");
  return v == nullptr ? nullptr : v->device;
}
double* comin_var_get_device_ptr_double(t_comin_var_handle* handle) {
  if (typed_pointer(handle, COMIN_VAR_DATATYPE_DOUBLE, "comin_var_get_device_ptr_double") == nullptr) return nullptr;
  return static_cast<double*>(comin_var_get_device_ptr(handle));
}
float* comin_var_get_device_ptr_float(t_comin_var_handle* handle) {
  if (typed_pointer(handle, COMIN_VAR_DATATYPE_FLOAT, "comin_var_get_device_ptr_float") == nullptr) return nullptr;
  return static_cast<float*>(comin_var_get_device_ptr(handle));
}
int* comin_var_get_device_ptr_int(t_comin_var_handle* handle) {
  if (typed_pointer(handle, COMIN_VAR_DATATYPE_INT, "comin_var_get_device_ptr_int") == nullptr) return nullptr;
  return static_cast<int*>(comin_var_get_device_ptr(handle));
}

void comin_var_get_shape(t_comin_var_handle* handle, int shape[5]) {
  if (Variable* v = handle_variable(handle, "comin_var_get_shape"))
    for (int i = 0; i < 5; ++i) shape[i] = v->shape[i];
}

void comin_var_get_dim_semantics(t_comin_var_handle* handle, int dim_semantics[5]) {
  if (Variable* v = handle_variable(handle, "comin_var_get_dim_semantics"))
    for (int i = 0; i < 5; ++i) dim_semantics[i] = v->dim_semantics[i];
}

// ComIn 0.2's account of the layout, which 0.3 replaced by comin_var_get_dim_semantics: the
// 0-based positions of the cell (jc), level (jk), block (jb) and container (jn) dimensions,
// each its Fortran position minus one, so a dimension the variable lacks is -2 (Fortran -1).
// Kept so that plugins written for ComIn 0.2 (ICON 2024.x), such as its simple_c, run here.
void comin_var_get_pos(t_comin_var_handle* handle, int* pos_jc, int* pos_jk, int* pos_jb, int* pos_jn) {
  Variable* v = handle_variable(handle, "comin_var_get_pos");
  if (v == nullptr) return;
  auto position = [&](int what) {
    for (int d = 0; d < 5; ++d)
      if (v->dim_semantics[d] == what) return d;
    return -2;
  };
  if (pos_jc) *pos_jc = position(COMIN_DIM_SEMANTICS_NPROMA);
  if (pos_jk) *pos_jk = position(COMIN_DIM_SEMANTICS_LEVEL);
  if (pos_jb) *pos_jb = position(COMIN_DIM_SEMANTICS_BLOCK);
  if (pos_jn) *pos_jn = position(COMIN_DIM_SEMANTICS_CONTAINER);
}

// ComIn hands out the 0-based position in the container (its 1-based position minus one).
void comin_var_get_ncontained(t_comin_var_handle* handle, int* ncontained) {
  if (Variable* v = handle_variable(handle, "comin_var_get_ncontained")) *ncontained = v->ncontained - 1;
}

void comin_var_get_descriptor(t_comin_var_handle* handle, t_comin_var_descriptor* descr) {
  Variable* v = handle_variable(handle, "comin_var_get_descriptor");
  if (v == nullptr || descr == nullptr) return;
  std::memset(descr->name, 0, sizeof(descr->name));
  std::memcpy(descr->name, v->name.data(), std::min(v->name.size(), sizeof(descr->name) - 1));
  descr->id = v->domain;
}

t_comin_var_descr_list_iterator* comin_var_get_descr_list_head(void) {
  Host::State* s = ch::state_or_fatal("comin_var_get_descr_list_head");
  if (s == nullptr || s->variables.empty()) return nullptr;
  return new t_comin_var_descr_list_iterator{0};
}

t_comin_var_descr_list_iterator* comin_var_get_descr_list_next(t_comin_var_descr_list_iterator* current) {
  Host::State* s = ch::state_or_fatal("comin_var_get_descr_list_next");
  if (s == nullptr || current == nullptr) return nullptr;
  // Advances in place and, at the end, frees the iterator and returns NULL (as ComIn does).
  if (++current->variable >= s->variables.size()) {
    delete current;
    return nullptr;
  }
  return current;
}

void comin_var_get_descr_list_var_desc(t_comin_var_descr_list_iterator* current, t_comin_var_descriptor* var_desc) {
  const char* routine = "comin_var_get_descr_list_var_desc";
  Host::State* s = ch::state_or_fatal(routine);
  if (s == nullptr) return;
  if (current == nullptr || var_desc == nullptr || current->variable >= s->variables.size()) {
    api_error(COMIN_ERROR_POINTER_NOT_ASSOCIATED, routine, "(iterator)");
    return;
  }
  const Variable& v = s->variables[current->variable];
  std::memset(var_desc->name, 0, sizeof(var_desc->name));
  std::memcpy(var_desc->name, v.name.data(), std::min(v.name.size(), sizeof(var_desc->name) - 1));
  var_desc->id = v.domain;
}

void comin_var_descr_list_iterator_delete(t_comin_var_descr_list_iterator** it) {
  if (it == nullptr) return;
  delete *it;
  *it = nullptr;
}

}  // extern "C"
