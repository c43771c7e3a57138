// SPDX-License-Identifier: BSD-3-Clause
// What a patch sees: context rings (lat-lon squares with replicated edges and wrapped
// longitudes; ICON breadth-first rings that do not depend on the numbering), the documented
// context order with position-encoding fields (rings, features, orography, static covariates),
// the static covariates' normalisation, and the residual base, which must be finecast-eval's
// bicubic_cons on lat-lon blocks and idw_cons on ICON patches and keep every coarse mean, and
// with patch.residual: regression recover known covariate coefficients from the contexts.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <random>
#include <vector>

#include "common/error.hpp"
#include "eval/baselines.hpp"
#include "eval/cell_baselines.hpp"
#include "eval/regression.hpp"
#include "coupling/conditioning/conditioning_spec.hpp"
#include "coupling/grid/context_stencil.hpp"
#include "coupling/grid/local_slopes.hpp"
#include "coupling/grid/icon_hierarchy.hpp"
#include "coupling/grid/icosahedral_grid.hpp"
#include "coupling/grid/latlon_grid.hpp"
#include "coupling/grid/patch_regression.hpp"
#include "coupling/grid/patches.hpp"
#include "coupling/grid/static_covariates.hpp"
#include "eval/cli/icon_levels.hpp"
#include "tests/eval_test_util.hpp"

namespace fc = finecast::coupling;
namespace fe = finecast::eval;
using finecast::testing_eval::kBicubicCons;

namespace {

/// nlat x nlon cells in blocks of k; block (I, J) holds the constant 1000 I + J, so its coarse
/// value names it.
struct Blocks {
  fc::LatLonGrid grid;
  fc::PatchMap map;
  std::vector<float> field;
  Blocks(int nlat, int nlon, int k, bool global) {
    std::vector<double> lat, lon;
    for (int i = 0; i < nlat; ++i) lat.push_back(-40.0 + 80.0 * (i + 0.5) / nlat);
    for (int j = 0; j < nlon; ++j) lon.push_back((global ? 360.0 / nlon : 1.0) * j);
    grid = fc::make_latlon_grid(lat, lon);
    map = fc::latlon_patch_map(grid, k);
    for (int i = 0; i < nlat; ++i)
      for (int j = 0; j < nlon; ++j) field.push_back(static_cast<float>(1000 * (i / k) + j / k));
  }
  /// finecast-eval's layout of the same grid in blocks of k.
  fe::BlockLayout layout(int k) const {
    fe::BlockLayout L;
    L.ny = static_cast<int>(grid.nlat);
    L.nx = static_cast<int>(grid.nlon);
    L.k = k;
    L.weight = grid.cell_area;
    return L;
  }
};

int64_t clamp(int64_t i, int64_t n) { return std::max<int64_t>(0, std::min(n - 1, i)); }

}  // namespace

TEST(ContextRings, LatLonRingsAreTheSquareAroundRowMajorWithEdgesReplicated) {
  Blocks b(12, 16, 2, false);  // 6 x 8 blocks, regional
  fc::PatchOptions o;
  o.static_features = false;
  o.rings = 2;
  fc::prepare_patch_map(b.map, o.rings, false);
  fc::Patches p;
  fc::extract_patches(b.map, {b.field.data()}, nullptr, o, p);
  ASSERT_EQ(p.C, 25);  // the block and the 24 others of the 5 x 5 square
  for (int64_t I = 0; I < 6; ++I)
    for (int64_t J = 0; J < 8; ++J) {
      const float* ctx = &p.context[(I * 8 + J) * p.C];
      ASSERT_EQ(ctx[0], 1000 * I + J);
      int slot = 1;
      for (int di = -2; di <= 2; ++di)
        for (int dj = -2; dj <= 2; ++dj) {
          if (di == 0 && dj == 0) continue;
          ASSERT_EQ(ctx[slot++], 1000 * clamp(I + di, 6) + clamp(J + dj, 8)) << I << "," << J << " " << di << "," << dj;
        }
    }
}

TEST(ContextRings, GlobalLatLonRingsWrapInLongitude) {
  Blocks b(8, 16, 4, true);  // 2 x 4 blocks around the globe
  fc::PatchOptions o;
  o.static_features = false;
  o.rings = 1;
  fc::prepare_patch_map(b.map, o.rings, false);
  ASSERT_TRUE(b.map.wrap_columns);
  fc::Patches p;
  fc::extract_patches(b.map, {b.field.data()}, nullptr, o, p);
  // Block (1, 0): the row above is row 0, the row below replicates row 1, the column left wraps to 3.
  const float* ctx = &p.context[4 * p.C];
  // Square order: (-1,-1) (-1,0) (-1,1) (0,-1) (0,1) (1,-1) (1,0) (1,1), the block itself first.
  EXPECT_EQ(ctx[0], 1000);
  EXPECT_EQ(std::vector<float>(ctx + 1, ctx + 9), (std::vector<float>{3, 0, 1, 1003, 1001, 1003, 1000, 1001}));
}

