// SPDX-License-Identifier: BSD-3-Clause
// Nests (ICON's child domains): finecast-host runs a global domain 1 with a limited-area nest as
// domain 2, and the plugin downscales the domain its config names (coupling.domain), says which
// at start-up, and writes that domain's cells. Bad nest entries stop finecast-host at start-up.
// The grids are written by finecast-grid in the test: a global R2B3 and an R2B4 cut over Europe.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "tests/plugin/replay_test_util.hpp"

namespace ftr = finecast::testing_replay;

namespace {

/// A directory with global.nc (R2B3, 5,120 cells) and nest.nc (an R2B4 area over Europe).
struct NestGrids {
  ftr::ScratchDir dir{"nests"};
  std::string d = dir.path();
  NestGrids() {
    const ftr::CommandResult r = ftr::run_command(
        "cd '" + d + "' && " + ftr::binary("finecast-grid") + " --write-icon-grid global.nc --level 3 && " +
        ftr::binary("finecast-grid") +
        " --write-icon-grid nest.nc --level 4 --region 25,70,-20,45 --boundary-depth 4 --coarse-level 2");
    EXPECT_EQ(r.rc, 0) << r.output;
  }
  /// Runs finecast-host on `ranks` ranks with the run file's `extra` keys; the grid is global.nc
  /// unless `extra` names another.
  ftr::CommandResult host(const std::string& extra, int ranks = 2) const {
    ftr::write_text(d + "/host.yaml",
                    "orography: /usr/share/ferret-vis/data/etopo20.cdf\norography_variable: ROSE\n"
                    "start: 1979-01-01T00:00:00\ndt: 1800\nsteps: 8\nnproma: 16\nnlev: 1\n" +
                        extra);
    return ftr::run_command("cd '" + d + "' && mpiexec -n " + std::to_string(ranks) + " --oversubscribe " +
                            ftr::binary("finecast-host") + " host.yaml");
  }
  /// The plugin's config coupling `domain` on `grid` (coarse cells of 16 fine ones).
  void plugin(int domain, const std::string& grid, int coarse_level) const {
    ftr::write_text(d + "/plugin.yaml",
                    "fields: [ts]\nseed: 5\ndevice: cpu\ncoupling: {domain: " + std::to_string(domain) +
                        "}\ngrid: {type: icon, file: " + grid + ", coarse_level: " + std::to_string(coarse_level) +
                        "}\npatch: {context_rings: 1}\nbuffer: {capacity: 4}\n"
                        "model: {hidden: 16, depth: 1, time_embedding: 8, diffusion_steps: 5}\n"
                        "train: {async: false, every: 4, min_steps: 4, epochs: 1, batch_size: 32, warmup_steps: 1, "
                        "threads: 1}\nsample: {every: 4, members: 1, steps: 2, output: out.nc}\n"
                        "checkpoint: {dir: ckpt, every: 8, keep: 1}\n");
  }
  std::string plugins() const {
    return "plugins:\n  - {name: finecast, library: " + ftr::plugin_library() + ", options: plugin.yaml}\n";
  }
  /// The output's cell count and latitude range (degrees), as Python's netCDF4 reads them.
  std::string output_facts() const {
    ftr::write_text(d + "/facts.py", R"(
import numpy as np, netCDF4
f = netCDF4.Dataset("out.nc")
lat = np.degrees(f["clat"][:]) if "rad" in f["clat"].units else f["clat"][:]
print("cells=%d sampled=%d lat=%.0f..%.0f" % (f["ts"].shape[-1], int(np.isfinite(np.ma.filled(f["ts"][-1, 0, :], np.nan)).sum()), lat.min(), lat.max()))
)");
    const ftr::CommandResult r = ftr::run_command("cd '" + d + "' && /usr/bin/python3 facts.py");
    return r.rc == 0 ? r.output.substr(0, r.output.find('\n')) : "python failed: " + r.output;
  }
};

}  // namespace

