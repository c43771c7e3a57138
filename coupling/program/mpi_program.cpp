// SPDX-License-Identifier: BSD-3-Clause
// Start-up, timing and error handling shared by finecast's MPI programs (host, replay).
#include "coupling/program/mpi_program.hpp"

#include <mpi.h>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <utility>
#include <vector>

#include "common/leak_check.hpp"
#include "common/log.hpp"
#include "coupling/mpi/handshake.hpp"

namespace finecast::coupling {

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

namespace {

const std::vector<std::pair<std::string, int>>& thread_levels() {
  static const std::vector<std::pair<std::string, int>> levels{{"single", MPI_THREAD_SINGLE},
                                                               {"funneled", MPI_THREAD_FUNNELED},
                                                               {"serialized", MPI_THREAD_SERIALIZED},
                                                               {"multiple", MPI_THREAD_MULTIPLE}};
  return levels;
}

/// The level of --mpi-thread-level LEVEL (or =LEVEL), read from argv before MPI_Init (the
/// option's value is checked when the command line is parsed); MPI_THREAD_MULTIPLE without it.
int requested_thread_level(int argc, char** argv) {
  const std::string option = "--mpi-thread-level";
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    std::string value;
    if (arg == option && i + 1 < argc) value = argv[i + 1];
    if (arg.rfind(option + "=", 0) == 0) value = arg.substr(option.size() + 1);
    for (const auto& [name, level] : thread_levels())
      if (value == name) return level;
  }
  return MPI_THREAD_MULTIPLE;
}

/// Whether a launcher started this process as one of several in its MPI job (Open MPI's mpiexec,
/// MPICH's and Intel MPI's Hydra, Slurm's srun). Such a process parses its command line after the
/// handshake: only the first rank prints, and external processes abort the job on a usage error
/// instead of leaving the model's ranks waiting in the handshake for a process that never joins.
bool one_of_several_processes() {
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "SLURM_NTASKS"}) {
    const char* value = std::getenv(name);
    if (value != nullptr && std::atoi(value) > 1) return true;
  }
  return false;
}

}  // namespace

int mpi_main(int argc, char** argv, const std::string& program, CLI::App& app, const std::string& log_level,
             const std::function<int(const ModelComms& comms)>& body) {
  // Plugins may run threads of their own that call MPI (finecast's trainer ranks sum gradients
  // on their training threads while the model steps on): MPI_THREAD_MULTIPLE. A lower level
  // (--mpi-thread-level) stands in for hosts that ask for less: ICON without OpenMP and
  // comin_replay call MPI_Init (MPI_THREAD_SINGLE), ICON with OpenMP MPI_THREAD_FUNNELED.
  std::string level_name = "multiple";
  std::vector<std::string> level_names;
  for (const auto& level : thread_levels()) level_names.push_back(level.first);
  app.add_option("--mpi-thread-level", level_name,
                 "the MPI thread level to ask for (as a host does that initialises MPI with less than "
                 "MPI_THREAD_MULTIPLE, e.g. ICON without OpenMP: single)")
      ->check(CLI::IsMember(level_names));
  // A process alone in its job (no launcher, mpiexec -n 1) answers --help, --version and usage
  // errors before MPI_Init: they need no MPI, the answer comes at once instead of after Open MPI's
  // start-up, and none of Open MPI's threads and libraries is loaded for it (under ASan the leak
  // check before MPI_Finalize crashed in LeakSanitizer's tracer on `finecast-trainer --version`:
  // scripts/sanitize.sh).
  const bool parse_after_handshake = one_of_several_processes();
  if (!parse_after_handshake) {
    try {
      app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
      return app.exit(e);
    }
  }
  int provided = MPI_THREAD_SINGLE;
  const int requested = requested_thread_level(argc, argv);
  {
    const finecast::IgnoreLeaksHere open_mpi_init;
    MPI_Init_thread(&argc, &argv, requested, &provided);
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
    if (parse_after_handshake) app.parse(argc, argv);
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
    if (requested != MPI_THREAD_MULTIPLE && comms.rank == 0)
      finecast::log::info("MPI thread level: asked for " + level_name + " (--mpi-thread-level), given " + [&] {
        for (const auto& [name, level] : thread_levels())
          if (level == provided) return name;
        return std::to_string(provided);
      }());
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

}  // namespace finecast::coupling