TEST(ContextRings, ContextOrderIsFieldsWithRingsFeaturesOrographyCovariateMeansThenAnomalies) {
  Blocks b(8, 8, 2, false);  // 4 x 4 blocks of 4 cells
  const int64_t n_fine = 64, P = 4;
  // A second field, the orography and two covariates whose values encode their cell.
  std::vector<float> second(n_fine), oro(n_fine), s0(n_fine), s1(n_fine);
  for (int64_t i = 0; i < n_fine; ++i) {
    second[i] = b.field[i] + 0.5f;
    oro[i] = 7.0f;
    s0[i] = static_cast<float>(10000 + i);
    s1[i] = static_cast<float>(20000 + i);
  }
  fc::PatchOptions o;
  o.rings = 1;
  o.orography = true;
  o.n_static = 2;
  o.target = 1;
  fc::prepare_patch_map(b.map, o.rings, true);
  fc::Patches p;
  fc::extract_patches(b.map, {b.field.data(), second.data()}, oro.data(), {s0.data(), s1.data()}, o, p);
  const int off = fc::static_offset(b.map, 2, o);
  ASSERT_EQ(off, 2 * 9 + 3 + 1);
  ASSERT_EQ(p.C, off + 2 * (1 + 2 * P));
  ASSERT_EQ(fc::static_channels(o), 4);
  // The conservative interpolant of each covariate's block means, for the deviations.
  std::vector<float> m0s(static_cast<size_t>(b.map.n_coarse)), m1s(m0s.size()),
      i0(static_cast<size_t>(b.map.n_coarse * P)), i1(i0.size());
  fc::coarsen(b.map, s0.data(), m0s.data());
  fc::coarsen(b.map, s1.data(), m1s.data());
  fc::interpolate_patches(b.map, m0s.data(), i0.data());
  fc::interpolate_patches(b.map, m1s.data(), i1.data());
  for (int64_t c = 0; c < b.map.n_coarse; ++c) {
    const float* ctx = &p.context[c * p.C];
    EXPECT_EQ(ctx[0], b.field[b.map.fine_of_patch[c * P]]);         // field 0, then its 8 ring cells
    EXPECT_EQ(ctx[9], b.field[b.map.fine_of_patch[c * P]] + 0.5f);  // field 1
    EXPECT_NEAR(ctx[18], std::sin(b.map.coarse_lat[c]), 1e-6);      // position features
    EXPECT_EQ(ctx[21], 7.0f);                                       // orography
    double m0 = 0, m1 = 0;
    for (int k = 0; k < P; ++k) {
      m0 += b.map.fine_weight[c * P + k] * s0[b.map.fine_of_patch[c * P + k]];
      m1 += b.map.fine_weight[c * P + k] * s1[b.map.fine_of_patch[c * P + k]];
    }
    EXPECT_NEAR(ctx[off], m0, 1e-2);  // block means of both covariates
    EXPECT_NEAR(ctx[off + 1], m1, 1e-2);
    // Then covariate 0's anomalies and deviations slot by slot, then covariate 1's.
    for (int k = 0; k < P; ++k) {
      const int64_t cell = b.map.fine_of_patch[c * P + k];
      EXPECT_NEAR(ctx[off + 2 + k], s0[cell] - m0, 1e-2) << "patch " << c << " slot " << k;
      EXPECT_NEAR(ctx[off + 2 + P + k], s0[cell] - i0[c * P + k], 1e-2);
      EXPECT_NEAR(ctx[off + 2 + 2 * P + k], s1[cell] - m1, 1e-2);
      EXPECT_NEAR(ctx[off + 2 + 3 * P + k], s1[cell] - i1[c * P + k], 1e-2);
    }
    // The target is field 1: its fine values and coarse value.
    EXPECT_EQ(p.fine[c * P], second[b.map.fine_of_patch[c * P]]);
    EXPECT_EQ(p.coarse[c], ctx[9]);
  }
  // A missing covariate value makes its patch invalid.
  s1[b.map.fine_of_patch[5 * P + 2]] = NAN;
  fc::extract_patches(b.map, {b.field.data(), second.data()}, oro.data(), {s0.data(), s1.data()}, o, p);
  EXPECT_EQ(p.valid[5], 0);
  EXPECT_EQ(p.n_invalid, 1);
  // The map must be prepared for the rings it is asked for.
  o.rings = 2;
  EXPECT_THROW(fc::extract_patches(b.map, {b.field.data(), second.data()}, oro.data(), {s0.data(), s1.data()}, o, p),
               finecast::InternalError);
}

// The covariates' interpolant is kept from one step to the next (they are static in a run), but a
// call with other covariates gets theirs: the same contexts as a first call.
TEST(StaticCovariates, AStepWithOtherCovariatesGetsTheirInterpolantNotTheLastOnes) {
  Blocks b(8, 8, 2, false);
  const int64_t n_fine = 64;
  std::vector<float> s0(n_fine), s1(n_fine);
  for (int64_t i = 0; i < n_fine; ++i) {
    s0[i] = static_cast<float>(i % 8) * 3.0f;
    s1[i] = static_cast<float>(i / 8) * 5.0f + static_cast<float>(i % 3);
  }
  fc::PatchOptions o;
  o.n_static = 1;
  o.interp_base = true;
  fc::prepare_patch_map(b.map, o.rings, true);
  auto fresh = [&](const std::vector<float>& s) {
    fc::Patches q;
    fc::extract_patches(b.map, {b.field.data()}, nullptr, {s.data()}, o, q);
    return q.context;
  };
  fc::Patches p;
  fc::extract_patches(b.map, {b.field.data()}, nullptr, {s0.data()}, o, p);
  const std::vector<float> first = p.context;
  fc::extract_patches(b.map, {b.field.data()}, nullptr, {s0.data()}, o, p);
  EXPECT_EQ(p.context, first) << "the same covariates, the same contexts";
  fc::extract_patches(b.map, {b.field.data()}, nullptr, {s1.data()}, o, p);
  EXPECT_EQ(p.context, fresh(s1)) << "other covariates kept the last ones' interpolant";
  EXPECT_NE(p.context, first);
}

TEST(ContextRings, IconRingsDoNotDependOnTheNumbering) {
  const fc::IconGrid plain = fc::make_icosahedral_grid(3, 0);
  const fc::IconGrid shuffled = fc::make_icosahedral_grid(3, 20240611);
  fc::PatchMap a = fc::icon_patch_map(plain, 1), b = fc::icon_patch_map(shuffled, 1);
  ASSERT_EQ(fc::ring_count(a, 2), 9);
  ASSERT_EQ(fc::ring_count(a, 3), 18);
  fc::prepare_patch_map(a, 3, false);
  fc::prepare_patch_map(b, 3, false);
  // A field of the position: every coarse value names its cell's place on the sphere.
  auto field = [](const fc::IconGrid& g) {
    std::vector<float> f(static_cast<size_t>(g.n_cells));
    for (int64_t i = 0; i < g.n_cells; ++i)
      f[i] = static_cast<float>(std::cos(g.clat[i]) * std::cos(g.clon[i]) +
                                2 * std::cos(g.clat[i]) * std::sin(g.clon[i]) + 4 * std::sin(g.clat[i]));
    return f;
  };
  const std::vector<float> fa = field(plain), fb = field(shuffled);
  fc::PatchOptions o;
  o.rings = 3;
  fc::Patches pa, pb;
  fc::extract_patches(a, {fa.data()}, nullptr, o, pa);
  fc::extract_patches(b, {fb.data()}, nullptr, o, pb);
  ASSERT_EQ(pa.C, 1 + 18 + 3);
  std::map<std::pair<double, double>, int64_t> by_centre;
  for (int64_t k = 0; k < a.n_coarse; ++k) by_centre[{a.coarse_lon[k], a.coarse_lat[k]}] = k;
  int64_t short_rings = 0;
  for (int64_t k = 0; k < b.n_coarse; ++k) {
    const int64_t ka = by_centre.at({b.coarse_lon[k], b.coarse_lat[k]});
    for (int j = 0; j < pa.C; ++j)
      ASSERT_EQ(pb.context[k * pb.C + j], pa.context[ka * pa.C + j]) << "patch " << k << " context " << j;
    // The ring cells are distinct and ring 1 is the edge neighbours in slot order.
    const int64_t* ring = &a.ring_cells[ka * 18];
    for (int s = 0; s < 3; ++s) EXPECT_EQ(ring[s], a.neighbours[ka * 3 + s]);
    short_rings += ring[17] < 0;
  }
  // Near the 12 pentagon points three rings hold fewer cells than on a regular lattice.
  EXPECT_GT(short_rings, 0);
  EXPECT_LT(short_rings, a.n_coarse / 2);
}

