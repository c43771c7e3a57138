// SPDX-License-Identifier: BSD-3-Clause
// finecast-trainer: the trainer group of train.placement: external, as a program of its own in the
// host's MPI job. It joins the host's processes through ComIn's MPI handshake (the "comin" group
// of MPI_COMM_WORLD, then the plugin's comm name), as ComIn's external processes do, loads the
// same finecast plugin library the host loads and runs its trainer there
// (plugin/comin_plugin/external.hpp).
#include <dlfcn.h>
#include <mpi.h>

#include <CLI/CLI.hpp>

#include <filesystem>
#include <string>
#include <vector>

#include "common/cli.hpp"
#include "common/log.hpp"
#include "coupling/error.hpp"
#include "coupling/program/mpi_program.hpp"
#include "coupling/mpi/handshake.hpp"

namespace fc = finecast::coupling;

namespace {

struct Options {
  std::string comm = "finecast";
  std::string plugin;
  std::string log_level = "info";
};

/// libfinecast_comin.so where the build or the install puts it beside bin/.
std::string default_plugin() {
  const std::filesystem::path bin = std::filesystem::path(finecast::cli::executable_path()).parent_path();
  for (const char* libdir : {FINECAST_INSTALL_LIBDIR, "lib"}) {
    const std::filesystem::path candidate = bin.parent_path() / libdir / "libfinecast_comin.so";
    if (std::filesystem::exists(candidate)) return candidate.string();
  }
  return (bin.parent_path() / "lib" / "libfinecast_comin.so").string();
}

int run(const Options& opt, const fc::ModelComms& comms) {
  // The second handshake, over the host's ranks and the external processes: the plugin's group.
  std::vector<MPI_Comm> groups = finecast::coupling::mpi_handshake(comms.comin, {opt.comm});
  int size = 0, joined = 0;
  MPI_Comm_size(groups[0], &size);
  MPI_Comm_size(comms.model, &joined);
  if (size == joined)
    throw finecast::ConfigError("finecast-trainer: no host process joined the comm \"" + opt.comm +
                                "\": the host's plugin list must give the finecast plugin comm = \"" + opt.comm +
                                "\" (and its config coupling.communicator: plugin, train.placement: external)");
  const std::string plugin = opt.plugin.empty() ? default_plugin() : opt.plugin;
  if (comms.rank == 0)
    finecast::log::info("finecast-trainer: " + std::to_string(comms.n_ranks) + " process(es) joined comm \"" +
                        opt.comm + "\" with " + std::to_string(size - joined) + " host rank(s); plugin " + plugin);
  void* handle = dlopen(plugin.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* why = dlerror();
    throw finecast::IoError("finecast-trainer: cannot load the finecast plugin " + plugin + ": " +
                            (why ? why : "unknown reason") + " (--plugin names it)");
  }
  using Entry = int (*)(int);
  auto entry = reinterpret_cast<Entry>(dlsym(handle, "finecast_external_trainer"));
  if (entry == nullptr)
    throw finecast::ConfigError("finecast-trainer: " + plugin +
                                " has no finecast_external_trainer: not a finecast plugin of this version");
  const int rc = entry(MPI_Comm_c2f(groups[0]));
  MPI_Comm_free(&groups[0]);
  // The plugin library stays loaded: LibTorch, which its trainer module loaded, cannot be unloaded.
  return rc;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "finecast-trainer: the trainer group of finecast's train.placement: external, started in the host's MPI "
      "job as ComIn's external processes are. Each process is one trainer rank; the host's plugin list gives "
      "finecast the same comm name, and its config sets coupling.communicator: plugin, train.placement: external "
      "and train.ranks to the number of finecast-trainer processes.\n"
      "Example: mpiexec -n 4 finecast-host run.yaml : -n 1 finecast-trainer --comm finecast"};
  Options opt;
  app.add_option("--comm", opt.comm, "the plugin's comm name in the host's plugin list (ComIn namelist `comm`)")
      ->capture_default_str();
  app.add_option("--plugin", opt.plugin,
                 "the finecast plugin library (libfinecast_comin.so) to load; default: the one installed beside "
                 "this program (use the file the host loads)");
  finecast::cli::add_log_level(app, opt.log_level);
  finecast::cli::add_version(app, "finecast-trainer");
  return fc::mpi_main(argc, argv, "finecast-trainer", app, opt.log_level,
                      [&](const fc::ModelComms& comms) { return run(opt, comms); });
}
