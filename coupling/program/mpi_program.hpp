// SPDX-License-Identifier: BSD-3-Clause
// Start-up, timing and error handling shared by finecast's MPI programs (finecast-host,
// finecast-replay, finecast-trainer): below host/ and plugin/, so that each reaches it.
#pragma once

#include <mpi.h>

#include <functional>
#include <string>

namespace CLI {
class App;
}

namespace finecast::coupling {

/// Seconds on a steady clock, for differences (durations) only.
double now();

/// Start-up progress of an MPI program, on rank 0: "start-up 12.3 s: reading the grid ...", a
/// line before each stage, so that a slow start (large grids, a loaded machine, the plugins'
/// set-up) shows what it is doing instead of printing nothing for a minute.
class StartupLog {
 public:
  explicit StartupLog(int rank);
  /// Logs `what` (info, rank 0 only) with the seconds since construction.
  void stage(const std::string& what) const;
  double seconds() const;

 private:
  double t0_;
  bool print_;
};

/// A `key.path=value` override as one word of a plugin's options string: quoted when it holds
/// blanks or quotes, so that the plugin splits it back as written ("a b" -> 'a b').
std::string quote_option(const std::string& word);

/// The communicators of a model program, from the MPI handshake over MPI_COMM_WORLD that ICON
/// and ComIn's comin_replay make (coupling/mpi/handshake.hpp): the program's own ranks, and
/// those ranks with the external processes of its plugins (`mpiexec -n 4 finecast-host run.yaml
/// : -n 1 finecast-trainer`). Without external processes both hold every rank of the world.
struct ModelComms {
  MPI_Comm model = MPI_COMM_NULL;  ///< the program's ranks
  MPI_Comm comin = MPI_COMM_NULL;  ///< the program's ranks and its plugins' external processes
  int rank = 0, n_ranks = 1;       ///< in `model`
};

/// The whole of an MPI program's main(): parses `app` (before MPI_Init in a process alone in its
/// job, so that --help, --version and usage errors start no MPI; after the handshake in one of
/// several processes, where rank 0 prints them), MPI_Init_thread (MPI_THREAD_MULTIPLE, or the
/// level of the option --mpi-thread-level it adds to `app`), the handshake that makes `program`'s
/// communicators, configures the log at `log_level` (bound to one of `app`'s options, so it is
/// read after parsing), returns body(comms) after MPI_Finalize. An exception from `body` is
/// logged and gives exit code 1; on several processes it aborts them all, since the failing one
/// would otherwise leave the others waiting in a collective.
int mpi_main(int argc, char** argv, const std::string& program, CLI::App& app, const std::string& log_level,
             const std::function<int(const ModelComms& comms)>& body);

}  // namespace finecast::coupling
