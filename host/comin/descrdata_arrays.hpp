// SPDX-License-Identifier: BSD-3-Clause
// Turns a host's Domain (local cells, vertices and edges in plain vectors) into ComIn's
// descriptive data: blocked Fortran arrays with (index, block) connectivity and the start/end
// index lists of ICON's refin_ctrl zones.
#pragma once

#include "host/comin/host_state.hpp"

namespace finecast::host::comin {

/// Checks the sizes of every array of `domain` (ConfigError naming the array) and builds the
/// arrays ComIn hands out for domain `id`. Local cells must come owned first, then halo cells
/// by increasing halo level (ICON's order); vertices and edges of owned cells first.
DomainArrays build_domain_arrays(Domain domain, int id);

}  // namespace finecast::host::comin
