// SPDX-License-Identifier: BSD-3-Clause
// finecast-bench coupling: per-step cost of redistribution + coarsen + patch + buffer insert under MPI.
#include <mpi.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "bench/registry.hpp"
#include "common/cli.hpp"
#include "common/leak_check.hpp"
#include "coupling/buffer/rolling_buffer.hpp"
#include "comin.h"
#include "coupling/grid/icon_grid.hpp"
#include "coupling/grid/icon_hierarchy.hpp"
#include "coupling/grid/icosahedral_grid.hpp"
#include "coupling/grid/patches.hpp"
#include "coupling/mpi/owned_cells.hpp"
#include "coupling/mpi/redistribution.hpp"

namespace finecast::bench {
namespace {

using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n == 0 ? 0.0 : n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

constexpr const char* kDefaultGrid = "/usr/share/ncarg/data/nug/triangular_grid_ICON.nc";

struct Options {
  bool json = false, worker = false, skip_r2b6 = false;
  int steps = 50;
  std::string ranks = "1,2,4";
  std::string grid = kDefaultGrid;
};

bool under_mpiexec() {
  for (const char* v : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK", "MPI_LOCALNRANKS", "SLURM_STEP_NUM_TASKS"})
    if (std::getenv(v)) return true;
  return false;
}

struct Result {
  double step_ms = 0, exchange_ms = 0, patch_ms = 0, push_ms = 0, setup_s = 0;
  int64_t cells = 0, patches = 0;
};

// One grid, all ranks of MPI_COMM_WORLD. The host side is ICON-like: each rank owns a contiguous
// range of global cells (compact regions on hierarchically numbered grids) stored in a blocked
// (nproma, 1, nblks) array with halo cells around it; rank 0 is the trainer rank.
Result run_grid(int fine_level, int coarse_level, const std::string& file, int steps) {
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  Result res;
  const auto t_setup = Clock::now();
  coupling::PatchMap map;
  int64_t n_global = 0;
  if (rank == 0) {
    const coupling::IconGrid grid =
        file.empty() ? coupling::make_icosahedral_grid(fine_level) : coupling::read_icon_grid(file);
    map = coupling::icon_patch_map(grid, coarse_level);
    n_global = grid.n_cells;
  }
  MPI_Bcast(&n_global, 1, MPI_INT64_T, 0, MPI_COMM_WORLD);
  res.cells = n_global;

  // Owned range plus a halo of 2% of the range on each side.
  const int64_t lo = n_global * rank / size, hi = n_global * (rank + 1) / size;
  const int64_t halo = std::max<int64_t>(1, (hi - lo) / 50);
  std::vector<int> decomp, glb;
  for (int64_t g = lo - halo; g < hi + halo; ++g) {
    if (g < 0 || g >= n_global) continue;
    decomp.push_back(g >= lo && g < hi ? 0 : 1);
    glb.push_back(static_cast<int>(g + 1));
  }
  const int nproma = 32, n_local = static_cast<int>(glb.size());
  const int nblks = std::max(1, (n_local + nproma - 1) / nproma);
  const int shape[5] = {nproma, 1, nblks, 1, 1};
  const int sem[5] = {COMIN_DIM_SEMANTICS_NPROMA, COMIN_DIM_SEMANTICS_LEVEL, COMIN_DIM_SEMANTICS_BLOCK,
                      COMIN_DIM_SEMANTICS_UNUSED, COMIN_DIM_SEMANTICS_UNUSED};
  std::vector<double> host(static_cast<size_t>(nproma) * nblks, 0.0);
  const coupling::OwnedCells cells = coupling::owned_cells(shape, sem, nproma, n_local, decomp.data(), glb.data());
  // Rank 0 is the one trainer here: its slots are the whole field in global order, so the
  // patches are cut from the slots as from a gathered field (the plugin's path with train.ranks 1).
  std::vector<int64_t> slot_cells;
  if (rank == 0) {
    slot_cells.resize(static_cast<size_t>(n_global));
    for (int64_t g = 0; g < n_global; ++g) slot_cells[static_cast<size_t>(g)] = g;
  }
  coupling::Redistribution redistribution(MPI_COMM_WORLD, cells.global_index, slot_cells, n_global);
  std::vector<float> local(static_cast<size_t>(cells.size()));
  std::vector<float> global(rank == 0 ? static_cast<size_t>(n_global) : 0);

  coupling::Patches patches;
  coupling::PatchOptions popt;
  std::unique_ptr<coupling::RollingBuffer> buffer;
  if (rank == 0) {
    const int C = coupling::context_size(map, 1, popt);
    std::vector<float> w(map.fine_weight.begin(), map.fine_weight.end());
    buffer = std::make_unique<coupling::RollingBuffer>(48, map.n_coarse, C, map.patch_size, std::move(w));
    res.patches = map.n_coarse;
  }
  MPI_Barrier(MPI_COMM_WORLD);
  res.setup_s = ms_since(t_setup) / 1000.0;

  const int warmup = 3;
  std::vector<double> t_step, t_exchange, t_patch, t_push;
  for (int s = 0; s < warmup + steps; ++s) {
    // The model advances: new values in the host array (not timed).
    for (int j = 0; j < n_local; ++j) host[static_cast<size_t>(j)] = 280.0 + 20.0 * std::sin(1e-3 * glb[j] + 0.1 * s);
    MPI_Barrier(MPI_COMM_WORLD);
    const auto t0 = Clock::now();
    coupling::pack(host.data(), cells, local.data());
    redistribution.forward(1, local.data(), rank == 0 ? global.data() : nullptr);
    double exchange_ms = ms_since(t0), patch_ms = 0, push_ms = 0;
    if (rank == 0) {
      const auto t1 = Clock::now();
      coupling::extract_patches(map, {global.data()}, nullptr, popt,
                                patches);  // coarsening included
      patch_ms = ms_since(t1);
      const auto t2 = Clock::now();
      buffer->push("step " + std::to_string(s), patches.context.data(), patches.fine.data(), patches.valid.data());
      push_ms = ms_since(t2);
    }
    // A step ends when the slowest rank is done: the others wait in the next collective.
    double mine = ms_since(t0), step_ms = 0;
    MPI_Allreduce(&mine, &step_ms, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    if (s >= warmup) {
      t_step.push_back(step_ms);
      t_exchange.push_back(exchange_ms);
      t_patch.push_back(patch_ms);
      t_push.push_back(push_ms);
    }
  }
  // Medians: on a shared 2-core machine a few steps lose the CPU to other processes, and a mean
  // would report the scheduler rather than the code.
  res.step_ms = median(t_step);
  res.exchange_ms = median(t_exchange);
  res.patch_ms = median(t_patch);
  res.push_ms = median(t_push);
  return res;
}

struct Row {
  std::string grid;
  int ranks;
  Result r;
  std::string source;
};

// Prints the table, or with --json one JSON object.
int report(const std::vector<Row>& rows, bool json, int first_ranks) {
  if (json) {
    std::printf("{");
    bool first = true;
    auto field = [&](const std::string& k, double v) {
      std::printf("%s\"%s\": %.4f", first ? "" : ", ", k.c_str(), v);
      first = false;
    };
    for (const auto& row : rows) {
      const std::string p = row.grid + "_";
      const std::string s = std::to_string(row.ranks) + (row.ranks == 1 ? "rank" : "ranks");
      field(p + "step_ms_" + s, row.r.step_ms);
      field(p + "exchange_ms_" + s, row.r.exchange_ms);
      field(p + "patch_ms_" + s, row.r.patch_ms);
      field(p + "push_ms_" + s, row.r.push_ms);
    }
    for (const auto& row : rows) {
      if (row.ranks != first_ranks) continue;
      field(row.grid + "_cells", static_cast<double>(row.r.cells));
      field(row.grid + "_patches", static_cast<double>(row.r.patches));
    }
    std::printf("}\n");
    return 0;
  }
  std::printf(
      "finecast coupling step: pack + redistribution to the trainer (rank 0) + coarsen/patch + rolling-buffer "
      "insert\n");
  std::printf("%-6s %9s %8s %6s %10s %10s %10s %10s %8s\n", "grid", "cells", "patches", "ranks", "step ms", "exch ms",
              "patch ms", "push ms", "setup s");
  for (const auto& row : rows)
    std::printf("%-6s %9lld %8lld %6d %10.3f %10.3f %10.3f %10.3f %8.2f\n", row.grid.c_str(),
                static_cast<long long>(row.r.cells), static_cast<long long>(row.r.patches), row.ranks, row.r.step_ms,
                row.r.exchange_ms, row.r.patch_ms, row.r.push_ms, row.r.setup_s);
  for (const auto& row : rows)
    if (row.ranks == first_ranks) std::printf("%s grid: %s\n", row.grid.c_str(), row.source.c_str());
  std::printf("targets: < 2 ms/step at R2B4 with 4 ranks, < 40 ms/step at R2B6 size\n");
  return 0;
}

// Worker: runs inside mpiexec; rank 0 prints one "RESULT" line per grid.
int worker(const Options& o) {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) {
    const IgnoreLeaksHere open_mpi_init;  // ASan builds: Open MPI's own leaks (leak_check.hpp)
    MPI_Init(nullptr, nullptr);
  }
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  std::map<std::string, Result> results;
  const bool have_file = access(o.grid.c_str(), R_OK) == 0;
  results["r2b4"] = run_grid(4, 0, have_file ? o.grid : "", o.steps);
  if (!o.skip_r2b6) results["r2b6"] = run_grid(6, 2, "", std::max(5, o.steps / 5));
  if (rank == 0 && !o.worker) {
    // Launched by the user under mpiexec: report this rank count directly.
    std::vector<Row> rows;
    for (const auto& [name, r] : results)
      rows.push_back({name, size, r, name == "r2b4" && have_file ? o.grid : "synthetic"});
    report(rows, o.json, size);
  } else if (rank == 0) {
    for (const auto& [name, r] : results)
      std::printf("RESULT %s %d %.4f %.4f %.4f %.4f %lld %lld %.2f %s\n", name.c_str(), size, r.step_ms, r.exchange_ms,
                  r.patch_ms, r.push_ms, static_cast<long long>(r.cells), static_cast<long long>(r.patches), r.setup_s,
                  name == "r2b4" ? (have_file ? o.grid.c_str() : "synthetic") : "synthetic");
    std::fflush(stdout);
  }
  leak_check_before_mpi_finalize();
  MPI_Finalize();
  return 0;
}

int driver(const Options& o) {
  std::vector<int> ranks;
  {
    std::stringstream ss(o.ranks);
    std::string item;
    while (std::getline(ss, item, ',')) ranks.push_back(std::stoi(item));
  }
  const std::string self = finecast::cli::executable_path();
  // Open MPI refuses to start as root unless told; a benchmark in a container is often root.
  if (geteuid() == 0) {
    setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 0);
    setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 0);
  }
  const char* mpiexec = std::getenv("MPIEXEC") ? std::getenv("MPIEXEC") : "mpiexec";
  std::vector<Row> rows;
  for (int k : ranks) {
    std::string cmd = std::string(mpiexec) + " -n " + std::to_string(k) + " --oversubscribe '" + self +
                      "' coupling --worker --steps " + std::to_string(o.steps) + " --grid '" + o.grid + "'" +
                      (o.skip_r2b6 ? " --skip-r2b6" : "");
    FILE* p = popen(cmd.c_str(), "r");
    if (!p) {
      std::fprintf(stderr, "finecast-bench coupling: cannot run %s\n", cmd.c_str());
      return 1;
    }
    char line[1024];
    int got = 0;
    while (std::fgets(line, sizeof line, p)) {
      char grid[32], source[2048];
      int n = 0;
      long long cells = 0, patches = 0;
      Result r;
      if (std::sscanf(line, "RESULT %31s %d %lf %lf %lf %lf %lld %lld %lf %2047s", grid, &n, &r.step_ms, &r.exchange_ms,
                      &r.patch_ms, &r.push_ms, &cells, &patches, &r.setup_s, source) == 10) {
        r.cells = cells;
        r.patches = patches;
        rows.push_back({grid, n, r, source});
        ++got;
      } else if (!o.json) {
        std::fputs(line, stderr);
      }
    }
    const int rc = pclose(p);
    if (rc != 0 || got == 0) {
      std::fprintf(stderr, "finecast-bench coupling: `%s` failed (status %d)\n", cmd.c_str(), rc);
      return 1;
    }
  }
  return report(rows, o.json, ranks.front());
}

int run(int argc, char** argv) {
  Options o;
  CLI::App app{
      "Per-step cost of finecast's coupling on the host side: pack the owned cells of an ICON-like "
      "blocked host "
      "array, send them to the trainer rank (rank 0) by the redistribution (MPI_Alltoallv), coarsen and cut patches "
      "there, insert "
      "into the "
      "rolling buffer (48 steps). Grids: R2B4 (the real 20,480-cell grid file, patches = R2B0 "
      "parents of 256 "
      "cells) and a synthetic R2B6 grid (327,680 cells, patches = R2B2 parents of 256 cells).\n\n"
      "Ranks: run without mpiexec and it re-launches itself as `mpiexec -n K --oversubscribe "
      "finecast-bench "
      "coupling --worker` for each K in --ranks (the MPIEXEC environment variable overrides the "
      "launcher; as "
      "root it sets OMPI_ALLOW_RUN_AS_ROOT). Run it under mpiexec yourself and it measures that "
      "many ranks once "
      "(then --ranks is ignored). A step's time is that of the slowest rank; reported: the median "
      "over --steps steps after "
      "3 warm-up steps (R2B6: a fifth of the steps, at least 5), each stage's median separately.",
      "finecast-bench coupling"};
  app.add_flag("--json", o.json,
               "print one JSON object (keys <grid>_step_ms_<k>rank(s), ..._exchange_ms_, _patch_ms_, "
               "_push_ms_)");
  app.add_option("--steps", o.steps, "measured steps per grid")->check(finecast::cli::positive());
  app.add_option("--ranks", o.ranks, "comma-separated rank counts to launch")->default_str("1,2,4");
  app.add_option("--grid", o.grid, "the R2B4 ICON grid file (synthetic R2B4 when missing)")->default_str(kDefaultGrid);
  app.add_flag("--skip-r2b6", o.skip_r2b6, "measure only the R2B4 grid");
  app.add_flag("--worker", o.worker, "internal: measure inside mpiexec and print RESULT lines");
  finecast::cli::add_version(app, "finecast-bench coupling");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  try {
    if (o.worker) return worker(o);
    if (under_mpiexec()) {
      // Launched by the user under mpiexec: measure this rank count (RESULT lines on rank 0).
      return worker(o);
    }
    return driver(o);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "finecast-bench coupling: %s\n", e.what());
    return 1;
  }
}

const Register reg("coupling", {"redistribution + patches + buffer insert per step, R2B4 and R2B6, 1/2/4 ranks", run});

}  // namespace
}  // namespace finecast::bench
