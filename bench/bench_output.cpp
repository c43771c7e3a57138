// SPDX-License-Identifier: BSD-3-Clause
// finecast-bench output: write time and size per record of the ensemble output (EnsembleWriter)
// on R2B4 and R2B6 grids, per format and deflate level (docs/output.md, "Size and speed").
#include <sys/stat.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <ctime>
#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "bench/registry.hpp"
#include "common/cli.hpp"
#include "coupling/grid/icosahedral_grid.hpp"
#include "coupling/io/ensemble_writer.hpp"
#include "coupling/io/nc_metadata.hpp"

namespace finecast::bench {
namespace {

using Clock = std::chrono::steady_clock;

/// CPU seconds of this process: on a loaded machine the write's own cost, which wall time is not.
double cpu_seconds() { return static_cast<double>(std::clock()) / CLOCKS_PER_SEC; }

struct Options {
  std::string levels = "4,6";
  int members = 8;
  int records = 4;
  std::string dir = "/tmp";
};

double file_mb(const std::string& path) {
  struct stat st {};
  return stat(path.c_str(), &st) == 0 ? static_cast<double>(st.st_size) / 1e6 : 0.0;
}

/// Fields as a sampled ensemble looks: a smooth large-scale temperature (the host's and the
/// coarse field), members that add fine-scale noise of 1 K to it (what the sampler adds and what
/// deflate cannot remove: float32 noise has about 16 random mantissa bits).
struct Fields {
  std::vector<float> members, coarse, host;
};
Fields make_fields(const coupling::IconGrid& g, int members, int record, std::mt19937& rng) {
  const size_t n = static_cast<size_t>(g.n_cells);
  Fields f;
  f.host.resize(n);
  f.coarse.resize(n);
  f.members.resize(static_cast<size_t>(members) * n);
  std::normal_distribution<float> noise(0.0f, 1.0f);
  for (size_t i = 0; i < n; ++i) {
    const double lat = g.clat[i], lon = g.clon[i];
    f.host[i] = static_cast<float>(250.0 + 40.0 * std::cos(lat) +
                                   5.0 * std::sin(3.0 * lon + 0.1 * record) * std::sin(2.0 * lat));
    f.coarse[i] = std::round(f.host[i] * 4.0f) / 4.0f;  // piecewise constant, as a coarse field on the fine grid
  }
  for (int m = 0; m < members; ++m)
    for (size_t i = 0; i < n; ++i) f.members[m * n + i] = f.host[i] + noise(rng);
  return f;
}

struct Case {
  const char* name;
  coupling::WriterOptions options;
};

int run(int argc, char** argv) {
  Options o;
  CLI::App app{
      "Write time and size per record of finecast's ensemble output on synthetic R2B<level> grids (with cell "
      "corners): --members members, their mean, the coarse field and the host's field per record, as the "
      "plugin writes them, for NetCDF-4 with deflate 0, 1 and 4 and for CDF-5. A record's time is its "
      "write() with the sync to disk (wall and CPU time); its size the file's growth. Reported: the median over "
      "--records records.",
      "finecast-bench output"};
  app.add_option("--levels", o.levels, "comma-separated grid levels (R2B<level>)")->default_str("4,6");
  app.add_option("--members", o.members, "members per record")->check(finecast::cli::positive());
  app.add_option("--records", o.records, "records written per case")->check(CLI::Range(2, 1000));
  app.add_option("--dir", o.dir, "directory of the files written (removed afterwards)")->default_str("/tmp");
  finecast::cli::add_version(app, "finecast-bench output");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  const Case cases[] = {{"netcdf4 deflate 0", {coupling::OutputFormat::kNetcdf4, 0, ""}},
                        {"netcdf4 deflate 1", {coupling::OutputFormat::kNetcdf4, 1, ""}},
                        {"netcdf4 deflate 4", {coupling::OutputFormat::kNetcdf4, 4, ""}},
                        {"cdf5", {coupling::OutputFormat::kCdf5, 0, ""}}};
  std::printf("%-6s %9s %-18s %10s %10s %10s %10s\n", "grid", "cells", "format", "wall ms", "CPU ms", "MB/record",
              "coords MB");
  try {
    size_t start = 0;
    while (start <= o.levels.size()) {
      const size_t comma = std::min(o.levels.find(',', start), o.levels.size());
      const int level = std::stoi(o.levels.substr(start, comma - start));
      start = comma + 1;
      const coupling::IconGrid g = coupling::make_icosahedral_grid(level);
      const coupling::OutputGrid grid = coupling::OutputGrid::of(g);
      std::mt19937 rng(7);
      std::vector<Fields> records;
      for (int r = 0; r < o.records; ++r) records.push_back(make_fields(g, o.members, r, rng));
      for (const Case& c : cases) {
        const std::string path = o.dir + "/finecast_bench_output_" + std::to_string(getpid()) + ".nc";
        std::vector<double> ms, cpu_ms, mb;
        double coords = 0;
        {
          coupling::EnsembleWriter w(path, grid, "ts", {"K", "surface temperature", "surface_temperature"}, o.members,
                                     {}, "proleptic_gregorian", c.options);
          double before = coords = file_mb(path);
          for (int r = 0; r < o.records; ++r) {
            char datetime[32];
            std::snprintf(datetime, sizeof datetime, "2000-01-01T%02d:00:00", r);
            const Fields& f = records[static_cast<size_t>(r)];
            const auto t0 = Clock::now();
            const double c0 = cpu_seconds();
            w.write(datetime, f.members.data(), f.coarse.data(), f.host.data());
            cpu_ms.push_back(1e3 * (cpu_seconds() - c0));
            ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
            const double after = file_mb(path);
            mb.push_back(after - before);
            before = after;
          }
          w.close();
        }
        std::remove(path.c_str());
        // The first record also defines the companions: the median leaves it out of account.
        for (auto* v : {&ms, &cpu_ms, &mb}) std::sort(v->begin(), v->end());
        const size_t mid = ms.size() / 2;
        std::printf("R2B%-3d %9lld %-18s %10.1f %10.1f %10.2f %10.2f\n", level, static_cast<long long>(g.n_cells),
                    c.name, ms[mid], cpu_ms[mid], mb[mid], coords);
        std::fflush(stdout);
      }
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "finecast-bench output: %s\n", e.what());
    return 1;
  }
  return 0;
}

const Register reg("output", {"ensemble output write time and size per record, R2B4 and R2B6, per format", run});

}  // namespace
}  // namespace finecast::bench