TEST(ResidualBase, LatLonBaseIsFinecastEvalsBicubicConsAndKeepsEveryCoarseMean) {
  Blocks b(24, 32, 4, false);
  std::mt19937 rng(5);
  std::normal_distribution<float> noise(0.0f, 1.0f);
  for (size_t i = 0; i < b.field.size(); ++i)
    b.field[i] = 280.0f + 0.3f * static_cast<float>(i % 32) + 2.0f * noise(rng);
  fc::PatchOptions o;
  o.interp_base = true;
  fc::prepare_patch_map(b.map, 0, true);
  fc::Patches p;
  fc::extract_patches(b.map, {b.field.data()}, nullptr, o, p);
  fe::BlockLayout L;
  L.ny = 24;
  L.nx = 32;
  L.k = 4;
  L.weight = b.grid.cell_area;
  std::vector<double> coarse(p.coarse.begin(), p.coarse.end());
  const std::vector<double> want = fe::run_baseline(L, coarse, {"bicubic_cons", fe::Interp::kBicubic, true});
  const int64_t P = b.map.patch_size;
  for (int64_t c = 0; c < b.map.n_coarse; ++c) {
    double mean = 0;
    for (int64_t k = 0; k < P; ++k) {
      const int64_t cell = b.map.fine_of_patch[c * P + k];
      ASSERT_NEAR(p.base[c * P + k], want[cell], 2e-4) << "patch " << c << " slot " << k;
      ASSERT_NEAR(p.residual[c * P + k], p.fine[c * P + k] - p.base[c * P + k], 1e-6);
      mean += b.map.fine_weight[c * P + k] * p.base[c * P + k];
    }
    ASSERT_NEAR(mean, p.coarse[c], 1e-4);
  }
}

TEST(ResidualBase, IconBaseIsFinecastEvalsIdwCons) {
  const fc::IconGrid g = fc::make_icosahedral_grid(4, 3);
  fc::PatchMap map = fc::icon_patch_map(g, 1);
  fc::prepare_patch_map(map, 0, true);
  std::vector<float> f(static_cast<size_t>(g.n_cells));
  for (int64_t i = 0; i < g.n_cells; ++i)
    f[i] = static_cast<float>(280 + 20 * std::sin(3 * g.clat[i]) * std::cos(2 * g.clon[i]));
  fc::PatchOptions o;
  o.interp_base = true;
  fc::Patches p;
  fc::extract_patches(map, {f.data()}, nullptr, o, p);
  finecast::eval::cli::IconLevels levels(g);
  const fe::CellLayout L(levels.layout_spec(1));
  const fe::CellInterpolator interp(L);
  const std::vector<double> want =
      interp.run(std::vector<double>(p.coarse.begin(), p.coarse.end()), {"idw_cons", fe::CellInterp::kIdw, true});
  const int64_t P = map.patch_size;
  for (int64_t c = 0; c < map.n_coarse; ++c)
    for (int64_t k = 0; k < P; ++k)
      ASSERT_NEAR(p.base[c * P + k], want[map.fine_of_patch[c * P + k]], 2e-4) << "patch " << c << " slot " << k;
}

// patch.interpolant bspline is finecast-eval's bspline_cons up to the cut of its weights
// (kBsplineReach blocks beyond the bicubic stencil: under 1e-4 of the field's variation): on a
// regional grid wider than the stencil, on a global one (longitudes wrap), and on one narrower than
// the stencil (every block in it). And it is not the bicubic base.
TEST(ResidualBase, LatLonBsplineBaseIsFinecastEvalsBsplineCons) {
  struct Case {
    int nlat, nlon, k;
    bool global;
  };
  for (const Case& c : {Case{48, 160, 4, false}, Case{40, 144, 4, true}, Case{24, 30, 3, false}}) {
    Blocks b(c.nlat, c.nlon, c.k, c.global);
    std::mt19937 rng(11);
    std::normal_distribution<float> noise(0.0f, 1.0f);
    for (size_t i = 0; i < b.field.size(); ++i)
      b.field[i] = 280.0f + 5.0f * std::sin(0.05f * static_cast<float>(i % c.nlon)) + 2.0f * noise(rng);
    fc::PatchOptions o;
    o.interp_base = true;
    fc::prepare_patch_map(b.map, 0, true, fc::Interpolant::kBspline);
    EXPECT_EQ(b.map.base.kind, fc::Interpolant::kBspline);
    fc::Patches p;
    fc::extract_patches(b.map, {b.field.data()}, nullptr, o, p);
    fe::BlockLayout L;
    L.ny = c.nlat;
    L.nx = c.nlon;
    L.k = c.k;
    L.periodic_x = c.global;
    L.weight = b.grid.cell_area;
    const std::vector<double> coarse(p.coarse.begin(), p.coarse.end());
    const std::vector<double> want = fe::run_baseline(L, coarse, {"bspline_cons", fe::Interp::kBspline, true});
    const std::vector<double> bicubic = fe::run_baseline(L, coarse, kBicubicCons);
    const int64_t P = b.map.patch_size;
    double worst = 0.0, apart = 0.0;
    for (int64_t q = 0; q < b.map.n_coarse; ++q)
      for (int64_t k = 0; k < P; ++k) {
        const int64_t cell = b.map.fine_of_patch[q * P + k];
        worst = std::max(worst, std::abs(p.base[q * P + k] - want[cell]));
        apart = std::max(apart, std::abs(p.base[q * P + k] - bicubic[cell]));
      }
    EXPECT_LT(worst, 2e-3) << c.nlat << " x " << c.nlon << " in blocks of " << c.k;
    EXPECT_GT(apart, 0.1);
  }
}

// patch.interpolant linear is finecast-eval's linear_cons (a least-squares gradient from the edge
// neighbours), and reproduces a field linear in 3-D position exactly.
TEST(ResidualBase, IconLinearBaseIsFinecastEvalsLinearCons) {
  const fc::IconGrid g = fc::make_icosahedral_grid(4, 3);
  fc::PatchMap map = fc::icon_patch_map(g, 1);
  fc::prepare_patch_map(map, 0, true, fc::Interpolant::kLinear);
  EXPECT_EQ(map.base.kind, fc::Interpolant::kLinear);
  std::vector<float> f(static_cast<size_t>(g.n_cells)), plane(f.size());
  for (int64_t i = 0; i < g.n_cells; ++i) {
    f[i] = static_cast<float>(280 + 20 * std::sin(3 * g.clat[i]) * std::cos(2 * g.clon[i]));
    const double x = std::cos(g.clat[i]) * std::cos(g.clon[i]), z = std::sin(g.clat[i]);
    plane[i] = static_cast<float>(10.0 * x - 4.0 * z);
  }
  fc::PatchOptions o;
  o.interp_base = true;
  fc::Patches p, flat;
  fc::extract_patches(map, {f.data()}, nullptr, o, p);
  fc::extract_patches(map, {plane.data()}, nullptr, o, flat);
  finecast::eval::cli::IconLevels levels(g);
  const fe::CellLayout L(levels.layout_spec(1));
  const fe::CellInterpolator interp(L);
  const std::vector<double> coarse(p.coarse.begin(), p.coarse.end());
  const std::vector<double> want = interp.run(coarse, {"linear_cons", fe::CellInterp::kLinear, true});
  const std::vector<double> idw = interp.run(coarse, {"idw_cons", fe::CellInterp::kIdw, true});
  const int64_t P = map.patch_size;
  double apart = 0.0;
  for (int64_t c = 0; c < map.n_coarse; ++c)
    for (int64_t k = 0; k < P; ++k) {
      const int64_t cell = map.fine_of_patch[c * P + k];
      ASSERT_NEAR(p.base[c * P + k], want[cell], 2e-4) << "patch " << c << " slot " << k;
      ASSERT_NEAR(flat.base[c * P + k], plane[cell], 2e-4) << "patch " << c << " slot " << k;
      apart = std::max(apart, std::abs(p.base[c * P + k] - idw[cell]));
    }
  EXPECT_GT(apart, 0.1);
}

