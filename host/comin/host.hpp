// SPDX-License-Identifier: BSD-3-Clause
// The C++ side of finecast's ComIn host library (libcomin.so.0): what a host program calls to
// describe its grid, expose its fields, load plugins and drive their entry points. Plugins see
// the C interface of comin.h only, exactly as they would in ICON.
#pragma once

#include <mpi.h>

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "comin.h"
#include "coupling/error.hpp"

namespace finecast::host::comin {

/// One entry of the plugin list (ICON: one `plugin_list(i)` of `&comin_nml`).
struct PluginSpec {
  std::string name;     ///< plugin name (comin_current_get_plugin_name); "" = derived from the library
  std::string library;  ///< shared library path passed to dlopen
  std::string options;  ///< options string (comin_current_get_plugin_options)
  std::string comm;     ///< communicator name; "" = the plugin has none
  std::string primary_constructor = "comin_main";  ///< symbol called after loading
  bool log_debug = false;                          ///< comin_print_debug is shown
  bool log_info = true;                            ///< comin_print_info is shown
  bool log_warning = true;                         ///< comin_print_warning is shown
};

/// Descriptive data of one domain on this rank, in local cell order (cell j = 0..n_local-1:
/// owned cells first, then halo cells by halo level). The host library turns it into ICON's
/// blocked (nproma, nblks[, k]) Fortran arrays.
struct Domain {
  int nproma = 0;
  int n_cells_global = 0;
  std::vector<int> glb_index;      ///< 1-based global index of each local cell
  std::vector<int> decomp_domain;  ///< 0 = owned, > 0 = halo level
  std::vector<double> clon, clat;  ///< radians
  std::vector<double> area;        ///< m^2
  /// Edge neighbours as 0-based LOCAL cell indices; -1 = none or not on this rank.
  std::vector<std::array<int, 3>> neighbours;
  /// Optional (empty = absent, reported as zeros): 1-based global parent index of each cell.
  std::vector<int> parent_glb_index;
  /// Optional: children as 0-based local cell indices, -1 = none.
  std::vector<std::array<int, 4>> children;
  /// Optional: ICON's refin_ctrl per cell (empty = all 0, a global domain).
  std::vector<int> refin_ctrl;
  double dt = 0.0;  ///< time step length, seconds

  // ---- vertical ----
  int nlev = 1;             ///< full levels of 3-D variables
  std::vector<double> hhl;  ///< optional: height of half levels, m, (ncells, nlev+1) cell-major

  // ---- vertices and edges (optional; empty = the host offers none) ----
  /// Vertices of each cell as 0-based LOCAL vertex indices.
  std::vector<std::array<int, 3>> vertices;
  int n_verts_global = 0;
  std::vector<int> vert_glb_index;  ///< 1-based global index of each local vertex
  std::vector<double> vlon, vlat;   ///< radians
  /// Edges of each cell as 0-based LOCAL edge indices.
  std::vector<std::array<int, 3>> cell_edges;
  int n_edges_global = 0;
  std::vector<int> edge_glb_index;                ///< 1-based global index of each local edge
  std::vector<double> elon, elat;                 ///< edge midpoints, radians
  std::vector<std::array<int, 2>> edge_cells;     ///< local cells of each edge, -1 = not here
  std::vector<std::array<int, 2>> edge_vertices;  ///< local vertices of each edge

