// SPDX-License-Identifier: BSD-3-Clause
// Where the owned cells of a host's 5-D Fortran-ordered field sit (pure: no MPI), and packing.
#pragma once

#include <cstdint>
#include <vector>

namespace finecast::coupling {

/// The owned (non-halo) cells of one rank: per owned local cell, the C offset of its value in
/// the host array and its 0-based global index, both in local-cell order.
/// A strided part of a host array: `rows` runs of `width` elements, `pitch` elements apart,
/// the first at element `first` (one 2-D copy, e.g. cudaMemcpy2D).
struct ArrayRegion {
  int64_t first = 0, width = 0, pitch = 0, rows = 0;
  int64_t elements() const { return width * rows; }
};

struct OwnedCells {
  std::vector<int64_t> offsets;       ///< element offsets into the host array
  std::vector<int64_t> global_index;  ///< 0-based global cell index
  /// The smallest region of the array that holds every owned cell at the level (for ICON's
  /// (nproma, nlev, nblks) layout: one nproma run per block), and where each cell lands when
  /// that region is copied densely (row r, column c -> r * width + c): what a plugin copies from
  /// a device array instead of the whole field.
  ArrayRegion region;
  std::vector<int64_t> staged;  ///< staged[i]: the position of offsets[i] in the dense copy
  int64_t size() const { return static_cast<int64_t>(offsets.size()); }
};

/// Computes the owned cells of a cell field from its 5-D shape and ComIn dimension semantics
/// (COMIN_DIM_SEMANTICS_* of comin.h; an NPROMA + BLOCK pair or one UNBLOCK
/// dimension holds the cells, LEVEL the level, every other dimension is taken at index 0).
/// decomp_domain and glb_index hold one value per local cell (0 = owned; 1-based global index).
/// `level` is 0-based. Throws GridError naming the shape and semantics when they do not fit.
OwnedCells owned_cells(const int shape[5], const int dim_semantics[5], int nproma, int n_local_cells,
                       const int* decomp_domain, const int* glb_index, int level = 0);

/// Copies the values at `cells.offsets` into out[0..cells.size()) as float.
void pack(const double* field, const OwnedCells& cells, float* out);
void pack(const float* field, const OwnedCells& cells, float* out);

/// pack from a dense copy of cells.region (positions cells.staged).
void pack_staged(const double* region, const OwnedCells& cells, float* out);
void pack_staged(const float* region, const OwnedCells& cells, float* out);

/// The inverse of pack: writes values[i] to field[cells.offsets[i]] (for write-back).
void unpack(const float* values, const OwnedCells& cells, double* field);
void unpack(const float* values, const OwnedCells& cells, float* field);

}  // namespace finecast::coupling
