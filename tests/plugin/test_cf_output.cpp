// SPDX-License-Identifier: BSD-3-Clause
// The NetCDF output as the tools climate scientists use read it: CF attributes from the host or
// the input, ICON cell corners and grid identity (cdo remapcon), rotated-pole grids kept
// rotated, the ensemble as a CF realization axis (xarray), the ensemble mean, and the checkpoint
// that the file names. Each test runs the real programs (finecast-host, finecast-replay) with
// the real plugin and opens their output with cdo and xarray.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <sstream>
#include <string>

#include "tests/plugin/replay_test_util.hpp"

namespace ftr = finecast::testing_replay;

namespace {

const std::string kRotated = "/usr/share/ncarg/data/nug/tas_rotated_grid_EUR11.nc";

/// Runs a Python snippet (Debian's python with netCDF4 and xarray) that prints "key=value"
/// lines; returns them as a map, with the whole output under "" for failure messages.
std::map<std::string, std::string> python_facts(const std::string& dir, const std::string& script) {
  ftr::write_text(dir + "/facts.py", script);
  const ftr::CommandResult r = ftr::run_command("cd '" + dir + "' && /usr/bin/python3 facts.py");
  std::map<std::string, std::string> facts{{"", r.output}};
  std::istringstream lines(r.output);
  for (std::string line; std::getline(lines, line);)
    if (const size_t eq = line.find('='); eq != std::string::npos) facts[line.substr(0, eq)] = line.substr(eq + 1);
  facts["rc"] = std::to_string(r.rc);
  return facts;
}

double number(const std::map<std::string, std::string>& facts, const std::string& key) {
  const auto it = facts.find(key);
  return it == facts.end() ? std::nan("") : std::stod(it->second);
}

}  // namespace

