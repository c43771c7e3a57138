// SPDX-License-Identifier: BSD-3-Clause
// finecast-host's fields and run file: lapse rate, diurnal cycle, advection period, hydrostatic
// pressure, real orography on cells, and run-file checking.
#include <gtest/gtest.h>
#include <netcdf.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <vector>
#include <fstream>
#include <string>

#include "common/error.hpp"
#include "coupling/grid/icosahedral_grid.hpp"
#include "host/model/orography.hpp"
#include "host/model/run_config.hpp"
#include "host/model/toy_atmosphere.hpp"

namespace fc = finecast::coupling;
namespace fh = finecast::host;

namespace {
constexpr double kDeg = 3.14159265358979323846 / 180.0;

std::string error_of(const std::string& yaml) {
  try {
    fh::parse_host_run_config(yaml, "run.yaml");
  } catch (const finecast::ConfigError& e) {
    return e.what();
  }
  return "no error";
}

int nearest_cell(const fc::IconGrid& g, double lon_deg, double lat_deg) {
  int best = 0;
  double best_d = -2;
  for (int c = 0; c < g.n_cells; ++c) {
    const double d = std::cos(g.clat[c]) * std::cos(lat_deg * kDeg) * std::cos(g.clon[c] - lon_deg * kDeg) +
                     std::sin(g.clat[c]) * std::sin(lat_deg * kDeg);
    if (d > best_d) best_d = d, best = c;
  }
  return best;
}
}  // namespace

TEST(HostFields, LapseRateLowersTemperatureBy6Point5KelvinPerKilometre) {
  fh::CellSurface low{0.3, 0.7, 0.0, 1.0}, high{0.3, 0.7, 1000.0, 1.0};
  EXPECT_NEAR(fh::surface_temperature(low, 5000, 3) - fh::surface_temperature(high, 5000, 3), 6.5, 1e-9);
}

TEST(HostFields, DiurnalCyclePeaksAt15LocalSolarTimeAndIsLargerOverLand) {
  const fh::CellSurface land{90 * kDeg, 0.0, 0.0, 1.0}, sea{90 * kDeg, 0.0, 0.0, 0.0};
  // At 90E local time is UTC + 6 h: 15 h local = 9 h UTC, 3 h local = 21 h UTC.
  EXPECT_NEAR(fh::surface_temperature(land, 0, 9) - fh::surface_temperature(land, 0, 21), 14.0, 1e-9);
  EXPECT_NEAR(fh::surface_temperature(sea, 0, 9) - fh::surface_temperature(sea, 0, 21), 2.0, 1e-9);
  EXPECT_GT(fh::surface_temperature(land, 0, 9), fh::surface_temperature(land, 0, 8));
  EXPECT_GT(fh::surface_temperature(land, 0, 9), fh::surface_temperature(land, 0, 10));
}

TEST(HostFields, PatternReturnsAfterOneRotationPeriodAndMovesInBetween) {
  const fh::ToyAtmosphereParams p;
  double max_half = 0;
  for (int i = 0; i < 50; ++i) {
    const fh::CellSurface c{(i * 37 % 360) * kDeg, (i * 7 % 160 - 80) * kDeg, 0.0, 0.5};
    EXPECT_NEAR(fh::surface_temperature(c, p.rotation_period_s, 12), fh::surface_temperature(c, 0, 12), 1e-9);
    max_half = std::max(max_half, std::fabs(fh::surface_temperature(c, p.rotation_period_s / 2, 12) -
                                            fh::surface_temperature(c, 0, 12)));
  }
  EXPECT_GT(max_half, 3.0);
}

TEST(HostFields, SurfacePressureIsHydrostaticWithHeight) {
  const fh::CellSurface sea{1.0, 0.2, 0.0, 0.0}, mountain{1.0, 0.2, 3000.0, 1.0};
  const double ps0 = fh::surface_pressure(sea, 0, 290.0), ps3 = fh::surface_pressure(mountain, 0, 270.5);
  EXPECT_GT(ps0, 95000.0);
  EXPECT_LT(ps0, 108000.0);
  // exp(-g z / (Rd T)) with T = 280.25 K: ratio 0.6937
  EXPECT_NEAR(ps3 / ps0, std::exp(-9.80665 * 3000.0 / (287.04 * 280.25)), 1e-12);
}

