/* SPDX-License-Identifier: BSD-3-Clause
 * A ComIn plugin written against ComIn's C interface only (comin.h, compiled against ComIn's own
 * header in the real-ComIn tests and against finecast's elsewhere). It prints what it observes
 * as lines that do not depend on the host, the number of ranks or the decomposition, so the
 * lines of two hosts can be compared one to one:
 *   - descriptive data (global sums over the owned cells, reduced over the host communicator);
 *   - for each variable of `vars=NAME[:LEVEL],...`: its dimension semantics, zaxis_id and, at
 *     every EP_ATM_WRITE_OUTPUT_BEFORE, an exact integer checksum of its owned cells;
 *   - with `out=NAME`: it requests NAME exclusively (2-D), writes 2 * (first variable) + 1 there
 *     and reads it back at EP_ATM_WRITE_OUTPUT_AFTER.
 * Options: words separated by blanks, e.g. "vars=ts,temp:3 out=probe_out". */
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comin.h"

#define MAX_VARS 8

typedef struct {
  char name[COMIN_MAX_LEN_VAR_NAME + 1];
  int level; /* 1-based, 0 = 2-D */
  t_comin_var_handle* handle;
} probe_var;

static probe_var vars[MAX_VARS];
static int n_vars = 0;
static char out_name[COMIN_MAX_LEN_VAR_NAME + 1] = "";
static t_comin_var_handle* out_handle = NULL;
static MPI_Comm comm = MPI_COMM_NULL;

static void say(const char* fmt, const char* a, long long b, long long c) {
  char line[1024];
  snprintf(line, sizeof line, fmt, a, b, c);
  comin_print_info(line);
}

static t_comin_var_descriptor descriptor(const char* name) {
  t_comin_var_descriptor d;
  memset(&d, 0, sizeof d);
  const size_t n = strlen(name);
  memcpy(d.name, name, n < COMIN_MAX_LEN_VAR_NAME ? n : COMIN_MAX_LEN_VAR_NAME);
  d.id = 1;
  return d;
}

/* Offset of owned local cell j at 0-based level k in a variable of the given shape/semantics. */
static long long cell_offset(const int shape[5], const int sem[5], int nproma, int j, int k) {
  long long off = 0, stride = 1;
  for (int d = 0; d < 5; ++d) {
    long long i = 0;
    if (sem[d] == COMIN_DIM_SEMANTICS_NPROMA)
      i = j % nproma;
    else if (sem[d] == COMIN_DIM_SEMANTICS_BLOCK)
      i = j / nproma;
    else if (sem[d] == COMIN_DIM_SEMANTICS_LEVEL)
      i = k;
    off += i * stride;
    stride *= shape[d];
  }
  return off;
}

/* Sum over the owned cells of llround(1000 * value): exact, so the same on any decomposition. */
static long long checksum(t_comin_var_handle* h, int level) {
  int shape[5], sem[5];
  comin_var_get_shape(h, shape);
  comin_var_get_dim_semantics(h, sem);
  const int nproma = comin_descrdata_get_global_nproma();
  const int n = comin_descrdata_get_domain_cells_ncells(1);
  const int* decomp = NULL;
  int s3[3];
  comin_descrdata_get_domain_cells_decomp_domain(1, &decomp, s3);
  const double* data = comin_var_get_ptr_double(h);
  long long local = 0, global = 0;
  for (int j = 0; j < n; ++j)
    if (decomp[j % nproma + nproma * (j / nproma)] == 0)
      local += llround(1000.0 * data[cell_offset(shape, sem, nproma, j, level > 0 ? level - 1 : 0)]);
  MPI_Allreduce(&local, &global, 1, MPI_LONG_LONG, MPI_SUM, comm);
  return global;
}