// patch.interpolant idw_linear is finecast-eval's idw_linear_cons: at every fine cell the mean of
// the idw and linear bases (both conservative, so their mean is too).
TEST(ResidualBase, IconIdwLinearBaseIsTheMeanOfIdwAndLinear) {
  const fc::IconGrid g = fc::make_icosahedral_grid(4, 3);
  std::vector<float> f(static_cast<size_t>(g.n_cells));
  for (int64_t i = 0; i < g.n_cells; ++i)
    f[i] = static_cast<float>(280 + 20 * std::sin(3 * g.clat[i]) * std::cos(2 * g.clon[i]));
  fc::PatchOptions o;
  o.interp_base = true;
  auto base_of = [&](fc::Interpolant kind) {
    fc::PatchMap map = fc::icon_patch_map(g, 1);
    fc::prepare_patch_map(map, 0, true, kind);
    EXPECT_EQ(map.base.kind, kind);
    fc::Patches p;
    fc::extract_patches(map, {f.data()}, nullptr, o, p);
    return p;
  };
  const fc::Patches idw = base_of(fc::Interpolant::kIdw), lin = base_of(fc::Interpolant::kLinear),
                    both = base_of(fc::Interpolant::kIdwLinear);
  finecast::eval::cli::IconLevels levels(g);
  const fe::CellLayout L(levels.layout_spec(1));
  const fe::CellInterpolator interp(L);
  const std::vector<double> coarse(both.coarse.begin(), both.coarse.end());
  const std::vector<double> want = interp.run(coarse, fe::cell_baseline("idw_linear_cons"));
  const fc::PatchMap map = fc::icon_patch_map(g, 1);
  const int64_t P = map.patch_size;
  double apart = 0.0;
  for (int64_t c = 0; c < map.n_coarse; ++c) {
    double mean = 0.0;
    for (int64_t k = 0; k < P; ++k) {
      const std::size_t at = static_cast<std::size_t>(c * P + k);
      ASSERT_NEAR(both.base[at], 0.5 * (idw.base[at] + lin.base[at]), 2e-4) << "patch " << c << " slot " << k;
      ASSERT_NEAR(both.base[at], want[map.fine_of_patch[at]], 2e-4) << "patch " << c << " slot " << k;
      apart = std::max(apart, static_cast<double>(std::abs(both.base[at] - lin.base[at])));
      mean += map.fine_weight[at] * both.base[at];
    }
    ASSERT_NEAR(mean, both.coarse[c], 2e-4) << "patch " << c << ": not conservative";
  }
  EXPECT_GT(apart, 0.05) << "idw_linear is the linear base";
}

// An interpolant of the other grid type is a ConfigError naming patch.interpolant and the fix.
TEST(ResidualBase, AnInterpolantOfTheOtherGridIsRefused) {
  Blocks b(8, 8, 2, false);
  try {
    fc::prepare_patch_map(b.map, 0, true, fc::Interpolant::kLinear);
    FAIL() << "linear on lat-lon blocks was accepted";
  } catch (const finecast::ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("patch.interpolant linear interpolates ICON cells"), std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("use bicubic or bspline"), std::string::npos) << e.what();
  }
  fc::PatchMap icon = fc::icon_patch_map(fc::make_icosahedral_grid(2, 1), 0);
  EXPECT_THROW(fc::prepare_patch_map(icon, 0, true, fc::Interpolant::kBspline), finecast::ConfigError);
  EXPECT_EQ(fc::resolve_interpolant(fc::Interpolant::kAuto, true), fc::Interpolant::kBicubic);
  EXPECT_EQ(fc::resolve_interpolant(fc::Interpolant::kAuto, false), fc::Interpolant::kIdw);
}

TEST(StaticCovariates, NormalisationIsAreaWeightedAndSurvivesItsTextForm) {
  Blocks b(8, 8, 2, false);
  std::vector<float> h(64);
  for (int i = 0; i < 64; ++i) h[i] = static_cast<float>(100 * (i % 8));
  const fc::StaticNorm n = fc::static_normalisation(b.map, h.data(), "test");
  EXPECT_NEAR(n.mean, 350.0, 1.0);  // columns 0..7 weighted alike in every row
  EXPECT_NEAR(n.scale, 229.1, 0.5);
  std::vector<float> out(64);
  fc::normalise_static(n, h.data(), out.data(), 64);
  EXPECT_NEAR(out[7], (700 - n.mean) / n.scale, 1e-6);
  const auto back = fc::parse_static_norms(fc::format_static_norms({n, {1.5, 2.0}}), "x");
  ASSERT_EQ(back.size(), 2u);
  EXPECT_DOUBLE_EQ(back[0].mean, n.mean);
  EXPECT_DOUBLE_EQ(back[0].scale, n.scale);
  EXPECT_DOUBLE_EQ(back[1].scale, 2.0);
  EXPECT_THROW(fc::parse_static_norms("1 0", "x"), finecast::ConfigError);
  std::vector<float> nan(64, NAN);
  EXPECT_THROW(fc::static_normalisation(b.map, nan.data(), "all missing"), finecast::GridError);
}

