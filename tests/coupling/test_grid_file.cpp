// SPDX-License-Identifier: BSD-3-Clause
// ICON grid files in ICON's own layout (vertex_of_cell, vlon/vlat, parents), the complete ICON
// grid files finecast writes, and finecast-grid.
#include <gtest/gtest.h>
#include <netcdf.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "coupling/grid/icon_grid.hpp"
#include "coupling/grid/icon_grid_file_check.hpp"
#include "coupling/grid/icon_grid_file_writer.hpp"
#include "coupling/grid/icon_hierarchy.hpp"
#include "coupling/grid/icosahedral_grid.hpp"
#include "coupling/grid/spherical.hpp"
#include "common/error.hpp"

namespace fc = finecast::coupling;
namespace sphere = finecast::coupling::sphere;

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

// ---- Complete ICON grid files (write_icon_grid_file, check_icon_grid_file) ----

namespace {

using Vec3 = std::array<double, 3>;
constexpr double kR = 6371229.0;

int var_id(int id, const char* name) {
  int v = -1;
  EXPECT_EQ(nc_inq_varid(id, name, &v), NC_NOERR) << name;
  return v;
}

/// The lengths of a variable's dimensions.
std::vector<size_t> shape(int id, int v) {
  int ndims = 0, dims[NC_MAX_VAR_DIMS];
  nc_inq_varndims(id, v, &ndims);
  nc_inq_vardimid(id, v, dims);
  std::vector<size_t> out(ndims);
  for (int i = 0; i < ndims; ++i) nc_inq_dimlen(id, dims[i], &out[i]);
  return out;
}

std::vector<double> doubles(const std::string& path, const char* name) {
  int id = -1;
  EXPECT_EQ(nc_open(path.c_str(), NC_NOWRITE, &id), NC_NOERR);
  const int v = var_id(id, name);
  size_t n = 1;
  for (size_t len : shape(id, v)) n *= len;
  std::vector<double> out(n);
  EXPECT_EQ(nc_get_var_double(id, v, out.data()), NC_NOERR);
  nc_close(id);
  return out;
}

std::vector<int> ints(const std::string& path, const char* name) {
  const std::vector<double> d = doubles(path, name);
  return std::vector<int>(d.begin(), d.end());
}

/// Overwrites one value of a variable (flat index) in place.
void poke(const std::string& path, const char* name, size_t flat, double value) {
  int id = -1;
  ASSERT_EQ(nc_open(path.c_str(), NC_WRITE, &id), NC_NOERR);
  const int v = var_id(id, name);
  const std::vector<size_t> lengths = shape(id, v);
  std::vector<size_t> index(lengths.size());
  for (size_t i = lengths.size(); i-- > 0;) {
    index[i] = flat % lengths[i];
    flat /= lengths[i];
  }
  ASSERT_EQ(nc_put_var1_double(id, v, index.data(), &value), NC_NOERR);
  nc_close(id);
}

Vec3 xyz(double lon, double lat) {
  return {std::cos(lat) * std::cos(lon), std::cos(lat) * std::sin(lon), std::sin(lat)};
}
double dot(const Vec3& a, const Vec3& b) { return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]; }
Vec3 cross(const Vec3& a, const Vec3& b) {
  return {a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]};
}

bool has_problem(const fc::IconGridFileCheck& c, const std::string& what) {
  return std::any_of(c.problems.begin(), c.problems.end(),
                     [&](const std::string& p) { return p.find(what) != std::string::npos; });
}

}  // namespace

