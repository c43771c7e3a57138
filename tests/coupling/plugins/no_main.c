/* SPDX-License-Identifier: BSD-3-Clause
 * A shared library that is not a ComIn plugin (no comin_main): the loader must name it. */
int finecast_not_a_plugin(void) { return 42; }
