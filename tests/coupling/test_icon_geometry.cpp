// SPDX-License-Identifier: BSD-3-Clause
// ICON grid geometry (issue 26): the generator's geometry is ICON's standard uniform one, the
// uniform geometry rebuilt from a stretched, renumbered grid's topology is that grid cell by
// cell, topologies that are no bisected icosahedron are refused, and grid.geometry reaches the
// grid reader through the conditioning spec.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <string>

#include "common/error.hpp"
#include "coupling/conditioning/conditioning_pipeline.hpp"
#include "coupling/conditioning/conditioning_spec.hpp"
#include "coupling/grid/icon_geometry.hpp"
#include "coupling/grid/icosahedral_grid.hpp"
#include "coupling/grid/spherical.hpp"
#include "tests/coupling/io_test_util.hpp"

namespace fc = finecast::coupling;
namespace fti = finecast::testing_io;
namespace sphere = finecast::coupling::sphere;

namespace {

sphere::Vec3 vertex(const fc::IconGrid& g, int32_t v) { return sphere::to_xyz(g.vlon[v], g.vlat[v]); }
sphere::Vec3 centre(const fc::IconGrid& g, int64_t c) { return sphere::to_xyz(g.clon[c], g.clat[c]); }

/// Great-circle distance in degrees, from the chord (acos loses half the digits near 0).
double angle_deg(const sphere::Vec3& a, const sphere::Vec3& b) {
  const double chord =
      std::sqrt((a[0] - b[0]) * (a[0] - b[0]) + (a[1] - b[1]) * (a[1] - b[1]) + (a[2] - b[2]) * (a[2] - b[2]));
  return 2.0 * std::asin(std::fmin(1.0, chord / 2.0)) / sphere::kDeg;
}

std::vector<int> degrees(const fc::IconGrid& g) {
  std::vector<int> d(static_cast<size_t>(g.n_vertices), 0);
  for (const auto& c : g.cell_vertices)
    for (int32_t v : c) ++d[v];
  return d;
}

/// The 12 pentagons of ICON's standard icosahedron, as (lon, lat) in degrees.
std::vector<sphere::Vec3> standard_pentagons() {
  const double lat = std::atan(0.5) / sphere::kDeg;  // 26.565 degrees
  std::vector<sphere::Vec3> p{{0, 0, 1}, {0, 0, -1}};
  for (int i = 0; i < 5; ++i) {
    p.push_back(sphere::to_xyz(72.0 * i * sphere::kDeg, lat * sphere::kDeg));
    p.push_back(sphere::to_xyz((36.0 + 72.0 * i) * sphere::kDeg, -lat * sphere::kDeg));
  }
  return p;
}

/// Every degree-5 vertex of `g` lies on one of the standard pentagons (to `tol` degrees).
void expect_standard_pentagons(const fc::IconGrid& g, double tol) {
  const auto d = degrees(g);
  int found = 0;
  for (size_t v = 0; v < d.size(); ++v) {
    if (d[v] != 5) continue;
    ++found;
    double best = 180;
    for (const auto& p : standard_pentagons()) best = std::fmin(best, angle_deg(p, vertex(g, static_cast<int32_t>(v))));
    EXPECT_LT(best, tol) << "pentagon vertex " << v << " at lon " << g.vlon[v] / sphere::kDeg << ", lat "
                         << g.vlat[v] / sphere::kDeg;
  }
  EXPECT_EQ(found, 12);
}

/// A smooth, orientation-keeping distortion of the sphere: a pull toward one point (cells
/// shrink there and stretch opposite, as on ICON's ocean grids) and a small twist.
sphere::Vec3 stretched(const sphere::Vec3& p) {
  const sphere::Vec3 q = sphere::to_xyz(30 * sphere::kDeg, 20 * sphere::kDeg);
  sphere::Vec3 s = sphere::normalised({p[0] + 0.35 * q[0], p[1] + 0.35 * q[1], p[2] + 0.35 * q[2]});
  const double twist = 0.12 * s[2];  // rotation about the axis, by latitude
  return {std::cos(twist) * s[0] - std::sin(twist) * s[1], std::sin(twist) * s[0] + std::cos(twist) * s[1], s[2]};
}

}  // namespace

