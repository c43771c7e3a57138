// SPDX-License-Identifier: BSD-3-Clause
// finecast-host's nests (ICON's child domains): each a limited-area grid inside domain 1's grid,
// checked and tied to its parent's cells before the run starts.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "coupling/grid/icon_grid.hpp"
#include "host/model/host_model.hpp"

namespace finecast::host {

using coupling::IconGrid;

/// A nest on this rank: its ComIn domain id, its part of the model and its fields.
struct Nest {
  int id = 0;
  HostModel model;
  FieldPointers fields;
};

/// For each cell of `nest`, the cell of `parent` whose spherical triangle holds its centre
/// (0-based), or -1 when none does (the centre lies outside the parent domain).
std::vector<int32_t> locate_in_parent(const IconGrid& parent, const IconGrid& nest);

/// Reads the grid of a nest of `parent` (domain 1) and checks it: the file exists, it is a
/// limited-area grid (a lateral boundary; finecast-grid --write-icon-grid --region writes one),
/// and every cell centre lies inside the parent domain. Its `parent_cell` becomes the parent
/// cell of each cell (ICON's parent_glb_idx of a nest). Errors are ConfigErrors starting with
/// `where` (the run file and key, e.g. "run.yaml: nests[0].grid").
IconGrid read_nest_grid(const std::string& path, const IconGrid& parent, const std::string& where);

}  // namespace finecast::host