TEST(IcosahedralMesh, NumberingIsHierarchical) {
  const fc::IcosahedralMesh ico = fc::make_icosahedral_mesh(-1);
  EXPECT_EQ(ico.cells.size(), 20u);
  EXPECT_EQ(ico.edges.size(), 30u);
  EXPECT_EQ(ico.vertices.size(), 12u);
  const fc::IcosahedralMesh coarse = fc::make_icosahedral_mesh(1), fine = fc::make_icosahedral_mesh(2);
  const size_t nv = coarse.vertices.size(), ne = coarse.edges.size(), nc = coarse.cells.size();
  ASSERT_EQ(fine.cells.size(), 4 * nc);
  ASSERT_EQ(fine.edges.size(), 2 * ne + 3 * nc);
  ASSERT_EQ(fine.vertices.size(), nv + ne);
  for (size_t v = 0; v < nv; ++v) EXPECT_EQ(fine.vertices[v], coarse.vertices[v]);
  auto midpoint_of = [&](int32_t m) { return m - static_cast<int32_t>(nv); };  // coarse edge
  for (size_t e = 0; e < fine.edges.size(); ++e) {
    const int32_t p = fine.parent_edge[e];
    const auto [a, b] = fine.edges[e];
    const auto [pa, pb] = coarse.edges[p];
    if (e < 2 * ne) {  // a half: a parent end and the parent's midpoint
      EXPECT_EQ(p, static_cast<int32_t>(e / 2));
      EXPECT_TRUE((a == pa && midpoint_of(b) == p) || (midpoint_of(a) == p && b == pb)) << e;
    } else {  // inner: joins the midpoints of the other two edges of the coarse cell
      const size_t cell = (e - 2 * ne) / 3;
      const auto& ce = coarse.cell_edges[cell];
      EXPECT_EQ(std::count(ce.begin(), ce.end(), p), 1);
      EXPECT_TRUE(std::count(ce.begin(), ce.end(), midpoint_of(a)) == 1 && midpoint_of(a) != p);
      EXPECT_TRUE(std::count(ce.begin(), ce.end(), midpoint_of(b)) == 1 && midpoint_of(b) != p);
    }
  }
  for (size_t c = 0; c < fine.cells.size(); ++c)
    for (int k = 0; k < 3; ++k) {  // slot k joins corners k and k+1; corners are parent corners or midpoints
      const auto [a, b] = fine.edges[fine.cell_edges[c][k]];
      const int32_t u = fine.cells[c][k], w = fine.cells[c][(k + 1) % 3];
      EXPECT_TRUE((a == u && b == w) || (a == w && b == u)) << c;
      if (u < static_cast<int32_t>(nv)) {
        EXPECT_EQ(u, coarse.cells[c / 4][c % 4]) << "child k sits at corner k";
      }
    }
}

TEST(IconGridFileWriter, HasEveryVariableAndAttributeIconReads) {
  const std::string path = temp_path("icon_r2b2.nc");
  const fc::IconGridFileSummary w = fc::write_icon_grid_file(path, 2);
  EXPECT_EQ(w.n_cells, 1280);
  EXPECT_EQ(w.n_edges, 1920);
  EXPECT_EQ(w.n_vertices, 642);
  EXPECT_EQ(w.uuid, fc::uniform_icon_grid_uuid(2));
  EXPECT_NE(fc::uniform_icon_grid_uuid(2), fc::uniform_icon_grid_uuid(3));

  const fc::IconGridFileCheck check = fc::check_icon_grid_file(path);
  EXPECT_TRUE(check.ok()) << check.n_problems
                          << " problems, first: " << (check.problems.empty() ? "" : check.problems[0]);
  EXPECT_EQ(check.pentagons, 12);
  EXPECT_LT(check.area_error, 1e-12);
  EXPECT_LT(check.dual_area_error, 1e-12);

  // ICON's Fortran (entity, slot) arrays as NetCDF (slot, entity); index lists of a global grid:
  // levels -8..-1 start after the last cell, levels 1..5 end before the first, level 0 = all.
  std::string out;
  ASSERT_EQ(run("ncdump -h " + path, out), 0);
  for (const std::string& line : std::vector<std::string>{
           "cell = 1280 ;", "edge = 1920 ;", "vertex = 642 ;", "cell_grf = 14 ;", "edge_grf = 24 ;", "vert_grf = 13 ;",
           "int vertex_of_cell(nv, cell) ;", "int cells_of_vertex(ne, vertex) ;",
           "int adjacent_cell_of_edge(nc, edge) ;", "int start_idx_c(max_chdom, cell_grf) ;",
           "double clon_vertices(cell, nv) ;", "double cell_area_p(cell) ;", ":grid_root = 2 ;", ":grid_level = 2 ;",
           ":number_of_grid_used = 0 ;", ":grid_geometry = 1 ;", ":grid_cell_type = 3 ;", ":sphere_radius = 6371229. ;",
           ":uuidOfHGrid = \"" + w.uuid + "\" ;"})
    EXPECT_NE(out.find(line), std::string::npos) << line << "\n" << out;
  std::vector<int> start_c(8, 1281), end_c(9, 1280);
  start_c.insert(start_c.end(), 6, 1);
  end_c.insert(end_c.end(), 5, 0);
  EXPECT_EQ(ints(path, "start_idx_c"), start_c);
  EXPECT_EQ(ints(path, "end_idx_c"), end_c);
  const std::vector<int> refin = ints(path, "refin_e_ctrl");
  EXPECT_TRUE(std::all_of(refin.begin(), refin.end(), [](int f) { return f == 0; }));
  // Pentagons: 5 entries, then 0 (ICON's reader moves dummies to the end and counts the rest).
  const std::vector<int> cov = ints(path, "cells_of_vertex"), eo = ints(path, "edge_orientation");
  EXPECT_EQ(std::count(cov.begin() + 5 * 642, cov.end(), 0), 12);
  EXPECT_EQ(std::count(eo.begin() + 5 * 642, eo.end(), 0), 12);
  EXPECT_EQ(std::count(cov.begin(), cov.begin() + 5 * 642, 0), 0);
  const std::vector<int> parent = ints(path, "parent_cell_index");
  for (int c = 0; c < 1280; ++c) ASSERT_EQ(parent[c], c / 4 + 1) << "1-based parent in R2B1";
  std::remove(path.c_str());
}

