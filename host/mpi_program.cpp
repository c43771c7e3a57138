// SPDX-License-Identifier: BSD-3-Clause
// Start-up, timing and error handling shared by finecast's MPI programs (host, replay).
#include "host/mpi_program.hpp"

#include <mpi.h>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <chrono>
#include <cstdio>
#include <exception>

#include "common/leak_check.hpp"
#include "common/log.hpp"
#include "coupling/mpi/handshake.hpp"

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

int mpi_main(int argc, char** argv, const std::string& program, CLI::App& app, const std::string& log_level,
             const std::function<int(const ModelComms& comms)>& body) {
  // Plugins may run threads of their own that call MPI (finecast's training thread sums
  // gradients across its trainer ranks while the model steps on): MPI_THREAD_MULTIPLE.
  int provided = MPI_THREAD_SINGLE;
  {
    const finecast::IgnoreLeaksHere open_mpi_init;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  }
  int world_size = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &world_size);
  ModelComms comms;
  int rc = 0;
  try {
    // As ICON and comin_replay do: the model's own ranks, and with them the external processes
    // of its plugins (the "comin" group).
    const std::vector<MPI_Comm> groups = mpi_handshake(MPI_COMM_WORLD, {program, kCominGroup});
    comms.model = groups[0];
    comms.comin = groups[1];
    MPI_Comm_rank(comms.model, &comms.rank);
    MPI_Comm_size(comms.model, &comms.n_ranks);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: %s\n", program.c_str(), e.what());
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  auto release = [&] {
    finecast::leak_check_before_mpi_finalize();
    for (MPI_Comm* c : {&comms.model, &comms.comin})
      if (*c != MPI_COMM_NULL) MPI_Comm_free(c);
    MPI_Finalize();
  };
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = comms.rank == 0 ? app.exit(e) : (e.get_exit_code() == 0 ? 0 : 1);
    // External processes wait for the model's plugins: they must not outlive a model that ends here.
    if (world_size > comms.n_ranks) MPI_Abort(MPI_COMM_WORLD, code);
    release();
    return code;
  }
  try {
    finecast::log::configure(comms.n_ranks > 1 ? comms.rank : -1, finecast::log::parse_level(log_level),
                             comms.rank == 0);
    rc = body(comms);
    // External processes wait for the model's plugins: they must not outlive a model that fails.
    if (rc != 0 && world_size > comms.n_ranks) MPI_Abort(MPI_COMM_WORLD, rc);
  } catch (const std::exception& e) {
    finecast::log::error(e.what());
    if (world_size > 1) MPI_Abort(MPI_COMM_WORLD, 1);
    rc = 1;
  }
  release();
  return rc;
}

}  // namespace finecast::coupling::host