// patch.residual: regression. A fine field built as bicubic_cons of its block means plus known
// multiples of two covariates' predictors (finecast-eval's regression_cons predictors): the fit
// from the patches' contexts recovers the multiples, also when two "trainers" each add up half
// of the patches and sum their equations, and the base then is the field itself, whether the fit
// is added to built patches or by extract_patches.
TEST(RegressionBase, RecoversKnownCoefficientsFromTheContextsAndLeavesNoResidual) {
  Blocks b(24, 32, 4, false);
  std::mt19937 rng(7);
  std::normal_distribution<double> noise(0.0, 1.0);
  std::vector<double> coarse(static_cast<size_t>(b.map.n_coarse)), x1(b.field.size()), x2(b.field.size());
  for (auto& c : coarse) c = 280.0 + 3.0 * noise(rng);
  for (size_t i = 0; i < x1.size(); ++i) {
    x1[i] = 0.01 * static_cast<double>(i % 32) + noise(rng);  // a ramp plus noise, like a height
    x2[i] = 0.5 * noise(rng);
  }
  fe::BlockLayout L;
  L.ny = 24;
  L.nx = 32;
  L.k = 4;
  L.weight = b.grid.cell_area;
  const fe::Predictors pred = fe::block_predictors(L, {"a", "b"}, {x1.data(), x2.data()});
  const std::vector<double> coef = {-0.65, 0.2, 1.5, -0.8};
  fe::RegressionFit known;
  known.coef = coef;
  const std::vector<double> truth = fe::apply_regression(known, pred, fe::run_baseline(L, coarse, kBicubicCons));
  for (size_t i = 0; i < truth.size(); ++i) b.field[i] = static_cast<float>(truth[i]);
  const std::vector<float> f1(x1.begin(), x1.end()), f2(x2.begin(), x2.end());

  fc::PatchOptions o;
  o.interp_base = true;
  o.n_static = 2;
  fc::prepare_patch_map(b.map, 0, true);
  fc::Patches p;
  fc::extract_patches(b.map, {b.field.data()}, nullptr, {f1.data(), f2.data()}, o, p);
  ASSERT_EQ(fc::regression_predictors(o), 4);
  // Two halves of the patches, as two trainer ranks hold them, summed.
  std::vector<uint8_t> first_half(static_cast<size_t>(p.n), 0), second_half(static_cast<size_t>(p.n), 0);
  for (int64_t c = 0; c < p.n; ++c) (c < p.n / 2 ? first_half : second_half)[c] = 1;
  const std::vector<std::string> names = fc::regression_names({"a", "b"}, o);
  EXPECT_EQ(names, pred.names);
  fc::RegressionFitter eq(names), other(names);
  fc::add_regression_data(b.map, 1, o, p, first_half.data(), eq);
  fc::add_regression_data(b.map, 1, o, p, second_half.data(), other);
  for (size_t i = 0; i < eq.sums().size(); ++i) eq.sums()[i] += other.sums()[i];
  EXPECT_EQ(eq.n_points(), p.n * p.P);
  const fc::RegressionFit fit = eq.solve("test");
  for (size_t j = 0; j < coef.size(); ++j) EXPECT_NEAR(fit.coef[j], coef[j], 2e-4) << "coefficient " << j;
  EXPECT_GT(fit.residual_rms, 0.5);
  EXPECT_LT(fit.fitted_rms, 1e-3);

  // Applied to the patches already built (the plugin's first step), and by extract_patches once
  // the options hold the coefficients (every later step, finecast-downscale): the same base.
  o.regression = fit.coef;
  fc::add_regression_base(b.map, 1, o, p);
  fc::Patches q;
  fc::extract_patches(b.map, {b.field.data()}, nullptr, {f1.data(), f2.data()}, o, q);
  for (int64_t i = 0; i < p.n * p.P; ++i) {
    ASSERT_NEAR(p.base[i], p.fine[i], 2e-3) << "slot " << i;
    ASSERT_NEAR(p.residual[i], 0.0f, 2e-3) << "slot " << i;
    ASSERT_EQ(q.base[i], p.base[i]) << "slot " << i;
    ASSERT_EQ(q.residual[i], p.residual[i]) << "slot " << i;
  }
  // The coefficients as a checkpoint records them, and what it refuses.
  EXPECT_EQ(fc::parse_regression(fc::format_regression(fit.coef), 4, "ckpt"), fit.coef);
  EXPECT_THROW(fc::parse_regression(fc::format_regression(fit.coef), 2, "ckpt"), finecast::CheckpointError);
  EXPECT_THROW(fc::parse_regression("1,x,2,3", 4, "ckpt"), finecast::CheckpointError);
  EXPECT_THROW(fc::parse_regression("1,nan,2,3", 4, "ckpt"), finecast::CheckpointError);
}

namespace {

/// The plugin's in-situ fit of patch.residual regression on `truth` and one covariate `h` (both
/// fine fields on `map`'s grid) with patch.interpolant `kind`: the covariate normalised as the
/// plugin does, the patches built, the fit per unit of the raw covariate.
fc::RegressionFit plugin_fit(fc::PatchMap& map, const std::vector<double>& truth, const std::vector<double>& h,
                             fc::Interpolant kind = fc::Interpolant::kAuto) {
  const std::vector<float> tf(truth.begin(), truth.end()), hf(h.begin(), h.end());
  const fc::StaticNorm norm = fc::static_normalisation(map, hf.data(), "h");
  std::vector<float> hn(hf.size());
  fc::normalise_static(norm, hf.data(), hn.data(), static_cast<int64_t>(hn.size()));
  fc::PatchOptions o;
  o.interp_base = true;
  o.n_static = 1;
  fc::prepare_patch_map(map, 0, true, kind);
  fc::Patches p;
  fc::extract_patches(map, {tf.data()}, nullptr, {hn.data()}, o, p);
  fc::RegressionFitter fitter(fc::regression_names({"h"}, o));
  fc::add_regression_data(map, 1, o, p, nullptr, fitter);
  return fc::per_covariate_unit(fitter.solve("the patches"), {norm.scale});
}

/// finecast-eval's fit of regression_cons on the same fields, `pred` its predictors of h, `base`
/// its conservative interpolant of the truth's block means, `w` the cells' areas.
fc::RegressionFit eval_fit(const fe::Predictors& pred, const std::vector<double>& truth,
                           const std::vector<double>& base, const std::vector<double>& w) {
  std::vector<double> residual(truth.size());
  for (size_t i = 0; i < truth.size(); ++i) residual[i] = truth[i] - base[i];
  fc::RegressionFitter fitter(pred.names);
  fitter.add(pred, residual, w, {});
  return fitter.solve("the truth");
}

void expect_same_fit(const fc::RegressionFit& plugin, const fc::RegressionFit& eval, const std::string& grid) {
  ASSERT_EQ(plugin.names, eval.names) << grid;
  EXPECT_EQ(plugin.n_points, eval.n_points) << grid;
  for (size_t j = 0; j < eval.coef.size(); ++j)
    EXPECT_NEAR(plugin.coef[j], eval.coef[j], 2e-3 * std::abs(eval.coef[j])) << grid << ": " << eval.names[j];
  EXPECT_NEAR(plugin.residual_rms, eval.residual_rms, 1e-3 * eval.residual_rms) << grid;
  EXPECT_NEAR(plugin.fitted_rms, eval.fitted_rms, 1e-3 * eval.fitted_rms) << grid;
}

}  // namespace

