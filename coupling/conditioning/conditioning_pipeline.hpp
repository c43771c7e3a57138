// SPDX-License-Identifier: BSD-3-Clause
// The conditioning pipeline that the plugin and finecast-downscale share: a spec
// (conditioning_spec.hpp) plus fields give patches (contexts and residual bases:
// coupling/grid/patches.hpp), and drawn samples give fine values. This file holds what the two
// callers would otherwise each write: reading the spec's grid and preparing its patch map, the
// sampling seed, and turning drawn residuals into fine values.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "coupling/conditioning/conditioning_spec.hpp"
#include "coupling/grid/icon_grid.hpp"
#include "coupling/grid/latlon_grid.hpp"
#include "coupling/grid/patch_map.hpp"
#include "coupling/grid/patches.hpp"
#include "coupling/io/nc_metadata.hpp"

namespace finecast {
struct Region;
}

namespace finecast::coupling {

/// The fine grid of a spec and its patches.
struct ConditioningGrid {
  std::optional<IconGrid> icon;      ///< the ICON grid (grid.type icon)
  std::optional<LatLonGrid> latlon;  ///< the lat-lon grid (grid.type latlon)
  std::string variable;              ///< latlon: the variable whose coordinates define it
  PatchMap map;                      ///< prepared for the spec's context (ring table, interpolant)
  OutputGrid output;                 ///< the grid of the NetCDF output (with_output)
  std::string text;                  ///< "grid.nc (R2B4 -> R2B0)", "f.nc (96 x 192, blocks of 8 x 8)"
  int64_t row_cells = 1;             ///< cells of a grid row (lat-lon; 1 on ICON)
  /// Fine cell i's centre in degrees, in the grid's own coordinates (rotated on rotated grids).
  void cell_lat_lon(int64_t i, double& lat, double& lon) const;
};

/// Reads spec.grid.file as spec.grid.type says (the lat-lon variable: grid.variable, else the
/// first field), cuts it into patches (R2B<coarse_level> cells, or block x block blocks; a
/// negative level or a block of 0 is taken from spec.patch_size, GridError naming `source` when
/// the grid has no such patches) and prepares the patch map for the spec's context. Throws
/// IoError / GridError naming the file. `with_output`: also describe the grid for the NetCDF output
/// (a copy of its coordinates, which only the rank that writes needs).
ConditioningGrid read_conditioning_grid(const ConditioningSpec& spec, const std::string& source,
                                        bool with_output = true);

/// The patches whose fine cell centres all lie inside `region` (degrees, in the grid's own
/// coordinates: rotated on rotated grids), 1 per such patch.
std::vector<char> patches_inside(const ConditioningGrid& grid, const Region& region);

/// The patches a hold-out flags (1 = held out), the rule train.hold_out, finecast-eval's and
/// finecast-downscale's --hold-out share: `text` is a box "lat0,lat1,lon0,lon1" (patches_inside),
/// or several joined by ';' (the patches wholly inside one of them),
/// or FILE:VAR, a mask on the fine grid (or a larger grid holding it, matched by coordinates):
/// the patches with a finite non-zero cell (grid/hold_out_mask.hpp). Throws ConfigError naming
/// `key` (e.g. "--hold-out"), FILE and VAR when the mask is not on the grid, and when no patch
/// is flagged.
std::vector<char> held_out_patches(const ConditioningGrid& grid, const std::string& text, const std::string& key);

/// Patches `rows` of `all` (indices into it) as `out`, in that order: the contexts, coarse means,
/// weights, fine values, valid flags, residual base and local slopes that sample_fine needs, so that
/// a subset of a whole field's patches is sampled with the contexts of the whole field. Reuses out's
/// storage.
void select_patches(const Patches& all, const std::vector<int64_t>& rows, Patches& out);

/// Prepares `map` for what the spec's context needs: the ring table of its context_rings and, with
/// a residual base or static covariates, the conservative interpolant.
void prepare_for(const ConditioningSpec& spec, PatchMap& map);

/// The seed of the `sampling`-th sampling (1, 2, ...) of trainer rank `trainer`: the plugin's
/// samplings and finecast-downscale's steps draw the same members from the same checkpoint.
uint64_t sampling_seed(uint64_t seed, long long sampling, int trainer = 0);

/// Draws `members` members of every patch [n][members][P] into `out`: `draw(context, coarse,
/// weights, n, seed, out)` samples the model (conditioned on the patches' coarse means, or on
/// zeros with a residual base), then the residual base is added, so that `out` holds fine values;
/// with options.global_blend < 1 the members' mean is then moved toward the global regression
/// (blend_toward_global), and with options.spread_regression > 0 each patch's members spread by
/// its regression's share (spread_by_regression). `global`, n_vars and `options` are those the
/// patches were built with.
using DrawFn = std::function<void(const float* context, const float* coarse, const float* weights, int64_t n,
                                  uint64_t seed, float* out)>;
void sample_fine(Patches& patches, int64_t members, uint64_t seed, float* out, const DrawFn& draw,
                 const PatchMap& global, int n_vars, const PatchOptions& options);

}  // namespace finecast::coupling
