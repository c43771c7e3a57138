// SPDX-License-Identifier: BSD-3-Clause
// Evaluation on ICON grids: the unstructured patch layout, the baselines' known behaviour on
// synthetic fields over the real R2B4 grid in R2B0 patches (nearest and its conservative form
// exact for fields constant per coarse cell, IDW closer than nearest for fields linear in 3-D
// position, the conservative IDW keeping every coarse mean), the variance by refinement level,
// and finecast-eval on plugin-shaped ICON outputs (the default truth <var>_host, the coarse
// level derived from <var>_coarse, and the errors), and regression_local's local slopes on cells.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "common/error.hpp"
#include "eval/cell_baselines.hpp"
#include "eval/cells.hpp"
#include "eval/evaluation.hpp"
#include "coupling/grid/icon_geometry.hpp"
#include "coupling/grid/icon_grid.hpp"
#include "coupling/grid/icosahedral_grid.hpp"
#include "coupling/io/ensemble_writer.hpp"
#include "coupling/io/nc_metadata.hpp"
#include "eval/cli/icon_levels.hpp"
#include "tests/eval_test_util.hpp"
#include "tests/coupling/io_test_util.hpp"

namespace fc = finecast::coupling;
namespace fti = finecast::testing_io;
namespace fe = finecast::eval;

using namespace finecast::testing_eval;