TEST(IconGridFileWriter, FinecastReadsTheInMemoryGrid) {
  const std::string path = temp_path("icon_r2b3.nc");
  fc::write_icon_grid_file(path, 3);
  const fc::IconGrid r = fc::read_icon_grid(path);
  const fc::IconGrid g = fc::make_icosahedral_grid(3);
  ASSERT_EQ(r.n_cells, g.n_cells);
  ASSERT_EQ(r.n_vertices, g.n_vertices);
  EXPECT_EQ(r.uuid_of_hgrid, fc::uniform_icon_grid_uuid(3));
  EXPECT_EQ(r.number_of_grid_used, 0);
  EXPECT_EQ(r.parent_cell, g.parent_cell);
  for (int64_t c = 0; c < g.n_cells; ++c) {
    ASSERT_NEAR(r.clon[c], g.clon[c], 1e-12) << c;
    ASSERT_NEAR(r.clat[c], g.clat[c], 1e-12) << c;
    ASSERT_NEAR(r.cell_area[c], g.cell_area[c], 1e-9 * g.cell_area[c]) << c;
    for (int k = 0; k < 3; ++k) {  // same corner positions in the same (counter-clockwise) order
      const int32_t rv = r.cell_vertices[c][k], gv = g.cell_vertices[c][k];
      ASSERT_NEAR(r.vlon[rv], g.vlon[gv], 1e-12) << c;
      ASSERT_NEAR(r.vlat[rv], g.vlat[gv], 1e-12) << c;
    }
    std::array<int32_t, 3> a = r.cell_neighbours[c], b = g.cell_neighbours[c];
    std::sort(a.begin(), a.end());
    std::sort(b.begin(), b.end());
    ASSERT_EQ(a, b) << c;
  }
  // The hierarchy rebuilt from the topology is the file's numbering (checked against
  // parent_cell_index at R2B2) and the in-memory grid's: the same fine cells in each coarse cell.
  // (The canonical order inside a patch can differ: its corner A is chosen by exact comparisons
  // of the corners' z, and corners at one latitude in exact arithmetic tie or not depending on
  // the last bit of a lon/lat round trip; 6 of 1280 patches at R2B2 here.)
  for (int level : {0, 2}) {
    const fc::PatchMap pr = fc::icon_patch_map(r, level), pg = fc::icon_patch_map(g, level);
    ASSERT_EQ(pr.n_coarse, pg.n_coarse);
    for (int64_t c = 0; c < pr.n_coarse; ++c) {
      const auto from = [&](const fc::PatchMap& pm) {
        std::vector<int64_t> f(pm.fine_of_patch.begin() + c * pm.patch_size,
                               pm.fine_of_patch.begin() + (c + 1) * pm.patch_size);
        std::sort(f.begin(), f.end());
        return f;
      };
      ASSERT_EQ(from(pr), from(pg)) << "level " << level << ", coarse cell " << c;
    }
  }
  std::remove(path.c_str());
}