// One regression for the plugin and finecast-eval: on the same data (a field whose response to
// its covariate grows toward the poles, plus noise, so that no fit is exact and the weighting
// matters), the plugin's in-situ fit of patch.residual regression from the patches' contexts
// (normalised covariate, float) and finecast-eval's regression_cons fit from the raw fields give
// the same coefficients per unit of the covariate, fit points and residual RMS, on lat-lon blocks
// (bicubic_cons base; with patch.interpolant bspline, finecast-eval --regression-interpolant
// bspline's bspline_cons) and on ICON patches (idw_cons base; linear: linear_cons): both weigh
// every fine cell by its area.
TEST(RegressionBase, ThePluginsFitIsFinecastEvalsOnTheSameData) {
  std::mt19937 rng(3);
  std::normal_distribution<double> noise(0.0, 1.0);
  // Lat-lon: 24 x 32 cells from 40 S to 40 N in blocks of 4, cell areas from cos 40 to 1.
  Blocks b(24, 32, 4, false);
  std::vector<double> h(b.field.size()), truth(b.field.size());
  for (size_t i = 0; i < h.size(); ++i) h[i] = 200.0 * std::sin(0.7 * static_cast<double>(i)) + 50.0 * noise(rng);
  const fe::BlockLayout L = b.layout(4);
  const fe::Predictors pred = fe::block_predictors(L, {"h"}, {h.data()});
  for (size_t i = 0; i < truth.size(); ++i) {
    const double lat = std::abs(b.grid.lat[i / 32]) / 40.0;
    truth[i] = 280.0 + 0.1 * static_cast<double>(i % 32) - 0.006 * (1 + 3 * lat) * pred.values[1][i] +
               0.002 * pred.values[0][i] + 0.3 * noise(rng);
  }
  const std::vector<double> base = fe::run_baseline(L, fe::block_means(L, truth.data()), kBicubicCons);
  expect_same_fit(plugin_fit(b.map, truth, h), eval_fit(pred, truth, base, L.weight), "lat-lon");
  const fc::Interpolant bspline = fc::Interpolant::kBspline;
  const fe::Predictors bpred = fe::block_predictors(L, {"h"}, {h.data()}, bspline);
  const std::vector<double> bbase =
      fe::run_baseline(L, fe::block_means(L, truth.data()), fe::block_regression_base(bspline));
  expect_same_fit(plugin_fit(b.map, truth, h, bspline), eval_fit(bpred, truth, bbase, L.weight), "lat-lon bspline");

  // ICON: R2B3 cells in R2B1 patches.
  const fc::IconGrid g = fc::make_icosahedral_grid(3, 1);
  fc::PatchMap map = fc::icon_patch_map(g, 1);
  finecast::eval::cli::IconLevels levels(g);
  const fe::CellLayout CL(levels.layout_spec(1));
  const fe::CellInterpolator interp(CL);
  std::vector<double> hi(static_cast<size_t>(g.n_cells)), ti(hi.size()), w(hi.size());
  for (int64_t i = 0; i < g.n_cells; ++i) {
    hi[i] = 300.0 * std::sin(5 * g.clat[i]) * std::cos(3 * g.clon[i]) + 50.0 * noise(rng);
    w[i] = CL.w(i);
  }
  const fe::Predictors ipred = fe::cell_predictors(interp, {"h"}, {hi.data()});
  for (int64_t i = 0; i < g.n_cells; ++i)
    ti[i] = 280 + 20 * std::sin(3 * g.clat[i]) - 0.006 * (1 + 3 * std::abs(std::sin(g.clat[i]))) * ipred.values[1][i] +
            0.3 * noise(rng);
  const std::vector<double> ibase =
      interp.run(fe::patch_means(CL, ti.data()), {"idw_cons", fe::CellInterp::kIdw, true});
  expect_same_fit(plugin_fit(map, ti, hi), eval_fit(ipred, ti, ibase, w), "ICON");
  const fc::Interpolant linear = fc::Interpolant::kLinear;
  const fe::Predictors lpred = fe::cell_predictors(interp, {"h"}, {hi.data()}, linear);
  const std::vector<double> lbase = interp.run(fe::patch_means(CL, ti.data()), fe::cell_regression_base(linear));
  expect_same_fit(plugin_fit(map, ti, hi, linear), eval_fit(lpred, ti, lbase, w), "ICON linear");
}

// patch.global_interpolant: the global regression on an interpolant of its own (linear beside an
// idw_linear base). A fine field built as the linear interpolant of its coarse means plus known
// multiples of two covariates' predictors: the patches carry that interpolant (the base of a
// map prepared with linear, exactly), the fit of the fine values minus it recovers the multiples,
// and a blend with W = 0 centres the members on the field itself, each keeping its deviation.
// The blend toward the base's own interpolant (no global_interp) does not.
TEST(RegressionBase, AGlobalRegressionOnItsOwnInterpolantIsTheBlendsTarget) {
  const fc::IconGrid g = fc::make_icosahedral_grid(4, 3);
  const int64_t n = g.n_cells;
  std::mt19937 rng(11);
  std::normal_distribution<double> noise(0.0, 1.0);
  std::vector<float> f(static_cast<size_t>(n)), x1(f.size()), x2(f.size());
  for (int64_t i = 0; i < n; ++i) {
    f[i] = static_cast<float>(280 + 20 * std::sin(3 * g.clat[i]) * std::cos(2 * g.clon[i]));
    x1[i] = static_cast<float>(std::sin(5 * g.clat[i]) * std::cos(3 * g.clon[i]) + 0.3 * noise(rng));
    x2[i] = static_cast<float>(0.5 * noise(rng));
  }
  fc::PatchOptions o;
  o.interp_base = true;
  o.n_static = 2;
  fc::PatchMap map = fc::icon_patch_map(g, 1), lin = fc::icon_patch_map(g, 1);
  fc::prepare_patch_map(map, 0, true, fc::Interpolant::kIdwLinear, fc::Interpolant::kLinear);
  fc::prepare_patch_map(lin, 0, true, fc::Interpolant::kLinear);
  ASSERT_EQ(map.global_base.kind, fc::Interpolant::kLinear);
  fc::PatchMap same = map;  // the base's own interpolant needs no table of its own
  fc::prepare_patch_map(same, 0, true, fc::Interpolant::kIdwLinear, fc::Interpolant::kIdwLinear);
  EXPECT_EQ(same.global_base.width, 0);
  EXPECT_THROW(fc::prepare_patch_map(same, 0, true, fc::Interpolant::kIdwLinear, fc::Interpolant::kBspline),
               finecast::ConfigError);

  // The predictors have zero patch means, so adding them keeps the coarse means and with them
  // the interpolant: the field below is linear_cons of its own means plus 0.7 x1' - 1.3 x2''.
  fc::Patches p;
  fc::extract_patches(map, {f.data()}, nullptr, {x1.data(), x2.data()}, o, p);
  const int P = p.P, first = fc::static_offset(map, 1, o) + o.n_static;
  const std::vector<double> coef = {0.0, 0.7, 0.0, -1.3};  // anomaly and deviation of each covariate
  std::vector<float> fine(f.size());
  for (int64_t c = 0; c < p.n; ++c) {
    const float* x = p.context.data() + c * p.C + first;
    for (int k = 0; k < P; ++k) {
      double v = p.global_interp[c * P + k];
      for (int j = 0; j < 4; ++j) v += coef[j] * x[(j / 2) * 2 * P + (j % 2) * P + k];
      fine[map.fine_of_patch[c * P + k]] = static_cast<float>(v);
    }
  }
  fc::Patches q, ql;
  fc::extract_patches(map, {fine.data()}, nullptr, {x1.data(), x2.data()}, o, q);
  fc::extract_patches(lin, {fine.data()}, nullptr, {x1.data(), x2.data()}, o, ql);
  ASSERT_EQ(q.global_interp.size(), q.base.size());
  double apart = 0.0;
  for (size_t i = 0; i < q.base.size(); ++i) {
    ASSERT_EQ(q.global_interp[i], ql.base[i]) << "slot " << i << ": not the linear base";
    apart = std::max(apart, static_cast<double>(std::abs(q.global_interp[i] - q.base[i])));
  }
  EXPECT_GT(apart, 0.05) << "the global interpolant is the idw_linear base";

  // The base's fit (on the residual from idw_linear), then the global one on fine - linear.
  const std::vector<std::string> names = fc::regression_names({"a", "b"}, o);
  fc::RegressionFitter base_fit(names), global_fit(names);
  fc::add_regression_data(map, 1, o, q, nullptr, base_fit);
  std::vector<float> target(q.fine.size());
  for (size_t i = 0; i < target.size(); ++i) target[i] = q.fine[i] - q.global_interp[i];
  fc::add_regression_data(map, 1, o, q, nullptr, global_fit, target.data());
  o.regression = base_fit.solve("test").coef;
  o.global_regression = global_fit.solve("test").coef;
  for (size_t j = 0; j < coef.size(); ++j) EXPECT_NEAR(o.global_regression[j], coef[j], 2e-3) << "coefficient " << j;
  fc::add_regression_base(map, 1, o, q);

  // Two members +-1 around the base, blended all the way (W = 0).
  const int64_t M = 2;
  std::vector<float> members(static_cast<size_t>(q.n * M * P));
  for (int64_t c = 0; c < q.n; ++c)
    for (int64_t m = 0; m < M; ++m)
      for (int k = 0; k < P; ++k) members[(c * M + m) * P + k] = q.base[c * P + k] + (m == 0 ? 1.0f : -1.0f);
  o.global_blend = 0.0;
  std::vector<float> own = members, base_own = members;
  fc::blend_toward_global(map, 1, o, q, M, own.data());
  fc::Patches without = q;
  without.global_interp.clear();
  fc::blend_toward_global(map, 1, o, without, M, base_own.data());
  double off = 0.0;
  for (int64_t c = 0; c < q.n; ++c)
    for (int k = 0; k < P; ++k) {
      const float* a = &own[(c * M) * P + k];
      ASSERT_NEAR(0.5 * (a[0] + a[P]), q.fine[c * P + k], 2e-3) << "patch " << c << " slot " << k;
      ASSERT_NEAR(a[0] - a[P], 2.0f, 1e-4) << "patch " << c << " slot " << k << ": the deviations changed";
      const float* b = &base_own[(c * M) * P + k];
      off = std::max(off, std::abs(0.5 * (b[0] + b[P]) - q.fine[c * P + k]));
    }
  EXPECT_GT(off, 0.05) << "the blend toward the base's own interpolant reached the field as well";
}