namespace {

/// The real R2B4 grid and its R2B0 layout (with levels 1..3 for the bands), built once.
struct R2B4 {
  fc::IconGrid grid;
  std::unique_ptr<fe::CellLayout> layout;
};
const R2B4& r2b4() {
  static const R2B4 g = [] {
    R2B4 r;
    r.grid = fc::read_icon_grid(fti::kIconFile);
    finecast::eval::cli::IconLevels levels(r.grid);
    r.layout = std::make_unique<fe::CellLayout>(levels.layout_spec(0));
    return r;
  }();
  return g;
}

std::array<double, 3> unit_xyz(double lon, double lat) {
  return {std::cos(lat) * std::cos(lon), std::cos(lat) * std::sin(lon), std::sin(lat)};
}

/// A field linear in 3-D position: 280 + 20 x - 15 y + 30 z on the unit sphere.
std::vector<double> linear_field(const fc::IconGrid& g) {
  std::vector<double> f(static_cast<std::size_t>(g.n_cells));
  for (int64_t i = 0; i < g.n_cells; ++i) {
    const auto p = unit_xyz(g.clon[i], g.clat[i]);
    f[i] = 280.0 + 20.0 * p[0] - 15.0 * p[1] + 30.0 * p[2];
  }
  return f;
}

/// Area-weighted RMS of a - b.
double rms(const fe::CellLayout& L, const std::vector<double>& a, const std::vector<double>& b) {
  double sw = 0, s = 0;
  for (int64_t i = 0; i < L.size(); ++i) {
    sw += L.w(i);
    s += L.w(i) * (a[i] - b[i]) * (a[i] - b[i]);
  }
  return std::sqrt(s / sw);
}

const fe::CellBaseline& baseline(const std::string& name) {
  for (const auto& b : fe::cell_baselines())
    if (b.name == name) return b;
  throw std::runtime_error("no baseline " + name);
}

/// A layout of 2 patches of 2 cells (no levels), for the hand checks.
fe::CellLayoutSpec tiny_spec() {
  fe::CellLayoutSpec s;
  s.n_cells = 4;
  s.patch_size = 2;
  s.cell_of_patch = {0, 1, 2, 3};
  s.area = {1, 3, 1, 1};
  s.lon = {0.0, 0.1, 1.0, 1.1};
  s.lat = {0, 0, 0, 0};
  s.patch_lon = {0.05, 1.05};
  s.patch_lat = {0, 0};
  return s;
}

std::string error_of(const fe::CellLayoutSpec& s) {
  try {
    fe::CellLayout L(s);
  } catch (const finecast::ConfigError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST(EvalCells, PatchMeansResidualAndStdOnAHandExample) {
  const fe::CellLayout L(tiny_spec());
  const std::vector<double> f = {0, 4, 2, 2};
  const auto m = fe::patch_means(L, f.data());
  EXPECT_DOUBLE_EQ(m[0], 3.0);  // (0 * 1 + 4 * 3) / 4
  EXPECT_DOUBLE_EQ(m[1], 2.0);
  EXPECT_DOUBLE_EQ(fe::patch_residual(L, f.data())[0], -3.0);
  // Deviations -3 (weight 1) and 1 (weight 3): variance (9 + 3) / 4 = 3.
  EXPECT_DOUBLE_EQ(fe::patch_std(L, f.data())[0], std::sqrt(3.0));
  EXPECT_DOUBLE_EQ(fe::patch_std(L, f.data())[1], 0.0);
}

// A limited-area grid: finecast-eval's layouts need every fine cell in a patch, so it says it does
// not score one yet, before it builds any patch map.
TEST(EvalIconLevels, ALimitedAreaIsRefusedNamingTheGrid) {
  fc::IconGrid lam = fc::make_icosahedral_grid(3, 0);
  lam.path = "lam.nc";
  lam.n_cells = 2000;  // the first 2,000 cells of R2B3: a part of the sphere
  lam.cell_vertices.resize(2000);
  lam.clon.resize(2000);
  lam.clat.resize(2000);
  lam.cell_area.resize(2000);
  lam.parent_cell.resize(2000);
  lam.cell_neighbours.clear();
  fc::complete_icon_grid(lam);
  try {
    finecast::eval::cli::IconLevels levels(lam);
    FAIL() << "a limited area was accepted";
  } catch (const finecast::ConfigError& e) {
    EXPECT_NE(
        std::string(e.what()).find("grid 'lam.nc' is a limited area (R2B3), which finecast-eval does not score yet"),
        std::string::npos)
        << e.what();
  }
}

TEST(EvalCells, InconsistentLayoutsAreRefused) {
  auto s = tiny_spec();
  s.cell_of_patch = {0, 1, 1, 3};
  EXPECT_NE(error_of(s).find("fine cell 1 lies in patches 0 and 1"), std::string::npos) << error_of(s);
  s = tiny_spec();
  s.area[2] = 0.0;
  EXPECT_NE(error_of(s).find("cell areas must be positive"), std::string::npos);
  s = tiny_spec();
  s.levels = {{0, 1, 1, 2}};  // cell 1 of this level straddles both patches
  EXPECT_NE(error_of(s).find("does not nest"), std::string::npos) << error_of(s);
  s = tiny_spec();
  s.levels = {{0, 1, 2, 3}};
  EXPECT_EQ(error_of(s), "");
}

TEST(EvalCellBaselines, ConstantPerCoarseCellIsReproducedByNearestAndItsConservativeForm) {
  if (!fti::exists(fti::kIconFile)) GTEST_SKIP() << fti::kIconFile << " missing (install libncarg-data)";
  const fe::CellLayout& L = *r2b4().layout;
  ASSERT_EQ(L.n_patches(), 80);
  ASSERT_EQ(L.patch_size(), 256);
  std::vector<double> truth(static_cast<std::size_t>(L.size()));
  for (int64_t i = 0; i < L.size(); ++i) truth[i] = 250.0 + 0.75 * L.patch_of(i);
  const std::vector<double> coarse = fe::patch_means(L, truth.data());
  const fe::CellInterpolator interp(L);
  for (const char* name : {"nearest", "nearest_cons"})
    EXPECT_LT(rms(L, interp.run(coarse, baseline(name)), truth), 1e-12) << name;
  // IDW blends neighbouring coarse values, so it cannot be exact here: the test would notice a
  // baseline that secretly reads the truth.
  EXPECT_GT(rms(L, interp.run(coarse, baseline("idw")), truth), 1.0);
  EXPECT_GT(rms(L, interp.run(coarse, baseline("idw_cons")), truth), 1.0);
  // A globally constant field: every baseline is exact (the IDW weights sum to 1).
  const std::vector<double> flat(static_cast<std::size_t>(L.size()), 273.15);
  const std::vector<double> flat_coarse = fe::patch_means(L, flat.data());
  for (const auto& b : fe::cell_baselines()) EXPECT_LT(rms(L, interp.run(flat_coarse, b), flat), 1e-10) << b.name;
}

TEST(EvalCellBaselines, IdwReproducesALinearFieldBetterThanNearest) {
  if (!fti::exists(fti::kIconFile)) GTEST_SKIP() << fti::kIconFile << " missing (install libncarg-data)";
  const fe::CellLayout& L = *r2b4().layout;
  const std::vector<double> truth = linear_field(r2b4().grid);
  const std::vector<double> coarse = fe::patch_means(L, truth.data());
  const fe::CellInterpolator interp(L);
  const double nearest = rms(L, interp.run(coarse, baseline("nearest")), truth);
  const double idw = rms(L, interp.run(coarse, baseline("idw")), truth);
  const double idw_cons = rms(L, interp.run(coarse, baseline("idw_cons")), truth);
  std::printf("linear field on R2B4 in R2B0 patches: rmse nearest %.4f, idw %.4f, idw_cons %.4f\n", nearest, idw,
              idw_cons);
  EXPECT_GT(nearest, 1.0);  // the field varies by tens of units across an R2B0 cell
  EXPECT_LT(idw, 0.8 * nearest);
  EXPECT_LT(idw_cons, idw);  // the correction removes the smoothing bias of each patch mean
}

TEST(EvalCellBaselines, ConservativeIdwKeepsEveryCoarseMeanExactly) {
  if (!fti::exists(fti::kIconFile)) GTEST_SKIP() << fti::kIconFile << " missing (install libncarg-data)";
  const fe::CellLayout& L = *r2b4().layout;
  std::mt19937 rng(11);
  std::normal_distribution<double> noise(0.0, 5.0);
  std::vector<double> truth = linear_field(r2b4().grid);
  for (double& v : truth) v += noise(rng);
  const std::vector<double> coarse = fe::patch_means(L, truth.data());
  const fe::CellInterpolator interp(L);
  const std::vector<double> idw = interp.run(coarse, baseline("idw"));
  const std::vector<double> cons = interp.run(coarse, baseline("idw_cons"));
  const std::vector<double> m_idw = fe::patch_means(L, idw.data());
  const std::vector<double> m_cons = fe::patch_means(L, cons.data());
  double worst_idw = 0, worst_cons = 0;
  for (int64_t p = 0; p < L.n_patches(); ++p) {
    worst_idw = std::max(worst_idw, std::abs(m_idw[p] - coarse[p]));
    worst_cons = std::max(worst_cons, std::abs(m_cons[p] - coarse[p]));
  }
  EXPECT_GT(worst_idw, 0.1) << "plain IDW does not keep the coarse means";
  EXPECT_LT(worst_cons, 1e-9) << "conservative IDW must keep them to rounding";
  // A NaN coarse value is left out of its neighbours' weights: only its own patch goes missing.
  std::vector<double> holed = coarse;
  holed[5] = std::nan("");
  const std::vector<double> f = interp.interpolate(holed, fe::CellInterp::kIdw);
  int64_t nan_cells = 0;
  for (int64_t i = 0; i < L.size(); ++i) nan_cells += std::isnan(f[i]) ? 1 : 0;
  EXPECT_LE(nan_cells, L.patch_size());
}

TEST(EvalCellSpectrum, BandsSumToTheResidualVarianceAndSeparateScales) {
  if (!fti::exists(fti::kIconFile)) GTEST_SKIP() << fti::kIconFile << " missing (install libncarg-data)";
  const fe::CellLayout& L = *r2b4().layout;
  ASSERT_EQ(L.n_bands(), 4);  // R2B1, R2B2, R2B3, R2B4
  std::mt19937 rng(3);
  std::normal_distribution<double> noise(0.0, 1.0);
  std::vector<double> f = linear_field(r2b4().grid);
  for (double& v : f) v += noise(rng);
  const std::vector<double> r = fe::patch_residual(L, f.data());
  const fe::RadialSpectrum s = fe::hierarchy_spectrum(L, r.data());
  double sum = 0, sw = 0, ms = 0;
  for (double e : s.energy) sum += e;
  for (int64_t i = 0; i < L.size(); ++i) {
    sw += L.w(i);
    ms += L.w(i) * r[i] * r[i];
  }
  EXPECT_NEAR(sum, ms / sw, 1e-9 * ms / sw);  // the Haar bands are orthogonal
  EXPECT_DOUBLE_EQ(s.wavenumber.back(), 0.5);
  EXPECT_DOUBLE_EQ(s.wavenumber.front(), 0.0625);
  EXPECT_EQ(s.modes.front(), 320 - 80);
  EXPECT_EQ(s.modes.back(), 20480 - 5120);
  // The linear part varies on large scales: most of its residual is in the coarsest band.
  EXPECT_GT(s.energy.front(), s.energy.back());
  // White noise spreads by degrees of freedom: about 3/4 of its variance in the finest band
  // (15,360 of the 20,400 degrees of freedom below R2B0).
  std::vector<double> white(f.size());
  for (double& v : white) v = noise(rng);
  const std::vector<double> rw = fe::patch_residual(L, white.data());
  const fe::RadialSpectrum sw_ = fe::hierarchy_spectrum(L, rw.data());
  double total = 0;
  for (double e : sw_.energy) total += e;
  EXPECT_NEAR(sw_.energy.back() / total, 15360.0 / 20400.0, 0.03);
  EXPECT_NEAR(sw_.energy.front() / total, 240.0 / 20400.0, 0.01);

  // A field constant on R2B2 cells has no energy at R2B3 and R2B4.
  finecast::eval::cli::IconLevels levels(r2b4().grid);
  const std::vector<int64_t> r2b2 = levels.cell_index(2);
  std::vector<double> blocky(static_cast<std::size_t>(L.size()));
  for (int64_t i = 0; i < L.size(); ++i) blocky[i] = std::sin(0.37 * r2b2[i]);
  const std::vector<double> rb = fe::patch_residual(L, blocky.data());
  const fe::RadialSpectrum sb = fe::hierarchy_spectrum(L, rb.data());
  EXPECT_GT(sb.energy[0], 1e-3);
  EXPECT_GT(sb.energy[1], 1e-3);
  EXPECT_LT(sb.energy[2], 1e-20);
  EXPECT_LT(sb.energy[3], 1e-20);
}

TEST(EvalCellSpectrum, SpectralNoiseKeepsThePatchMeansAndHasTheTrainingResidualsBands) {
  if (!fti::exists(fti::kIconFile)) GTEST_SKIP() << fti::kIconFile << " missing (install libncarg-data)";
  const fe::CellLayout& L = *r2b4().layout;
  // A linear field plus a texture constant on R2B2 cells: the residual of idw_cons has nearly all
  // of its variance in the two coarsest bands, white noise 3/4 of its own in the finest.
  finecast::eval::cli::IconLevels levels(r2b4().grid);
  const std::vector<int64_t> r2b2 = levels.cell_index(2);
  std::vector<double> truth = linear_field(r2b4().grid);
  for (int64_t i = 0; i < L.size(); ++i) truth[i] += 2.0 * std::sin(0.37 * r2b2[i]);
  const fe::CellInterpolator interp(L);
  const std::vector<double> base = interp.run(fe::patch_means(L, truth.data()), baseline("idw_cons"));
  std::vector<double> r(truth.size());
  for (std::size_t i = 0; i < r.size(); ++i) r[i] = truth[i] - base[i];
  const std::vector<char> valid(static_cast<std::size_t>(L.n_patches()), 1);
  fe::ResidualSpectrum spectrum;
  fe::add_residual_spectrum(L, r.data(), valid, spectrum);
  const fe::RadialSpectrum target = fe::hierarchy_spectrum(L, r.data());
  double total = 0;
  for (double e : target.energy) total += e;
  const fe::NoiseReference noise{"idw_cons", 1.5, 4, 7};
  auto shares = [&](const std::vector<double>& m) {
    std::vector<double> d(m.size());
    for (std::size_t i = 0; i < d.size(); ++i) d[i] = m[i] - base[i];
    fe::RadialSpectrum s = fe::hierarchy_spectrum(L, d.data());
    double t = 0;
    for (double e : s.energy) t += e;
    for (double& e : s.energy) e /= t;
    return s.energy;
  };
  const std::vector<double> base_means = fe::patch_means(L, base.data());
  for (const auto& m : fe::noise_reference_members(L, base, valid, noise, 3, &spectrum)) {
    const std::vector<double> sh = shares(m);
    for (int b = 0; b < L.n_bands(); ++b) EXPECT_NEAR(sh[b], target.energy[b] / total, 1e-9) << "band " << b;
    const std::vector<double> means = fe::patch_means(L, m.data());
    for (int64_t p = 0; p < L.n_patches(); ++p) ASSERT_NEAR(means[p], base_means[p], 1e-10) << "patch " << p;
  }
  // White noise does not have the residual's bands: most of its variance is in the finest.
  const std::vector<double> white = shares(fe::noise_reference_members(L, base, valid, noise, 3, nullptr).front());
  EXPECT_GT(white.back(), 0.6);
  EXPECT_LT(target.energy.back() / total, 0.2);
}

TEST(EvalCellEvaluator, PerfectAndInflatedEnsemblesScoreAsExpected) {
  if (!fti::exists(fti::kIconFile)) GTEST_SKIP() << fti::kIconFile << " missing (install libncarg-data)";
  finecast::eval::cli::IconLevels levels(r2b4().grid);
  fe::CellEvaluator ev(fe::CellLayout(levels.layout_spec(0)));
  const fe::CellLayout& L = ev.layout();
  std::mt19937 rng(5);
  std::normal_distribution<double> noise(0.0, 2.0);
  std::vector<double> truth = linear_field(r2b4().grid);
  for (double& v : truth) v += noise(rng);
  // Two members: the truth's residual doubled around the patch means, and the truth itself.
  const std::vector<double> means = fe::patch_means(L, truth.data());
  std::vector<double> doubled(truth.size());
  for (int64_t i = 0; i < L.size(); ++i) doubled[i] = means[L.patch_of(i)] + 2.0 * (truth[i] - means[L.patch_of(i)]);
  ev.add(truth.data(), {truth.data()});
  fe::CellEvaluator ev2(fe::CellLayout(levels.layout_spec(0)));
  ev2.add(truth.data(), {doubled.data()});
  const fe::EvalReport rep = ev.report(), rep2 = ev2.report();
  ASSERT_EQ(rep.rows.size(), 7u);
  EXPECT_EQ(rep.rows[0].name, "model");
  EXPECT_EQ(rep.rows[1].name, "nearest");
  EXPECT_EQ(rep.rows[2].name, "idw");
  EXPECT_EQ(rep.rows[3].name, "nearest_cons");
  EXPECT_EQ(rep.rows[4].name, "idw_cons");
  EXPECT_EQ(rep.rows[5].name, "linear_cons");
  EXPECT_EQ(rep.rows[6].name, "idw_linear_cons");
  const fe::Scores& perfect = rep.rows[0].scores;
  EXPECT_EQ(perfect.n_points, 20480);
  EXPECT_DOUBLE_EQ(perfect.rmse, 0.0);
  EXPECT_NEAR(perfect.std_ratio, 1.0, 1e-12);
  EXPECT_NEAR(perfect.upper_energy_ratio, 1.0, 1e-12);
  EXPECT_NEAR(rep2.rows[0].scores.std_ratio, 2.0, 1e-9);
  EXPECT_NEAR(rep2.rows[0].scores.upper_energy_ratio, 4.0, 1e-9);
  const fe::Scores& nearest = rep.rows[1].scores;
  EXPECT_NEAR(nearest.std_ratio, 0.0, 1e-12);
  EXPECT_NEAR(nearest.upper_energy_ratio, 0.0, 1e-12);
  EXPECT_LT(rep.rows[2].scores.rmse, nearest.rmse);
  EXPECT_GT(rep.rows[2].scores.std_ratio, 0.0);
  EXPECT_EQ(rep.blocks_total, 80);
  EXPECT_EQ(rep.blocks_valid, 80);
  EXPECT_EQ(rep.coarse_level, 0);
  EXPECT_EQ(rep.fine_level, 4);
  // A patch with a missing truth value is not scored, for the model and every baseline alike.
  truth[100] = std::nan("");
  fe::CellEvaluator ev3(fe::CellLayout(levels.layout_spec(0)));
  ev3.add(truth.data(), {truth.data()});
  for (const auto& row : ev3.report().rows) EXPECT_EQ(row.scores.n_points, 20480 - 256) << row.name;
}

// ---- finecast-eval on ICON outputs shaped like the plugin's ----

namespace {

/// A plugin-shaped output: ts(time, realization, ncells) = truth -+ d, ts_coarse = the truth's
/// R2B<level> means on the fine cells (shifted by `coarse_shift`), ts_host = the truth.
void write_icon_output(const std::string& path, const std::vector<double>& truth, int level, double d,
                       double coarse_shift = 0.0, const fc::IconGrid* grid = nullptr) {
  const fc::IconGrid& g = grid ? *grid : r2b4().grid;
  finecast::eval::cli::IconLevels levels(g);
  const fe::CellLayout L(levels.layout_spec(level));
  const std::vector<double> means = fe::patch_means(L, truth.data());
  const std::size_t n = truth.size();
  std::vector<float> members(2 * n), coarse(n), host(n);
  for (std::size_t i = 0; i < n; ++i) {
    members[i] = static_cast<float>(truth[i] - d);
    members[n + i] = static_cast<float>(truth[i] + d);
    coarse[i] = static_cast<float>(means[L.patch_of(static_cast<int64_t>(i))] + coarse_shift);
    host[i] = static_cast<float>(truth[i]);
  }
  fc::EnsembleWriter w(path, fc::OutputGrid::of(g), "ts",
                       fc::VarAttributes{"K", "surface temperature", "surface_temperature"}, 2, {});
  w.write("1979-01-01T12:00:00", members.data(), coarse.data(), host.data());
  w.close();
}

class EvalIconCli : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!fti::exists(fti::kIconFile)) GTEST_SKIP() << fti::kIconFile << " missing (install libncarg-data)";
    dir_ = ::testing::TempDir() + "finecast_eval_icon_" +
           ::testing::UnitTest::GetInstance()->current_test_info()->name() + "/";
    ASSERT_EQ(std::system(("mkdir -p " + dir_).c_str()), 0);
    truth_ = linear_field(r2b4().grid);
    std::mt19937 rng(9);
    std::normal_distribution<double> noise(0.0, 1.0);
    for (double& v : truth_) v += noise(rng);
  }
  std::string dir_;
  std::vector<double> truth_;
};

}  // namespace

