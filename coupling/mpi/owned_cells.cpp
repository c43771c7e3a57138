// SPDX-License-Identifier: BSD-3-Clause
// Owned-cell layout of host arrays: the pure half of the gather, tested without MPI.
#include "coupling/mpi/owned_cells.hpp"

#include <algorithm>
#include <sstream>
#include <string>

#include "comin.h"
#include "common/error.hpp"

namespace finecast::coupling {
namespace {

std::string describe(const int shape[5], const int sem[5]) {
  std::ostringstream s;
  s << "shape (";
  for (int d = 0; d < 5; ++d) s << (d ? ", " : "") << shape[d];
  s << "), dim semantics (";
  for (int d = 0; d < 5; ++d) s << (d ? ", " : "") << sem[d];
  s << ")";
  return s.str();
}

int find_dim(const int sem[5], int which, const int shape[5], const char* name) {
  int found = -1;
  for (int d = 0; d < 5; ++d) {
    if (sem[d] != which) continue;
    if (found >= 0) throw GridError(std::string("host field has two ") + name + " dimensions: " + describe(shape, sem));
    found = d;
  }
  return found;
}

template <typename T>
void pack_impl(const T* field, const OwnedCells& cells, float* out) {
  const int64_t n = cells.size();
  const int64_t* off = cells.offsets.data();
  for (int64_t i = 0; i < n; ++i) out[i] = static_cast<float>(field[off[i]]);
}

template <typename T>
void pack_staged_impl(const T* region, const OwnedCells& cells, float* out) {
  const int64_t n = cells.size();
  const int64_t* at = cells.staged.data();
  for (int64_t i = 0; i < n; ++i) out[i] = static_cast<float>(region[at[i]]);
}

/// cells.region and cells.staged: rows of `width` elements `pitch` apart, starting at `base` (+ a
/// multiple of pitch), where the layout has them (width <= pitch), else the contiguous span from the first to the last
/// owned cell.
void plan_region(OwnedCells& cells, int64_t base, int64_t width, int64_t pitch) {
  if (cells.offsets.empty()) return;
  int64_t lo = cells.offsets.front(), hi = lo;
  for (int64_t o : cells.offsets) {
    lo = std::min(lo, o);
    hi = std::max(hi, o);
  }
  ArrayRegion r;
  if (width >= 1 && pitch >= width) {
    r.first = base + (lo - base) / pitch * pitch;  // the row (block) of the first owned cell
    r.width = width;
    r.pitch = pitch;
    r.rows = (hi - r.first) / pitch + 1;
    for (int64_t o : cells.offsets)
      if ((o - r.first) % pitch >= width) r.rows = 0;  // the layout is not what was assumed
  }
  if (r.rows == 0) r = ArrayRegion{lo, hi - lo + 1, hi - lo + 1, 1};
  cells.region = r;
  cells.staged.resize(cells.offsets.size());
  for (size_t i = 0; i < cells.offsets.size(); ++i) {
    const int64_t d = cells.offsets[i] - r.first;
    cells.staged[i] = (d / r.pitch) * r.width + d % r.pitch;
  }
}

template <typename T>
void unpack_impl(const float* values, const OwnedCells& cells, T* field) {
  const int64_t n = cells.size();
  const int64_t* off = cells.offsets.data();
  for (int64_t i = 0; i < n; ++i) field[off[i]] = static_cast<T>(values[i]);
}

}  // namespace

OwnedCells owned_cells(const int shape[5], const int dim_semantics[5], int nproma, int n_local_cells,
                       const int* decomp_domain, const int* glb_index, int level) {
  for (int d = 0; d < 5; ++d)
    if (shape[d] < 1) throw GridError("host field has a dimension of size < 1: " + describe(shape, dim_semantics));
  if (n_local_cells < 0) throw GridError("negative local cell count " + std::to_string(n_local_cells));
  if (n_local_cells > 0 && (!decomp_domain || !glb_index))
    throw GridError("owned_cells: decomp_domain and glb_index are required for " + std::to_string(n_local_cells) +
                    " local cells");

  // Fortran order: the first dimension varies fastest.
  int64_t stride[5];
  stride[0] = 1;
  for (int d = 1; d < 5; ++d) stride[d] = stride[d - 1] * shape[d - 1];
  const int64_t total = stride[4] * shape[4];

  const int d_nproma = find_dim(dim_semantics, COMIN_DIM_SEMANTICS_NPROMA, shape, "NPROMA");
  const int d_block = find_dim(dim_semantics, COMIN_DIM_SEMANTICS_BLOCK, shape, "BLOCK");
  const int d_unblock = find_dim(dim_semantics, COMIN_DIM_SEMANTICS_UNBLOCK, shape, "UNBLOCK");
  const int d_level = find_dim(dim_semantics, COMIN_DIM_SEMANTICS_LEVEL, shape, "LEVEL");

  const bool blocked = d_nproma >= 0 && d_block >= 0;
  if (!blocked && d_unblock < 0)
    throw GridError(
        "host field is not a cell field: it needs NPROMA and BLOCK dimensions (or one UNBLOCK "
        "dimension), got " +
        describe(shape, dim_semantics));
  if (blocked) {
    if (nproma < 1 || shape[d_nproma] != nproma)
      throw GridError("host field's NPROMA dimension is " + std::to_string(shape[d_nproma]) + " but nproma is " +
                      std::to_string(nproma) + ": " + describe(shape, dim_semantics));
    const int64_t need_blocks = (static_cast<int64_t>(n_local_cells) + nproma - 1) / nproma;
    if (shape[d_block] < need_blocks)
      throw GridError("host field has " + std::to_string(shape[d_block]) + " blocks but " +
                      std::to_string(n_local_cells) + " local cells need " + std::to_string(need_blocks) + ": " +
                      describe(shape, dim_semantics));
  } else if (shape[d_unblock] < n_local_cells) {
    throw GridError("host field's UNBLOCK dimension holds " + std::to_string(shape[d_unblock]) +
                    " cells but there are " + std::to_string(n_local_cells) +
                    " local cells: " + describe(shape, dim_semantics));
  }
  const int n_levels = d_level >= 0 ? shape[d_level] : 1;
  if (level < 0 || level >= n_levels)
    throw GridError("level " + std::to_string(level) + " is outside the host field's " + std::to_string(n_levels) +
                    " levels: " + describe(shape, dim_semantics));
  const int64_t level_offset = d_level >= 0 ? level * stride[d_level] : 0;

  OwnedCells cells;
  int64_t n_owned = 0;
  for (int j = 0; j < n_local_cells; ++j) n_owned += decomp_domain[j] == 0;
  cells.offsets.reserve(static_cast<size_t>(n_owned));
  cells.global_index.reserve(static_cast<size_t>(n_owned));
  for (int j = 0; j < n_local_cells; ++j) {
    if (decomp_domain[j] != 0) continue;  // halo cells belong to another rank
    if (glb_index[j] < 1)
      throw GridError("local cell " + std::to_string(j) + " has global index " + std::to_string(glb_index[j]) +
                      " (glb_index is 1-based, expected >= 1)");
    const int64_t off = blocked ? (j % nproma) * stride[d_nproma] + static_cast<int64_t>(j / nproma) * stride[d_block]
                                : static_cast<int64_t>(j) * stride[d_unblock];
    cells.offsets.push_back(off + level_offset);
    cells.global_index.push_back(static_cast<int64_t>(glb_index[j]) - 1);
  }
  if (!cells.offsets.empty() && cells.offsets.back() >= total)
    throw InternalError("owned_cells: offset outside the host array");
  // The level's cells sit in runs of nproma (one per block), a block's stride apart.
  if (blocked && stride[d_nproma] == 1)
    plan_region(cells, level_offset, nproma, stride[d_block]);
  else
    plan_region(cells, 0, 0, 0);
  return cells;
}

void pack(const double* field, const OwnedCells& cells, float* out) { pack_impl(field, cells, out); }
void pack(const float* field, const OwnedCells& cells, float* out) { pack_impl(field, cells, out); }
void pack_staged(const double* region, const OwnedCells& cells, float* out) { pack_staged_impl(region, cells, out); }
void pack_staged(const float* region, const OwnedCells& cells, float* out) { pack_staged_impl(region, cells, out); }
void unpack(const float* values, const OwnedCells& cells, double* field) { unpack_impl(values, cells, field); }
void unpack(const float* values, const OwnedCells& cells, float* field) { unpack_impl(values, cells, field); }

}  // namespace finecast::coupling