// finecast-host on a copy of the R2B4 grid that carries ICON's grid identity: the output names
// the grid (uuidOfHGrid, number_of_grid_used, grid_file_uri), has the cell corners that cdo's
// conservative remapping needs, the host's units and standard names on every field, the
// ensemble mean, and the checkpoint the run wrote last.
TEST(CfOutput, IconOutputHasCornersGridIdentityUnitsAndTheEnsembleMean) {
  ftr::ScratchDir dir("cf_icon");
  const std::string d = dir.path();
  const ftr::CommandResult copy =
      ftr::run_command("cp " + ftr::kIconGrid + " '" + d +
                       "/grid.nc' && /usr/bin/python3 -c \"import netCDF4, numpy; f = netCDF4.Dataset('" + d +
                       "/grid.nc', 'a'); f.uuidOfHGrid = '0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0'; "
                       "f.number_of_grid_used = numpy.int32(42); f.close()\"");
  ASSERT_EQ(copy.rc, 0) << copy.output;
  ftr::write_text(
      d + "/plugin.yaml",
      "fields: [ts]\nseed: 3\ndevice: cpu\ngrid: {type: icon, file: grid.nc, coarse_level: 0}\n"
      "buffer: {capacity: 4}\nmodel: {hidden: 16, depth: 1, time_embedding: 8, diffusion_steps: 5}\n"
      "train: {async: false, every: 4, min_steps: 4, epochs: 1, batch_size: 128, warmup_steps: 1, threads: 1}\n"
      "sample: {every: 4, members: 3, steps: 2, output: out.nc}\n"
      "output: {title: CF test, institution: finecast, source: finecast-host R2B4}\n"
      "checkpoint: {dir: ckpt, every: 4, keep: 3}\n");
  ftr::write_text(d + "/host.yaml",
                  "grid: grid.nc\norography: /usr/share/ferret-vis/data/etopo20.cdf\norography_variable: ROSE\n"
                  "start: 1979-01-01T00:00:00\ndt: 1800\nsteps: 8\nnproma: 24\nnlev: 2\nprogress_every: 0\n"
                  "plugins:\n  - {name: finecast, library: " +
                      ftr::plugin_library() + ", options: plugin.yaml}\n");
  const ftr::CommandResult host =
      ftr::run_command("cd '" + d + "' && mpiexec -n 2 --oversubscribe " + ftr::binary("finecast-host") + " host.yaml");
  ASSERT_EQ(host.rc, 0) << host.output;

  const auto facts = python_facts(d, R"(
import os, numpy as np, netCDF4, xarray as xr
f = netCDF4.Dataset("out.nc")
for v in ("ts", "ts_coarse", "ts_host", "ts_mean"):
    print(f"{v}.units={f[v].units}")
    print(f"{v}.standard_name={f[v].standard_name}")
print("ts.dims=" + ",".join(f["ts"].dimensions))
print("clon.bounds=" + f["clon"].bounds)
print("clon_bnds.shape=" + "x".join(map(str, f["clon_bnds"].shape)))
print("uuidOfHGrid=" + f.uuidOfHGrid)
print(f"number_of_grid_used={int(f.number_of_grid_used)}")
print("grid_file_uri=" + os.path.basename(f.grid_file_uri))
print("checkpoint=" + f.finecast_checkpoint)
print("realization.standard_name=" + f["realization"].standard_name)
print("records=%d" % len(f.dimensions["time"]))
print("data_model=" + f.data_model)
print("filters=" + ",".join(f"{k}:{v}" for k, v in sorted(f["ts"].filters().items()) if k in ("zlib", "shuffle", "complevel")))
print("time.units=" + f["time"].units)
print("time=" + ",".join("%g" % t for t in f["time"][:]))
print("globals=" + "|".join((f.title, f.institution, f.source)))
f.close()
ds = xr.open_dataset("out.nc")
print("xr.ts.dims=" + ",".join(ds.ts.dims))
print("xr.realization=" + ",".join(str(int(r)) for r in ds.realization.values))
print("mean_error=%g" % float(np.nanmax(np.abs(ds.ts.mean("realization") - ds.ts_mean))))
print("host_mean=%.4f" % float(ds.ts_host.isel(time=-1).mean()))
)");
  ASSERT_EQ(facts.at("rc"), "0") << facts.at("");
  for (const char* v : {"ts", "ts_coarse", "ts_host", "ts_mean"}) {
    EXPECT_EQ(facts.count(std::string(v) + ".units") ? facts.at(std::string(v) + ".units") : "", "K") << v;
    EXPECT_EQ(facts.count(std::string(v) + ".standard_name") ? facts.at(std::string(v) + ".standard_name") : "",
              "surface_temperature")
        << v;
  }
  EXPECT_EQ(facts.at("ts.dims"), "time,realization,ncells");
  EXPECT_EQ(facts.at("clon.bounds"), "clon_bnds");
  EXPECT_EQ(facts.at("clon_bnds.shape"), "20480x3");
  EXPECT_EQ(facts.at("uuidOfHGrid"), "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0");
  EXPECT_EQ(facts.at("number_of_grid_used"), "42");
  EXPECT_EQ(facts.at("grid_file_uri"), "grid.nc");
  EXPECT_EQ(facts.at("realization.standard_name"), "realization");
  EXPECT_EQ(facts.at("records"), "2") << facts.at("");
  // NetCDF-4 with shuffle + deflate 1 (the defaults); time from the experiment start (the run's
  // start: samplings at steps 4 and 8 of 1800 s); the config's global attributes.
  EXPECT_EQ(facts.at("data_model"), "NETCDF4");
  EXPECT_EQ(facts.at("filters"), "complevel:1,shuffle:True,zlib:True");
  EXPECT_EQ(facts.at("time.units"), "seconds since 1979-01-01 00:00:00");
  EXPECT_EQ(facts.at("time"), "7200,14400");
  EXPECT_EQ(facts.at("globals"), "CF test|finecast|finecast-host R2B4");
  // The newest checkpoint of the run (written at step 8, after the last sampling).
  EXPECT_EQ(facts.at("checkpoint"), ftr::newest_checkpoint(d + "/ckpt")) << facts.at("");
  EXPECT_EQ(facts.at("xr.ts.dims"), "time,realization,ncells");
  EXPECT_EQ(facts.at("xr.realization"), "0,1,2");
  EXPECT_LT(number(facts, "mean_error"), 1e-4) << facts.at("");

  // cdo: the grid is unstructured with corners, and conservative remapping onto a 10-degree
  // grid keeps the global mean (which it would not with wrong or missing corners).
  const ftr::CommandResult info = ftr::run_command("cdo -s sinfon '" + d + "/out.nc'");
  ASSERT_EQ(info.rc, 0) << info.output;
  EXPECT_NE(info.output.find("unstructured"), std::string::npos) << info.output;
  EXPECT_NE(info.output.find("points=20480"), std::string::npos) << info.output;
  EXPECT_NE(info.output.find("realization"), std::string::npos) << info.output;
  const ftr::CommandResult remap =
      ftr::run_command("cd '" + d + "' && cdo -s -L -remapcon,r36x18 -selname,ts_host out.nc remap.nc");
  ASSERT_EQ(remap.rc, 0) << remap.output;
  // The area mean of the fine field (cdo's cell areas from the corners) against the
  // cos(latitude)-weighted mean of the remapped one.
  const ftr::CommandResult fine =
      ftr::run_command("cdo -s outputf,%.4f -fldmean -selname,ts_host -seltimestep,-1 '" + d + "/out.nc'");
  ASSERT_EQ(fine.rc, 0) << fine.output;
  const auto means = python_facts(d, R"(
import numpy as np, xarray as xr
r = xr.open_dataset("remap.nc").ts_host.isel(time=-1)
w = np.cos(np.deg2rad(r.lat))
print("missing=%d" % int(r.isnull().sum()))
print("remapped_mean=%.4f" % float((r * w).sum() / (w.sum() * r.sizes["lon"])))
)");
  ASSERT_EQ(means.at("rc"), "0") << means.at("");
  EXPECT_EQ(means.at("missing"), "0");
  EXPECT_NEAR(number(means, "remapped_mean"), std::stod(fine.output), 0.01) << means.at("") << fine.output;
}