TEST(Nests, PluginDownscalesTheNestWithCouplingDomainTwoAndTheGlobalDomainWithOne) {
  NestGrids g;
  g.plugin(2, "nest.nc", 2);
  const ftr::CommandResult nest = g.host("grid: global.nc\nnests:\n  - {grid: nest.nc}\n" + g.plugins());
  ASSERT_EQ(nest.rc, 0) << nest.output;
  const std::string dom2_line = "domain 2 (nest of domain 1): nest.nc: ";
  const size_t dom2 = nest.output.find(dom2_line);
  ASSERT_NE(dom2, std::string::npos) << nest.output;
  const long long nest_cells = std::atoll(nest.output.c_str() + dom2 + dom2_line.size());
  ASSERT_GT(nest_cells, 500);
  ASSERT_LT(nest_cells, 5120);
  EXPECT_NE(nest.output.find("of domain 2 of 2 (grid nest.nc, " + std::to_string(nest_cells) + " cells)"),
            std::string::npos)
      << nest.output;
  EXPECT_NE(nest.output.find(" training sessions"), std::string::npos) << nest.output;
  // The output lies on the nest's cells over Europe, not on the global domain's.
  const std::string facts = g.output_facts();
  EXPECT_EQ(facts.substr(0, facts.find(" sampled")), "cells=" + std::to_string(nest_cells)) << facts;
  int lat0 = 0, lat1 = 0;
  ASSERT_EQ(std::sscanf(facts.c_str() + facts.find("lat=") + 4, "%d..%d", &lat0, &lat1), 2) << facts;
  EXPECT_GE(lat0, 24);
  EXPECT_LE(lat1, 71);

  // The same run coupling domain 1: the global grid's 5,120 cells, from pole to pole.
  ftr::run_command("rm -rf '" + g.d + "/out.nc' '" + g.d + "/ckpt'");
  g.plugin(1, "global.nc", 1);
  const ftr::CommandResult global = g.host("grid: global.nc\nnests:\n  - {grid: nest.nc}\n" + g.plugins());
  ASSERT_EQ(global.rc, 0) << global.output;
  EXPECT_NE(global.output.find("of domain 1 of 2 (grid global.nc, 5120 cells)"), std::string::npos) << global.output;
  const std::string global_facts = g.output_facts();
  EXPECT_EQ(global_facts.substr(0, global_facts.find(" sampled")), "cells=5120") << global_facts;
  EXPECT_NE(global_facts.find("lat=-"), std::string::npos) << global_facts;

  // A config whose grid is not the coupled domain's: refused at start-up, naming the domain.
  g.plugin(2, "global.nc", 1);
  const ftr::CommandResult wrong = g.host("grid: global.nc\nnests:\n  - {grid: nest.nc}\n" + g.plugins(), 1);
  EXPECT_NE(wrong.rc, 0);
  EXPECT_NE(wrong.output.find("grid.file global.nc has 5120 cells, but the host's domain 2 (of 2) has " +
                              std::to_string(nest_cells)),
            std::string::npos)
      << wrong.output;
}

TEST(Nests, BadNestEntriesStopTheHostAtStartUpNamingTheKey) {
  NestGrids g;
  const ftr::CommandResult missing = g.host("grid: global.nc\nnests:\n  - {grid: missing.nc}\n", 1);
  EXPECT_NE(missing.rc, 0);
  EXPECT_NE(missing.output.find("host.yaml: nests[0].grid: the nest's grid file missing.nc does not exist"),
            std::string::npos)
      << missing.output;

  const ftr::CommandResult global = g.host("grid: global.nc\nnests:\n  - {grid: global.nc}\n", 1);
  EXPECT_NE(global.rc, 0);
  EXPECT_NE(global.output.find("host.yaml: nests[0].grid: global.nc is a global grid (5120 cells"), std::string::npos)
      << global.output;

  // Domain 1 a limited area over Europe, the nest over Australia: outside its parent.
  const ftr::CommandResult other =
      ftr::run_command("cd '" + g.d + "' && " + ftr::binary("finecast-grid") +
                       " --write-icon-grid far.nc --level 4 --region -40,-15,115,150 --coarse-level 2");
  ASSERT_EQ(other.rc, 0) << other.output;
  const ftr::CommandResult outside = g.host("grid: nest.nc\nnests:\n  - {grid: far.nc}\n", 1);
  EXPECT_NE(outside.rc, 0);
  EXPECT_NE(outside.output.find("host.yaml: nests[0].grid: "), std::string::npos) << outside.output;
  EXPECT_NE(outside.output.find("lie outside domain 1 (nest.nc)"), std::string::npos) << outside.output;

  const ftr::CommandResult key = g.host("grid: global.nc\nnests:\n  - {file: nest.nc}\n", 1);
  EXPECT_NE(key.rc, 0);
  EXPECT_NE(key.output.find("nests[0]"), std::string::npos) << key.output;
}
