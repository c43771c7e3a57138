/* SPDX-License-Identifier: BSD-3-Clause
 *
 * finecast's declaration of the C interface of the ICON Community Interface (ComIn) 0.3.
 *
 * Written for finecast from the facts of ComIn 0.3.0's public interface (names, argument lists,
 * enum values, constants and struct layouts; see shared/comin_api.md): a plugin compiled against
 * this header is binary compatible with ComIn's own libcomin.so.0, and finecast's host library
 * (also built as libcomin.so.0) implements every function declared here. Tests compile plugins
 * against both headers and run them in both hosts (docs/plugin.md).
 *
 * Conventions of the interface: every function is extern "C"; handles are opaque pointers;
 * strings handed out through (const char** val, int* len) are Fortran buffers and not
 * NUL-terminated; array getters of the descriptive data write the array's whole Fortran shape
 * (1, 2 or 3 ints) into their last argument; indices in descriptive data are 1-based Fortran
 * (index, block) pairs with block length nproma.
 */
#ifndef FINECAST_COMIN_H
#define FINECAST_COMIN_H

#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

/* ---- constants that fix buffer sizes and struct layouts (ComIn 0.3) ---- */
#define COMIN_MAX_LEN_PLUGIN_NAME 32
#define COMIN_MAX_LEN_PLUGIN_LIBRARY 256
#define COMIN_MAX_LEN_PRIMARY_CONSTRUCTOR 256
#define COMIN_MAX_LEN_OPTIONS 256
#define COMIN_MAX_LEN_COMM 256
#define COMIN_MAX_LEN_EP_NAME 32
#define COMIN_MAX_LEN_VAR_NAME 64
#define COMIN_MAX_LEN_MESSAGE 512
#define COMIN_MAX_LEN_ERR_MESSAGE 96
#define COMIN_MAX_DATETIME_STR_LEN 32

/* The interface version this header and finecast's libcomin implement. */
#define COMIN_VERSION_MAJOR 0
#define COMIN_VERSION_MINOR 3
#define COMIN_VERSION_PATCH 0
#define COMIN_VERSION "0.3.0"