  // ---- identity and time ----
  std::string grid_filename;      ///< "" = unknown
  std::vector<int8_t> grid_uuid;  ///< 16 bytes, or empty when unknown
  int number_of_grid_used = 0;
  /// The parent domain's id (ICON's parent_id): 0 for domain 1, 1 .. id - 1 for a nest. ComIn
  /// offers no getter for it; it makes the parent's comin_descrdata_get_domain_n_childdom.
  int parent_id = 0;
  double dom_start = 0.0, dom_end = 0.0;  ///< seconds since the experiment start
};

/// Domain-independent descriptive data (ComIn's "global" data); ICON's values by default.
struct GlobalData {
  int max_dom = 1;
  std::vector<double> vct_a;  ///< heights of the half levels, m (nlev+1); empty = none
  bool restart_run = false;   ///< lrestartrun: the run continues from a restart
  std::string host_revision;  ///< e.g. the finecast version
};

/// The four ISO 8601 times of comin_descrdata_get_simulation_interval_*.
struct SimulationInterval {
  std::string exp_start, exp_stop, run_start, run_stop;
};

/// Thrown by the Host when a plugin called comin_plugin_finish or misused the ComIn API while
/// the finish handler did not end the process (tests; see set_finish_handler).
class PluginFinishError : public Error {
 public:
  using Error::Error;
};

/// Called by comin_plugin_finish and by every fatal ComIn API error: (routine, text).
/// The default prints on stderr and calls MPI_Abort (ComIn's behaviour). A handler may throw
/// (the exception propagates out of the comin_* call) or return (the host then throws
/// PluginFinishError as soon as the plugin's function returns).
using FinishHandler = std::function<void(const std::string& routine, const std::string& text)>;
/// Installs a process-wide finish handler; an empty one restores the default. Returns the old.
FinishHandler set_finish_handler(FinishHandler handler);

/// Receives comin_print_* lines as ComIn prints them ("INFO(plugin): msg"), host rank 0 only.
/// Default: stderr, like ComIn. Returns the old sink; an empty one restores the default.
using PrintSink = std::function<void(bool is_warning, const std::string& line)>;
PrintSink set_print_sink(PrintSink sink);

/// Life-cycle phase of the host; ComIn calls made in the wrong phase are errors.
enum class Phase {
  kSetup,                 ///< add_domain / add_variable
  kPrimaryConstructor,    ///< inside a plugin's primary constructor
  kPluginsLoaded,         ///< after load_plugins, before secondary_constructor
  kSecondaryConstructor,  ///< EP_SECONDARY_CONSTRUCTOR callbacks
  kRunning,               ///< entry points of the time loop
  kFinished               ///< after finish()
};

/// Options of a host variable (ComIn metadata that a host sets when it exposes a field).
struct VariableInfo {
  int nlev = 0;  ///< 0 = 2-D (nproma, nblks); >= 1 = 3-D (nproma, nlev, nblks)
  std::string units, standard_name, long_name;
  bool restart = false;  ///< the field is part of the host's restart
};

/// A host whose fields live on a GPU (ICON built for GPUs: OpenACC device copies of its fields).
/// ComIn then hands plugins device pointers when they ask with COMIN_FLAG_DEVICE, and before
/// each callback copies to the host every variable the plugin reads without that flag (after
/// it, back to the device every one it writes): whole variables, as ComIn's
/// sync_vars_for_device does through the host's sync_device_mem.
struct DeviceSupport {
  std::string name, vendor, driver;  ///< comin_descrdata_get_global_device_*
  /// Copies a variable's whole array between its device copy and its host array
  /// (to_device false: device -> host). The host's sync_device_mem.
  std::function<void(const std::string& name, int domain, bool to_device)> sync;
};

/// What ComIn's device synchronisation copied so far on this rank (DeviceSupport).
struct DeviceSyncStats {
  int64_t to_host = 0, to_device = 0;  ///< whole-variable copies
  int64_t bytes = 0;                   ///< both directions
  double seconds = 0;                  ///< wall time inside DeviceSupport::sync
};

/// The ComIn host: one per process (a second live Host is an error). Plugins reach it through
/// the comin_* C functions. Not thread-safe: ComIn calls come from the host's thread.
class Host {
 public:
  /// `host_comm` is the model's communicator, `comin_comm` the model's ranks and the external
  /// processes of its plugins (MPI_COMM_NULL: none, the host's ranks only). `host_comm` is
  /// duplicated, so the caller may free its own; `comin_comm` is used as given (a duplicate would
  /// be collective over the external processes) and must outlive load_plugins. The plugins' communicators (their `comm`
  /// names) are made from `comin_comm` by ComIn's MPI handshake, so an external process that joins a plugin's group
  /// shares its communicator, as under ICON.
  Host(MPI_Comm host_comm, SimulationInterval interval, GlobalData global = {}, MPI_Comm comin_comm = MPI_COMM_NULL);
  ~Host();
  Host(const Host&) = delete;
  Host& operator=(const Host&) = delete;

  /// Adds the next domain (ids 1, 2, ...; a nest after its parent, `Domain::parent_id`); checks
  /// the sizes of every array. Setup phase only.
  int add_domain(Domain domain);

  /// Creates a host variable on the cells of a domain: double, blocked like ICON's fields
  /// ((nproma, nblks) for 2-D, (nproma, nlev, nblks) for 3-D), valid cells 0, the padding of the
  /// last block NaN; metadata as ICON sets it (zaxis_id, hgrid_id, units, ...). Setup only.
  double* add_variable(const std::string& name, int domain, const VariableInfo& info);

