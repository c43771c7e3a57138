// SPDX-License-Identifier: BSD-3-Clause
// Start-up, timing and error handling shared by finecast's MPI programs (host, replay).
#include "coupling/host/mpi_program.hpp"

#include <mpi.h>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <chrono>
#include <cstdio>
#include <exception>

#include "common/leak_check.hpp"
#include "common/log.hpp"

namespace finecast::coupling::host {

double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

StartupLog::StartupLog(int rank) : t0_(now()), print_(rank == 0) {}

double StartupLog::seconds() const { return now() - t0_; }

void StartupLog::stage(const std::string& what) const {
  if (print_) finecast::log::info(fmt::format("start-up {:.1f} s: {}", seconds(), what));
}

std::string quote_option(const std::string& word) {
  if (word.find_first_of(" \t'\"") == std::string::npos) return word;
  if (word.find('\'') == std::string::npos) return "'" + word + "'";
  return "\"" + word + "\"";  // a word with both kinds of quotes cannot be passed through
}

int mpi_main(int argc, char** argv, CLI::App& app, const std::string& log_level,
             const std::function<int(int rank, int n_ranks)>& body) {
  // Plugins may run threads of their own that call MPI (finecast's training thread sums
  // gradients across its trainer ranks while the model steps on): MPI_THREAD_MULTIPLE.
  int provided = MPI_THREAD_SINGLE;
  {
    const finecast::IgnoreLeaksHere open_mpi_init;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  }
  int rank = 0, n_ranks = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &n_ranks);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = rank == 0 ? app.exit(e) : (e.get_exit_code() == 0 ? 0 : 1);
    finecast::leak_check_before_mpi_finalize();
    MPI_Finalize();
    return code;
  }
  int rc = 0;
  try {
    finecast::log::configure(n_ranks > 1 ? rank : -1, finecast::log::parse_level(log_level), rank == 0);
    rc = body(rank, n_ranks);
  } catch (const std::exception& e) {
    finecast::log::error(e.what());
    if (n_ranks > 1) MPI_Abort(MPI_COMM_WORLD, 1);
    rc = 1;
  }
  finecast::leak_check_before_mpi_finalize();
  MPI_Finalize();
  return rc;
}

}  // namespace finecast::coupling::host