// ICON's discrete operators, as its dynamical core builds them from these tables (geofac_div:
// edge_length * orientation_of_normal / cell_area; geofac_rot: dual_edge_length *
// edge_orientation / dual_area; the normal gradient (c2 - c1) / dual_edge_length; the tangential
// one edge_system_orientation * (v2 - v1) / edge_length), give calculus' results on smooth
// fields: a sign convention broken anywhere flips or scrambles one of them.
TEST(IconGridFileWriter, IconsOperatorsOnItsTablesMatchCalculus) {
  const std::string path = temp_path("icon_ops.nc");
  fc::write_icon_grid_file(path, 3);
  const int nc = 5120, ne = 7680, nv = 2562;
  auto positions = [&](const char* lon, const char* lat) {
    const std::vector<double> x = doubles(path, lon), y = doubles(path, lat);
    std::vector<Vec3> p(x.size());
    for (size_t i = 0; i < p.size(); ++i) p[i] = xyz(x[i], y[i]);
    return p;
  };
  const std::vector<Vec3> cell = positions("lon_cell_centre", "lat_cell_centre");
  const std::vector<Vec3> vert = positions("longitude_vertices", "latitude_vertices");
  const std::vector<double> elon = doubles(path, "lon_edge_centre"), elat = doubles(path, "lat_edge_centre");
  const std::vector<double> zn = doubles(path, "zonal_normal_primal_edge"),
                            mn = doubles(path, "meridional_normal_primal_edge");
  const std::vector<double> zt = doubles(path, "zonal_normal_dual_edge"),
                            mt = doubles(path, "meridional_normal_dual_edge");
  const std::vector<double> len = doubles(path, "edge_length"), dual_len = doubles(path, "dual_edge_length");
  const std::vector<double> area = doubles(path, "cell_area_p"), dual_area = doubles(path, "dual_area_p");
  const std::vector<int> ec = ints(path, "adjacent_cell_of_edge"), ev = ints(path, "edge_vertices");
  const std::vector<int> so = ints(path, "edge_system_orientation"), eoc = ints(path, "edge_of_cell");
  const std::vector<int> orient = ints(path, "orientation_of_normal"), eov = ints(path, "edges_of_vertex");
  const std::vector<int> vorient = ints(path, "edge_orientation");
  const Vec3 z{0, 0, 1};
  std::vector<Vec3> n(ne), t(ne), m(ne);
  for (int e = 0; e < ne; ++e) {
    const double lo = elon[e], la = elat[e];
    const Vec3 east{-std::sin(lo), std::cos(lo), 0},
        north{-std::cos(lo) * std::sin(la), -std::sin(lo) * std::sin(la), std::cos(la)};
    for (int d = 0; d < 3; ++d) {
      n[e][d] = zn[e] * east[d] + mn[e] * north[d];
      t[e][d] = zt[e] * east[d] + mt[e] * north[d];
    }
    m[e] = xyz(lo, la);
  }
  // f = sin(latitude) on the sphere of radius R: grad f = (z - (z.x) x) / R, lap f = -2 f / R^2.
  double grad_n = 0, grad_t = 0, div = 0, rot = 0;
  for (int e = 0; e < ne; ++e) {
    const int c1 = ec[e] - 1, c2 = ec[ne + e] - 1, v1 = ev[e] - 1, v2 = ev[ne + e] - 1;
    grad_n = std::max(grad_n, std::fabs((cell[c2][2] - cell[c1][2]) / dual_len[e] - dot(z, n[e]) / kR) * kR);
    grad_t = std::max(grad_t, std::fabs(so[e] * (vert[v2][2] - vert[v1][2]) / len[e] - dot(z, t[e]) / kR) * kR);
  }
  for (int c = 0; c < nc; ++c) {  // divergence of grad f (its normal components at the edges)
    double sum = 0;
    for (int k = 0; k < 3; ++k) {
      const int e = eoc[k * nc + c] - 1;
      sum += orient[k * nc + c] * dot(z, n[e]) / kR * len[e];
    }
    div = std::max(div, std::fabs(sum / area[c] + 2 * cell[c][2] / (kR * kR)) * kR * kR / 2);
  }
  for (int v = 0; v < nv; ++v) {  // vorticity of solid-body rotation u = z x r: 2 (z . x)
    double sum = 0;
    for (int i = 0; i < 6; ++i) {
      const int e = eov[i * nv + v] - 1;
      if (e < 0) continue;
      sum += vorient[i * nv + v] * dot(cross(z, m[e]), n[e]) * kR * dual_len[e];
    }
    rot = std::max(rot, std::fabs(sum / dual_area[v] - 2 * vert[v][2]) / 2);
  }
  // Relative to the fields' scales, at R2B3 (~440 km cells): 3.5e-3, 2.4e-4, 5.0e-3, 2.8e-3,
  // halving (a quarter for the tangential derivative) with each bisection; a wrong sign or a
  // swapped cell or vertex pair anywhere gives errors of order 1.
  EXPECT_LT(grad_n, 5e-3);
  EXPECT_LT(grad_t, 5e-4);
  EXPECT_LT(div, 1e-2);
  EXPECT_LT(rot, 5e-3);
  std::remove(path.c_str());
}