// patch.local_slopes: a fine field whose sub-block temperature follows the coarse field's own
// local lapse rate (it changes sign from west to east, as in a winter with a continental
// inversion) is the regression's base with the local-slope term, whose coefficient the fit
// recovers; without the term the regression leaves most of the sub-block variance. The spec
// records one more coefficient and refuses a covariate that is not a patch.static.
TEST(RegressionBase, ALocalSlopeTermFollowsALapseRateThatChangesAcrossTheField) {
  Blocks b(24, 48, 4, false);  // 6 x 12 blocks
  std::mt19937 rng(11);
  std::normal_distribution<double> noise(0.0, 1.0);
  std::vector<double> h(b.field.size());
  for (size_t i = 0; i < h.size(); ++i) h[i] = 0.05 * static_cast<double>(i % 48) + noise(rng);
  const std::vector<float> hf(h.begin(), h.end());
  fc::prepare_patch_map(b.map, 0, true);
  std::vector<float> h_coarse(static_cast<size_t>(b.map.n_coarse)), t_coarse(h_coarse.size());
  fc::coarsen(b.map, hf.data(), h_coarse.data());
  for (int64_t c = 0; c < b.map.n_coarse; ++c) {
    const double gamma = -1.0 + 2.0 * static_cast<double>(c % 12) / 11.0;  // column of the block
    t_coarse[c] = static_cast<float>(280.0 + gamma * h_coarse[c] + 0.05 * noise(rng));
  }
  fc::LocalSlopeOptions local{2, 0.1, {0}};
  std::vector<double> slope;
  fc::local_slopes(b.map.neighbours.data(), b.map.n_neighbours, b.map.n_coarse, t_coarse.data(), h_coarse.data(), 1,
                   local, 0, b.map.n_coarse, slope);
  EXPECT_LT(slope[0], -0.2);  // the westernmost block's lapse rate has the sign of its column's
  EXPECT_GT(slope[11], 0.5);
  const fe::BlockLayout L = b.layout(4);
  const fe::Predictors pred = fe::block_predictors(L, {"h"}, {h.data()});
  const std::vector<double> tc(t_coarse.begin(), t_coarse.end());
  const std::vector<double> base = fe::run_baseline(L, tc, kBicubicCons);
  const double share = 0.8;
  for (int64_t c = 0; c < b.map.n_coarse; ++c)
    for (int k = 0; k < b.map.patch_size; ++k) {
      const int64_t i = b.map.fine_of_patch[c * b.map.patch_size + k];
      b.field[i] = static_cast<float>(base[i] + share * slope[c] * pred.values[1][i]);
    }

  auto fit_of = [&](const fc::PatchOptions& o, fc::Patches& p) {
    fc::extract_patches(b.map, {b.field.data()}, nullptr, {hf.data()}, o, p);
    fc::RegressionFitter eq(fc::regression_names({"h"}, o));
    fc::add_regression_data(b.map, 1, o, p, nullptr, eq);
    return eq.solve("test");
  };
  fc::PatchOptions o;
  o.interp_base = true;
  o.n_static = 1;
  fc::Patches p;
  const auto global = fit_of(o, p);
  o.local_slopes = local;
  ASSERT_EQ(fc::regression_predictors(o), 3);
  const auto with_local = fit_of(o, p);
  ASSERT_EQ(p.local_slopes.size(), static_cast<size_t>(p.n));
  for (int64_t c = 0; c < p.n; ++c) ASSERT_DOUBLE_EQ(p.local_slopes[c], slope[c]) << "block " << c;
  EXPECT_NEAR(with_local.coef[2], share, 2e-3);
  EXPECT_LT(with_local.fitted_rms, 2e-3);
  EXPECT_GT(global.fitted_rms, 0.5 * global.residual_rms);  // one coefficient cannot follow the sign change

  o.regression = with_local.coef;
  fc::Patches q;
  fc::extract_patches(b.map, {b.field.data()}, nullptr, {hf.data()}, o, q);
  for (int64_t i = 0; i < q.n * q.P; ++i) ASSERT_NEAR(q.residual[i], 0.0f, 3e-3) << "slot " << i;
  // patch.global_blend: blended fully, the members' mean is the global fit's base, built on its
  // own (the local-slope term's coefficient 0); each member keeps its deviation, and every patch
  // keeps its mean (both bases are conservative). Off (W = 1), the members stay as they are.
  o.global_regression = global.coef;
  fc::PatchOptions flat = o;
  flat.regression = {global.coef[0], global.coef[1], 0.0};
  fc::Patches g;
  fc::extract_patches(b.map, {b.field.data()}, nullptr, {hf.data()}, flat, g);
  ASSERT_EQ(g.base.size(), q.base.size());
  double largest = 0;
  for (int64_t i = 0; i < q.n * q.P; ++i) largest = std::max(largest, std::fabs(double(g.base[i]) - q.base[i]));
  EXPECT_GT(largest, 0.5);  // the two fits differ where the lapse rate changes sign
  const int64_t M = 3, P = q.P;
  std::vector<float> members(static_cast<size_t>(q.n * M * P)), raw;
  for (size_t i = 0; i < members.size(); ++i) members[i] = static_cast<float>(280.0 + 0.5 * noise(rng));
  members[5] = std::numeric_limits<float>::quiet_NaN();  // patch 0, member 0, cell 5: left as it is
  raw = members;
  fc::blend_toward_global(b.map, 1, o, q, M, members.data());  // W = 1
  EXPECT_EQ(std::memcmp(members.data(), raw.data(), members.size() * sizeof(float)), 0);
  o.global_blend = 0.0;
  fc::blend_toward_global(b.map, 1, o, q, M, members.data());
  for (int64_t c = 0; c < q.n; ++c) {
    double moved_sum = 0;
    for (int k = 0; k < P; ++k) {
      double mean = 0, raw_mean = 0;
      for (int64_t j = 0; j < M; ++j) {
        mean += members[(c * M + j) * P + k] / double(M);
        raw_mean += raw[(c * M + j) * P + k] / double(M);
      }
      if (c == 0 && k == 5) {
        for (int64_t j = 1; j < M; ++j) EXPECT_EQ(members[j * P + k], raw[j * P + k]);
        continue;
      }
      ASSERT_NEAR(mean, g.base[c * P + k], 1e-3) << "patch " << c << " cell " << k;
      for (int64_t j = 0; j < M; ++j)
        ASSERT_NEAR(members[(c * M + j) * P + k] - mean, raw[(c * M + j) * P + k] - raw_mean, 1e-3);
      moved_sum += double(q.weights[c * P + k]) * (double(g.base[c * P + k]) - q.base[c * P + k]);
    }
    if (c > 0) {
      EXPECT_NEAR(moved_sum, 0.0, 1e-4) << "patch " << c;  // the global fit moves no patch mean
    }
  }
  // Halfway: the mean halfway between the members' own and the global fit.
  std::vector<float> half = raw;
  o.global_blend = 0.5;
  fc::blend_toward_global(b.map, 1, o, q, M, half.data());
  EXPECT_NEAR(half[P + 7], 0.5 * (raw[P + 7] + members[P + 7]), 1e-3);

  // patch.spread_regression k: each patch's members spread around their mean by r2^k, r2 the
  // mean square over the patch of the global fit's term, i.e. of its base minus the interpolant.
  fc::PatchOptions interpolant_only;
  interpolant_only.interp_base = true;
  interpolant_only.n_static = 1;
  fc::Patches ip;
  fc::extract_patches(b.map, {b.field.data()}, nullptr, {hf.data()}, interpolant_only, ip);
  o.global_blend = 1.0;
  o.spread_regression = 0.5;
  std::vector<float> spread = raw;
  fc::spread_by_regression(b.map, 1, o, q, M, spread.data());
  double smallest = 1e300, largest_factor = 0;
  for (int64_t c = 0; c < q.n; ++c) {
    double r2 = 0;
    for (int k = 0; k < P; ++k)
      r2 += double(q.weights[c * P + k]) * std::pow(double(g.base[c * P + k]) - ip.base[c * P + k], 2);
    const double f = std::sqrt(r2 + 1e-12);
    smallest = std::min(smallest, f);
    largest_factor = std::max(largest_factor, f);
    for (int k = 0; k < P; ++k) {
      if (c == 0 && k == 5) continue;  // a member is NaN: left as it is
      double mean = 0;
      for (int64_t j = 0; j < M; ++j) mean += raw[(c * M + j) * P + k] / double(M);
      for (int64_t j = 0; j < M; ++j)
        ASSERT_NEAR(spread[(c * M + j) * P + k] - mean, f * (raw[(c * M + j) * P + k] - mean), 1e-3 * (1 + f))
            << "patch " << c << " cell " << k;
    }
  }
  EXPECT_GT(largest_factor, 2 * smallest);  // the covariates matter more in some patches than in others
  o.spread_regression = 0.0;                // off: the members stay as they are
  spread = raw;
  fc::spread_by_regression(b.map, 1, o, q, M, spread.data());
  EXPECT_EQ(std::memcmp(spread.data(), raw.data(), spread.size() * sizeof(float)), 0);
  o.spread_regression = 0.5;  // on, without the global fit: an error, not a silent no-op
  o.global_regression.clear();
  EXPECT_ANY_THROW(fc::spread_by_regression(b.map, 1, o, q, M, spread.data()));

  fc::ConditioningSpec spec;
  spec.patch.statics = {"HSURF", "FR_LAND"};
  spec.patch.residual = fc::Residual::kRegression;
  spec.patch.local_slopes = 4;
  spec.patch.local_slope_static = {"HSURF"};
  const fc::PatchOptions from_spec = fc::patch_options(spec);
  EXPECT_EQ(from_spec.local_slopes.rings, 4);
  EXPECT_EQ(from_spec.local_slopes.terms, std::vector<int>{0});
  EXPECT_EQ(fc::regression_predictors(from_spec), 5);
  spec.patch.local_slope_static = {};
  EXPECT_EQ(fc::local_slope_options(spec.patch).terms, (std::vector<int>{0, 1}));
  spec.patch.residual = fc::Residual::kInterp;
  EXPECT_FALSE(fc::local_slope_options(spec.patch).enabled());
  spec.patch.residual = fc::Residual::kRegression;
  spec.patch.local_slope_static = {"T_2M"};
  try {
    fc::local_slope_options(spec.patch);
    FAIL() << "a covariate outside patch.static was accepted";
  } catch (const finecast::ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("patch.local_slope_static: \"T_2M\" is not one of patch.static"),
              std::string::npos)
        << e.what();
  }
}