// finecast-host on 2 ranks on a limited-area grid that finecast-grid cuts from R2B5 over Europe
// (refin_c_ctrl rows, cells renumbered by row, neighbours outside the domain 0): the plugin says
// at start-up which coarse cells it leaves out, trains, and samples exactly the kept patches
// (the other fine cells, which the plugin does not gather, are missing in every variable of the
// output, which cdo reads as an unstructured grid of all the domain's cells).
TEST(CfOutput, LimitedAreaHostRunOnTwoRanksTrainsAndCdoReadsTheOutput) {
  ftr::ScratchDir dir("cf_lam");
  const std::string d = dir.path();
  const ftr::CommandResult grid = ftr::run_command(
      "cd '" + d + "' && " + ftr::binary("finecast-grid") +
      " --write-icon-grid grid.nc --level 5 --region 30,65,-15,35 --boundary-depth 8 --coarse-level 3");
  ASSERT_EQ(grid.rc, 0) << grid.output;
  ftr::write_text(
      d + "/plugin.yaml",
      "fields: [ts]\nseed: 5\ndevice: cpu\ngrid: {type: icon, file: grid.nc, coarse_level: 3}\n"
      "patch: {context_rings: 1, residual: interp}\n"
      "buffer: {capacity: 4}\nmodel: {hidden: 16, depth: 1, time_embedding: 8, diffusion_steps: 5}\n"
      "train: {async: false, every: 4, min_steps: 4, epochs: 1, batch_size: 32, warmup_steps: 1, threads: 1}\n"
      "sample: {every: 4, members: 2, steps: 2, output: out.nc}\n"
      "checkpoint: {dir: ckpt, every: 8, keep: 2}\n");
  ftr::write_text(d + "/host.yaml",
                  "grid: grid.nc\norography: /usr/share/ferret-vis/data/etopo20.cdf\norography_variable: ROSE\n"
                  "start: 1979-01-01T00:00:00\ndt: 1800\nsteps: 8\nnproma: 16\nnlev: 1\nprogress_every: 0\n"
                  "plugins:\n  - {name: finecast, library: " +
                      ftr::plugin_library() + ", options: plugin.yaml}\n");
  const ftr::CommandResult host =
      ftr::run_command("cd '" + d + "' && mpiexec -n 2 --oversubscribe " + ftr::binary("finecast-host") + " host.yaml");
  ASSERT_EQ(host.rc, 0) << host.output;
  const size_t line = host.output.find("Grid grid.nc: limited area: ");
  ASSERT_NE(line, std::string::npos) << host.output;
  EXPECT_NE(host.output.find("lateral boundary zone (refin_c_ctrl 1..4)", line), std::string::npos) << host.output;
  const size_t sessions = host.output.find(" training sessions", line);
  ASSERT_NE(sessions, std::string::npos) << host.output;
  EXPECT_GE(std::atoi(host.output.c_str() + host.output.rfind(' ', sessions - 1) + 1), 1) << host.output;
  EXPECT_FALSE(ftr::newest_checkpoint(d + "/ckpt").empty());
  long long kept = 0, covered = 0, cells = 0;
  ASSERT_EQ(std::sscanf(host.output.c_str() + line, "Grid grid.nc: limited area: %lld of", &kept), 1);
  const size_t in_no_patch = host.output.find(" fine cells in no patch", line);
  ASSERT_NE(in_no_patch, std::string::npos);
  const size_t of = host.output.rfind(" of ", in_no_patch);
  const size_t semicolon = host.output.rfind("; ", of);
  ASSERT_EQ(std::sscanf(host.output.c_str() + semicolon + 2, "%lld of %lld", &covered, &cells), 2)
      << host.output.substr(semicolon, 80);
  covered = cells - covered;
  EXPECT_EQ(covered, kept * 16);

  // Sampled values, the coarse input and the host's field exactly on the kept patches' cells.
  const auto facts = python_facts(d, R"(
import numpy as np, netCDF4
f = netCDF4.Dataset("out.nc")
ts, host, coarse = f["ts"][-1, 0, :], f["ts_host"][-1, :], f["ts_coarse"][-1, :]
sampled = ~np.ma.getmaskarray(ts) & np.isfinite(np.ma.filled(ts, np.nan))
print("cells=%d" % ts.shape[0])
print("sampled=%d" % int(sampled.sum()))
print("coarse_where_sampled=%d" % int((np.isfinite(np.ma.filled(coarse, np.nan)) == sampled).all()))
print("host_where_sampled=%d" % int((np.isfinite(np.ma.filled(host, np.nan)) == sampled).all()))
print("rmse=%.3f" % float(np.sqrt(np.mean((ts[sampled] - host[sampled]) ** 2))))
f.close()
)");
  ASSERT_EQ(facts.at("rc"), "0") << facts.at("");
  EXPECT_EQ(facts.at("cells"), std::to_string(cells));
  EXPECT_EQ(facts.at("sampled"), std::to_string(covered));
  EXPECT_EQ(facts.at("coarse_where_sampled"), "1");
  EXPECT_EQ(facts.at("host_where_sampled"), "1");
  EXPECT_LT(number(facts, "rmse"), 20.0) << facts.at("");  // K: samples near the host's field, not garbage

  const ftr::CommandResult info = ftr::run_command("cdo -s sinfon '" + d + "/out.nc'");
  ASSERT_EQ(info.rc, 0) << info.output;
  EXPECT_NE(info.output.find("unstructured"), std::string::npos) << info.output;
  EXPECT_NE(info.output.find("points=" + std::to_string(cells)), std::string::npos) << info.output;
}

