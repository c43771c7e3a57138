// SPDX-License-Identifier: BSD-3-Clause
// Small helpers over ComIn's C interface: descriptors, Fortran strings, the variable list and
// metadata of the host's variables.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "comin.h"

namespace finecast::plugin {

/// A variable descriptor; ConfigError when the name is longer than ComIn allows.
t_comin_var_descriptor descriptor(const std::string& name, int domain);

/// A string ComIn hands out as (pointer, length): not NUL-terminated.
std::string fortran_string(void (*get)(char const**, int*));

/// The host's variables as (name, domain), from ComIn's variable list.
std::vector<std::pair<std::string, int>> host_variables();
bool host_has_variable(const std::string& name, int domain);
/// "ts, ps, ..." of one domain ("none" when empty), for messages.
std::string host_variable_names(int domain);

/// A text / integer metadata item of a host variable, or the fallback when it has none.
std::string text_metadata(const std::string& name, int domain, const char* key);
int int_metadata(const std::string& name, int domain, const char* key, int fallback);

}  // namespace finecast::plugin