static void secondary_constructor(void) {
  MPI_Comm_dup(MPI_Comm_f2c(comin_parallel_get_host_mpi_comm()), &comm);
  const int nproma = comin_descrdata_get_global_nproma();
  const int n = comin_descrdata_get_domain_cells_ncells(1);
  const int *glb = NULL, *decomp = NULL;
  int s3[3];
  comin_descrdata_get_domain_cells_glb_index(1, &glb, s3);
  comin_descrdata_get_domain_cells_decomp_domain(1, &decomp, s3);
  long long owned[2] = {0, 0}, total[2] = {0, 0};
  for (int j = 0; j < n; ++j)
    if (decomp[j % nproma + nproma * (j / nproma)] == 0) {
      owned[0] += 1;
      owned[1] += glb[j];
    }
  MPI_Allreduce(owned, total, 2, MPI_LONG_LONG, MPI_SUM, comm);
  char text[256];
  snprintf(text, sizeof text, "ncells_global=%d", comin_descrdata_get_domain_cells_ncells_global(1));
  say("probe sc %s owned=%lld glb_index_sum=%lld", text, total[0], total[1]);
  snprintf(text, sizeof text, "nlev=%d", comin_descrdata_get_domain_nlev(1));
  say("probe sc %s dt=%lld max_dom=%lld", text, (long long)comin_descrdata_get_timesteplength(1),
      comin_descrdata_get_global_max_dom());

  t_comin_entry_point context[2] = {EP_ATM_WRITE_OUTPUT_BEFORE, EP_ATM_WRITE_OUTPUT_AFTER};
  for (int i = 0; i < n_vars; ++i) {
    const t_comin_var_descriptor d = descriptor(vars[i].name);
    vars[i].handle = comin_var_get(1, context, d, COMIN_FLAG_READ);
    if (vars[i].handle == NULL) comin_plugin_finish("probe", "variable not found");
    int sem[5], zaxis = -99;
    comin_var_get_dim_semantics(vars[i].handle, sem);
    if (comin_metadata_get_typeid(d, "zaxis_id") == COMIN_METADATA_TYPEID_INTEGER)
      comin_metadata_get_integer(d, "zaxis_id", &zaxis);
    snprintf(text, sizeof text, "%s sem=%d%d%d%d%d", vars[i].name, sem[0], sem[1], sem[2], sem[3], sem[4]);
    say("probe var %s zaxis_id=%lld level=%lld", text, zaxis, vars[i].level);
  }
  if (out_name[0] != '\0') {
    out_handle = comin_var_get(2, context, descriptor(out_name), COMIN_FLAG_READ | COMIN_FLAG_WRITE);
    int shape[5], sem[5], zaxis = -99;
    comin_var_get_shape(out_handle, shape);
    comin_var_get_dim_semantics(out_handle, sem);
    comin_metadata_get_integer(descriptor(out_name), "zaxis_id", &zaxis);
    const char* long_name = NULL;
    int len = 0;
    comin_metadata_get_character(descriptor(out_name), "long_name", &long_name, &len);
    snprintf(text, sizeof text, "%s long_name=%.*s", out_name, len, long_name);
    say("probe out %s zaxis_id=%lld block_dim=%lld", text, zaxis, sem[1] == COMIN_DIM_SEMANTICS_BLOCK);
  }
}

static void before_output(void) {
  const char* dt = NULL;
  int len = 0;
  comin_current_get_datetime(&dt, &len);
  char text[256];
  snprintf(text, sizeof text, "time=%.*s", len, dt);
  say("probe ep=17 %s dom=%lld ep_now=%lld", text, comin_current_get_domain_id(), comin_current_get_ep());
  for (int i = 0; i < n_vars; ++i) {
    snprintf(text, sizeof text, "%.64s:%d", vars[i].name, vars[i].level);
    say("probe checksum %s = %lld%.0lld", text, checksum(vars[i].handle, vars[i].level), 0LL);
  }
  if (out_handle != NULL && n_vars > 0) {
    int shape[5], sem[5], vshape[5], vsem[5];
    comin_var_get_shape(out_handle, shape);
    comin_var_get_dim_semantics(out_handle, sem);
    comin_var_get_shape(vars[0].handle, vshape);
    comin_var_get_dim_semantics(vars[0].handle, vsem);
    double* out = comin_var_get_ptr_double(out_handle);
    const double* in = comin_var_get_ptr_double(vars[0].handle);
    const int nproma = comin_descrdata_get_global_nproma();
    const int n = comin_descrdata_get_domain_cells_ncells(1);
    const int level = vars[0].level > 0 ? vars[0].level - 1 : 0;
    for (int j = 0; j < n; ++j)
      out[cell_offset(shape, sem, nproma, j, 0)] = 2.0 * in[cell_offset(vshape, vsem, nproma, j, level)] + 1.0;
  }
}

