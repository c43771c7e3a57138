// SPDX-License-Identifier: BSD-3-Clause
// The host library's registry (plugins, callbacks, requests, variables, metadata, descriptive
// data) that the C functions of comin.h read and write; private to libcomin.
#pragma once

#include <array>
#include <deque>
#include <map>
#include <string>
#include <variant>
#include <vector>

#include "host/comin/host.hpp"

/// Metadata of a variable: ComIn's typeid is the index of the alternative (integer 0, real 1,
/// character 2, logical 3).
using CominMetadata = std::map<std::string, std::variant<int, double, std::string, bool>>;

/// ComIn's opaque variable handle: the variable, as a stable index.
struct t_comin_var_handle {
  int variable = -1;  ///< index into Host::State::variables
};

/// ComIn's opaque iterator over the list of variable descriptors; heap-allocated, owned by the
/// plugin (deleted by comin_var_get_descr_list_next at the end, or by ..._iterator_delete).
struct t_comin_var_descr_list_iterator {
  size_t variable = 0;
};

/// ComIn's opaque iterator over the metadata of one variable; heap-allocated, owned by the
/// plugin (comin_metadata_iterator_delete).
struct t_comin_metadata_iterator {
  const CominMetadata* metadata = nullptr;
  CominMetadata::const_iterator it;
};

namespace finecast::host::comin {

/// A string as ComIn hands it out: followed by a blank (like a Fortran buffer), so a reader
/// that ignores the returned length sees a wrong value instead of a lucky NUL.
struct FortranString {
  std::string buffer;  ///< value + ' '
  int length = 0;
  void set(const std::string& value) {
    buffer = value + ' ';
    length = static_cast<int>(value.size());
  }
};

/// An index array of ComIn's descriptive data, with its Fortran shape (1 to 3 dims).
template <typename T>
struct FortranArray {
  std::vector<T> data;
  std::vector<int> shape;  ///< empty = the host does not offer this array
  bool present() const { return !shape.empty(); }
};

/// The blocked Fortran arrays of one kind of grid entity (cells, vertices or edges).
struct EntityArrays {
  int n = 0, n_global = 0, nblks = 0;
  bool present = false;
  FortranArray<int> glb_index, decomp_domain, refin_ctrl, num_edges;
  FortranArray<int> start_index, end_index, start_block, end_block;  ///< by refin_ctrl zone
  FortranArray<int> child_id, child_idx, child_blk, parent_glb_idx, parent_glb_blk;
  FortranArray<int> neighbor_idx, neighbor_blk, vertex_idx, vertex_blk, edge_idx, edge_blk;
  FortranArray<int> cell_idx, cell_blk;
  FortranArray<double> lon, lat, area, hhl;
};

/// Everything ComIn tells about one domain, built once by Host::add_domain.
struct DomainArrays {
  Domain input;
  EntityArrays cells, verts, edges;
  std::map<int, int> glb2loc;  ///< 1-based global cell -> 1-based local cell
  FortranString grid_filename;
  std::vector<int8_t> grid_uuid;
  int number_of_grid_used = 0;
};

/// A variable the host exposes (its own, or created for a plugin's request).
struct Variable {
  std::string name;
  int domain = 1;
  int datatype = COMIN_VAR_DATATYPE_DOUBLE;
  std::array<int, 5> shape{};
  std::array<int, 5> dim_semantics{};
  std::vector<double> f64;  ///< storage of a double variable
  std::vector<float> f32;   ///< ... float
  std::vector<int> i32;     ///< ... int
  CominMetadata metadata;
  int ncontained = 0;      ///< 1-based position of a tracer among its domain's tracers; 0 = none
  int requested_by = -1;   ///< plugin index that created it, -1 = the host's own
  bool exclusive = false;  ///< requested with lmodexclusive
  void* data();
  int64_t bytes() const;   ///< size of its array
  void* device = nullptr;  ///< the host's device copy (DeviceSupport); null = none
};

/// A variable a plugin asked for with comin_var_get, at one entry point: its access flags
/// (COMIN_FLAG_READ, WRITE, DEVICE) decide ComIn's device synchronisation around the callback.
struct VariableAccess {
  int variable = -1;
  int flag = 0;
};

/// A comin_var_request_add made in a primary constructor, applied after all of them ran.
struct Request {
  std::string name;
  int domain = 1;
  bool exclusive = false;
  std::vector<int> plugins;  ///< indices of the plugins that asked for it
  CominMetadata metadata;    ///< set with comin_metadata_set_* in the primary constructor
};

struct Plugin {
  PluginSpec spec;
  int id = 0;  ///< 1-based, ComIn's plugin id
  void* handle = nullptr;
  FortranString name, options, comm_name;
  MPI_Comm comm = MPI_COMM_NULL;  ///< shared between plugins naming the same comm
  bool errors_return = false;     ///< comin_error_set_errors_return
};

struct Host::State {
  MPI_Comm comm = MPI_COMM_NULL;
  MPI_Comm comin = MPI_COMM_NULL;  ///< comm and the plugins' external processes (not owned)
  int rank = 0;
  Phase phase = Phase::kSetup;
  GlobalData global;
  FortranString exp_start, exp_stop, run_start, run_stop, datetime;
  FortranString host_revision, empty;
  std::vector<DomainArrays> domains;
  std::deque<Variable> variables;  ///< deque: handles and data pointers stay valid
  std::vector<Request> requests;
  std::deque<Plugin> plugins;
  std::map<std::string, MPI_Comm> plugin_comms;
  /// callbacks[ep][plugin]: one callback per entry point and plugin (a second registration
  /// replaces the first, as in ComIn), run in plugin order.
  std::map<int, std::map<int, t_comin_callback_function>> callbacks;
  std::deque<t_comin_var_handle> handles;  ///< one per variable, made on demand
  std::map<int, t_comin_var_handle*> handle_of;
  /// access[{ep, plugin}]: the variables the plugin asked for at ep (the first request's flags
  /// count, as in ComIn).
  std::map<std::pair<int, int>, std::vector<VariableAccess>> access;
  bool has_device = false;
  DeviceSupport device;
  DeviceSyncStats device_sync;
  FortranString device_name, device_vendor, device_driver;
  int current_plugin = -1;  ///< plugin whose constructor / callback runs now
  int current_ep = 0;       ///< 0 outside entry points (e.g. in a primary constructor)
  int current_domain = COMIN_DOMAIN_OUTSIDE_LOOP;
  t_comin_error_code error = COMIN_SUCCESS;
  std::string error_detail;       ///< finecast's explanation of the last error
  bool finish_requested = false;  ///< set when the finish handler returned
  std::string finish_message;

