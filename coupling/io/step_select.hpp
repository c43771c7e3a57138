// SPDX-License-Identifier: BSD-3-Clause
// Chooses time steps of a field the way every finecast program's --time does: by 0-based index
// or by ISO 8601 date.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "coupling/io/field_reader.hpp"

namespace finecast::coupling {

/// The step of `reader` that `text` names: a 0-based index ("5"), or an ISO 8601 date or
/// date-time ("2005-06-16", "2005-06-16T12:00") matched exactly, to the second, against the
/// file's CF time coordinate. Throws ConfigError naming `flag`, the file and the valid range or
/// dates when there is no such step or `text` is neither form.
int64_t select_step(const FieldReader& reader, const std::string& text, const std::string& flag = "--time");

/// select_step for each of `texts`, in their order; every step when `texts` is empty.
std::vector<int64_t> select_steps(const FieldReader& reader, const std::vector<std::string>& texts,
                                  const std::string& flag = "--time");

}  // namespace finecast::coupling