TEST(HostOrography, Etopo5AveragedOnCellsFindsTibetAndThePacific) {
  const fc::IconGrid grid = fc::make_icosahedral_grid(4);
  const int tibet = nearest_cell(grid, 88.0, 33.0), pacific = nearest_cell(grid, -150.0, 0.0);
  const int antarctica = nearest_cell(grid, 0.0, -89.9);
  const fh::CellOrography o =
      fh::average_orography("/usr/share/ferret-vis/data/etopo5.cdf", "ROSE", grid, {tibet, pacific, antarctica});
  EXPECT_GT(o.height[0], 3500.0);
  EXPECT_LT(o.height[0], 6000.0);
  EXPECT_GT(o.land_fraction[0], 0.99);
  EXPECT_EQ(o.height[1], 0.0);
  EXPECT_EQ(o.land_fraction[1], 0.0);
  EXPECT_GT(o.height[2], 2000.0);  // the South Pole cell: the polar plateau
}

TEST(HostOrography, Etopo20WithItsRepeatedLongitudeColumnAgreesWithEtopo5) {
  const fc::IconGrid grid = fc::make_icosahedral_grid(3);
  const int tibet = nearest_cell(grid, 88.0, 33.0), dateline = nearest_cell(grid, 180.0, 65.0);
  const auto o5 = fh::average_orography("/usr/share/ferret-vis/data/etopo5.cdf", "ROSE", grid, {tibet, dateline});
  const auto o20 = fh::average_orography("/usr/share/ferret-vis/data/etopo20.cdf", "ROSE", grid, {tibet, dateline});
  for (int i = 0; i < 2; ++i) {
    EXPECT_NEAR(o20.height[i], o5.height[i], 0.05 * o5.height[i] + 20.0) << "cell " << i;
    // 20' sampling of a coastline moves the land fraction by a few per cent.
    EXPECT_NEAR(o20.land_fraction[i], o5.land_fraction[i], 0.1) << "cell " << i;
  }
  EXPECT_GT(o5.land_fraction[1], 0.3);  // Chukotka straddles the dateline
}

// The host's relief is read like every NetCDF input: one value of 1e30 (no _FillValue says so)
// is outside the plausible range of heights in m and skipped, not averaged into a cell.
TEST(HostOrography, ImplausibleReliefValuesAreSkipped) {
  const std::string path = ::testing::TempDir() + "finecast_relief_" + std::to_string(::getpid()) + ".nc";
  int nc, dy, dx, vy, vx, vz;
  ASSERT_EQ(nc_create(path.c_str(), NC_CLOBBER, &nc), NC_NOERR);
  nc_def_dim(nc, "lat", 90, &dy);
  nc_def_dim(nc, "lon", 180, &dx);
  nc_def_var(nc, "lat", NC_DOUBLE, 1, &dy, &vy);
  nc_def_var(nc, "lon", NC_DOUBLE, 1, &dx, &vx);
  const int dims[2] = {dy, dx};
  nc_def_var(nc, "z", NC_FLOAT, 2, dims, &vz);
  nc_put_att_text(nc, vz, "units", 1, "m");
  nc_enddef(nc);
  std::vector<double> lat(90), lon(180);
  for (int i = 0; i < 90; ++i) lat[i] = -89.0 + 2.0 * i;
  for (int j = 0; j < 180; ++j) lon[j] = 2.0 * j;
  std::vector<float> z(90 * 180, 100.0f);
  z[45 * 180 + 20] = 1e30f;  // 1 N, 40 E
  nc_put_var_double(nc, vy, lat.data());
  nc_put_var_double(nc, vx, lon.data());
  nc_put_var_float(nc, vz, z.data());
  nc_close(nc);
  const fc::IconGrid grid = fc::make_icosahedral_grid(2);
  const fh::CellOrography o = fh::average_orography(path, "z", grid, {nearest_cell(grid, 40.0, 1.0)});
  EXPECT_NEAR(o.height[0], 100.0, 1e-9);
  std::remove(path.c_str());
}

TEST(HostOrography, MissingVariableIsNamed) {
  const fc::IconGrid grid = fc::make_icosahedral_grid(1);
  try {
    fh::average_orography("/usr/share/ferret-vis/data/etopo5.cdf", "NOPE", grid, {0});
    FAIL();
  } catch (const finecast::IoError& e) {
    EXPECT_NE(std::string(e.what()).find("NOPE"), std::string::npos) << e.what();
  }
}

TEST(HostRunConfig, DemoRunFileUsesEveryKey) {
  const fh::HostRunConfig c = fh::load_host_run_config(std::string(FINECAST_SOURCE_DIR) + "/configs/demo_host.yaml");
  EXPECT_EQ(c.steps, 200);
  EXPECT_EQ(c.nproma, 32);
  EXPECT_EQ(c.decomposition, fh::Decomposition::kLatBands);
  ASSERT_EQ(c.plugins.size(), 1u);
  EXPECT_EQ(c.plugins[0].library, "build/lib/libfinecast_comin.so");
  EXPECT_EQ(c.plugins[0].options, "configs/demo.yaml");
  EXPECT_EQ(c.plugins[0].comm, "");
}