TEST(IcosahedralGrid, HasTheStandardUniformGeometry) {
  const fc::IconGrid g = fc::make_icosahedral_grid(2, 3);
  expect_standard_pentagons(g, 1e-9);
  double area = 0;
  for (int64_t c = 0; c < g.n_cells; ++c) {
    const auto& v = g.cell_vertices[c];
    const sphere::Vec3 a = vertex(g, v[0]), b = vertex(g, v[1]), d = vertex(g, v[2]);
    EXPECT_GT(sphere::dot(a, sphere::cross(b, d)), 0.0) << "cell " << c << " is not counter-clockwise";
    // The centre is the circumcentre, as in ICON grid files.
    const sphere::Vec3 x = centre(g, c);
    EXPECT_NEAR(angle_deg(x, a), angle_deg(x, b), 1e-9) << "cell " << c;
    EXPECT_NEAR(angle_deg(x, a), angle_deg(x, d), 1e-9) << "cell " << c;
    area += g.cell_area[c];
  }
  EXPECT_NEAR(area / (4 * sphere::kPi * sphere::kEarthRadius * sphere::kEarthRadius), 1.0, 1e-12);
}

TEST(UniformGeometry, RebuildsAStretchedRenumberedGridCellByCell) {
  const fc::IconGrid want = fc::make_icosahedral_grid(3, 20261127);  // 1,280 shuffled cells and vertices
  fc::IconGrid g = want;
  g.path = "stretched.nc";
  for (int64_t v = 0; v < g.n_vertices; ++v) sphere::to_lonlat(stretched(vertex(want, v)), g.vlon[v], g.vlat[v]);
  double moved = 0;
  for (int64_t c = 0; c < g.n_cells; ++c) {
    auto& v = g.cell_vertices[c];
    if (c % 3 == 0) std::swap(v[1], v[2]);  // corner order is no part of the topology
    sphere::to_lonlat(sphere::circumcentre(vertex(g, v[0]), vertex(g, v[1]), vertex(g, v[2])), g.clon[c], g.clat[c]);
    moved = std::fmax(moved, angle_deg(centre(g, c), centre(want, c)));
  }
  g.cell_area.clear();
  fc::complete_icon_grid(g);
  ASSERT_GT(moved, 10.0) << "the distortion must move cells far";

  const fc::UniformGeometryFit fit = fc::set_uniform_geometry(g);
  EXPECT_EQ(fit.anchors_tried, 60);
  EXPECT_NEAR(fit.max_shift_deg, moved, 1e-6);
  for (int64_t v = 0; v < g.n_vertices; ++v)
    ASSERT_LT(angle_deg(vertex(g, v), vertex(want, v)), 1e-9) << "vertex " << v;
  for (int64_t c = 0; c < g.n_cells; ++c) {
    ASSERT_LT(angle_deg(centre(g, c), centre(want, c)), 1e-9) << "cell " << c;
    ASSERT_NEAR(g.cell_area[c] / want.cell_area[c], 1.0, 1e-9) << "cell " << c;
  }
  EXPECT_EQ(g.path, "stretched.nc");  // identity and topology kept
}

TEST(UniformGeometry, ATopologyThatIsNoBisectedIcosahedronIsRefusedNamingTheGrid) {
  fc::IconGrid g = fc::make_icosahedral_grid(2, 9);
  g.path = "flipped.nc";
  // Flip one edge: the two cells (a, b, c) and (b, a, d) become (c, a, d) and (c, d, b).
  const auto cell = g.cell_vertices[0];
  const int32_t n = g.cell_neighbours[0][2];  // across the edge opposite corner 2 (a-b)
  int32_t d = -1;
  for (int32_t v : g.cell_vertices[n])
    if (v != cell[0] && v != cell[1]) d = v;
  ASSERT_GE(d, 0);
  g.cell_vertices[0] = {cell[2], cell[0], d};
  g.cell_vertices[n] = {cell[2], d, cell[1]};
  g.cell_neighbours.clear();
  fc::complete_icon_grid(g);
  try {
    fc::set_uniform_geometry(g);
    FAIL() << "expected GridError";
  } catch (const finecast::GridError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("flipped.nc"), std::string::npos) << m;
    EXPECT_NE(m.find("recursively bisected icosahedron"), std::string::npos) << m;
  }
  fc::IconGrid regional = fc::make_icosahedral_grid(1);
  regional.path = "regional.nc";
  regional.n_cells = 300;
  regional.cell_vertices.resize(300);
  regional.cell_neighbours.clear();
  fc::complete_icon_grid(regional);
  try {
    fc::set_uniform_geometry(regional);
    FAIL() << "expected GridError";
  } catch (const finecast::GridError& e) {
    EXPECT_NE(std::string(e.what()).find("regional.nc': 300 cells is no R2B<k> size"), std::string::npos) << e.what();
  }
}

