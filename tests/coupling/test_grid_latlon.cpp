// SPDX-License-Identifier: BSD-3-Clause
// Lat-lon grids: CF coordinates of real files, rotated poles, block patches and cropping.
#include <gtest/gtest.h>
#include <netcdf.h>
#include <unistd.h>

#include <cmath>
#include <fstream>
#include <string>
#include <vector>

#include "common/error.hpp"
#include "coupling/grid/hold_out_mask.hpp"
#include "coupling/grid/latlon_grid.hpp"
#include "coupling/grid/spherical.hpp"
#include "common/log.hpp"
#include "tests/coupling/io_test_util.hpp"

namespace fc = finecast::coupling;
namespace fti = finecast::testing_io;
namespace sphere = finecast::coupling::sphere;
namespace flog = finecast::log;

namespace {

/// Captures warnings for the lifetime of the object.
struct WarningCapture {
  std::vector<std::string> lines;
  flog::Sink previous;
  WarningCapture() {
    previous = flog::set_sink([this](flog::Level level, const std::string& line) {
      if (level == flog::Level::kWarning) lines.push_back(line);
    });
  }
  ~WarningCapture() { flog::set_sink(previous); }
};

}  // namespace

TEST(LatLonGrid, ReadsGlobalRectilinearGridWithBoundsAndWrapsBlocks) {
  if (!fti::exists(fti::kTasFile)) GTEST_SKIP() << fti::kTasFile << " missing (install libncarg-data)";
  const fc::LatLonGrid g = fc::read_latlon_grid(fti::kTasFile, "tas");
  EXPECT_EQ(g.nlat, 96);
  EXPECT_EQ(g.nlon, 192);
  EXPECT_EQ(g.lat_name, "lat");
  EXPECT_EQ(g.lon_name, "lon");
  EXPECT_FALSE(g.rotated);
  EXPECT_TRUE(g.global_lon);
  double total = 0.0;
  for (double a : g.cell_area) total += a;
  EXPECT_NEAR(total / fti::sphere_area(), 1.0, 1e-6);  // lat_bnds run pole to pole

  WarningCapture warnings;
  const fc::PatchMap pm = fc::latlon_patch_map(g, 16);
  EXPECT_TRUE(warnings.lines.empty());
  EXPECT_EQ(pm.n_coarse, 6 * 12);
  EXPECT_EQ(pm.patch_size, 256);
  EXPECT_EQ(pm.n_neighbours, 4);
  for (int64_t I = 0; I < 6; ++I) {
    EXPECT_EQ(pm.neighbours[(I * 12 + 0) * 4 + 2], I * 12 + 11) << "west of column 0 wraps";
    EXPECT_EQ(pm.neighbours[(I * 12 + 11) * 4 + 3], I * 12 + 0) << "east of the last wraps";
  }
  EXPECT_EQ(pm.neighbours[0 * 4 + 0], -1);         // no row before the first
  EXPECT_EQ(pm.neighbours[(5 * 12) * 4 + 1], -1);  // nor after the last
  // Blocks of the same latitude band have the same weights (areas depend on latitude only).
  for (int s = 0; s < 256; ++s) EXPECT_DOUBLE_EQ(pm.fine_weight[s], pm.fine_weight[5 * 256 + s]);
}

TEST(LatLonGrid, CroppingWarnsWithTheDroppedRowsAndColumns) {
  if (!fti::exists(fti::kTasFile)) GTEST_SKIP() << fti::kTasFile << " missing (install libncarg-data)";
  const fc::LatLonGrid g = fc::read_latlon_grid(fti::kTasFile, "tas");
  WarningCapture warnings;
  const fc::PatchMap pm = fc::latlon_patch_map(g, 5);  // 96 = 19*5 + 1, 192 = 38*5 + 2
  EXPECT_EQ(pm.n_coarse, 19 * 38);
  ASSERT_EQ(warnings.lines.size(), 1u);
  EXPECT_NE(warnings.lines[0].find("dropped the last 1 rows and the last 2 columns"), std::string::npos)
      << warnings.lines[0];
  EXPECT_EQ(pm.neighbours[0 * 4 + 2], -1) << "190 of 192 columns do not go round the globe";
}