// finecast-replay of a EURO-CORDEX field on a rotated-pole grid: the output keeps rlat/rlon,
// the rotated_pole mapping and the input's metadata, adds 2-D geographic lat/lon and bounds,
// and cdo and xarray read it as the rotated grid it is.
TEST(CfOutput, RotatedPoleReplayKeepsTheRotatedGrid) {
  if (!ftr::exists(kRotated)) GTEST_SKIP() << "missing " << kRotated << " (libncarg-data)";
  ftr::ScratchDir dir("cf_rotated");
  const std::string d = dir.path();
  ftr::write_text(
      d + "/plugin.yaml",
      "fields: [tas]\nseed: 3\ndevice: cpu\ngrid: {type: latlon, file: " + kRotated +
          ", block: 4}\n"
          "buffer: {capacity: 2}\nmodel: {hidden: 16, depth: 1, time_embedding: 8, diffusion_steps: 5}\n"
          "train: {async: false, every: 2, min_steps: 2, epochs: 1, batch_size: 512, warmup_steps: 1, threads: 1}\n"
          "sample: {every: 2, members: 2, steps: 2, output: out.nc}\n"
          "checkpoint: {dir: ckpt, every: 0}\n");
  ftr::write_text(d + "/replay.yaml", "input: {files: [" + kRotated +
                                          "], variables: [tas]}\ngrid: {type: latlon}\nepochs: 2\nnproma: 64\n"
                                          "plugins:\n  - {name: finecast, library: " +
                                          ftr::plugin_library() + ", options: plugin.yaml}\n");
  const ftr::CommandResult replay =
      ftr::run_command("cd '" + d + "' && mpiexec -n 2 --oversubscribe " + ftr::binary("finecast-replay") +
                       " --config replay.yaml --progress lines");
  ASSERT_EQ(replay.rc, 0) << replay.output;

  const auto facts = python_facts(d, R"(
import numpy as np, netCDF4, xarray as xr
f = netCDF4.Dataset("out.nc")
print("tas.dims=" + ",".join(f["tas"].dimensions))
print("tas.grid_mapping=" + f["tas"].grid_mapping)
print("tas.coordinates=" + f["tas"].coordinates)
print("tas.units=" + f["tas"].units)
print("tas.standard_name=" + f["tas"].standard_name)
print("tas_mean.grid_mapping=" + f["tas_mean"].grid_mapping)
print("rlat.standard_name=" + f["rlat"].standard_name)
print("rlon.bounds=" + f["rlon"].bounds)
print("pole=%g,%g" % (f["rotated_pole"].grid_north_pole_longitude, f["rotated_pole"].grid_north_pole_latitude))
print("mapping=" + f["rotated_pole"].grid_mapping_name)
print("lat.shape=" + "x".join(map(str, f["lat"].shape)))
src = netCDF4.Dataset(")" + kRotated + R"(")
print("rlon_same=%d" % int(np.array_equal(src["rlon"][:], f["rlon"][:])))
# Rotated (0, 0) lies at the geographic (lon, lat) = (pole lon + 180, 90 - pole lat) = (18, 50.75).
i = int(np.argmin(np.abs(f["rlat"][:]))); j = int(np.argmin(np.abs(f["rlon"][:])))
print("centre_lon=%.4f" % float(f["lon"][i, j]))
print("centre_lat=%.4f" % float(f["lat"][i, j]))
ds = xr.open_dataset("out.nc")
print("xr.dims=" + ",".join(ds.tas.dims))
print("xr.coords=" + ",".join(sorted(str(c) for c in ds.tas.coords)))
)");
  ASSERT_EQ(facts.at("rc"), "0") << facts.at("");
  EXPECT_EQ(facts.at("tas.dims"), "time,realization,rlat,rlon");
  EXPECT_EQ(facts.at("tas.grid_mapping"), "rotated_pole");
  EXPECT_EQ(facts.at("tas_mean.grid_mapping"), "rotated_pole");
  EXPECT_EQ(facts.at("tas.coordinates"), "lat lon");
  EXPECT_EQ(facts.at("tas.units"), "K");
  EXPECT_EQ(facts.at("tas.standard_name"), "air_temperature");
  EXPECT_EQ(facts.at("rlat.standard_name"), "grid_latitude");
  EXPECT_EQ(facts.at("rlon.bounds"), "rlon_bnds");
  EXPECT_EQ(facts.at("pole"), "-162,39.25");
  EXPECT_EQ(facts.at("mapping"), "rotated_latitude_longitude");
  EXPECT_EQ(facts.at("lat.shape"), "412x424");
  EXPECT_EQ(facts.at("rlon_same"), "1");
  // The nearest cell centre is within 0.055 degrees of rotated (0, 0) on this 0.11-degree grid.
  EXPECT_NEAR(number(facts, "centre_lon"), 18.0, 0.1) << facts.at("");
  EXPECT_NEAR(number(facts, "centre_lat"), 50.75, 0.1) << facts.at("");
  EXPECT_EQ(facts.at("xr.dims"), "time,realization,rlat,rlon");
  EXPECT_EQ(facts.at("xr.coords"), "lat,lon,realization,rlat,rlon,time");

  // cdo sees the rotated pole projection, not a geographic lon-lat grid.
  const ftr::CommandResult info = ftr::run_command("cdo -s griddes -selname,tas '" + d + "/out.nc'");
  ASSERT_EQ(info.rc, 0) << info.output;
  EXPECT_NE(info.output.find("gridtype  = projection"), std::string::npos) << info.output;
  EXPECT_NE(info.output.find("grid_mapping_name = rotated_latitude_longitude"), std::string::npos) << info.output;
  EXPECT_NE(info.output.find("grid_north_pole_latitude = 39.25"), std::string::npos) << info.output;
}