// patch.relative_context: the coarse values enter as differences from the patch's own, so a
// field shifted by a constant gives the same contexts (and the absolute ones differ by it).
TEST(ContextRings, RelativeContextLeavesOutTheLevel) {
  Blocks b(16, 16, 4, false);
  fc::prepare_patch_map(b.map, 1, false);
  std::vector<float> shifted(b.field);
  for (auto& v : shifted) v += 250.0f;
  fc::PatchOptions o;
  o.rings = 1;
  o.static_features = false;
  fc::Patches abs_a, abs_b, rel_a, rel_b;
  fc::extract_patches(b.map, {b.field.data()}, nullptr, o, abs_a);
  fc::extract_patches(b.map, {shifted.data()}, nullptr, o, abs_b);
  o.relative = true;
  fc::extract_patches(b.map, {b.field.data()}, nullptr, o, rel_a);
  fc::extract_patches(b.map, {shifted.data()}, nullptr, o, rel_b);
  ASSERT_EQ(rel_a.C, 9);
  EXPECT_EQ(rel_a.context, rel_b.context);
  for (int64_t c = 0; c < rel_a.n; ++c) {
    EXPECT_FLOAT_EQ(abs_b.context[c * 9], abs_a.context[c * 9] + 250.0f);
    EXPECT_EQ(rel_a.context[c * 9], 0.0f);  // the own value's slot
    for (int k = 1; k < 9; ++k)
      ASSERT_FLOAT_EQ(rel_a.context[c * 9 + k], abs_a.context[c * 9 + k] - abs_a.context[c * 9]) << c << " " << k;
  }
}