TEST(LatLonGrid, Etopo20RepeatsItsFirstColumnAndWrapsWhenCroppedToIt) {
  if (!fti::exists(fti::kEtopo20File)) GTEST_SKIP() << fti::kEtopo20File << " missing (install ferret-datasets)";
  EXPECT_EQ(fc::find_latlon_variable(fti::kEtopo20File), "ROSE");
  const fc::LatLonGrid g = fc::read_latlon_grid(fti::kEtopo20File, "ROSE");
  EXPECT_EQ(g.nlat, 540);
  EXPECT_EQ(g.nlon, 1081);
  EXPECT_TRUE(g.global_lon);
  WarningCapture warnings;
  const fc::PatchMap three = fc::latlon_patch_map(g, 3);  // drops the duplicate column only
  EXPECT_EQ(three.n_coarse, 180 * 360);
  EXPECT_EQ(three.neighbours[2], 359);
  const fc::PatchMap sixteen = fc::latlon_patch_map(g, 16);  // 33 x 67 blocks, 1072 columns
  EXPECT_EQ(sixteen.n_coarse, 33 * 67);
  EXPECT_EQ(sixteen.neighbours[2], -1);
  ASSERT_EQ(warnings.lines.size(), 2u);
  EXPECT_NE(warnings.lines[1].find("last 12 rows and the last 9 columns"), std::string::npos);
}

TEST(LatLonGrid, RotatedPoleGridCentresAreGeographic) {
  double lon = 0, lat = 0;
  sphere::unrotate(0.0, 0.0, -162.0, 39.25, lon, lat);  // EURO-CORDEX: the domain centre
  EXPECT_NEAR(lon, 18.0, 1e-9);
  EXPECT_NEAR(lat, 50.75, 1e-9);
  sphere::unrotate(37.5, -12.0, 180.0, 90.0, lon, lat);  // the pole at its place: identity
  EXPECT_NEAR(lon, 37.5, 1e-9);
  EXPECT_NEAR(lat, -12.0, 1e-9);

  if (!fti::exists(fti::kRotatedFile)) GTEST_SKIP() << fti::kRotatedFile << " missing (install libncarg-data)";
  const fc::LatLonGrid g = fc::read_latlon_grid(fti::kRotatedFile, "tas");
  EXPECT_TRUE(g.rotated);
  EXPECT_DOUBLE_EQ(g.pole_lat, 39.25);
  EXPECT_DOUBLE_EQ(g.pole_lon, -162.0);
  EXPECT_EQ(g.lat_name, "rlat");
  EXPECT_EQ(g.lon_name, "rlon");
  EXPECT_FALSE(g.global_lon);
  WarningCapture warnings;
  const fc::PatchMap pm = fc::latlon_patch_map(g, 16);  // 412 x 424 -> 25 x 26 blocks
  EXPECT_EQ(pm.n_coarse, 25 * 26);
  ASSERT_EQ(warnings.lines.size(), 1u);
  // Every coarse centre of EUR-11 lies in or around Europe, far from (rlon, rlat) as degrees.
  for (int64_t k = 0; k < pm.n_coarse; ++k) {
    EXPECT_GT(pm.coarse_lat[k] / sphere::kDeg, 20.0);
    EXPECT_LT(pm.coarse_lat[k] / sphere::kDeg, 75.0);
    EXPECT_GT(pm.coarse_lon[k] / sphere::kDeg, -50.0);
    EXPECT_LT(pm.coarse_lon[k] / sphere::kDeg, 75.0);
  }
}

TEST(LatLonGrid, BlocksAreRowMajorInsideAndBetweenBlocks) {
  std::vector<double> lat, lon;
  for (int i = 0; i < 6; ++i) lat.push_back(-30.0 + 10.0 * i);
  for (int j = 0; j < 8; ++j) lon.push_back(5.0 * j);
  const fc::LatLonGrid g = fc::make_latlon_grid(lat, lon);
  EXPECT_FALSE(g.global_lon);
  const fc::PatchMap pm = fc::latlon_patch_map(g, 2);
  ASSERT_EQ(pm.n_coarse, 3 * 4);
  for (int64_t I = 0; I < 3; ++I)
    for (int64_t J = 0; J < 4; ++J)
      for (int64_t a = 0; a < 2; ++a)
        for (int64_t b = 0; b < 2; ++b)
          EXPECT_EQ(pm.fine_of_patch[(I * 4 + J) * 4 + a * 2 + b], (2 * I + a) * 8 + 2 * J + b);
  const int64_t* nb = &pm.neighbours[(1 * 4 + 2) * 4];  // block (1, 2)
  EXPECT_EQ(nb[0], 0 * 4 + 2);
  EXPECT_EQ(nb[1], 2 * 4 + 2);
  EXPECT_EQ(nb[2], 1 * 4 + 1);
  EXPECT_EQ(nb[3], 1 * 4 + 3);
  // Row areas are 2 cos(lat) sin(5 deg) bands, so their ratio is exactly cos(-30) / cos(-20).
  EXPECT_NEAR(pm.fine_weight[0] / pm.fine_weight[2], std::cos(-30.0 * sphere::kDeg) / std::cos(-20.0 * sphere::kDeg),
              1e-12);
  EXPECT_THROW(fc::latlon_patch_map(g, 7), finecast::GridError);
}

