// SPDX-License-Identifier: BSD-3-Clause
// ICON grid files in ICON's own layout (vertex_of_cell, vlon/vlat, parents) and finecast-grid.
#include <gtest/gtest.h>
#include <netcdf.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "coupling/grid/icon_grid.hpp"
#include "coupling/grid/icon_hierarchy.hpp"
#include "coupling/grid/icosahedral_grid.hpp"
#include "common/error.hpp"

namespace fc = finecast::coupling;

namespace {

void nc(int rc) { ASSERT_EQ(rc, NC_NOERR) << nc_strerror(rc); }

/// Writes `g` as ICON does: Fortran (nv, cell) index arrays, 1-based, radians.
void write_icon_file(const std::string& path, const fc::IconGrid& g) {
  int id, dcell, dvert, dnv;
  nc(nc_create(path.c_str(), NC_CLOBBER | NC_NETCDF4, &id));
  nc(nc_def_dim(id, "cell", g.n_cells, &dcell));
  nc(nc_def_dim(id, "vertex", g.n_vertices, &dvert));
  nc(nc_def_dim(id, "nv", 3, &dnv));
  int clon, clat, vlon, vlat, voc, nbr, area, parent;
  nc(nc_def_var(id, "clon", NC_DOUBLE, 1, &dcell, &clon));
  nc(nc_def_var(id, "clat", NC_DOUBLE, 1, &dcell, &clat));
  nc(nc_def_var(id, "vlon", NC_DOUBLE, 1, &dvert, &vlon));
  nc(nc_def_var(id, "vlat", NC_DOUBLE, 1, &dvert, &vlat));
  const int dims[2] = {dnv, dcell};
  nc(nc_def_var(id, "vertex_of_cell", NC_INT, 2, dims, &voc));
  nc(nc_def_var(id, "neighbor_cell_index", NC_INT, 2, dims, &nbr));
  nc(nc_def_var(id, "cell_area", NC_DOUBLE, 1, &dcell, &area));
  nc(nc_def_var(id, "parent_cell_index", NC_INT, 1, &dcell, &parent));
  for (int v : {clon, clat, vlon, vlat}) nc(nc_put_att_text(id, v, "units", 6, "radian"));
  nc(nc_enddef(id));
  nc(nc_put_var_double(id, clon, g.clon.data()));
  nc(nc_put_var_double(id, clat, g.clat.data()));
  nc(nc_put_var_double(id, vlon, g.vlon.data()));
  nc(nc_put_var_double(id, vlat, g.vlat.data()));
  std::vector<int> v(3 * g.n_cells), b(3 * g.n_cells), p(g.n_cells);
  for (int64_t c = 0; c < g.n_cells; ++c) {
    for (int k = 0; k < 3; ++k) {
      v[k * g.n_cells + c] = g.cell_vertices[c][k] + 1;
      b[k * g.n_cells + c] = g.cell_neighbours[c][k] + 1;
    }
    p[c] = g.parent_cell[c] + 1;
  }
  nc(nc_put_var_int(id, voc, v.data()));
  nc(nc_put_var_int(id, nbr, b.data()));
  nc(nc_put_var_double(id, area, g.cell_area.data()));
  nc(nc_put_var_int(id, parent, p.data()));
  nc(nc_close(id));
}

std::string temp_path(const std::string& name) {
  return ::testing::TempDir() + "finecast_" + std::to_string(getpid()) + "_" + name;
}

/// Runs a command; returns its exit status and stdout.
int run(const std::string& cmd, std::string& out) {
  out.clear();
  FILE* pipe = popen((cmd + " 2>/dev/null").c_str(), "r");
  if (!pipe) return -1;
  std::array<char, 512> buf;
  while (fgets(buf.data(), buf.size(), pipe)) out += buf.data();
  const int status = pclose(pipe);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

const std::string kTool = std::string(FINECAST_BINARY_DIR) + "/bin/finecast-grid";

}  // namespace

TEST(IconGridFile, IconLayoutRoundTripsAndItsParentsAgreeWithTheTopology) {
  const fc::IconGrid g = fc::make_icosahedral_grid(2, 77);
  const std::string path = temp_path("r2b2.nc");
  write_icon_file(path, g);
  const fc::IconGrid r = fc::read_icon_grid(path);
  ASSERT_EQ(r.n_cells, g.n_cells);
  ASSERT_EQ(r.n_vertices, g.n_vertices);
  EXPECT_EQ(r.cell_vertices, g.cell_vertices);
  EXPECT_EQ(r.cell_neighbours, g.cell_neighbours);
  EXPECT_EQ(r.parent_cell, g.parent_cell);
  EXPECT_EQ(r.cell_area, g.cell_area);
  const fc::PatchMap pm = fc::icon_patch_map(r, 1);  // checked against parent_cell_index
  EXPECT_EQ(pm.n_coarse, 320);
  std::remove(path.c_str());
}

TEST(GridTool, ReportsAConsistentHierarchyAndFailsOnABrokenOne) {
  const fc::IconGrid g = fc::make_icosahedral_grid(2, 78);
  const std::string good = temp_path("good.nc");
  write_icon_file(good, g);
  std::string out;
  ASSERT_EQ(run(kTool + " --grid " + good + " --coarse-level 0", out), 0) << out;
  EXPECT_NE(out.find("fine cells: 1280\n"), std::string::npos) << out;
  EXPECT_NE(out.find("coarse cells: 80\n"), std::string::npos) << out;
  EXPECT_NE(out.find("min 16, max 16"), std::string::npos) << out;

  fc::IconGrid torn = g;
  torn.cell_vertices[10][0] = torn.cell_vertices[500][1];
  const std::string bad = temp_path("bad.nc");
  write_icon_file(bad, torn);
  EXPECT_EQ(run(kTool + " --grid " + bad + " --coarse-level 0", out), 2) << out;
  EXPECT_NE(out.find("consistent: no"), std::string::npos) << out;
  EXPECT_EQ(run(kTool + " --grid " + good + " --coarse-level 5", out), 1) << "level above R2B2";
  EXPECT_EQ(run(kTool + " --grid " + temp_path("missing.nc"), out), 1);
  std::remove(good.c_str());
  std::remove(bad.c_str());
}

TEST(GridTool, LatLonBlocksOfTheRealRectilinearFile) {
  const char* tas = "/usr/share/ncarg/data/nug/tas_rectilinear_grid_2D.nc";
  if (access(tas, R_OK) != 0) GTEST_SKIP() << tas << " missing (install libncarg-data)";
  std::string out;
  ASSERT_EQ(run(kTool + " --grid " + tas + " --block 16 --var tas", out), 0) << out;
  EXPECT_NE(out.find("fine cells: 18432\n"), std::string::npos) << out;
  EXPECT_NE(out.find("coarse cells: 72\n"), std::string::npos) << out;
  EXPECT_NE(out.find("min 256, max 256"), std::string::npos) << out;
}

// finecast-host ran on a truncated ICON grid file (rc 0, global mean ts 269 K instead of 282 K):
// the NetCDF library reads zeros past the end of a classic file. The grid reader now makes the
// size check FieldReader makes, and refuses cells off the sphere.
TEST(IconGridFile, TruncatedFilesAndImpossibleLatitudesAreRefused) {
  const std::string real = "/usr/share/ncarg/data/nug/triangular_grid_ICON.nc";
  if (access(real.c_str(), R_OK) != 0) GTEST_SKIP() << real << " missing (install libncarg-data)";
  std::string bytes;
  {
    FILE* f = std::fopen(real.c_str(), "rb");
    ASSERT_NE(f, nullptr);
    char buf[65536];
    size_t n;
    while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) bytes.append(buf, n);
    std::fclose(f);
  }
  const std::string cut = temp_path("grid_cut.nc");
  {
    FILE* f = std::fopen(cut.c_str(), "wb");
    ASSERT_NE(f, nullptr);
    std::fwrite(bytes.data(), 1, bytes.size() - 4096, f);
    std::fclose(f);
  }
  try {
    fc::read_icon_grid(cut);
    ADD_FAILURE() << "a truncated grid file was read";
  } catch (const finecast::IoError& e) {
    EXPECT_NE(std::string(e.what()).find("ICON grid file '" + cut +
                                         "' is truncated: its header describes 1805344 "
                                         "bytes but the file has 1801248"),
              std::string::npos)
        << e.what();
  }
  std::remove(cut.c_str());

  // A cell centre at latitude 200 degrees.
  fc::IconGrid g = fc::make_icosahedral_grid(2);
  g.clat[7] = 200.0 * M_PI / 180.0;
  const std::string off = temp_path("grid_off.nc");
  write_icon_file(off, g);
  try {
    fc::read_icon_grid(off);
    ADD_FAILURE() << "a cell off the sphere was read";
  } catch (const finecast::IoError& e) {
    EXPECT_NE(std::string(e.what()).find("variable 'clat': value 200.000000 degrees at index 7, expected a latitude "
                                         "in [-90, 90]"),
              std::string::npos)
        << e.what();
  }
  std::remove(off.c_str());
}
