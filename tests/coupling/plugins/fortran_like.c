/* SPDX-License-Identifier: BSD-3-Clause
 * Stands in for a Fortran ComIn plugin in the host library's tests: it needs a symbol of ComIn's
 * Fortran module interface, which finecast's libcomin does not provide, so dlopen fails. */
extern void __comin_descrdata_MOD_comin_descrdata_get_global(void);

void comin_main(void) { __comin_descrdata_MOD_comin_descrdata_get_global(); }