TEST(LatLonGrid, BadInputNamesFileAndVariable) {
  if (!fti::exists(fti::kTasFile)) GTEST_SKIP() << fti::kTasFile << " missing (install libncarg-data)";
  try {
    fc::read_latlon_grid(fti::kTasFile, "pr");
    FAIL() << "expected IoError";
  } catch (const finecast::IoError& e) {
    EXPECT_NE(std::string(e.what()).find("'pr'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(fti::kTasFile), std::string::npos) << e.what();
  }
  EXPECT_THROW(fc::read_latlon_grid(fti::kTasFile, "lat"), finecast::IoError);  // 1-D: not a field
}

// Latitude 200 went through replay and downscale into the output; the grid reader both use now
// refuses it (and a non-finite longitude), naming the file, variable and coordinate.
TEST(LatLonGrid, LatitudesOutsideMinus90To90AreRefused) {
  const std::string path = ::testing::TempDir() + "finecast_lat200_" + std::to_string(getpid()) + ".nc";
  auto write = [&](double last_lat, double last_lon) {
    int nc, dy, dx, vy, vx, vv;
    ASSERT_EQ(nc_create(path.c_str(), NC_CLOBBER, &nc), NC_NOERR);
    nc_def_dim(nc, "lat", 3, &dy);
    nc_def_dim(nc, "lon", 2, &dx);
    nc_def_var(nc, "lat", NC_DOUBLE, 1, &dy, &vy);
    nc_def_var(nc, "lon", NC_DOUBLE, 1, &dx, &vx);
    const int dims[2] = {dy, dx};
    nc_def_var(nc, "tas", NC_FLOAT, 2, dims, &vv);
    nc_put_att_text(nc, vy, "units", 13, "degrees_north");
    nc_enddef(nc);
    const double lat[3] = {0, 10, last_lat}, lon[2] = {0, last_lon};
    nc_put_var_double(nc, vy, lat);
    nc_put_var_double(nc, vx, lon);
    nc_close(nc);
  };
  auto error = [&] {
    try {
      fc::read_latlon_grid(path, "tas");
    } catch (const finecast::IoError& e) {
      return std::string(e.what());
    }
    return std::string("no IoError");
  };
  write(200, 10);
  EXPECT_EQ(error(), "'" + path +
                         "', variable 'tas': latitude coordinate 'lat' is 200.000000 at index 2, expected "
                         "degrees in [-90, 90]");
  write(20, INFINITY);
  EXPECT_NE(error().find("longitude coordinate 'lon' is inf at index 1"), std::string::npos) << error();
  write(90, 10);
  EXPECT_NO_THROW(fc::read_latlon_grid(path, "tas"));
  std::remove(path.c_str());
}

// train.hold_out FILE:VAR flags the blocks of the plugin's patch map that have a finite non-zero
// cell; finecast-eval --hold-out FILE:VAR flags the blocks of the prediction (the cropped domain,
// blocks counted from its first row and column) by the same rule: the same blocks, also where
// the map drops trailing columns, and missing values flag nothing.
TEST(LatLonGrid, AHoldOutMaskFlagsTheBlocksFinecastEvalHoldsOut) {
  std::vector<double> lat(40), lon(60);
  for (int i = 0; i < 40; ++i) lat[i] = -20.0 + i;
  for (int j = 0; j < 60; ++j) lon[j] = 10.0 + j;
  const fc::LatLonGrid g = fc::make_latlon_grid(lat, lon);
  WarningCapture warnings;  // 60 = 7 * 8 + 4: the last 4 columns are dropped
  const fc::PatchMap pm = fc::latlon_patch_map(g, 8);
  ASSERT_EQ(pm.n_coarse, 5 * 7);
  std::vector<float> mask(40 * 60, 0.0f);
  for (int c = 5; c < 40 * 60; c += 97) mask[c] = 1.0f;  // single cells
  mask[3 * 60 + 58] = 1.0f;                              // in a dropped column: no block
  mask[33 * 60 + 40] = std::nanf("");                    // missing: flags nothing
  mask[17 * 60 + 9] = -0.5f;                             // negative: flags
  const std::vector<char> plugin = fc::patches_held_out(pm, mask.data());
  // finecast-eval's blocks of the 40 x 56 prediction.
  std::vector<float> window(40 * 56);
  for (int i = 0; i < 40; ++i)
    for (int j = 0; j < 56; ++j) window[i * 56 + j] = mask[i * 60 + j];
  const std::vector<char> eval =
      fc::patches_held_out(window.data(), 40 * 56, 5 * 7, [](int64_t i) { return i / 56 / 8 * 7 + i % 56 / 8; });
  EXPECT_EQ(plugin, eval);
  int held = 0;
  for (char h : plugin) held += h;
  EXPECT_GT(held, 5);
  EXPECT_LT(held, 35);
  EXPECT_EQ(plugin[2 * 7 + 1], 1) << "the negative value at row 17, column 9";
  EXPECT_FALSE(fc::holds_out(std::nan(""))) << "missing values flag nothing";
}