TEST(HostRunConfig, NestsAreAListOfGridFilesInIconsDomainOrder) {
  const fh::HostRunConfig c = fh::parse_host_run_config("nests:\n  - {grid: eu.nc}\n  - grid: d2.nc\n", "run.yaml");
  ASSERT_EQ(c.nests.size(), 2u);
  EXPECT_EQ(c.nests[0].grid, "eu.nc");
  EXPECT_EQ(c.nests[1].grid, "d2.nc");
  EXPECT_NE(error_of("nests:\n  - {file: eu.nc}\n").find("nests[0]"), std::string::npos);
  EXPECT_NE(error_of("nests:\n  - {grid: eu.nc}\ndevice_fields: true\n").find("nests with device_fields"),
            std::string::npos);
}

// `start: 1979-02-30` silently became 1979-03-02, and `nproma: 100000000` grew a rank to 12 GB
// until the kernel killed it: both fail at validation, naming the key.
TEST(HostRunConfig, ImpossibleDatesAndOversizedKeysAreRefusedNamingTheKey) {
  EXPECT_EQ(error_of("start: 1979-02-30\n"),
            "run.yaml:1: start must be a date of the proleptic_gregorian calendar, got \"1979-02-30\": 1979-02 has 28 "
            "days in the proleptic_gregorian calendar, not 30");
  EXPECT_NE(error_of("experiment_start: 1900-02-29\nstart: 1901-01-01\n").find("run.yaml:1: experiment_start must be"),
            std::string::npos);
  EXPECT_EQ(fh::parse_host_run_config("start: 2000-02-29T06:00\n", "run.yaml").start, "2000-02-29T06:00:00");
  EXPECT_EQ(error_of("nproma: 100000000\n"), "run.yaml:1: nproma must be an integer in [1, 1000000], got 100000000");
  for (const char* key : {"steps: 1000000000", "nlev: 100000", "output_every: 1000000000", "restart_every: 1000000000",
                          "progress_every: 1000000000", "dt: 1e9", "step_seconds: 1e6"}) {
    const std::string e = error_of(std::string(key) + "\n");
    const std::string name = std::string(key).substr(0, std::string(key).find(':'));
    EXPECT_EQ(e.rfind("run.yaml:1: " + name + " must be", 0), 0u) << e;
  }
}

TEST(HostRunConfig, ErrorsNameFileLineAndKey) {
  // The same walker and messages as the plugin's config (common/yaml_schema).
  EXPECT_EQ(error_of("steps: 10\nstpes: 3\n").rfind("run.yaml:2: unknown key stpes (allowed: grid, orography,", 0), 0u);
  EXPECT_EQ(error_of("steps: ten\n"), "run.yaml:1: steps must be an integer in [1, 100000000], got \"ten\"");
  EXPECT_EQ(error_of("dt: -5\n"), "run.yaml:1: dt must be a number in (0, 86400], got -5");
  EXPECT_EQ(error_of("decomposition: stripes\n"),
            "run.yaml:1: decomposition must be one of lat_bands, round_robin, got \"stripes\"");
  EXPECT_EQ(error_of("start: yesterday\n"),
            "run.yaml:1: start must be an ISO 8601 date-time (e.g. 1979-01-01T00:00:00), got \"yesterday\"");
  EXPECT_EQ(error_of("plugins:\n  - name: x\n    libary: y\n"),
            "run.yaml:3: unknown key plugins[0].libary (allowed in plugins[0]: name, library, options, comm, "
            "primary_constructor)\nrun.yaml:2: missing required key plugins[0].library (the plugin's shared library "
            "(absolute, or found by dlopen))");
  // Every mistake of a file in one run.
  EXPECT_EQ(error_of("steps: ten\nnproma: 0\n"),
            "run.yaml:1: steps must be an integer in [1, 100000000], got \"ten\"\nrun.yaml:2: nproma must be an "
            "integer in [1, 1000000], got 0");
  EXPECT_NE(error_of("comin_namelist: a.nml\nplugins:\n  - {name: x, library: y}\n").find("not both"),
            std::string::npos);
  EXPECT_EQ(fh::parse_host_run_config("plugins: []\n", "run.yaml").plugins.size(), 0u);
}