// A regular lat-lon replay: the coordinates get bounds and cdo remaps the output conservatively.
TEST(CfOutput, LatLonOutputHasBoundsThatCdoUses) {
  ftr::ScratchDir dir("cf_latlon");
  const std::string d = dir.path();
  ftr::write_text(d + "/plugin.yaml", ftr::tiny_plugin_config(d));
  ftr::write_text(d + "/replay.yaml", ftr::tiny_run_file(d + "/plugin.yaml", "lat_bands"));
  const ftr::CommandResult replay =
      ftr::run_command("cd '" + d + "' && mpiexec -n 2 --oversubscribe " + ftr::binary("finecast-replay") +
                       " --config replay.yaml --progress lines");
  ASSERT_EQ(replay.rc, 0) << replay.output;
  const auto facts = python_facts(d, R"(
import netCDF4
f = netCDF4.Dataset("out.nc")
print("lat.bounds=" + f["lat"].bounds)
print("lat_bnds.shape=" + "x".join(map(str, f["lat_bnds"].shape)))
print("tas.units=" + f["tas"].units)
print("tas_coarse.standard_name=" + f["tas_coarse"].standard_name)
)");
  ASSERT_EQ(facts.at("rc"), "0") << facts.at("");
  EXPECT_EQ(facts.at("lat.bounds"), "lat_bnds");
  EXPECT_EQ(facts.at("lat_bnds.shape"), "96x2");
  EXPECT_EQ(facts.at("tas.units"), "K");
  EXPECT_EQ(facts.at("tas_coarse.standard_name"), "air_temperature");
  const ftr::CommandResult remap = ftr::run_command(
      "cd '" + d + "' && cdo -s -L -remapcon,r36x18 -selname,tas_mean out.nc remap.nc && cdo -s sinfon remap.nc");
  ASSERT_EQ(remap.rc, 0) << remap.output;
  EXPECT_NE(remap.output.find("points=648 (36x18)"), std::string::npos) << remap.output;
}