  /// Declares the host's device (before load_plugins): comin_descrdata_get_global_has_device
  /// is then true, and COMIN_FLAG_DEVICE requests are accepted.
  void set_device(DeviceSupport device);
  /// The device copy of a variable (comin_var_get_device_ptr; null = none). After set_device.
  void set_device_pointer(const std::string& name, int domain, void* device_ptr);
  /// The copies ComIn's device synchronisation made for the plugins so far on this rank.
  DeviceSyncStats device_sync_stats() const;

  /// dlopen()s each library (RTLD_NOW), hands it this host's state through its
  /// comin_plugin_init (refusing another ComIn version or precision) and calls its primary
  /// constructor, in order; then creates the variables the plugins requested that the host does
  /// not have (zaxis_id, datatype and the other metadata as requested; ComIn's defaults
  /// otherwise). Throws Error naming the library on failure, e.g. for a Fortran plugin (ComIn's
  /// Fortran module interface is not offered) or a plugin that does not link libcomin.
  void load_plugins(const std::vector<PluginSpec>& plugins);

  /// Runs the EP_SECONDARY_CONSTRUCTOR callbacks (the only time comin_var_get works).
  void secondary_constructor();

  /// Runs the callback each plugin registered for `ep`, in plugin order, with the given domain
  /// id (COMIN_DOMAIN_OUTSIDE_LOOP for entry points outside the loop over domains) and model
  /// time (ISO 8601). EP_SECONDARY_CONSTRUCTOR, EP_FINISH, EP_DESTRUCTOR have their own calls.
  void run_entry_point(t_comin_entry_point ep, int domain, const std::string& datetime);

  /// EP_FINISH then EP_DESTRUCTOR (model time of the last entry point); afterwards only data
  /// access is allowed.
  void finish();

  /// Data of a double variable (host's or plugin-requested); nullptr when it does not exist.
  double* variable(const std::string& name, int domain) const;
  /// Bytes of a variable's array (0 when it does not exist).
  int64_t variable_bytes(const std::string& name, int domain) const;
  /// Names of the variables of a domain, in creation order.
  std::vector<std::string> variable_names(int domain) const;
  /// Number of plugins with a callback for an entry point.
  int n_callbacks(t_comin_entry_point ep) const;

  Phase phase() const;
  MPI_Comm comm() const;
  int rank() const;

  /// Name of an entry point, e.g. "EP_ATM_WRITE_OUTPUT_BEFORE"; "UNKNOWN" otherwise.
  static const char* entry_point_name(int ep);

  struct State;  ///< the registry the comin_* functions work on (comin/host_state.hpp)

 private:
  std::unique_ptr<State> state_;
};

/// Parses an ICON `&comin_nml` namelist: `plugin_list(i)%name`, `%plugin_library`,
/// `%primary_constructor`, `%options`, `%comm`, `%log_debug`, `%log_info`, `%log_warning`
/// (quoted with ' or "; `!` comments; case-insensitive keys). Entries are ordered by i.
/// Throws ConfigError naming the offending line.
std::vector<PluginSpec> parse_comin_namelist(const std::string& text);

/// Reads the namelist file and parses it (errors name the file).
std::vector<PluginSpec> read_comin_namelist(const std::string& path);

/// Fortran layout helpers: 0-based local cell j -> 1-based (idx, blk) with block length nproma.
inline int block_index(int j, int nproma) { return j % nproma + 1; }
inline int block_number(int j, int nproma) { return j / nproma + 1; }
/// Number of blocks for n cells (the last one partial when nproma does not divide n).
inline int n_blocks(int n, int nproma) { return (n + nproma - 1) / nproma; }

/// ICON's refin_ctrl zone numbering of the start/end index arrays (mo_impl_constants).
constexpr int kMinRlCellInt = -4, kMinRlCell = -8, kMaxRlCell = 5;
constexpr int kMinRlVertInt = -4, kMinRlVert = -7, kMaxRlVert = 5;
constexpr int kMinRlEdgeInt = -8, kMinRlEdge = -13, kMaxRlEdge = 10;
constexpr int kGrfBdyWidthC = 4, kGrfBdyWidthE = 9;

}  // namespace finecast::host::comin
