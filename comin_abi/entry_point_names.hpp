// SPDX-License-Identifier: BSD-3-Clause
// The names of ComIn's entry points, in the order of t_comin_entry_point (ids 1..EP_DESTRUCTOR):
// one list for finecast's host library and the plugin's config, beside comin.h and header-only,
// so that the plugin needs nothing of finecast's host library to read them.
#pragma once

namespace finecast::comin_abi {

inline constexpr const char* kEntryPointNames[] = {"EP_SECONDARY_CONSTRUCTOR",
                                                   "EP_ATM_YAC_DEFCOMP_BEFORE",
                                                   "EP_ATM_YAC_DEFCOMP_AFTER",
                                                   "EP_ATM_YAC_SYNCDEF_BEFORE",
                                                   "EP_ATM_YAC_SYNCDEF_AFTER",
                                                   "EP_ATM_YAC_ENDDEF_BEFORE",
                                                   "EP_ATM_YAC_ENDDEF_AFTER",
                                                   "EP_ATM_INIT_FINALIZE",
                                                   "EP_ATM_TIMELOOP_BEFORE",
                                                   "EP_ATM_TIMELOOP_START",
                                                   "EP_ATM_TIMELOOP_END",
                                                   "EP_ATM_TIMELOOP_AFTER",
                                                   "EP_ATM_INTEGRATE_BEFORE",
                                                   "EP_ATM_INTEGRATE_START",
                                                   "EP_ATM_INTEGRATE_END",
                                                   "EP_ATM_INTEGRATE_AFTER",
                                                   "EP_ATM_WRITE_OUTPUT_BEFORE",
                                                   "EP_ATM_WRITE_OUTPUT_AFTER",
                                                   "EP_ATM_CHECKPOINT_BEFORE",
                                                   "EP_ATM_CHECKPOINT_AFTER",
                                                   "EP_ATM_ADVECTION_BEFORE",
                                                   "EP_ATM_ADVECTION_AFTER",
                                                   "EP_ATM_PHYSICS_BEFORE",
                                                   "EP_ATM_PHYSICS_AFTER",
                                                   "EP_ATM_NUDGING_BEFORE",
                                                   "EP_ATM_NUDGING_AFTER",
                                                   "EP_ATM_SURFACE_BEFORE",
                                                   "EP_ATM_SURFACE_AFTER",
                                                   "EP_ATM_TURBULENCE_BEFORE",
                                                   "EP_ATM_TURBULENCE_AFTER",
                                                   "EP_ATM_MICROPHYSICS_BEFORE",
                                                   "EP_ATM_MICROPHYSICS_AFTER",
                                                   "EP_ATM_CONVECTION_BEFORE",
                                                   "EP_ATM_CONVECTION_AFTER",
                                                   "EP_ATM_RADIATION_BEFORE",
                                                   "EP_ATM_RADIATION_AFTER",
                                                   "EP_ATM_RADHEAT_BEFORE",
                                                   "EP_ATM_RADHEAT_AFTER",
                                                   "EP_ATM_GWDRAG_BEFORE",
                                                   "EP_ATM_GWDRAG_AFTER",
                                                   "EP_FINISH",
                                                   "EP_DESTRUCTOR"};
inline constexpr int kEntryPointCount = static_cast<int>(sizeof kEntryPointNames / sizeof *kEntryPointNames);

}  // namespace finecast::comin_abi