TEST(IconGridFileCheck, NamesEachKindOfFault) {
  const std::string clean = temp_path("icon_clean.nc");
  fc::write_icon_grid_file(clean, 1);
  const int nc = 320, nv = 162;
  ASSERT_TRUE(fc::check_icon_grid_file(clean).ok());
  struct Fault {
    const char* var;
    size_t flat;
    double (*value)(double);
    const char* reported;
  };
  const Fault faults[] = {
      {"orientation_of_normal", 1 * nc + 7, [](double x) { return -x; }, "orientation_of_normal at 8"},
      {"edge_orientation", 2 * nv + 30, [](double x) { return -x; }, "edge_orientation at 31"},
      {"edge_system_orientation", 11, [](double x) { return -x; }, "edge_system_orientation at 12"},
      {"neighbor_cell_index", 5, [](double x) { return x == 1 ? 2.0 : 1.0; }, "neighbor_cell_index at 6"},
      {"cells_of_vertex", 5 * nv + 12, [](double) { return 0.0; }, "cells_of_vertex at 13"},  // 12..: hexagons
      {"vertex_of_cell", 0, [](double) { return 0.0; }, "vertex_of_cell: value 0"},
      {"zonal_normal_primal_edge", 3, [](double x) { return x + 0.5; }, "zonal_normal_primal_edge at 4"},
      {"cell_area_p", 9, [](double x) { return 2 * x; }, "cell_area_p sums to"},
      {"dual_edge_length", 4, [](double x) { return 1.01 * x; }, "dual_edge_length at 5"},
      {"end_idx_e", 0, [](double x) { return x - 1; }, "start_idx_e/end_idx_e"},
  };
  for (const Fault& f : faults) {
    const std::string bad = temp_path("icon_bad.nc");
    ASSERT_EQ(std::system(("cp " + clean + " " + bad).c_str()), 0);
    poke(bad, f.var, f.flat, f.value(doubles(bad, f.var)[f.flat]));
    const fc::IconGridFileCheck c = fc::check_icon_grid_file(bad);
    EXPECT_FALSE(c.ok()) << f.var;
    EXPECT_TRUE(has_problem(c, f.reported)) << f.var << ": " << (c.problems.empty() ? "" : c.problems[0]);
    std::remove(bad.c_str());
  }
  // Cell 4 listed clockwise (corners 2 and 3 swapped, its edge tables permuted to match).
  const std::string bad = temp_path("icon_bad.nc");
  ASSERT_EQ(std::system(("cp " + clean + " " + bad).c_str()), 0);
  for (const char* var : {"vertex_of_cell", "edge_of_cell", "neighbor_cell_index", "orientation_of_normal"}) {
    const std::vector<double> v = doubles(bad, var);
    const int a = std::string(var) == "vertex_of_cell" ? 1 : 0, b = 2;  // corners 2, 3 / edge slots 1, 3
    poke(bad, var, a * nc + 3, v[b * nc + 3]);
    poke(bad, var, b * nc + 3, v[a * nc + 3]);
  }
  const fc::IconGridFileCheck clockwise = fc::check_icon_grid_file(bad);
  EXPECT_TRUE(has_problem(clockwise, "vertex_of_cell at 4: vertices clockwise"))
      << (clockwise.problems.empty() ? "" : clockwise.problems[0]);
  // A table ICON reads is missing.
  ASSERT_EQ(std::system(("cp " + clean + " " + bad).c_str()), 0);
  int id = -1;
  ASSERT_EQ(nc_open(bad.c_str(), NC_WRITE, &id), NC_NOERR);
  ASSERT_EQ(nc_redef(id), NC_NOERR);
  ASSERT_EQ(nc_rename_var(id, var_id(id, "dual_area_p"), "dual_area_q"), NC_NOERR);
  ASSERT_EQ(nc_close(id), NC_NOERR);
  EXPECT_TRUE(has_problem(fc::check_icon_grid_file(bad), "variable 'dual_area_p' missing"));
  std::remove(bad.c_str());
  std::remove(clean.c_str());
}

TEST(GridTool, WritesAnIconGridFileAndChecksIt) {
  const std::string path = temp_path("tool_r2b2.nc");
  std::string out;
  ASSERT_EQ(run(kTool + " --write-icon-grid " + path + " --level 2 --coarse-level 1", out), 0) << out;
  EXPECT_NE(out.find("wrote: " + path + " (ICON grid R02B02: 1280 cells, 1920 edges, 642 vertices"), std::string::npos)
      << out;
  EXPECT_NE(out.find("ICON grid tables: consistent (1920 edges, 12 pentagons"), std::string::npos) << out;
  EXPECT_NE(out.find("consistent: yes"), std::string::npos) << out;
  ASSERT_EQ(run(kTool + " " + path, out), 0) << out;  // the checker accepts the written file
  EXPECT_NE(out.find("fine level: R2B2"), std::string::npos) << out;
  poke(path, "edge_system_orientation", 0, -1.0 * ints(path, "edge_system_orientation")[0]);
  EXPECT_EQ(run(kTool + " " + path, out), 2) << out;
  EXPECT_NE(out.find("ICON grid tables: inconsistent"), std::string::npos) << out;
  EXPECT_NE(run(kTool + " --write-icon-grid " + path, out), 0) << "--level is needed (CLI11's usage error)";
  EXPECT_NE(run(kTool + " --write-icon-grid " + path + " --level 12", out), 0) << "level out of range";
  EXPECT_EQ(run(kTool, out), 1) << "nothing to do";
  ASSERT_EQ(run(kTool + " --help", out), 0);
  EXPECT_NE(out.find("--write-icon-grid"), std::string::npos) << out;
  std::remove(path.c_str());
}