TEST_F(EvalIconCli, ScoresAPluginOutputWithItsOwnTruthAndDerivedCoarseLevel) {
  const std::string pred = dir_ + "out.nc", csv = dir_ + "e.csv", json = dir_ + "e.json";
  write_icon_output(pred, truth_, 1, 0.25);
  // No --truth (ts_host), no --grid (grid_file_uri), no --coarse-level (from ts_coarse).
  const Result r = run_eval("--pred " + pred + " --var ts --csv " + csv + " --json " + json);
  ASSERT_EQ(r.rc, 0) << r.out;
  EXPECT_NE(r.out.find("R2B4 (20480 cells) in R2B1 patches of 64 (coarse level from "
                       "ts_coarse), 320 of 320 patches scored"),
            std::string::npos)
      << r.out;
  auto rows = read_csv(csv);
  ASSERT_EQ(rows.size(), 9u);  // model, six baselines, noise_white, noise_spectral
  const auto& m = rows["model"];
  EXPECT_EQ(m[kMembers], 2);
  EXPECT_EQ(m[kPoints], 20480);
  EXPECT_LT(m[kRmse], 1e-4);  // members stored as float
  EXPECT_NEAR(m[kCrps], 0.25 - 0.5 * 0.25, 1e-4);
  EXPECT_NEAR(m[kSpread], 0.25 * std::sqrt(2.0), 1e-4);
  EXPECT_NEAR(m[kStdRatio], 1.0, 1e-4);
  EXPECT_NEAR(rows["nearest"][kStdRatio], 0.0, 1e-9);
  EXPECT_LT(rows["idw"][kRmse], rows["nearest"][kRmse]);
  EXPECT_NEAR(rows["nearest_cons"][kRmse], rows["nearest"][kRmse], 1e-6);
  std::ifstream j(json);
  const std::string text((std::istreambuf_iterator<char>(j)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("\"coarse_level\": 1"), std::string::npos) << text.substr(0, 2000);
  EXPECT_NE(text.find("\"truth_var\": \"ts_host\""), std::string::npos);
  EXPECT_NE(text.find("\"spectrum_levels\""), std::string::npos);

  // The same scores from the truth given as a separate file (here the output itself) and an
  // explicit grid and level; a wrong level is caught by ts_coarse.
  const Result r2 = run_eval("--truth " + pred + " --truth-var ts_host --pred " + pred + " --var ts --grid " +
                             fti::kIconFile + " --coarse-level 1 --csv " + csv);
  ASSERT_EQ(r2.rc, 0) << r2.out;
  EXPECT_NEAR(read_csv(csv)["idw"][kRmse], rows["idw"][kRmse], 1e-12);
  const Result r3 = run_eval("--pred " + pred + " --var ts --coarse-level 0");
  EXPECT_EQ(r3.rc, 1);
  EXPECT_NE(r3.out.find("--coarse-level 0 does not match prediction '" + pred +
                        "': its 'ts_coarse' is not constant on the R2B0 cells"),
            std::string::npos)
      << r3.out;
}

TEST_F(EvalIconCli, MismatchesAreErrorsNamingTheFiles) {
  const std::string pred = dir_ + "out.nc";
  write_icon_output(pred, truth_, 0, 0.1, /*coarse_shift=*/0.5);
  Result r = run_eval("--pred " + pred + " --var ts");
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(r.out.find("the prediction was not made from this truth"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("variable 'ts_coarse'"), std::string::npos) << r.out;

  write_icon_output(pred, truth_, 0, 0.1);
  const std::string latlon = "/usr/share/ncarg/data/nug/tas_rectilinear_grid_2D.nc";
  r = run_eval("--truth " + latlon + " --truth-var tas --pred " + pred + " --var ts");
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(r.out.find("truth '" + latlon + "' variable 'tas' is on a lat-lon grid"), std::string::npos) << r.out;
  r = run_eval("--pred " + pred + " --var ts --grid " + latlon);
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(r.out.find(latlon), std::string::npos) << r.out;
  r = run_eval("--pred " + pred + " --var ts --block 16");
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(r.out.find("--block is for lat-lon fields"), std::string::npos) << r.out;
  r = run_eval("--pred " + pred + " --var ts --coarse-level 4");
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(r.out.find("is the fine level of grid"), std::string::npos) << r.out;
  r = run_eval("--pred " + pred + " --var ts --time 1");
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(r.out.find("--time 1"), std::string::npos) << r.out;
  r = run_eval("--pred " + pred + " --var ps");
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(r.out.find("no variable 'ps_host'"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("--truth"), std::string::npos) << r.out;
  // A region: only the R2B0 cells wholly inside are scored.
  const std::string csv = dir_ + "r.csv";
  r = run_eval("--pred " + pred + " --var ts --region=-90,0,-180,180 --csv " + csv);
  ASSERT_EQ(r.rc, 0) << r.out;
  const double points = read_csv(csv)["model"][kPoints];
  EXPECT_GT(points, 0);
  EXPECT_LT(points, 20480 / 2);
  EXPECT_EQ(std::fmod(points, 256.0), 0.0);
}

TEST(EvalCellBaselines, LinearReconstructionIsExactForALinearFieldAndConservative) {
  if (!fti::exists(fti::kIconFile)) GTEST_SKIP() << fti::kIconFile << " missing (install libncarg-data)";
  const fe::CellLayout& L = *r2b4().layout;
  const std::vector<double> truth = linear_field(r2b4().grid);
  const std::vector<double> coarse = fe::patch_means(L, truth.data());
  const fe::CellInterpolator interp(L);
  const double linear = rms(L, interp.run(coarse, baseline("linear_cons")), truth);
  const double idw_cons = rms(L, interp.run(coarse, baseline("idw_cons")), truth);
  std::printf("linear field on R2B4 in R2B0 patches: rmse linear_cons %.3e, idw_cons %.4f\n", linear, idw_cons);
  EXPECT_LT(linear, 1e-9) << "a field linear in 3-D position is reproduced exactly";
  EXPECT_GT(idw_cons, 0.1);
  // On a noisy field it still keeps every coarse mean; a missing neighbour only drops out of the fit.
  std::mt19937 rng(12);
  std::normal_distribution<double> noise(0.0, 5.0);
  std::vector<double> noisy = truth;
  for (double& v : noisy) v += noise(rng);
  std::vector<double> c = fe::patch_means(L, noisy.data());
  const std::vector<double> m0 = interp.interpolate(c, fe::CellInterp::kLinear);
  const std::vector<double> m = fe::patch_means(L, m0.data());
  for (int64_t p = 0; p < L.n_patches(); ++p) ASSERT_NEAR(m[p], c[p], 1e-9) << p;
  c[5] = std::nan("");
  const std::vector<double> f = interp.interpolate(c, fe::CellInterp::kLinear);
  int64_t nan_cells = 0;
  for (int64_t i = 0; i < L.size(); ++i) nan_cells += std::isnan(f[i]) ? 1 : 0;
  EXPECT_EQ(nan_cells, L.patch_size());
}

// issue 26: --geometry uniform scores on the uniform geometry (and refuses outputs written on the
// file's), and covariates that explain nothing of the fine residual are warned about.
TEST_F(EvalIconCli, GeometryOptionAndAWarningForCovariatesThatExplainNothing) {
  const fc::IconGrid uniform = fc::read_icon_grid(fti::kIconFile, fc::IconGeometry::kUniform);
  const std::string on_file = dir_ + "file.nc", on_uniform = dir_ + "uniform.nc", noise = dir_ + "noise.nc";
  write_icon_output(on_file, truth_, 0, 0.5);
  write_icon_output(on_uniform, truth_, 0, 0.5, 0.0, &uniform);
  Result r = run_eval("--pred " + on_uniform + " --var ts --geometry uniform --json " + dir_ + "e.json");
  ASSERT_EQ(r.rc, 0) << r.out;
  EXPECT_NE(r.out.find("triangular_grid_ICON.nc (uniform geometry): R2B4"), std::string::npos) << r.out;
  std::ifstream json(dir_ + "e.json");
  const std::string text((std::istreambuf_iterator<char>(json)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("\"grid_geometry\": \"uniform\""), std::string::npos);
  // Centres of the other geometry are another grid.
  r = run_eval("--pred " + on_file + " --var ts --geometry uniform");
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(r.out.find("grids do not match"), std::string::npos) << r.out;
  r = run_eval("--pred " + on_uniform + " --var ts");
  EXPECT_NE(r.out.find("grids do not match"), std::string::npos) << r.out;

  std::vector<double> rnd(truth_.size());
  std::mt19937 rng(4);
  std::normal_distribution<double> n01(0.0, 1.0);
  for (double& v : rnd) v = 280.0 + n01(rng);  // plausible as a temperature
  write_icon_output(noise, rnd, 0, 0.0);
  r = run_eval("--pred " + on_file + " --var ts --static " + noise + ":ts_host --hold-out=0,90,-180,0");
  ASSERT_EQ(r.rc, 0) << r.out;
  EXPECT_NE(r.out.find("WARNING: the covariates (ts_host anomaly, ts_host deviation) explain"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("--geometry file"), std::string::npos) << r.out;
  // The truth as its own covariate explains its residual: no warning.
  r = run_eval("--pred " + on_file + " --var ts --static " + on_file + ":ts_host --hold-out=0,90,-180,0");
  ASSERT_EQ(r.rc, 0) << r.out;
  EXPECT_EQ(r.out.find("WARNING"), std::string::npos) << r.out;
}

TEST_F(EvalIconCli, LocalSlopesFollowARelationThatChangesAcrossTheSphere) {
  // The truth is s(lon) times a covariate's departure from 280 K, across the R2B0 cells and inside
  // them alike, with a slope s that changes sign between the eastern and western hemispheres (like
  // a lapse rate that turns into an inversion; the covariate is written as a temperature, which the
  // files' plausibility check expects of ts_host). regression_cons fits one coefficient for the
  // whole field and so finds about none; regression_local takes each R2B0 cell's slope from the
  // coarse cells within 2 edge steps, and, fitted outside the held-out quadrant, explains most of
  // the residual there (measured: 0.27 against 1.13 K). Without --local-slopes there is no such row.
  const fc::IconGrid& g = r2b4().grid;
  std::vector<double> cov(truth_.size()), truth(truth_.size(), 285.0);
  for (std::size_t i = 0; i < cov.size(); ++i) {
    // structure across the R2B0 cells (which the coarse slopes are fitted on) and inside them
    cov[i] = 280.0 + 6.0 * std::sin(3.0 * g.clon[i]) * std::cos(3.0 * g.clat[i]) +
             4.0 * std::sin(23.0 * g.clon[i]) * std::cos(19.0 * g.clat[i]);
    const double s = 0.5 * std::sin(g.clon[i]);  // + in the east, - in the west
    truth[i] += s * (cov[i] - 280.0);
  }
  const std::string pred = dir_ + "out.nc", surface = dir_ + "surface.nc", csv = dir_ + "e.csv";
  write_icon_output(pred, truth, 0, 0.1);
  write_icon_output(surface, cov, 0, 0.0);
  const std::string base = "--pred " + pred + " --var ts --static " + surface + ":ts_host --hold-out=0,90,0,180 ";
  Result r = run_eval(base + "--local-slopes 2 --csv " + csv);
  ASSERT_EQ(r.rc, 0) << r.out;
  auto rows = read_csv(csv);
  ASSERT_TRUE(rows.count("regression_local")) << r.out;
  const double cons = rows["regression_cons"][kRmse], local = rows["regression_local"][kRmse];
  EXPECT_LT(local, 0.5 * cons) << "regression_cons " << cons << ", regression_local " << local;
  EXPECT_EQ(rows["regression_local"][kPoints], rows["regression_cons"][kPoints]);
  // Without --local-slopes the row is not there.
  r = run_eval(base + "--csv " + csv);
  ASSERT_EQ(r.rc, 0) << r.out;
  EXPECT_EQ(read_csv(csv).count("regression_local"), 0u);
}