static void after_output(void) {
  if (out_handle == NULL) return;
  say("probe checksum %s = %lld%.0lld", out_name, checksum(out_handle, 0), 0LL);
}

static void destructor(void) {
  say("probe destructor %s dom=%lld ep=%lld", "", comin_current_get_domain_id(), comin_current_get_ep());
  if (comm != MPI_COMM_NULL) MPI_Comm_free(&comm);
}

void comin_main(void) {
  /* A host loads a library once per process: start from a clean state in every run. */
  n_vars = 0;
  out_name[0] = '\0';
  out_handle = NULL;
  comm = MPI_COMM_NULL;
  const char* opt = NULL;
  int len = 0;
  comin_current_get_plugin_options(&opt, &len);
  char options[COMIN_MAX_LEN_OPTIONS + 1];
  snprintf(options, sizeof options, "%.*s", len, opt);
  for (char* word = strtok(options, " "); word != NULL; word = strtok(NULL, " ")) {
    if (strncmp(word, "vars=", 5) == 0) {
      for (char* item = strtok(word + 5, ","); item != NULL && n_vars < MAX_VARS; item = strtok(NULL, ",")) {
        char* colon = strchr(item, ':');
        vars[n_vars].level = colon != NULL ? atoi(colon + 1) : 0;
        if (colon != NULL) *colon = '\0';
        snprintf(vars[n_vars].name, sizeof vars[n_vars].name, "%s", item);
        ++n_vars;
      }
      /* strtok's state moved into the list: the rest of the options follows it. */
      break;
    }
  }
  snprintf(options, sizeof options, "%.*s", len, opt);
  const char* out = strstr(options, "out=");
  if (out != NULL) sscanf(out + 4, "%64s", out_name);

  unsigned int major = 0, minor = 0, patch = 0;
  comin_setup_get_version(&major, &minor, &patch);
  char text[128];
  snprintf(text, sizeof text, "version=%u.%u wp=%d", major, minor, comin_descrdata_get_global_wp());
  say("probe main %s n_dom=%lld nproma=%lld", text, comin_descrdata_get_global_n_dom(),
      comin_descrdata_get_global_nproma());
  char ep_name[COMIN_MAX_LEN_EP_NAME + 1];
  comin_callback_get_ep_name(EP_ATM_WRITE_OUTPUT_BEFORE, ep_name);
  say("probe main ep_name=%s %lld%.0lld", ep_name, EP_ATM_WRITE_OUTPUT_BEFORE, 0LL);

  if (out_name[0] != '\0') {
    const t_comin_var_descriptor d = descriptor(out_name);
    comin_var_request_add(d, true);
    comin_metadata_set_integer(d, "zaxis_id", COMIN_ZAXIS_2D);
    comin_metadata_set_character(d, "long_name", "probe");
  }
  comin_callback_register(EP_SECONDARY_CONSTRUCTOR, secondary_constructor);
  comin_callback_register(EP_ATM_WRITE_OUTPUT_BEFORE, before_output);
  comin_callback_register(EP_ATM_WRITE_OUTPUT_AFTER, after_output);
  comin_callback_register(EP_DESTRUCTOR, destructor);
}