// ---- R<n>B<k> and limited-area grid files ----

TEST(IconGridFileWriter, R3BFileIsConsistentAndFinecastCoarsensIt) {
  const std::string path = temp_path("icon_r3b1.nc");
  fc::IconGridFileRequest request;
  request.root = 3;
  request.level = 1;
  const fc::IconGridFileSummary w = fc::write_icon_grid_file(path, request);
  EXPECT_EQ(w.n_cells, 720);
  EXPECT_EQ(w.n_vertices, 362);
  EXPECT_EQ(w.uuid, fc::uniform_icon_grid_uuid(1, 3));
  EXPECT_NE(w.uuid, fc::uniform_icon_grid_uuid(1));
  const fc::IconGridFileCheck check = fc::check_icon_grid_file(path);
  EXPECT_TRUE(check.ok()) << (check.problems.empty() ? "" : check.problems[0]);
  EXPECT_EQ(check.pentagons, 12);
  EXPECT_FALSE(check.limited_area);
  const fc::IconGrid g = fc::read_icon_grid(path);
  EXPECT_EQ(g.grid_root, 3);
  EXPECT_EQ(g.grid_level, 1);
  // parent_cell_index names the R3B0 parents, 4 children each; one level coarser are they.
  const fc::PatchMap pm = fc::icon_patch_map(g, 0);
  EXPECT_EQ(pm.n_coarse, 180);
  // R3B0's parents are the icosahedron's 20 faces, 9 cells each.
  const std::string root = temp_path("icon_r3b0.nc");
  request.level = 0;
  fc::write_icon_grid_file(root, request);
  const std::vector<int> parents = ints(root, "parent_cell_index");
  for (size_t c = 0; c < parents.size(); ++c) ASSERT_EQ(parents[c], static_cast<int>(c / 9 + 1)) << c;
  EXPECT_TRUE(fc::check_icon_grid_file(root).ok());
  std::remove(root.c_str());
  std::remove(path.c_str());
}

