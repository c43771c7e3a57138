// SPDX-License-Identifier: BSD-3-Clause
// comin.h: variable metadata. Plugins set it on their requests in the primary constructor (the
// host applies it when it creates the variables) and read it afterwards from the variables.
#include <cstring>
#include <string>
#include <variant>

#include "host/comin/host_state.hpp"

namespace ch = finecast::host::comin;
using ch::api_error;
using ch::Host;
using ch::Phase;
using MetadataValue = CominMetadata::mapped_type;

namespace {

std::string name_of(const t_comin_var_descriptor& d) {
  const void* nul = std::memchr(d.name, '\0', sizeof(d.name));
  return nul == nullptr ? std::string(d.name, sizeof(d.name))
                        : std::string(d.name, static_cast<const char*>(nul) - d.name);
}

std::string describe(const t_comin_var_descriptor& d, const char* key) {
  return "(variable '" + name_of(d) + "', domain " + std::to_string(d.id) + ", key '" + (key != nullptr ? key : "") +
         "')";
}

void set(const t_comin_var_descriptor& d, const char* key, MetadataValue value, const char* routine) {
  Host::State* s = ch::state_or_fatal(routine);
  if (s == nullptr) return;
  if (s->phase != Phase::kPrimaryConstructor) {
    api_error(COMIN_ERROR_METADATA_SET_OUTSIDE_PRIMARYCONSTRUCTOR, routine, describe(d, key));
    return;
  }
  if (key == nullptr || *key == '\0') {
    ch::fatal(routine, describe(d, key) + ": empty metadata key");
    return;
  }
  // ComIn: a tracer lives on every domain, so it must be requested (and marked) with id -1.
  if (std::strcmp(key, "tracer") == 0 && std::holds_alternative<bool>(value) && std::get<bool>(value) && d.id != -1) {
    api_error(COMIN_ERROR_TRACER_REQUEST_NOT_FOR_ALL_DOMAINS, routine, describe(d, key));
    return;
  }
  const std::string name = name_of(d);
  bool found = false;
  for (ch::Request& r : s->requests) {
    if (r.name != name || (d.id != -1 && r.domain != d.id)) continue;
    found = true;
    auto it = r.metadata.find(key);
    if (it != r.metadata.end() && it->second.index() != value.index()) {
      api_error(COMIN_ERROR_VAR_METADATA_INCONSISTENT_TYPE, routine, describe(d, key));
      return;
    }
    r.metadata[key] = value;
  }
  if (!found) api_error(COMIN_ERROR_VAR_DESCRIPTOR_NOT_FOUND, routine, describe(d, key) + ": no request for it");
}

// The metadata of an existing variable, or NULL after ComIn's error.
const CominMetadata* metadata_of(const t_comin_var_descriptor& d, const char* key, const char* routine) {
  Host::State* s = ch::state_or_fatal(routine);
  if (s == nullptr) return nullptr;
  if (s->phase == Phase::kSetup || s->phase == Phase::kPrimaryConstructor) {
    api_error(COMIN_ERROR_METADATA_GET_INSIDE_PRIMARYCONSTRUCTOR, routine, describe(d, key));
    return nullptr;
  }
  const int index = s->find_variable(name_of(d), d.id);
  if (index < 0) {
    api_error(COMIN_ERROR_VAR_ITEM_NOT_ASSOCIATED, routine, describe(d, key));
    return nullptr;
  }
  return &s->variables[index].metadata;
}

template <typename T>
const T* get(const t_comin_var_descriptor& d, const char* key, const char* routine) {
  const CominMetadata* m = metadata_of(d, key, routine);
  if (m == nullptr) return nullptr;
  auto it = m->find(key != nullptr ? key : "");
  if (it == m->end()) {
    api_error(COMIN_ERROR_METADATA_KEY_NOT_FOUND, routine, describe(d, key));
    return nullptr;
  }
  const T* value = std::get_if<T>(&it->second);
  if (value == nullptr) api_error(COMIN_ERROR_VAR_METADATA_INCONSISTENT_TYPE, routine, describe(d, key));
  return value;
}

}  // namespace

extern "C" {

void comin_metadata_set_integer(t_comin_var_descriptor d, const char* key, int val) {
  set(d, key, val, "comin_metadata_set_integer");
}
void comin_metadata_set_logical(t_comin_var_descriptor d, const char* key, bool val) {
  set(d, key, val, "comin_metadata_set_logical");
}
void comin_metadata_set_real(t_comin_var_descriptor d, const char* key, double val) {
  set(d, key, val, "comin_metadata_set_real");
}
void comin_metadata_set_character(t_comin_var_descriptor d, const char* key, char const* val) {
  set(d, key, std::string(val != nullptr ? val : ""), "comin_metadata_set_character");
}

void comin_metadata_get_integer(t_comin_var_descriptor d, const char* key, int* val) {
  if (const int* v = get<int>(d, key, "comin_metadata_get_integer")) *val = *v;
}
void comin_metadata_get_logical(t_comin_var_descriptor d, const char* key, bool* val) {
  if (const bool* v = get<bool>(d, key, "comin_metadata_get_logical")) *val = *v;
}
void comin_metadata_get_real(t_comin_var_descriptor d, const char* key, double* val) {
  if (const double* v = get<double>(d, key, "comin_metadata_get_real")) *val = *v;
}
void comin_metadata_get_character(t_comin_var_descriptor d, const char* key, char const** val, int* len) {
  if (const std::string* v = get<std::string>(d, key, "comin_metadata_get_character")) {
    *val = v->c_str();
    *len = static_cast<int>(v->size());
  }
}

t_comin_metadata_typeid comin_metadata_get_typeid(t_comin_var_descriptor d, const char* key) {
  const CominMetadata* m = metadata_of(d, key, "comin_metadata_get_typeid");
  if (m == nullptr) return COMIN_METADATA_TYPEID_UNDEFINED;
  auto it = m->find(key != nullptr ? key : "");
  return it == m->end() ? COMIN_METADATA_TYPEID_UNDEFINED : static_cast<t_comin_metadata_typeid>(it->second.index());
}

t_comin_metadata_iterator* comin_metadata_get_iterator_begin(t_comin_var_descriptor d) {
  const CominMetadata* m = metadata_of(d, nullptr, "comin_metadata_get_iterator_begin");
  return m == nullptr ? nullptr : new t_comin_metadata_iterator{m, m->begin()};
}

t_comin_metadata_iterator* comin_metadata_get_iterator_end(t_comin_var_descriptor d) {
  const CominMetadata* m = metadata_of(d, nullptr, "comin_metadata_get_iterator_end");
  return m == nullptr ? nullptr : new t_comin_metadata_iterator{m, m->end()};
}

const char* comin_metadata_iterator_get_key(t_comin_metadata_iterator* it) {
  if (it == nullptr || it->metadata == nullptr || it->it == it->metadata->end()) return nullptr;
  return it->it->first.c_str();
}

bool comin_metadata_iterator_compare(t_comin_metadata_iterator* it1, t_comin_metadata_iterator* it2) {
  if (it1 == nullptr || it2 == nullptr) return it1 == it2;
  return it1->metadata == it2->metadata && it1->it == it2->it;
}

void comin_metadata_iterator_next(t_comin_metadata_iterator* it) {
  if (it != nullptr && it->metadata != nullptr && it->it != it->metadata->end()) ++it->it;
}

void comin_metadata_iterator_delete(t_comin_metadata_iterator* it) { delete it; }

}  // extern "C"
