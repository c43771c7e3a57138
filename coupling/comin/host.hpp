// SPDX-License-Identifier: BSD-3-Clause
// The C++ side of finecast's ComIn host library: what a host program calls to describe its grid,
// expose its fields, load plugins and drive their entry points (the plugins see comin.h only).
#pragma once

#include <mpi.h>

#include <array>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "coupling/comin/comin.h"
#include "coupling/error.hpp"

namespace finecast::coupling::comin_host {

/// One entry of the plugin list (ICON: one `plugin_list(i)` of `&comin_nml`).
struct PluginSpec {
  std::string name;     ///< plugin name (comin_current_get_plugin_name)
  std::string library;  ///< shared library path passed to dlopen
  std::string options;  ///< options string (comin_current_get_plugin_options)
  std::string comm;     ///< communicator name; "" = the plugin has none
};

/// Descriptive data of one domain on this rank, in local cell order (cell j = 0..n_local-1).
/// The host library turns it into ICON's blocked (nproma, nblks[, k]) Fortran arrays.
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
  /// Optional: vertices as 0-based local vertex indices.
  std::vector<std::array<int, 3>> vertices;
  /// Optional: ICON's refin_ctrl per cell (empty = all 0, a global domain).
  std::vector<int> refin_ctrl;
  double dt = 0.0;  ///< time step length, seconds
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

/// Receives comin_print_info / comin_print_warning lines (host rank 0 only). Default: stdout /
/// stderr ("WARNING: " prefix). Returns the old sink; an empty one restores the default.
using PrintSink = std::function<void(bool is_warning, const std::string& msg)>;
PrintSink set_print_sink(PrintSink sink);

/// Life-cycle phase of the host; ComIn calls made in the wrong phase are errors.
enum class Phase {
  kSetup,                 ///< add_domain / add_variable
  kPrimaryConstructor,    ///< inside a plugin's comin_main
  kPluginsLoaded,         ///< after load_plugins, before secondary_constructor
  kSecondaryConstructor,  ///< EP_SECONDARY_CONSTRUCTOR callbacks
  kRunning,               ///< entry points of the time loop
  kFinished               ///< after finish()
};

/// The ComIn host: one per process (a second live Host is an error). Plugins reach it through
/// the comin_* C functions. Not thread-safe: ComIn calls come from the host's thread.
class Host {
 public:
  /// `host_comm` is the model's communicator (duplicated, so the caller may free its own).
  Host(MPI_Comm host_comm, SimulationInterval interval);
  ~Host();
  Host(const Host&) = delete;
  Host& operator=(const Host&) = delete;

  /// Adds the next domain (ids 1, 2, ...); checks the sizes of every array. Setup phase only.
  int add_domain(Domain domain);

  /// Creates a host variable: a blocked 5-D Fortran array (nproma, nlev, nblks, 1, 1) of double,
  /// valid cells 0, the padding of the last block NaN. Before secondary_constructor() only.
  double* add_variable(const std::string& name, int domain, int nlev);

  /// dlopen()s each library and calls its comin_main, in order; then creates the variables
  /// the plugins requested that the host does not have (2-D, zero). Collective over host_comm
  /// when a plugin names a communicator. Throws Error naming the library on failure.
  void load_plugins(const std::vector<PluginSpec>& plugins);

  /// Runs the EP_SECONDARY_CONSTRUCTOR callbacks (the only time comin_var_get works).
  void secondary_constructor();

  /// Runs the callbacks registered for `ep`, in registration order, with the given domain id
  /// and model time (ISO 8601). EP_SECONDARY_CONSTRUCTOR, EP_FINISH, EP_DESTRUCTOR have their
  /// own functions.
  void run_entry_point(t_comin_entry_point ep, int domain, const std::string& datetime);

  /// EP_FINISH then EP_DESTRUCTOR (model time of the last entry point); afterwards only data
  /// access is allowed.
  void finish();

  /// Data of a variable (host's or plugin-requested); nullptr when it does not exist.
  double* variable(const std::string& name, int domain) const;
  /// Names of the variables of a domain, in creation order.
  std::vector<std::string> variable_names(int domain) const;
  /// Number of callbacks registered for an entry point (all plugins).
  int n_callbacks(t_comin_entry_point ep) const;

  Phase phase() const;
  MPI_Comm comm() const;
  int rank() const;

  /// Name of an entry point, e.g. "EP_ATM_WRITE_OUTPUT_BEFORE"; "EP_UNKNOWN" otherwise.
  static const char* entry_point_name(int ep);

  struct State;  ///< the registry the comin_* functions work on (comin/host_state.hpp)

 private:
  std::unique_ptr<State> state_;
};

/// Parses an ICON `&comin_nml` namelist: `plugin_list(i)%name`, `%plugin_library`, `%options`,
/// `%comm` (quoted with ' or "; `!` comments; case-insensitive keys). Entries are ordered by i
/// and must have a plugin_library. Throws ConfigError naming the offending line.
std::vector<PluginSpec> parse_comin_namelist(const std::string& text);

/// Reads the namelist file and parses it (errors name the file).
std::vector<PluginSpec> read_comin_namelist(const std::string& path);

/// Fortran layout helpers: 0-based local cell j -> 1-based (idx, blk) with block length nproma.
inline int block_index(int j, int nproma) { return j % nproma + 1; }
inline int block_number(int j, int nproma) { return j / nproma + 1; }
/// Number of blocks for n cells (the last one partial when nproma does not divide n).
inline int n_blocks(int n, int nproma) { return (n + nproma - 1) / nproma; }

}  // namespace finecast::coupling::comin_host