#ifdef __cplusplus
extern "C" {
#endif

/** Name and domain of a variable; passed BY VALUE (72 bytes), so the layout is ABI. */
typedef struct t_comin_var_descriptor {
  char name[COMIN_MAX_LEN_VAR_NAME + 1];
  int id; /**< 1-based domain id; -1 = every domain (requests and metadata only) */
} t_comin_var_descriptor;

typedef struct t_comin_var_handle t_comin_var_handle;
typedef struct t_comin_var_descr_list_iterator t_comin_var_descr_list_iterator;
typedef struct t_comin_metadata_iterator t_comin_metadata_iterator;

/** Entry points; the order is ABI (EP_ATM_WRITE_OUTPUT_BEFORE = 17, EP_DESTRUCTOR = 42). */
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

/** Vertical axis of a variable (metadata "zaxis_id"); a requested variable is 3-D by default. */
typedef enum t_comin_zaxis {
  COMIN_ZAXIS_UNDEF = -1,
  COMIN_ZAXIS_NONE = 0,
  COMIN_ZAXIS_2D = 1,
  COMIN_ZAXIS_3D = 2,
  COMIN_ZAXIS_3D_HALF = 3
} t_comin_zaxis;

typedef enum t_comin_var_access_flag {
  COMIN_FLAG_NONE = 0,
  COMIN_FLAG_READ = 1 << 1,
  COMIN_FLAG_WRITE = 1 << 2,
  COMIN_FLAG_SYNC_HALO = 1 << 3,
  COMIN_FLAG_DEVICE = 1 << 4
} t_comin_var_access_flag;

/** Error codes of the C interface. Fortran's list has one more code before COMIN_ERROR_FATAL
 *  (so FATAL is 37 here and 38 there): compare codes by message, not by number. */
typedef enum t_comin_error_code {
  COMIN_SUCCESS = 0,
  COMIN_INFO,
  COMIN_WARNING,
  COMIN_ERROR_STATUS,
  COMIN_ERROR_CALLBACK_REGISTER_OUTSIDE_PRIMARYCONSTRUCTOR,
  COMIN_ERROR_CALLBACK_COMPLETE,
  COMIN_ERROR_CALLBACK_EP_ID_UNKNOWN,
  COMIN_ERROR_DESCRDATA_SET_FCT_GLB2LOC,
  COMIN_ERROR_DESCRDATA_FINALIZE,
  COMIN_ERROR_METADATA_SET_OUTSIDE_PRIMARYCONSTRUCTOR,
  COMIN_ERROR_METADATA_KEY_NOT_FOUND,
  COMIN_ERROR_METADATA_GET_INSIDE_PRIMARYCONSTRUCTOR,
  COMIN_ERROR_SETUP_FINALIZE,
  COMIN_ERROR_SETUP_COMIN_ALREADY_INITIALIZED,
  COMIN_ERROR_PLUGIN_INIT_COMIN_VERSION,
  COMIN_ERROR_PLUGIN_INIT_PRECISION,
  COMIN_ERROR_PLUGIN_INIT_STATE_INITIALIZED,
  COMIN_ERROR_SETUP_ERRHANDLER_NOT_ASSOCIATED,
  COMIN_ERROR_SETUP_ERRHANDLER_NOT_SET,
  COMIN_ERROR_SETUP_PRECISION_TEST_FAILED,
  COMIN_ERROR_VAR_REQUEST_AFTER_PRIMARYCONSTRUCTOR,
  COMIN_ERROR_VAR_REQUEST_EXISTS_IS_LMODEXCLUSIVE,
  COMIN_ERROR_VAR_REQUEST_EXISTS_REQUEST_LMODEXCLUSIVE,
  COMIN_ERROR_VAR_DESCRIPTOR_NOT_FOUND,
  COMIN_ERROR_VAR_ITEM_NOT_ASSOCIATED,
  COMIN_ERROR_FIELD_NOT_ALLOCATED,
  COMIN_ERROR_POINTER_NOT_ASSOCIATED,
  COMIN_ERROR_TRACER_REQUEST_NOT_FOR_ALL_DOMAINS,
  COMIN_ERROR_VAR_SYNC_DEVICE_MEM_NOT_ASSOCIATED,
  COMIN_ERROR_VAR_SYNC_HALO_NOT_ASSOCIATED,
  COMIN_ERROR_VAR_GET_OUTSIDE_SECONDARY_CONSTRUCTOR,
  COMIN_ERROR_VAR_GET_NO_DEVICE,
  COMIN_ERROR_VAR_GET_VARIABLE_NOT_FOUND,
  COMIN_ERROR_VAR_GET_CONTAINER_CAN_NOT_HALO_SYNCHRONIZED,
  COMIN_ERROR_VAR_GET_IRREGULAR_VAR_CAN_NOT_HALO_SYNCHRONIZED,
  COMIN_ERROR_VAR_SYNC_HALO_NOT_SUPPORTED_ZAXIS,
  COMIN_ERROR_VAR_METADATA_INCONSISTENT_TYPE,
  COMIN_ERROR_FATAL
} t_comin_error_code;

typedef enum t_comin_hgrid_id {
  COMIN_HGRID_UNSTRUCTURED_CELL = 1,
  COMIN_HGRID_UNSTRUCTURED_EDGE = 2,
  COMIN_HGRID_UNSTRUCTURED_VERTEX = 3
} t_comin_hgrid_id;

typedef enum t_comin_metadata_typeid {
  COMIN_METADATA_TYPEID_UNDEFINED = -1,
  COMIN_METADATA_TYPEID_INTEGER,
  COMIN_METADATA_TYPEID_REAL,
  COMIN_METADATA_TYPEID_CHARACTER,
  COMIN_METADATA_TYPEID_LOGICAL
} t_comin_metadata_typeid;

typedef enum t_comin_var_datatype {
  COMIN_VAR_DATATYPE_DOUBLE = 1,
  COMIN_VAR_DATATYPE_FLOAT,
  COMIN_VAR_DATATYPE_INT
} t_comin_var_datatype;

/** What each of a variable's five (Fortran-ordered) dimensions means. */
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

/** Domain id of an entry point called outside the host's loop over domains. */
static const int COMIN_DOMAIN_OUTSIDE_LOOP = -1;

/* ---- the current plugin, entry point, domain and model time ---- */
t_comin_entry_point comin_current_get_ep(void);
int comin_current_get_domain_id(void);
int comin_current_get_plugin_id(void);
void comin_current_get_plugin_name(char const** val, int* len);
void comin_current_get_plugin_options(char const** val, int* len);
void comin_current_get_plugin_comm(char const** val, int* len);
void comin_current_get_datetime(char const** val, int* len);

/* ---- communicators (Fortran handles: use MPI_Comm_f2c) ---- */
int comin_parallel_get_plugin_mpi_comm(void);
int comin_parallel_get_host_mpi_comm(void);
int comin_parallel_get_host_mpi_rank(void);

/* ---- messages and errors ---- */
void comin_plugin_finish(const char* routine, const char* text);
void comin_print_debug(const char* msg);
void comin_print_info(const char* msg);
void comin_print_warning(const char* msg);
void comin_print_debug_f(const char* fmt, ...);
void comin_print_info_f(const char* fmt, ...);
void comin_print_warning_f(const char* fmt, ...);
void comin_error_get_message(t_comin_error_code error_code, char category[11], char message[COMIN_MAX_LEN_ERR_MESSAGE]);
/* Declared with two arguments; ComIn's implementation takes none and checks the current error
 * state (the arguments are ignored). */
void comin_error_check(t_comin_error_code error_code, const char* scope);
void comin_error_set_errors_return(bool errors_return);
t_comin_error_code comin_error_get(void);
void comin_error_reset(void);

/* ---- variables ---- */
void comin_var_request_add(t_comin_var_descriptor var_descriptor, bool lmodexclusive);
t_comin_var_handle* comin_var_get(int context_len, t_comin_entry_point* context, t_comin_var_descriptor var_descriptor,
                                  int flag);
void* comin_var_get_ptr(t_comin_var_handle* handle);
double* comin_var_get_ptr_double(t_comin_var_handle* handle);
float* comin_var_get_ptr_float(t_comin_var_handle* handle);
int* comin_var_get_ptr_int(t_comin_var_handle* handle);
void* comin_var_get_device_ptr(t_comin_var_handle* handle);
double* comin_var_get_device_ptr_double(t_comin_var_handle* handle);
float* comin_var_get_device_ptr_float(t_comin_var_handle* handle);
int* comin_var_get_device_ptr_int(t_comin_var_handle* handle);
void comin_var_get_shape(t_comin_var_handle* handle, int shape[5]);
void comin_var_get_dim_semantics(t_comin_var_handle* handle, int dim_semantics[5]);
void comin_var_get_ncontained(t_comin_var_handle* handle, int* ncontained);
/* ComIn 0.2's layout query (0-based positions of the jc, jk, jb and container dimensions; -2 for
   none), which 0.3 replaced by comin_var_get_dim_semantics. finecast's libcomin keeps it for
   plugins written for ComIn 0.2; ComIn 0.3's library does not define it. */
void comin_var_get_pos(t_comin_var_handle* handle, int* pos_jc, int* pos_jk, int* pos_jb, int* pos_jn);
void comin_var_get_descriptor(t_comin_var_handle* handle, t_comin_var_descriptor* descr);

t_comin_var_descr_list_iterator* comin_var_get_descr_list_head(void);
t_comin_var_descr_list_iterator* comin_var_get_descr_list_next(t_comin_var_descr_list_iterator* current);
void comin_var_get_descr_list_var_desc(t_comin_var_descr_list_iterator* current, t_comin_var_descriptor* var_desc);
void comin_var_descr_list_iterator_delete(t_comin_var_descr_list_iterator** it);

/* ---- callbacks ---- */
typedef void (*t_comin_callback_function)(void);
void comin_callback_register(t_comin_entry_point entry_point_id, t_comin_callback_function fct_ptr);
void comin_callback_get_ep_name(t_comin_entry_point iep, char out_ep_name[COMIN_MAX_LEN_EP_NAME + 1]);

/* ---- variable metadata (set: primary constructor only; get: afterwards) ---- */
t_comin_metadata_typeid comin_metadata_get_typeid(t_comin_var_descriptor var_descriptor, const char* key);
void comin_metadata_set_integer(t_comin_var_descriptor var_descriptor, const char* key, int val);
void comin_metadata_set_logical(t_comin_var_descriptor var_descriptor, const char* key, bool val);
void comin_metadata_set_real(t_comin_var_descriptor var_descriptor, const char* key, double val);
void comin_metadata_set_character(t_comin_var_descriptor var_descriptor, const char* key, char const* val);
void comin_metadata_get_integer(t_comin_var_descriptor var_descriptor, const char* key, int* val);
void comin_metadata_get_logical(t_comin_var_descriptor var_descriptor, const char* key, bool* val);
void comin_metadata_get_real(t_comin_var_descriptor var_descriptor, const char* key, double* val);
void comin_metadata_get_character(t_comin_var_descriptor var_descriptor, const char* key, char const** val, int* len);
t_comin_metadata_iterator* comin_metadata_get_iterator_begin(t_comin_var_descriptor var_descriptor);
t_comin_metadata_iterator* comin_metadata_get_iterator_end(t_comin_var_descriptor var_descriptor);
const char* comin_metadata_iterator_get_key(t_comin_metadata_iterator* it);
bool comin_metadata_iterator_compare(t_comin_metadata_iterator* it1, t_comin_metadata_iterator* it2);
void comin_metadata_iterator_next(t_comin_metadata_iterator* it);
void comin_metadata_iterator_delete(t_comin_metadata_iterator* it);

/* ---- descriptive data: index helpers and simulation interval ---- */
double comin_descrdata_get_timesteplength(int jg);
int comin_descrdata_get_index(int j);
int comin_descrdata_get_block(int j);
void comin_descrdata_get_cell_indices(int jg, int i_blk, int i_startblk, int i_endblk, int* i_startidx, int* i_endidx,
                                      int irl_start, int irl_end);
void comin_descrdata_get_edge_indices(int jg, int i_blk, int i_startblk, int i_endblk, int* i_startidx, int* i_endidx,
                                      int irl_start, int irl_end);
void comin_descrdata_get_vert_indices(int jg, int i_blk, int i_startblk, int i_endblk, int* i_startidx, int* i_endidx,
                                      int irl_start, int irl_end);
int comin_descrdata_get_cell_npromz(int jg);
int comin_descrdata_get_edge_npromz(int jg);
int comin_descrdata_get_vert_npromz(int jg);
int comin_descrdata_index_lookup_glb2loc_cell(int jg, int global_idx);
void comin_descrdata_get_simulation_interval_exp_start(char const** val, int* len);
void comin_descrdata_get_simulation_interval_exp_stop(char const** val, int* len);
void comin_descrdata_get_simulation_interval_run_start(char const** val, int* len);
void comin_descrdata_get_simulation_interval_run_stop(char const** val, int* len);

/** The interface version this header was written for. */
static inline void comin_setup_get_version(unsigned int* major, unsigned int* minor, unsigned int* patch) {
  *major = COMIN_VERSION_MAJOR;
  *minor = COMIN_VERSION_MINOR;
  *patch = COMIN_VERSION_PATCH;
}

/** ComIn's description of a descriptive-data property (used by its Python adapter). */
struct comin_descrdata_property_t {
  const char* name;
  void* get_function;
  const char* datatype;
  int ndims;
  bool has_jg;
  const struct comin_descrdata_property_t* subtypes;
};

/* ---- descriptive data of the domains: scalars, and arrays (jg, const T** data, int* shape) ---- */
void comin_descrdata_get_domain_grid_filename(int jg, const char** grid_filename, int* arr_size);
void comin_descrdata_get_domain_grid_uuid(int jg, const int8_t** grid_uuid, int* arr_size);
void comin_descrdata_get_domain_number_of_grid_used(int jg, const int** number_of_grid_used, int* arr_size);
int comin_descrdata_get_domain_id(int jg);
int comin_descrdata_get_domain_n_childdom(int jg);
double comin_descrdata_get_domain_dom_start(int jg);
double comin_descrdata_get_domain_dom_end(int jg);
int comin_descrdata_get_domain_nlev(int jg);
int comin_descrdata_get_domain_nshift(int jg);
int comin_descrdata_get_domain_nshift_total(int jg);

int comin_descrdata_get_domain_cells_ncells(int jg);
int comin_descrdata_get_domain_cells_ncells_global(int jg);
int comin_descrdata_get_domain_cells_nblks(int jg);
int comin_descrdata_get_domain_cells_max_connectivity(int jg);
void comin_descrdata_get_domain_cells_num_edges(int jg, const int** num_edges, int* arr_size);
void comin_descrdata_get_domain_cells_refin_ctrl(int jg, const int** refin_ctrl, int* arr_size);
void comin_descrdata_get_domain_cells_start_index(int jg, const int** start_index, int* arr_size);
void comin_descrdata_get_domain_cells_end_index(int jg, const int** end_index, int* arr_size);
void comin_descrdata_get_domain_cells_start_block(int jg, const int** start_block, int* arr_size);
void comin_descrdata_get_domain_cells_end_block(int jg, const int** end_block, int* arr_size);
void comin_descrdata_get_domain_cells_child_id(int jg, const int** child_id, int* arr_size);
void comin_descrdata_get_domain_cells_child_idx(int jg, const int** child_idx, int* arr_size);
void comin_descrdata_get_domain_cells_child_blk(int jg, const int** child_blk, int* arr_size);
void comin_descrdata_get_domain_cells_parent_glb_idx(int jg, const int** parent_glb_idx, int* arr_size);
void comin_descrdata_get_domain_cells_parent_glb_blk(int jg, const int** parent_glb_blk, int* arr_size);
void comin_descrdata_get_domain_cells_vertex_idx(int jg, const int** vertex_idx, int* arr_size);
void comin_descrdata_get_domain_cells_vertex_blk(int jg, const int** vertex_blk, int* arr_size);
void comin_descrdata_get_domain_cells_neighbor_blk(int jg, const int** neighbor_blk, int* arr_size);
void comin_descrdata_get_domain_cells_neighbor_idx(int jg, const int** neighbor_idx, int* arr_size);
void comin_descrdata_get_domain_cells_edge_idx(int jg, const int** edge_idx, int* arr_size);
void comin_descrdata_get_domain_cells_edge_blk(int jg, const int** edge_blk, int* arr_size);
void comin_descrdata_get_domain_cells_clon(int jg, const double** clon, int* arr_size);
void comin_descrdata_get_domain_cells_clat(int jg, const double** clat, int* arr_size);
void comin_descrdata_get_domain_cells_area(int jg, const double** area, int* arr_size);
void comin_descrdata_get_domain_cells_hhl(int jg, const double** hhl, int* arr_size);
void comin_descrdata_get_domain_cells_glb_index(int jg, const int** glb_index, int* arr_size);
void comin_descrdata_get_domain_cells_decomp_domain(int jg, const int** decomp_domain, int* arr_size);

int comin_descrdata_get_domain_verts_nverts(int jg);
int comin_descrdata_get_domain_verts_nverts_global(int jg);
int comin_descrdata_get_domain_verts_nblks(int jg);
void comin_descrdata_get_domain_verts_num_edges(int jg, const int** num_edges, int* arr_size);
void comin_descrdata_get_domain_verts_refin_ctrl(int jg, const int** refin_ctrl, int* arr_size);
void comin_descrdata_get_domain_verts_start_index(int jg, const int** start_index, int* arr_size);
void comin_descrdata_get_domain_verts_end_index(int jg, const int** end_index, int* arr_size);
void comin_descrdata_get_domain_verts_start_block(int jg, const int** start_block, int* arr_size);
void comin_descrdata_get_domain_verts_end_block(int jg, const int** end_block, int* arr_size);
void comin_descrdata_get_domain_verts_neighbor_blk(int jg, const int** neighbor_blk, int* arr_size);
void comin_descrdata_get_domain_verts_neighbor_idx(int jg, const int** neighbor_idx, int* arr_size);
void comin_descrdata_get_domain_verts_cell_idx(int jg, const int** cell_idx, int* arr_size);
void comin_descrdata_get_domain_verts_cell_blk(int jg, const int** cell_blk, int* arr_size);
void comin_descrdata_get_domain_verts_edge_idx(int jg, const int** edge_idx, int* arr_size);
void comin_descrdata_get_domain_verts_edge_blk(int jg, const int** edge_blk, int* arr_size);
void comin_descrdata_get_domain_verts_vlon(int jg, const double** vlon, int* arr_size);
void comin_descrdata_get_domain_verts_vlat(int jg, const double** vlat, int* arr_size);

int comin_descrdata_get_domain_edges_nedges(int jg);
int comin_descrdata_get_domain_edges_nedges_global(int jg);
int comin_descrdata_get_domain_edges_nblks(int jg);
void comin_descrdata_get_domain_edges_refin_ctrl(int jg, const int** refin_ctrl, int* arr_size);
void comin_descrdata_get_domain_edges_start_index(int jg, const int** start_index, int* arr_size);
void comin_descrdata_get_domain_edges_end_index(int jg, const int** end_index, int* arr_size);
void comin_descrdata_get_domain_edges_start_block(int jg, const int** start_block, int* arr_size);
void comin_descrdata_get_domain_edges_end_block(int jg, const int** end_block, int* arr_size);
void comin_descrdata_get_domain_edges_child_id(int jg, const int** child_id, int* arr_size);
void comin_descrdata_get_domain_edges_child_idx(int jg, const int** child_idx, int* arr_size);
void comin_descrdata_get_domain_edges_child_blk(int jg, const int** child_blk, int* arr_size);
void comin_descrdata_get_domain_edges_parent_glb_idx(int jg, const int** parent_glb_idx, int* arr_size);
void comin_descrdata_get_domain_edges_parent_glb_blk(int jg, const int** parent_glb_blk, int* arr_size);
void comin_descrdata_get_domain_edges_cell_idx(int jg, const int** cell_idx, int* arr_size);
void comin_descrdata_get_domain_edges_cell_blk(int jg, const int** cell_blk, int* arr_size);
void comin_descrdata_get_domain_edges_vertex_idx(int jg, const int** vertex_idx, int* arr_size);
void comin_descrdata_get_domain_edges_vertex_blk(int jg, const int** vertex_blk, int* arr_size);
void comin_descrdata_get_domain_edges_elon(int jg, const double** elon, int* arr_size);
void comin_descrdata_get_domain_edges_elat(int jg, const double** elat, int* arr_size);

/* ---- descriptive data that does not depend on the domain ---- */
int comin_descrdata_get_global_n_dom(void);
int comin_descrdata_get_global_max_dom(void);
int comin_descrdata_get_global_nproma(void);
int comin_descrdata_get_global_wp(void);
int comin_descrdata_get_global_min_rlcell_int(void);
int comin_descrdata_get_global_min_rlcell(void);
int comin_descrdata_get_global_max_rlcell(void);
int comin_descrdata_get_global_min_rlvert_int(void);
int comin_descrdata_get_global_min_rlvert(void);
int comin_descrdata_get_global_max_rlvert(void);
int comin_descrdata_get_global_min_rledge_int(void);
int comin_descrdata_get_global_min_rledge(void);
int comin_descrdata_get_global_max_rledge(void);
int comin_descrdata_get_global_grf_bdywidth_c(void);
int comin_descrdata_get_global_grf_bdywidth_e(void);
bool comin_descrdata_get_global_lrestartrun(void);
void comin_descrdata_get_global_vct_a(const double** vct_a, int* arr_size);
int comin_descrdata_get_global_yac_instance_id(void);
void comin_descrdata_get_global_host_git_remote_url(const char** host_git_remote_url, int* arr_size);
void comin_descrdata_get_global_host_git_branch(const char** host_git_branch, int* arr_size);
void comin_descrdata_get_global_host_git_tag(const char** host_git_tag, int* arr_size);
void comin_descrdata_get_global_host_revision(const char** host_revision, int* arr_size);
bool comin_descrdata_get_global_has_device(void);
void comin_descrdata_get_global_device_name(const char** device_name, int* arr_size);
void comin_descrdata_get_global_device_vendor(const char** device_vendor, int* arr_size);
void comin_descrdata_get_global_device_driver(const char** device_driver, int* arr_size);

#ifdef __cplusplus
}
#endif

#endif /* FINECAST_COMIN_H */
