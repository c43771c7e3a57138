// SPDX-License-Identifier: BSD-3-Clause
// The host library's registry (plugins, callbacks, variables, descriptive data) that the C
// functions of comin.h read and write; private to libfinecast_host.
#pragma once

#include <array>
#include <deque>
#include <map>
#include <string>
#include <vector>

#include "coupling/comin/host.hpp"

/// ComIn's opaque handle: one per comin_var_get call.
struct t_comin_var_handle {
  int variable = -1;  ///< index into Host::State::variables
  int flag = 0;
  std::vector<int> context;
  int plugin = -1;
};

/// ComIn's opaque iterator over the variable list.
struct t_comin_var_descr_list_iterator {
  int variable = -1;
};

namespace finecast::coupling::comin_host {

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

/// Blocked Fortran arrays of one domain, built once by add_domain.
struct DomainArrays {
  Domain input;
  int ncells = 0, nblks = 0;
  std::vector<int> glb_index;                       // (ncells)
  std::vector<int> decomp_domain, refin_ctrl;       // (nproma, nblks)
  std::vector<double> clon, clat, area;             // (nproma, nblks)
  std::vector<int> neighbor_idx, neighbor_blk;      // (nproma, nblks, 3)
  std::vector<int> parent_glb_idx, parent_glb_blk;  // (nproma, nblks)
  std::vector<int> child_idx, child_blk;            // (nproma, nblks, 4)
  std::vector<int> vertex_idx, vertex_blk;          // (nproma, nblks, 3)
  std::map<int, int> glb2loc;                       // 1-based global -> 1-based local
};

struct Variable {
  std::string name;
  int domain = 1;
  std::array<int, 5> shape{};
  std::array<int, 5> dim_semantics{};
  std::vector<double> data;
  int requested_by = -1;   ///< plugin index, -1 = the host's own
  bool exclusive = false;  ///< requested with lmodexclusive
  int writer = -1;         ///< plugin that got it with COMIN_FLAG_WRITE first
};

struct Plugin {
  PluginSpec spec;
  void* handle = nullptr;
  FortranString name, options;
  MPI_Comm comm = MPI_COMM_NULL;  ///< shared between plugins naming the same comm
};

struct Callback {
  int plugin;
  t_comin_callback_function fn;
};

struct Host::State {
  MPI_Comm comm = MPI_COMM_NULL;
  int rank = 0;
  Phase phase = Phase::kSetup;
  FortranString exp_start, exp_stop, run_start, run_stop, datetime;
  std::vector<DomainArrays> domains;
  std::deque<Variable> variables;
  std::deque<Plugin> plugins;
  std::map<std::string, MPI_Comm> plugin_comms;
  std::map<int, std::vector<Callback>> callbacks;  // by entry point
  std::deque<t_comin_var_handle> handles;
  std::deque<t_comin_var_descr_list_iterator> iterators;
  int current_plugin = -1;  ///< plugin whose comin_main / callback runs now
  int current_ep = 0;       ///< 0 outside entry points (e.g. in comin_main)
  int current_domain = 0;
  bool errors_return = false;
  t_comin_error_code error = COMIN_SUCCESS;
  std::string error_message;
  bool finish_requested = false;  ///< set when the finish handler returned
  std::string finish_message;

  int find_variable(const std::string& name, int domain) const;
};

/// A zeroed (NaN-padded) blocked variable (nproma, nlev, nblks, 1, 1) of a domain.
Variable make_variable(const DomainArrays& domain_arrays, const std::string& name, int domain,
                       int nlev);

/// The live host's state, or nullptr (the comin_* functions then report a fatal error).
Host::State* current_state();

/// A ComIn API error: with errors_return set, records COMIN_ERROR_STATUS and returns;
/// otherwise goes through the finish handler (abort by default).
void api_error(const char* routine, const std::string& text);

/// comin_plugin_finish's path: calls the finish handler and remembers the request.
void fatal(const std::string& routine, const std::string& text);

/// Writes a comin_print_* line through the print sink (caller filters by rank).
void print_line(bool is_warning, const std::string& msg);

}  // namespace finecast::coupling::comin_host