  int find_variable(const std::string& name, int domain) const;
  /// The handle of a variable (one per variable, so the same pointer every time).
  t_comin_var_handle* handle(int variable);
  Plugin* plugin() { return current_plugin >= 0 ? &plugins[current_plugin] : nullptr; }
};

/// A zeroed (NaN-padded) blocked variable of a domain: (nproma, nblks) when nlev == 0,
/// (nproma, nlev, nblks) otherwise.
Variable make_variable(const DomainArrays& domain, const std::string& name, int domain_id, int nlev, int datatype);

/// The live host's state, or nullptr (the comin_* functions then report a fatal error).
Host::State* current_state();

/// ComIn's error path: records `code` (with finecast's explanation `detail`); unless the current
/// plugin asked for errors_return, the run stops through the finish handler with the code's
/// message and the detail.
void api_error(t_comin_error_code code, const char* routine, const std::string& detail);

/// A fatal error (comin_plugin_finish, or data the host does not have): calls the finish
/// handler and remembers the request.
void fatal(const std::string& routine, const std::string& text);

/// ComIn's message for an error code (finecast's wording).
const char* error_message(t_comin_error_code code);

/// Writes a comin_print_* line through the print sink (caller filters by rank and flags).
void print_line(bool is_warning, const std::string& line);

/// Checked access to domain jg (fatal error naming `routine` when it does not exist).
DomainArrays* domain_or_fatal(int jg, const char* routine);

/// The state, or a fatal error naming `routine` when no host runs in this process.
Host::State* state_or_fatal(const char* routine);

}  // namespace finecast::host::comin
