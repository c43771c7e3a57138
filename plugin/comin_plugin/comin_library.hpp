// SPDX-License-Identifier: BSD-3-Clause
// The ComIn library the plugin runs against, found at run time. ICON 2024.x releases bundle
// ComIn 0.2, ICON 2025.x ComIn 0.3; one plugin file serves both. The plugin links only the
// functions both versions define (comin_var_get_ptr, not 0.3's typed comin_var_get_ptr_double);
// what only one version has is looked up in the very libcomin.so.0 the plugin's calls go to:
// - the layout of a variable's 5 dimensions: 0.3's comin_var_get_dim_semantics, or 0.2's
//   comin_var_get_pos (positions of the cell, level, block and container dimensions);
// - the version: ComIn's comin_setup_get_version (its Fortran module function, which both
//   versions export from a gfortran build), else told from the functions the library has.
#pragma once

#include <string>

#include "comin.h"

namespace finecast::plugin {

struct CominLibrary {
  std::string path;                        ///< the libcomin.so.0 the plugin's ComIn calls go to
  int major = -1, minor = -1, patch = -1;  ///< -1: the version function was not found
  std::string version_source;              ///< how the version was learnt, for the start-up line
  bool has_dim_semantics = false;          ///< ComIn >= 0.3: comin_var_get_dim_semantics
  bool has_var_get_pos = false;            ///< ComIn 0.2: comin_var_get_pos
  /// "ComIn 0.2.0 (/path/libcomin.so.0; ...)", for the start-up line.
  std::string describe() const;
  /// "0.2.0", or "0.2" / "0.3 or later" when only the functions tell.
  std::string version() const;
};

/// The library, probed once (on the first call).
const CominLibrary& comin_library();

/// The meaning of each of a variable's 5 dimensions (COMIN_DIM_SEMANTICS_*), as ComIn 0.3's
/// comin_var_get_dim_semantics gives it; on ComIn 0.2 made from comin_var_get_pos and the shape.
/// ConfigError naming `name`, the ComIn version and the layout when finecast cannot read a
/// variable of that layout (a 0.2 container slice along a dimension before the cells' block).
void var_dim_semantics(t_comin_var_handle* handle, const std::string& name, int sem[5]);

/// The 0.2 rule on its own, for tests: positions as comin_var_get_pos gives them (0-based C
/// dimension indices, negative = none) and the variable's shape.
void dim_semantics_from_positions(int pos_jc, int pos_jk, int pos_jb, int pos_jn, const int shape[5],
                                  const std::string& name, int sem[5]);

}  // namespace finecast::plugin
