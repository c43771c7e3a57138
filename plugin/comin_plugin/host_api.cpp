// SPDX-License-Identifier: BSD-3-Clause
#include "plugin/comin_plugin/host_api.hpp"

#include <algorithm>
#include <cstring>

#include "coupling/error.hpp"

namespace finecast::plugin {

t_comin_var_descriptor descriptor(const std::string& name, int domain) {
  t_comin_var_descriptor d{};
  if (name.size() > COMIN_MAX_LEN_VAR_NAME)
    throw ConfigError("variable name too long for ComIn (at most " + std::to_string(COMIN_MAX_LEN_VAR_NAME) +
                      " characters): \"" + name + "\"");
  std::memcpy(d.name, name.data(), name.size());
  d.id = domain;
  return d;
}

std::string fortran_string(void (*get)(char const**, int*)) {
  const char* val = nullptr;
  int len = 0;
  get(&val, &len);
  return val && len > 0 ? std::string(val, static_cast<size_t>(len)) : std::string();
}

std::vector<std::pair<std::string, int>> host_variables() {
  std::vector<std::pair<std::string, int>> vars;
  for (auto* it = comin_var_get_descr_list_head(); it; it = comin_var_get_descr_list_next(it)) {
    t_comin_var_descriptor d{};
    comin_var_get_descr_list_var_desc(it, &d);
    vars.emplace_back(std::string(d.name, strnlen(d.name, sizeof d.name)), d.id);
  }
  return vars;
}

bool host_has_variable(const std::string& name, int domain) {
  const auto vars = host_variables();
  return std::find(vars.begin(), vars.end(), std::make_pair(name, domain)) != vars.end();
}

std::string host_variable_names(int domain) {
  std::string names;
  for (const auto& [name, id] : host_variables())
    if (id == domain) names += (names.empty() ? "" : ", ") + name;
  return names.empty() ? "none" : names;
}

std::string text_metadata(const std::string& name, int domain, const char* key) {
  const t_comin_var_descriptor d = descriptor(name, domain);
  if (comin_metadata_get_typeid(d, key) != COMIN_METADATA_TYPEID_CHARACTER) return "";
  const char* val = nullptr;
  int len = 0;
  comin_metadata_get_character(d, key, &val, &len);
  return val && len > 0 ? std::string(val, static_cast<size_t>(len)) : std::string();
}

int int_metadata(const std::string& name, int domain, const char* key, int fallback) {
  const t_comin_var_descriptor d = descriptor(name, domain);
  if (comin_metadata_get_typeid(d, key) != COMIN_METADATA_TYPEID_INTEGER) return fallback;
  int v = fallback;
  comin_metadata_get_integer(d, key, &v);
  return v;
}

}  // namespace finecast::plugin
