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

static void metadata_report(void);

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
  if (has_option("metadata")) {
    metadata_report();
    return;
  }
  t_comin_entry_point context[1] = {EP_ATM_WRITE_OUTPUT_BEFORE};
  t_comin_var_descriptor d;
  memset(&d, 0, sizeof d);
  d.id = 1;
  strcpy(d.name, "ts");
  /* "device": ts is read through its device pointer (COMIN_FLAG_DEVICE), so ComIn copies it for
   * this plugin neither to the host nor back. */
  ts_handle =
      comin_var_get(1, context, d, has_option("device") ? COMIN_FLAG_READ | COMIN_FLAG_DEVICE : COMIN_FLAG_READ);
  if (has_option("request")) {
    snprintf(d.name, sizeof d.name, "%s_out", TEST_PLUGIN_TAG);
    out_handle = comin_var_get(1, context, d, COMIN_FLAG_WRITE);
  }
  /* An unknown variable is an error (ComIn's abort), reported through the error state when the
   * plugin asked for errors to return. */
  strcpy(d.name, "no_such_var");
  char line[128];
  comin_error_set_errors_return(true);
  const int is_null = comin_var_get(1, context, d, COMIN_FLAG_READ) == NULL;
  snprintf(line, sizeof line, "%s unknown_var_is_null=%d error=%d", TEST_PLUGIN_TAG, is_null, (int)comin_error_get());
  comin_error_reset();
  comin_error_set_errors_return(false);
  comin_print_info(line);
  if (has_option("late_register")) {
    comin_error_set_errors_return(true);
    comin_callback_register(EP_ATM_TIMELOOP_START, secondary_constructor);
    snprintf(line, sizeof line, "%s late_register_error=%d", TEST_PLUGIN_TAG, (int)comin_error_get());
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

/* "metadata": what ComIn does with requests and their metadata. */
static void metadata_requests(void) {
  t_comin_var_descriptor d;
  memset(&d, 0, sizeof d);
  strcpy(d.name, "m3d"); /* no zaxis_id: ComIn makes it 3-D */
  d.id = 1;
  comin_var_request_add(d, false);
  comin_metadata_set_character(d, "units", "K");
  comin_metadata_set_real(d, "scale", 0.5);
  comin_error_set_errors_return(true);
  comin_metadata_set_integer(d, "units", 3); /* another type for the same key */
  char line[128];
  snprintf(line, sizeof line, "%s type_clash_error=%d", TEST_PLUGIN_TAG, (int)comin_error_get());
  comin_print_info(line);
  comin_error_reset();
  comin_metadata_set_logical(d, "tracer", true); /* a tracer must be requested for all domains */
  snprintf(line, sizeof line, "%s tracer_domain_error=%d", TEST_PLUGIN_TAG, (int)comin_error_get());
  comin_print_info(line);
  comin_error_reset();
  comin_var_request_add(d, true); /* exclusive after a shared request */
  snprintf(line, sizeof line, "%s exclusive_error=%d", TEST_PLUGIN_TAG, (int)comin_error_get());
  comin_print_info(line);
  comin_error_reset();
  comin_error_set_errors_return(false);
  strcpy(d.name, "trc");
  d.id = -1;
  comin_var_request_add(d, false);
  comin_metadata_set_logical(d, "tracer", true);
  strcpy(d.name, "m2d");
  d.id = 1;
  comin_var_request_add(d, false);
  comin_metadata_set_integer(d, "zaxis_id", COMIN_ZAXIS_2D);
  comin_metadata_set_integer(d, "datatype", COMIN_VAR_DATATYPE_FLOAT);
}

static void metadata_report(void) {
  t_comin_entry_point context[1] = {EP_ATM_WRITE_OUTPUT_BEFORE};
  const char* names[3] = {"m3d", "m2d", "trc"};
  for (int i = 0; i < 3; ++i) {
    t_comin_var_descriptor d;
    memset(&d, 0, sizeof d);
    strcpy(d.name, names[i]);
    d.id = 1;
    t_comin_var_handle* h = comin_var_get(1, context, d, COMIN_FLAG_READ);
    int shape[5], sem[5], zaxis = -9, ncontained = -9, keys = 0, datatype = 0;
    comin_var_get_shape(h, shape);
    comin_var_get_dim_semantics(h, sem);
    comin_var_get_ncontained(h, &ncontained);
    comin_metadata_get_integer(d, "zaxis_id", &zaxis);
    comin_metadata_get_integer(d, "datatype", &datatype);
    t_comin_metadata_iterator* it = comin_metadata_get_iterator_begin(d);
    t_comin_metadata_iterator* end = comin_metadata_get_iterator_end(d);
    for (; !comin_metadata_iterator_compare(it, end); comin_metadata_iterator_next(it)) ++keys;
    comin_metadata_iterator_delete(it);
    comin_metadata_iterator_delete(end);
    char line[256];
    snprintf(line, sizeof line, "%s %s shape=%d,%d,%d,%d,%d sem=%d%d%d%d%d zaxis=%d ncontained=%d keys=%d float=%d",
             TEST_PLUGIN_TAG, names[i], shape[0], shape[1], shape[2], shape[3], shape[4], sem[0], sem[1], sem[2],
             sem[3], sem[4], zaxis, ncontained, keys,
             datatype == COMIN_VAR_DATATYPE_FLOAT && comin_var_get_ptr_float(h) != NULL);
    comin_print_info(line);
  }
  t_comin_var_descriptor d;
  memset(&d, 0, sizeof d);
  strcpy(d.name, "m3d");
  d.id = 1;
  const char* units = NULL;
  int len = 0;
  double scale = 0;
  comin_metadata_get_character(d, "units", &units, &len);
  comin_metadata_get_real(d, "scale", &scale);
  char line[128];
  snprintf(line, sizeof line, "%s m3d units=%.*s scale=%g typeid=%d undefined=%d", TEST_PLUGIN_TAG, len, units, scale,
           (int)comin_metadata_get_typeid(d, "scale"), (int)comin_metadata_get_typeid(d, "nothing"));
  comin_print_info(line);
}

static void output_1(void) {
  report("cb1");
  if (has_option("device")) {
    char line[128];
    snprintf(line, sizeof line, "%s has_device=%d ts_device_ptr=%d", TEST_PLUGIN_TAG,
             (int)comin_descrdata_get_global_has_device(), comin_var_get_device_ptr(ts_handle) != NULL);
    comin_print_info(line);
    return;
  }
  if (ts_handle == NULL || out_handle == NULL) return;
  /* Doubles ts into <tag>_out over the valid cells only (the last block may be partial); both
   * are 2-D (nproma, nblks). */
  int shape[5];
  comin_var_get_shape(ts_handle, shape);
  const double* ts = comin_var_get_ptr_double(ts_handle);
  double* out = comin_var_get_ptr_double(out_handle);
  const int ncells = comin_descrdata_get_domain_cells_ncells(1);
  for (int j = 0; j < ncells; ++j)
    out[j % shape[0] + shape[0] * (j / shape[0])] = 2.0 * ts[j % shape[0] + shape[0] * (j / shape[0])];
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
  comin_callback_register(EP_ATM_WRITE_OUTPUT_AFTER, output_2);
  if (has_option("twice")) /* ComIn keeps one callback per entry point and plugin: the last */
    comin_callback_register(EP_ATM_WRITE_OUTPUT_AFTER, output_1);
  comin_callback_register(EP_FINISH, finish);
  comin_callback_register(EP_DESTRUCTOR, destructor);
  if (has_option("metadata")) metadata_requests();
  if (has_option("request")) {
    t_comin_var_descriptor d;
    memset(&d, 0, sizeof d);
    d.id = 1;
    snprintf(d.name, sizeof d.name, "%s_out", TEST_PLUGIN_TAG);
    comin_var_request_add(d, false);
    comin_metadata_set_integer(d, "zaxis_id", COMIN_ZAXIS_2D);
  }
}
