/* SPDX-License-Identifier: BSD-3-Clause
 * A ComIn plugin for the host library's tests: reports what it sees through comin_print_info
 * (the tests capture those lines in order) and does what its options string asks for.
 * Built twice (TEST_PLUGIN_TAG "a" and "b") to check the order across plugins. */
#include <mpi.h>
#include <stdio.h>
#include <string.h>

#include "comin.h"

#ifndef TEST_PLUGIN_TAG
#define TEST_PLUGIN_TAG "a"
#endif

static t_comin_var_handle* ts_handle = NULL;
static t_comin_var_handle* out_handle = NULL;
static char options[256];

static int has_option(const char* word) {
  char padded[300];
  snprintf(padded, sizeof padded, " %s ", options);
  char needle[64];
  snprintf(needle, sizeof needle, " %s ", word);
  return strstr(padded, needle) != NULL;
}

static void report(const char* what) {
  const char* name = NULL;
  const char* dt = NULL;
  int name_len = 0, dt_len = 0;
  comin_current_get_plugin_name(&name, &name_len);
  comin_current_get_datetime(&dt, &dt_len);
  char line[512];
  snprintf(line, sizeof line, "%s %s ep=%d dom=%d name=%.*s time=%.*s", TEST_PLUGIN_TAG, what,
           (int)comin_current_get_ep(), comin_current_get_domain_id(), name_len, name, dt_len, dt);
  comin_print_info(line);
}

static void secondary_constructor(void) {
  report("sc");
  t_comin_entry_point context[1] = {EP_ATM_WRITE_OUTPUT_BEFORE};
  t_comin_var_descriptor d;
  memset(&d, 0, sizeof d);
  d.id = 1;
  strcpy(d.name, "ts");
  ts_handle = comin_var_get(1, context, d, COMIN_FLAG_READ);
  if (has_option("request")) {
    snprintf(d.name, sizeof d.name, "%s_out", TEST_PLUGIN_TAG);
    out_handle = comin_var_get(1, context, d, COMIN_FLAG_WRITE);
  }
  strcpy(d.name, "no_such_var");
  char line[128];
  snprintf(line, sizeof line, "%s unknown_var_is_null=%d", TEST_PLUGIN_TAG,
           comin_var_get(1, context, d, COMIN_FLAG_READ) == NULL);
  comin_print_info(line);
  if (has_option("late_register")) {
    comin_error_set_errors_return(true);
    comin_callback_register(EP_ATM_TIMELOOP_START, secondary_constructor);
    snprintf(line, sizeof line, "%s late_register_error=%d", TEST_PLUGIN_TAG,
             (int)comin_error_get());
    comin_print_info(line);
    comin_error_reset();
    comin_error_set_errors_return(false);
  }
  if (has_option("plugin_comm")) {
    int size = 0;
    MPI_Comm_size(MPI_Comm_f2c(comin_parallel_get_plugin_mpi_comm()), &size);
    snprintf(line, sizeof line, "%s plugin_comm_size=%d", TEST_PLUGIN_TAG, size);
    comin_print_info(line);
  }
}

static void output_1(void) {
  report("cb1");
  if (ts_handle == NULL || out_handle == NULL) return;
  /* Doubles ts into <tag>_out over the valid cells only (the last block may be partial). */
  int shape[5];
  comin_var_get_shape(ts_handle, shape);
  const double* ts = comin_var_get_ptr_double(ts_handle);
  double* out = comin_var_get_ptr_double(out_handle);
  const int ncells = comin_descrdata_get_domain_cells_ncells(1);
  for (int j = 0; j < ncells; ++j) {
    const int jc = j % shape[0], jb = j / shape[0];
    out[jc + shape[0] * shape[1] * jb] = 2.0 * ts[jc + shape[0] * shape[1] * jb];
  }
}

static void output_2(void) { report("cb2"); }
static void finish(void) { report("finish"); }
static void destructor(void) { report("destructor"); }

void comin_main(void) {
  const char* opt = NULL;
  int len = 0;
  comin_current_get_plugin_options(&opt, &len);
  snprintf(options, sizeof options, "%.*s", len, opt);
  ts_handle = out_handle = NULL;
  report("main");
  if (has_option("finish_in_main")) {
    comin_plugin_finish("test_plugin", "stop requested by the options");
    return;
  }
  comin_callback_register(EP_SECONDARY_CONSTRUCTOR, secondary_constructor);
  comin_callback_register(EP_ATM_WRITE_OUTPUT_BEFORE, output_1);
  comin_callback_register(EP_ATM_WRITE_OUTPUT_BEFORE, output_2);
  comin_callback_register(EP_FINISH, finish);
  comin_callback_register(EP_DESTRUCTOR, destructor);
  if (has_option("request")) {
    t_comin_var_descriptor d;
    memset(&d, 0, sizeof d);
    d.id = 1;
    snprintf(d.name, sizeof d.name, "%s_out", TEST_PLUGIN_TAG);
    comin_var_request_add(d, false);
  }
}