TEST(UniformGeometry, TheStretchedR2B4FileGetsTheStandardGeometryInItsOwnCellOrder) {
  if (!fti::exists(fti::kIconFile)) GTEST_SKIP() << fti::kIconFile << " (libncarg-data) is not installed";
  const fc::IconGrid file = fc::read_icon_grid(fti::kIconFile);
  const fc::IconGrid g = fc::read_icon_grid(fti::kIconFile, fc::IconGeometry::kUniform);
  ASSERT_EQ(g.n_cells, file.n_cells);
  EXPECT_EQ(g.cell_vertices, file.cell_vertices);
  EXPECT_EQ(g.cell_neighbours, file.cell_neighbours);
  EXPECT_EQ(g.parent_cell, file.parent_cell);
  expect_standard_pentagons(g, 1e-9);
  // The file's pentagons are not where the uniform grid has them (its cells are stretched).
  const auto d = degrees(file);
  double off = 0;
  for (int64_t v = 0; v < file.n_vertices; ++v)
    if (d[v] == 5) off = std::fmax(off, angle_deg(vertex(file, v), vertex(g, v)));
  EXPECT_GT(off, 5.0);
  double area = 0;
  for (double a : g.cell_area) area += a;
  EXPECT_NEAR(area / (4 * sphere::kPi * sphere::kEarthRadius * sphere::kEarthRadius), 1.0, 1e-9);
  // The uniform grid's areas vary by less than a factor 1.5 (the file's by 18).
  const auto [lo, hi] = std::minmax_element(g.cell_area.begin(), g.cell_area.end());
  EXPECT_LT(*hi / *lo, 1.5);
}

TEST(UniformGeometry, GridGeometryReachesTheGridReaderThroughTheConditioningSpec) {
  if (!fti::exists(fti::kIconFile)) GTEST_SKIP() << fti::kIconFile << " (libncarg-data) is not installed";
  fc::ConditioningSpec spec;
  spec.grid.type = fc::GridType::kIcon;
  spec.grid.file = fti::kIconFile;
  spec.grid.coarse_level = 0;
  fc::StoredSpec stored = fc::read_spec(fc::spec_record(spec), {}, "ck.h5");
  EXPECT_EQ(stored.spec.grid.geometry, fc::IconGeometry::kFile);
  spec.grid.geometry = fc::IconGeometry::kUniform;
  const finecast::schema::Record record = fc::spec_record(spec);
  EXPECT_EQ(std::get<std::string>(record.at("grid.geometry")), "uniform");
  stored = fc::read_spec(record, {}, "ck.h5");
  EXPECT_EQ(stored.spec.grid.geometry, fc::IconGeometry::kUniform);
  fc::ConditioningSpec other = spec;
  other.grid.geometry = fc::IconGeometry::kFile;
  EXPECT_NE(fc::resume_differences(stored, other, "run.yaml").find("grid.geometry"), std::string::npos);

  const fc::ConditioningGrid cg = fc::read_conditioning_grid(spec, "test", true);
  const fc::IconGrid want = fc::read_icon_grid(fti::kIconFile, fc::IconGeometry::kUniform);
  ASSERT_TRUE(cg.icon.has_value());
  EXPECT_EQ(cg.icon->clon, want.clon);
  EXPECT_EQ(cg.icon->clat, want.clat);
  EXPECT_NE(cg.text.find("uniform geometry"), std::string::npos) << cg.text;
  ASSERT_EQ(cg.output.clon.size(), want.clon.size());  // the output's coordinates are the uniform ones
  EXPECT_EQ(cg.output.clon, want.clon);
  EXPECT_EQ(fc::parse_icon_geometry("uniform", "x"), fc::IconGeometry::kUniform);
  EXPECT_EQ(fc::parse_icon_geometry("", "x"), fc::IconGeometry::kFile);  // an option not given
  EXPECT_THROW(fc::parse_icon_geometry("stretched", "x"), finecast::ConfigError);
}