// A limited area cut from R2B4 over Europe: the cells whose centres lie in the box, renumbered by
// boundary row (ICON's index lists), references outside the domain 0, parents the global R2B3
// cells, refin_c_ctrl 1 + the distance of a cell's nearest corner from the boundary (vertex hops),
// and the tables consistent as check_icon_grid_file reads them.
TEST(IconGridFileWriter, LimitedAreaCutIsRenumberedByRowAndConsistent) {
  const std::string path = temp_path("icon_lam.nc");
  fc::IconGridFileRequest request;
  request.level = 4;
  request.region = fc::parse_latlon_box("25,65,-15,45", "--region");
  request.boundary_depth = 6;
  const fc::IconGridFileSummary w = fc::write_icon_grid_file(path, request);
  ASSERT_TRUE(w.limited_area);
  ASSERT_EQ(w.cells_per_row.size(), 6u);
  const fc::IconGridFileCheck check = fc::check_icon_grid_file(path);
  EXPECT_TRUE(check.ok()) << check.n_problems
                          << " problems, first: " << (check.problems.empty() ? "" : check.problems[0]);
  EXPECT_TRUE(check.limited_area);
  EXPECT_EQ(check.n_vertices - check.n_edges + check.n_cells, 1);
  const fc::IconGrid lam = fc::read_icon_grid(path);
  ASSERT_EQ(lam.n_cells, w.n_cells);
  EXPECT_EQ(lam.grid_root, 2);
  EXPECT_EQ(lam.grid_level, 4);
  // The global grid's cells, found by their centres.
  const fc::IconGrid g = fc::make_icosahedral_grid(4, 0);
  std::map<std::pair<long long, long long>, int64_t> by_centre;
  auto key = [](double lon, double lat) { return std::make_pair(std::llround(lon * 1e9), std::llround(lat * 1e9)); };
  for (int64_t c = 0; c < g.n_cells; ++c) by_centre[key(g.clon[c], g.clat[c])] = c;
  std::vector<int64_t> global(static_cast<size_t>(lam.n_cells));
  std::set<int64_t> in_domain;
  for (int64_t c = 0; c < lam.n_cells; ++c) {
    const auto it = by_centre.find(key(lam.clon[c], lam.clat[c]));
    ASSERT_NE(it, by_centre.end()) << "cell " << c << " is no cell of the global grid";
    global[c] = it->second;
    in_domain.insert(it->second);
    EXPECT_GE(lam.clat[c] / sphere::kDeg, 25 - 1e-9);
    EXPECT_LE(lam.clat[c] / sphere::kDeg, 65 + 1e-9);
    EXPECT_EQ(lam.parent_cell[c], g.parent_cell[global[c]]) << "cell " << c;
  }
  // Every global neighbour inside the domain is a neighbour; one outside is 0 in the file.
  const std::vector<int> nbr = ints(path, "neighbor_cell_index");
  int64_t outside = 0;
  for (int64_t c = 0; c < lam.n_cells; ++c)
    for (int k = 0; k < 3; ++k) {
      const int n = nbr[k * lam.n_cells + c];
      if (n == 0) {
        ++outside;
        continue;
      }
      EXPECT_TRUE(std::count(g.cell_neighbours[global[c]].begin(), g.cell_neighbours[global[c]].end(), global[n - 1]) ==
                  1)
          << "cell " << c;
    }
  int64_t expect_outside = 0;
  for (int64_t c = 0; c < lam.n_cells; ++c)
    for (int32_t n : g.cell_neighbours[global[c]]) expect_outside += in_domain.count(n) == 0;
  EXPECT_EQ(outside, expect_outside);
  EXPECT_GT(outside, 0);
  // Rows: breadth-first vertex hops from the boundary, counted here on the file's own tables.
  const std::vector<int> adjacent = ints(path, "adjacent_cell_of_edge"), ev = ints(path, "edge_vertices");
  const int64_t ne = check.n_edges, nv = check.n_vertices;
  std::vector<int> hops(static_cast<size_t>(nv), -1), queue;
  for (int64_t e = 0; e < ne; ++e)
    if (adjacent[ne + e] == 0)
      for (int s = 0; s < 2; ++s)
        if (hops[ev[s * ne + e] - 1] < 0) {
          hops[ev[s * ne + e] - 1] = 0;
          queue.push_back(ev[s * ne + e] - 1);
        }
  std::vector<std::vector<int>> adj(static_cast<size_t>(nv));
  for (int64_t e = 0; e < ne; ++e) {
    adj[ev[e] - 1].push_back(ev[ne + e] - 1);
    adj[ev[ne + e] - 1].push_back(ev[e] - 1);
  }
  for (size_t head = 0; head < queue.size(); ++head)
    for (int u : adj[queue[head]])
      if (hops[u] < 0) {
        hops[u] = hops[queue[head]] + 1;
        queue.push_back(u);
      }
  const std::vector<int> voc = ints(path, "vertex_of_cell"), refin = ints(path, "refin_c_ctrl");
  std::vector<int64_t> per_row(6, 0);
  int previous_key = 1;
  for (int64_t c = 0; c < lam.n_cells; ++c) {
    int nearest = 1 << 30;
    for (int k = 0; k < 3; ++k) nearest = std::min(nearest, hops[voc[k * lam.n_cells + c] - 1]);
    EXPECT_EQ(refin[c], nearest < 6 ? nearest + 1 : 0) << "cell " << c;
    if (refin[c] >= 1) ++per_row[refin[c] - 1];
    const int row_key = refin[c] >= 1 && refin[c] <= 5 ? refin[c] : 6;  // ICON's max_rlcell = 5
    EXPECT_GE(row_key, previous_key) << "cells are sorted by row: cell " << c;
    previous_key = row_key;
  }
  EXPECT_EQ(per_row, w.cells_per_row);
  // The index lists: row 1 starts at cell 1, level 0 after row 5, ending at the last cell.
  const std::vector<int> start = ints(path, "start_idx_c"), end = ints(path, "end_idx_c");
  EXPECT_EQ(start[8 + 1], 1);  // storage from level -8: level 1 at position 9
  EXPECT_EQ(end[8 + 1], static_cast<int>(per_row[0]));
  EXPECT_EQ(start[8], static_cast<int>(per_row[0] + per_row[1] + per_row[2] + per_row[3] + per_row[4] + 1));
  EXPECT_EQ(end[8], lam.n_cells);
  // A boundary vertex's ring is an open fan: k cells, k + 1 edges.
  const std::vector<int> cov = ints(path, "cells_of_vertex"), eov = ints(path, "edges_of_vertex");
  int64_t fans = 0;
  for (int64_t v = 0; v < nv; ++v) {
    if (hops[v] != 0) continue;
    int cells = 0, edges = 0;
    for (int i = 0; i < 6; ++i) {
      cells += cov[i * nv + v] != 0;
      edges += eov[i * nv + v] != 0;
    }
    EXPECT_EQ(edges, cells + 1) << "vertex " << v;
    ++fans;
  }
  EXPECT_GT(fans, 0);
  // finecast's hierarchy of the file, from parent_cell_index one level up.
  const fc::PatchMap pm = fc::icon_patch_map(lam, 3);
  EXPECT_EQ(pm.limited_area.hierarchy, "parent_cell_index");
  EXPECT_GT(pm.limited_area.left_out_boundary, 0);
  std::remove(path.c_str());
}

