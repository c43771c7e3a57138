/* SPDX-License-Identifier: BSD-3-Clause
 *
 * finecast's own declaration of the subset of the ICON Community Interface (ComIn) C API that
 * finecast uses (see shared/comin_api.md). Names, argument lists, enum values and semantics
 * follow ComIn, so a plugin built against this header also builds against the real comin.h
 * (cmake -DFINECAST_COMIN_ROOT=...). Implemented by finecast's host library (libfinecast_host).
 */
#ifndef FINECAST_COMIN_H
#define FINECAST_COMIN_H

#include <stdbool.h>

#ifdef __cplusplus
extern "C" {
#endif

#define COMIN_MAX_LEN_VAR_NAME 120
#define COMIN_MAX_LEN_ERR_MESSAGE 120
#define COMIN_MAX_LEN_EP_NAME 40

/* The order is part of the ABI (EP_ATM_WRITE_OUTPUT_BEFORE = 17, EP_DESTRUCTOR = 42). */
typedef enum t_comin_entry_point {
  EP_SECONDARY_CONSTRUCTOR = 1,
  EP_ATM_YAC_DEFCOMP_BEFORE,
  EP_ATM_YAC_DEFCOMP_AFTER,
  EP_ATM_YAC_SYNCDEF_BEFORE,
  EP_ATM_YAC_SYNCDEF_AFTER,
  EP_ATM_YAC_ENDDEF_BEFORE,
  EP_ATM_YAC_ENDDEF_AFTER,
  EP_ATM_INIT_FINALIZE,
  EP_ATM_TIMELOOP_BEFORE,
  EP_ATM_TIMELOOP_START,
  EP_ATM_TIMELOOP_END,
  EP_ATM_TIMELOOP_AFTER,
  EP_ATM_INTEGRATE_BEFORE,
  EP_ATM_INTEGRATE_START,
  EP_ATM_INTEGRATE_END,
  EP_ATM_INTEGRATE_AFTER,
  EP_ATM_WRITE_OUTPUT_BEFORE,
  EP_ATM_WRITE_OUTPUT_AFTER,
  EP_ATM_CHECKPOINT_BEFORE,
  EP_ATM_CHECKPOINT_AFTER,
  EP_ATM_ADVECTION_BEFORE,
  EP_ATM_ADVECTION_AFTER,
  EP_ATM_PHYSICS_BEFORE,
  EP_ATM_PHYSICS_AFTER,
  EP_ATM_NUDGING_BEFORE,
  EP_ATM_NUDGING_AFTER,
  EP_ATM_SURFACE_BEFORE,
  EP_ATM_SURFACE_AFTER,
  EP_ATM_TURBULENCE_BEFORE,
  EP_ATM_TURBULENCE_AFTER,
  EP_ATM_MICROPHYSICS_BEFORE,
  EP_ATM_MICROPHYSICS_AFTER,
  EP_ATM_CONVECTION_BEFORE,
  EP_ATM_CONVECTION_AFTER,
  EP_ATM_RADIATION_BEFORE,
  EP_ATM_RADIATION_AFTER,
  EP_ATM_RADHEAT_BEFORE,
  EP_ATM_RADHEAT_AFTER,
  EP_ATM_GWDRAG_BEFORE,
  EP_ATM_GWDRAG_AFTER,
  EP_FINISH,
  EP_DESTRUCTOR
} t_comin_entry_point;

typedef enum t_comin_var_access_flag {
  COMIN_FLAG_NONE = 0,
  COMIN_FLAG_READ = 1 << 1,
  COMIN_FLAG_WRITE = 1 << 2,
  COMIN_FLAG_SYNC_HALO = 1 << 3,
  COMIN_FLAG_DEVICE = 1 << 4
} t_comin_var_access_flag;

typedef enum t_comin_dim_semantics {
  COMIN_DIM_SEMANTICS_UNDEF = 1,
  COMIN_DIM_SEMANTICS_NPROMA = 2,
  COMIN_DIM_SEMANTICS_BLOCK = 3,
  COMIN_DIM_SEMANTICS_UNBLOCK = 4,
  COMIN_DIM_SEMANTICS_LEVEL = 5,
  COMIN_DIM_SEMANTICS_CONTAINER = 6,
  COMIN_DIM_SEMANTICS_OTHER = 7,
  COMIN_DIM_SEMANTICS_UNUSED = 8
} t_comin_dim_semantics;

/* Error codes: compare by message (comin_error_get_message), not by number (see comin_api.md). */
typedef enum t_comin_error_code {
  COMIN_SUCCESS = 0,
  COMIN_INFO,
  COMIN_WARNING,
  COMIN_ERROR_STATUS
} t_comin_error_code;

typedef struct t_comin_var_descriptor {
  char name[COMIN_MAX_LEN_VAR_NAME + 1];
  int id; /* domain id, 1-based */
} t_comin_var_descriptor;

typedef struct t_comin_var_handle t_comin_var_handle;
typedef struct t_comin_var_descr_list_iterator t_comin_var_descr_list_iterator;
typedef void (*t_comin_callback_function)(void);

/* ---- life cycle and current state ---- */
void comin_callback_register(t_comin_entry_point entry_point_id, t_comin_callback_function fct_ptr);
t_comin_entry_point comin_current_get_ep(void);
int comin_current_get_domain_id(void);
void comin_current_get_plugin_name(char const** val, int* len);
void comin_current_get_plugin_options(char const** val, int* len);
void comin_current_get_datetime(char const** val, int* len);

int comin_parallel_get_plugin_mpi_comm(void);
int comin_parallel_get_host_mpi_comm(void);
int comin_parallel_get_host_mpi_rank(void);

void comin_plugin_finish(const char* routine, const char* text);
void comin_print_info(const char* msg);
void comin_print_warning(const char* msg);

t_comin_error_code comin_error_get(void);
void comin_error_reset(void);
void comin_error_set_errors_return(bool errors_return);

/* ---- variables ---- */
void comin_var_request_add(t_comin_var_descriptor var_descriptor, bool lmodexclusive);
t_comin_var_handle* comin_var_get(int context_len, t_comin_entry_point* context,
                                  t_comin_var_descriptor var_descriptor, int flag);
void* comin_var_get_ptr(t_comin_var_handle* handle);
double* comin_var_get_ptr_double(t_comin_var_handle* handle);
float* comin_var_get_ptr_float(t_comin_var_handle* handle);
void comin_var_get_shape(t_comin_var_handle* handle, int shape[5]);
void comin_var_get_dim_semantics(t_comin_var_handle* handle, int dim_semantics[5]);
t_comin_var_descr_list_iterator* comin_var_get_descr_list_head(void);
t_comin_var_descr_list_iterator* comin_var_get_descr_list_next(t_comin_var_descr_list_iterator* current);
void comin_var_get_descr_list_var_desc(t_comin_var_descr_list_iterator* current,
                                       t_comin_var_descriptor* var_desc);

/* ---- descriptive data (jg = 1-based domain id) ----
 * Array getters write the array's whole Fortran shape (1, 2 or 3 ints) into `shape`: pass int[3]. */
int comin_descrdata_get_global_nproma(void);
int comin_descrdata_get_global_n_dom(void);
int comin_descrdata_get_domain_cells_ncells(int jg);
int comin_descrdata_get_domain_cells_ncells_global(int jg);
int comin_descrdata_get_domain_cells_nblks(int jg);
double comin_descrdata_get_timesteplength(int jg);
int comin_descrdata_get_index(int j);
int comin_descrdata_get_block(int j);
int comin_descrdata_index_lookup_glb2loc_cell(int jg, int global_idx);

void comin_descrdata_get_domain_cells_glb_index(int jg, const int** data, int* shape);
void comin_descrdata_get_domain_cells_decomp_domain(int jg, const int** data, int* shape);
void comin_descrdata_get_domain_cells_clon(int jg, const double** data, int* shape);
void comin_descrdata_get_domain_cells_clat(int jg, const double** data, int* shape);
void comin_descrdata_get_domain_cells_area(int jg, const double** data, int* shape);
void comin_descrdata_get_domain_cells_neighbor_idx(int jg, const int** data, int* shape);
void comin_descrdata_get_domain_cells_neighbor_blk(int jg, const int** data, int* shape);
void comin_descrdata_get_domain_cells_parent_glb_idx(int jg, const int** data, int* shape);
void comin_descrdata_get_domain_cells_parent_glb_blk(int jg, const int** data, int* shape);
void comin_descrdata_get_domain_cells_child_idx(int jg, const int** data, int* shape);
void comin_descrdata_get_domain_cells_child_blk(int jg, const int** data, int* shape);
void comin_descrdata_get_domain_cells_vertex_idx(int jg, const int** data, int* shape);
void comin_descrdata_get_domain_cells_vertex_blk(int jg, const int** data, int* shape);
void comin_descrdata_get_domain_cells_refin_ctrl(int jg, const int** data, int* shape);

void comin_descrdata_get_simulation_interval_exp_start(char const** val, int* len);
void comin_descrdata_get_simulation_interval_exp_stop(char const** val, int* len);
void comin_descrdata_get_simulation_interval_run_start(char const** val, int* len);
void comin_descrdata_get_simulation_interval_run_stop(char const** val, int* len);

#ifdef __cplusplus
}
#endif

#endif /* FINECAST_COMIN_H */