// The checker names what a limited-area file gets wrong: a missing first adjacent cell, an open
// ring with a cell too many, cells out of row order.
TEST(IconGridFileCheck, NamesLimitedAreaFaults) {
  const std::string clean = temp_path("icon_lam_clean.nc");
  fc::IconGridFileRequest request;
  request.level = 3;
  request.region = fc::parse_latlon_box("-40,10,100,170", "--region");
  request.boundary_depth = 3;
  const fc::IconGridFileSummary w = fc::write_icon_grid_file(clean, request);
  ASSERT_TRUE(fc::check_icon_grid_file(clean).ok());
  const std::string bad = temp_path("icon_lam_bad.nc");
  // Edge 1 (row 1: on the boundary) with its one cell removed.
  ASSERT_EQ(std::system(("cp " + clean + " " + bad).c_str()), 0);
  poke(bad, "adjacent_cell_of_edge", 0, 0.0);
  EXPECT_TRUE(has_problem(fc::check_icon_grid_file(bad), "adjacent_cell_of_edge at 1: adjacent cell 1 is 0"));
  // The last cell (inside) flagged as row 1: no longer sorted by row.
  ASSERT_EQ(std::system(("cp " + clean + " " + bad).c_str()), 0);
  poke(bad, "refin_c_ctrl", static_cast<size_t>(w.n_cells - 1), 1.0);
  EXPECT_TRUE(
      has_problem(fc::check_icon_grid_file(bad), "refin_c_ctrl: the entities are not sorted by refinement row"));
  // The end of row 1 moved.
  ASSERT_EQ(std::system(("cp " + clean + " " + bad).c_str()), 0);
  poke(bad, "end_idx_c", 9, static_cast<double>(w.cells_per_row[0] - 1));
  EXPECT_TRUE(
      has_problem(fc::check_icon_grid_file(bad), "start_idx_c/end_idx_c: not the lists of the refinement rows"));
  std::remove(bad.c_str());
  std::remove(clean.c_str());
}

TEST(GridTool, WritesLimitedAreaAndR3BGridsAndSaysWhatItLeavesOut) {
  const std::string path = temp_path("tool_lam.nc");
  std::string out;
  ASSERT_EQ(run(kTool + " --write-icon-grid " + path +
                    " --level 5 --region 35,60,-10,30 --boundary-depth 8 "
                    "--coarse-level 3",
                out),
            0)
      << out;
  EXPECT_NE(out.find("ICON grid R02B05, limited area:"), std::string::npos) << out;
  EXPECT_NE(out.find("refin_c_ctrl rows 1..8 from the lateral boundary:"), std::string::npos) << out;
  EXPECT_NE(out.find("ICON grid tables: consistent (limited area:"), std::string::npos) << out;
  EXPECT_NE(out.find("fine level: R2B5, coarse level: R2B3 (limited area)"), std::string::npos) << out;
  EXPECT_NE(out.find("lateral boundary zone (refin_c_ctrl 1..4)"), std::string::npos) << out;
  EXPECT_NE(out.find("consistent: yes"), std::string::npos) << out;
  ASSERT_EQ(run(kTool + " " + path + " --coarse-level 4 --boundary-rows 0", out), 0) << out;
  EXPECT_NE(out.find("hierarchy from parent_cell_index"), std::string::npos) << out;
  EXPECT_NE(out.find(" 0 reaching into the lateral boundary zone"), std::string::npos) << out;
  const std::string r3 = temp_path("tool_r3b2.nc");
  ASSERT_EQ(run(kTool + " --write-icon-grid " + r3 + " --level 2 --root 3 --coarse-level 0", out), 0) << out;
  EXPECT_NE(out.find("(ICON grid R03B02: 2880 cells"), std::string::npos) << out;
  EXPECT_NE(out.find("fine cells per coarse cell: min 16, max 16"), std::string::npos) << out;
  // (stderr too: the braces put it on the pipe before run() sends the group's to /dev/null)
  EXPECT_NE(run("{ " + kTool + " --write-icon-grid " + path + " --level 3 --region 1,2,3 2>&1; }", out), 0)
      << "three numbers";
  EXPECT_NE(out.find("expected lat0,lat1,lon0,lon1"), std::string::npos) << out;
  EXPECT_NE(run(kTool + " " + path + " --boundary-depth 3", out), 0) << "--boundary-depth needs --region";
  std::remove(r3.c_str());
  std::remove(path.c_str());
}
