// SPDX-License-Identifier: BSD-3-Clause
// Evaluation metrics against hand-computed values on tiny arrays.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "common/error.hpp"
#include "eval/baselines.hpp"
#include "eval/evaluation.hpp"
#include "eval/metrics.hpp"
#include "eval/report.hpp"
#include "tests/eval_test_util.hpp"

namespace fe = finecast::eval;
using finecast::testing_eval::block_layout;

namespace {

fe::Scores score(const fe::BlockLayout& L, const std::vector<double>& truth,
                 const std::vector<std::vector<double>>& members) {
  fe::ScoreAccumulator acc;
  std::vector<const double*> ptrs;
  for (const auto& m : members) ptrs.push_back(m.data());
  std::vector<char> valid(L.n_blocks(), 1);
  acc.add(L, truth.data(), ptrs, valid);
  const std::vector<double> r = fe::masked_residual(L, truth.data(), valid);
  return acc.result(fe::radial_spectrum(r.data(), L.ny, L.nx));
}

}  // namespace

TEST(EvalMetrics, CrpsTwoMembersMatchesFormula) {
  const double x[2] = {0.0, 2.0};
  // E|X-y| = 1; E|X-X'| over all 4 ordered pairs = (0+2+2+0)/4 = 1; over the 2 distinct = 2.
  EXPECT_DOUBLE_EQ(fe::crps_ensemble(x, 2, 1.0), 1.0 - 0.5 * 1.0);
  EXPECT_DOUBLE_EQ(fe::crps_ensemble_fair(x, 2, 1.0), 1.0 - 0.5 * 2.0);
  // y = 3: E|X-y| = (3 + 1)/2 = 2.
  EXPECT_DOUBLE_EQ(fe::crps_ensemble(x, 2, 3.0), 1.5);
  EXPECT_DOUBLE_EQ(fe::crps_ensemble_fair(x, 2, 3.0), 1.0);
}

TEST(EvalMetrics, CrpsOfOneMemberIsAbsoluteError) {
  const double x = 2.5;
  EXPECT_DOUBLE_EQ(fe::crps_ensemble(&x, 1, 1.0), 1.5);
  EXPECT_DOUBLE_EQ(fe::crps_ensemble_fair(&x, 1, 1.0), 1.5);
}

TEST(EvalMetrics, CrpsMatchesBruteForcePairSum) {
  std::mt19937 rng(7);
  std::normal_distribution<double> nd;
  for (int m : {3, 5, 8}) {
    std::vector<double> x(m);
    for (double& v : x) v = nd(rng);
    const double y = nd(rng);
    double e = 0, pairs = 0;
    for (int i = 0; i < m; ++i) {
      e += std::abs(x[i] - y) / m;
      for (int j = 0; j < m; ++j) pairs += std::abs(x[i] - x[j]);
    }
    EXPECT_NEAR(fe::crps_ensemble(x.data(), m, y), e - 0.5 * pairs / (m * m), 1e-12);
    EXPECT_NEAR(fe::crps_ensemble_fair(x.data(), m, y), e - 0.5 * pairs / (m * (m - 1)), 1e-12);
  }
}

TEST(EvalMetrics, DeterministicRmseBiasMaeAndCrpsEqualsMae) {
  const auto L = block_layout(2, 2, 2);
  const std::vector<double> truth = {1, 2, 3, 4};
  const fe::Scores s = score(L, truth, {{2, 2, 2, 6}});  // errors 1, 0, -1, 2
  EXPECT_EQ(s.n_points, 4);
  EXPECT_DOUBLE_EQ(s.bias, 0.5);
  EXPECT_DOUBLE_EQ(s.rmse, std::sqrt(6.0 / 4.0));
  EXPECT_DOUBLE_EQ(s.mae, 1.0);
  EXPECT_DOUBLE_EQ(s.crps, 1.0);
  EXPECT_DOUBLE_EQ(s.crps_fair, 1.0);
  EXPECT_DOUBLE_EQ(s.spread, 0.0);
}

TEST(EvalMetrics, EnsembleScoresUseTheMeanForRmseAndTheMembersForCrps) {
  const auto L = block_layout(1, 2, 1);
  const std::vector<double> truth = {1, 1};
  // Point 0: members 0, 2 (mean 1, exact); point 1: members 2, 4 (mean 3, error 2).
  const fe::Scores s = score(L, truth, {{0, 2}, {2, 4}});
  EXPECT_DOUBLE_EQ(s.rmse, std::sqrt((0.0 + 4.0) / 2.0));
  EXPECT_DOUBLE_EQ(s.bias, 1.0);
  // CRPS point 0: 1 - 0.5*1 = 0.5; point 1: E|X-1| = 2, minus 0.5 * 1 = 1.5.
  EXPECT_DOUBLE_EQ(s.crps, (0.5 + 1.5) / 2);
  // Unbiased member variance is 2 at both points.
  EXPECT_DOUBLE_EQ(s.spread, std::sqrt(2.0));
}

TEST(EvalMetrics, AreaWeightsEnterTheMeans) {
  const auto L = block_layout(2, 2, 1, {1, 1, 3, 3});
  const fe::Scores s = score(L, {0, 0, 0, 0}, {{1, 1, -1, -1}});
  EXPECT_DOUBLE_EQ(s.bias, (2.0 - 6.0) / 8.0);
  EXPECT_DOUBLE_EQ(s.rmse, 1.0);
}

TEST(EvalMetrics, StdRatioAveragesPerBlockStdOverMembers) {
  const auto L = block_layout(2, 2, 2);
  const std::vector<double> truth = {0, 0, 2, 2};  // block std 1
  EXPECT_DOUBLE_EQ(score(L, truth, {{0, 0, 1, 1}}).std_ratio, 0.5);
  // Member stds 0.5 and 1.5: the mean over members is 1; the pooled std would not be.
  const fe::Scores s = score(L, truth, {{0, 0, 1, 1}, {-3, -3, 0, 0}});
  EXPECT_DOUBLE_EQ(s.std_ratio, 1.0);
  EXPECT_DOUBLE_EQ(score(L, truth, {{5, 5, 5, 5}}).std_ratio, 0.0);
}

TEST(EvalMetrics, InvalidBlocksAndNonFiniteMembersAreSkipped) {
  const auto L = block_layout(2, 4, 2);
  const double nan = std::nan("");
  // Block 0 (columns 0-1) has a NaN truth value; block 1 is scored.
  const std::vector<double> truth = {nan, 0, 1, 1, 0, 0, 1, 1};
  fe::Evaluator ev(L);
  const std::vector<double> pred = {9, 9, 2, 2, 9, 9, 2, nan};
  ev.add(truth.data(), {pred.data()});
  const fe::EvalReport r = ev.report();
  EXPECT_EQ(r.blocks_valid, 1);
  const fe::Scores& m = r.rows[0].scores;
  EXPECT_EQ(m.n_points, 3);
  EXPECT_DOUBLE_EQ(m.bias, 1.0);
  // The NaN member value in a scored block is not dropped silently: counted and reported.
  EXPECT_EQ(m.n_nonfinite, 1);
  EXPECT_EQ(r.rows[1].scores.n_nonfinite, 0) << "the baselines are finite";
  EXPECT_NE(fe::to_json(r).find("\"n_nonfinite\": 1"), std::string::npos);
  EXPECT_NE(fe::to_csv(r).find("upper_energy_ratio,n_nonfinite\nmodel,1,3,"), std::string::npos) << fe::to_csv(r);
  EXPECT_NE(fe::format_table(r).find("nonfinite"), std::string::npos);
}

TEST(EvalMetrics, AccumulatesOverTimeSteps) {
  const auto L = block_layout(1, 2, 1);
  fe::Evaluator ev(L);
  const std::vector<double> t = {0, 0}, p1 = {1, 1}, p2 = {3, 3};
  ev.add(t.data(), {p1.data()});
  ev.add(t.data(), {p2.data()});
  const fe::EvalReport r = ev.report();
  EXPECT_EQ(r.n_times, 2);
  EXPECT_DOUBLE_EQ(r.rows[0].scores.rmse, std::sqrt((1.0 + 9.0) / 2.0));
  EXPECT_DOUBLE_EQ(r.rows[0].scores.bias, 2.0);
}

TEST(EvalMetrics, PerfectEnsembleAndBaselinesOnARoughField) {
  const auto L = block_layout(16, 24, 4);
  std::mt19937 rng(3);
  std::normal_distribution<double> nd;
  std::vector<double> truth(L.size());
  for (double& v : truth) v = nd(rng);
  fe::Evaluator ev(L);
  ev.add(truth.data(), {truth.data(), truth.data()});
  const fe::EvalReport r = ev.report();
  ASSERT_EQ(r.rows.size(), 1 + fe::all_baselines().size());
  const fe::Scores& model = r.rows[0].scores;
  EXPECT_NEAR(model.rmse, 0.0, 1e-12);
  EXPECT_NEAR(model.crps, 0.0, 1e-12);
  EXPECT_NEAR(model.std_ratio, 1.0, 1e-12);
  EXPECT_NEAR(model.upper_energy_ratio, 1.0, 1e-12);
  for (std::size_t i = 1; i < r.rows.size(); ++i) {
    const fe::Scores& b = r.rows[i].scores;
    EXPECT_GT(b.rmse, 0.5) << r.rows[i].name;
    EXPECT_EQ(b.members, 1);
    EXPECT_DOUBLE_EQ(b.crps, b.mae) << r.rows[i].name;
    // Smooth interpolants keep far less fine-scale energy than white noise has.
    EXPECT_LT(b.upper_energy_ratio, 0.5) << r.rows[i].name;
  }
  // Piecewise constant has no within-block variability and is conservative already.
  EXPECT_EQ(r.rows[1].name, "nearest");
  EXPECT_NEAR(r.rows[1].scores.std_ratio, 0.0, 1e-12);
  EXPECT_NEAR(r.rows[1].scores.upper_energy_ratio, 0.0, 1e-20);
  EXPECT_EQ(r.rows[5].name, "nearest_cons");
  EXPECT_NEAR(r.rows[5].scores.rmse, r.rows[1].scores.rmse, 1e-12);
}

TEST(EvalMetrics, NoiseReferenceIsCalibratedNoiseAroundTheBestBaselineAndBeatsItsCrps) {
  // A smooth field plus white noise: the best interpolant's error is mostly that noise, and
  // the same amount of noise around it, drawn M times, is a calibrated ensemble.
  const auto L = block_layout(64, 96, 4);
  std::mt19937 rng(21);
  std::normal_distribution<double> nd;
  std::vector<double> truth(L.size());
  for (int i = 0; i < L.ny; ++i)
    for (int j = 0; j < L.nx; ++j) truth[i * L.nx + j] = 5.0 * std::sin(0.05 * i) * std::cos(0.04 * j) + nd(rng);
  fe::Evaluator ev(L);
  ev.add(truth.data(), {truth.data()});
  const auto [base, rmse] = fe::best_deterministic(ev.report());
  EXPECT_NE(base, "model");
  ev.set_noise_reference({base, rmse, 16, 7});
  ev.add_noise(truth.data());
  const fe::EvalReport r = ev.report();
  ASSERT_EQ(r.rows.back().name, "noise_white");
  const fe::Scores& noise = r.rows.back().scores;
  double base_mae = 0;
  for (const auto& row : r.rows)
    if (row.name == base) base_mae = row.scores.mae;
  EXPECT_EQ(noise.members, 16);
  EXPECT_NEAR(noise.spread, rmse, 0.03 * rmse) << "every member's noise has the base's RMSE";
  EXPECT_LT(noise.crps, 0.85 * base_mae) << "calibrated noise beats the deterministic base in CRPS";
  EXPECT_NEAR(noise.rmse, std::sqrt(rmse * rmse * (1.0 + 1.0 / 16)), 0.05 * rmse);
  EXPECT_NEAR(noise.bias, 0.0, 0.02) << "zero block mean: the base's own (zero) bias";
  EXPECT_THROW(ev.set_noise_reference({base, rmse, 1, 7}), finecast::ConfigError);
}

TEST(EvalMetrics, SpectralNoiseKeepsTheBlockMeansAndHasTheTrainingResidualsSpectrum) {
  // A smooth field plus red fine-scale texture (white noise smoothed twice by 3 x 3 boxes), cos(lat)
  // weights: the residual of the best interpolant is mostly that texture, with little energy in
  // the upper half of wavenumbers, where white noise has most of its own.
  const int ny = 64, nx = 96;
  std::vector<double> lat(ny);
  for (int i = 0; i < ny; ++i) lat[i] = -60.0 + 120.0 * i / (ny - 1);
  const auto L = block_layout(ny, nx, 8, fe::latlon_weights(lat, nx));
  std::mt19937 rng(33);
  std::normal_distribution<double> nd;
  std::vector<double> tex(L.size());
  for (double& v : tex) v = nd(rng);
  for (int pass = 0; pass < 2; ++pass) {
    std::vector<double> sm(L.size(), 0.0);
    for (int i = 0; i < ny; ++i)
      for (int j = 0; j < nx; ++j)
        for (int di = -1; di <= 1; ++di)
          for (int dj = -1; dj <= 1; ++dj) sm[i * nx + j] += tex[((i + di + ny) % ny) * nx + (j + dj + nx) % nx] / 9.0;
    tex.swap(sm);
  }
  std::vector<double> truth(L.size());
  for (int i = 0; i < ny; ++i)
    for (int j = 0; j < nx; ++j)
      truth[i * nx + j] = 5.0 * std::sin(0.05 * i) * std::cos(0.04 * j) + 3.0 * tex[i * nx + j];
  fe::Evaluator ev(L);
  ev.add(truth.data(), {truth.data()});
  const auto [name, rmse] = fe::best_deterministic(ev.report());
  fe::Baseline best{};
  for (const auto& b : fe::all_baselines())
    if (b.name == name) best = b;
  ASSERT_EQ(best.name, name);
  const std::vector<double> base = fe::run_baseline(L, fe::block_means(L, truth.data()), best);
  std::vector<double> r(L.size());
  for (std::size_t i = 0; i < r.size(); ++i) r[i] = truth[i] - base[i];
  const std::vector<char> valid(L.n_blocks(), 1);
  fe::ResidualSpectrum spectrum;
  fe::add_residual_spectrum(L, r.data(), valid, spectrum);
  ASSERT_EQ(spectrum.weight, 1.0);  // one step

  const fe::NoiseReference noise{name, rmse, 8, 7};
  const auto spectral = fe::noise_reference_members(L, base, valid, noise, 11, &spectrum);
  const auto white = fe::noise_reference_members(L, base, valid, noise, 11, nullptr);
  ASSERT_EQ(spectral.size(), 8u);
  // Upper-half share of the energy of a field's DFT over the window, averaged over members.
  auto upper_share = [&](const std::vector<std::vector<double>>& fields) {
    double upper = 0, total = 0;
    for (const auto& f : fields) {
      std::vector<double> d(L.size());
      for (std::size_t i = 0; i < d.size(); ++i) d[i] = f[i] - base[i];
      const fe::RadialSpectrum s = fe::radial_spectrum(d.data(), ny, nx);
      upper += fe::upper_half_energy(s);
      for (double e : s.energy) total += e;
    }
    return upper / total;
  };
  const double truth_share = upper_share({truth});
  const double spectral_share = upper_share(spectral), white_share = upper_share(white);
  // (Removing the block means afterwards adds a little at high wavenumbers: 0.043 against 0.031
  // here; white noise has 0.80.)
  EXPECT_NEAR(spectral_share, truth_share, 0.5 * truth_share)
      << "spectral " << spectral_share << ", residual " << truth_share << ", white " << white_share;
  EXPECT_GT(white_share, 10.0 * truth_share) << "white noise has another spectrum";
  // Both keep the base's block means (to rounding) and have the RMS asked for.
  const std::vector<double> base_means = fe::block_means(L, base.data());
  for (const auto* members : {&spectral, &white})
    for (const auto& m : *members) {
      const std::vector<double> means = fe::block_means(L, m.data());
      double worst = 0, ss = 0, sw = 0;
      for (std::size_t b = 0; b < means.size(); ++b) worst = std::max(worst, std::abs(means[b] - base_means[b]));
      for (std::size_t i = 0; i < m.size(); ++i) {
        ss += L.w(i) * (m[i] - base[i]) * (m[i] - base[i]);
        sw += L.w(i);
      }
      EXPECT_LT(worst, 1e-12);
      EXPECT_NEAR(std::sqrt(ss / sw), rmse, 1e-9 * rmse);
    }

  // The evaluator's row: listed after noise_white once a training split was given.
  ev.set_noise_reference(noise);
  ev.add_noise_training(truth.data());
  ev.add_noise(truth.data());
  const fe::EvalReport rep = ev.report();
  ASSERT_GE(rep.rows.size(), 2u);
  EXPECT_EQ(rep.rows[rep.rows.size() - 2].name, "noise_white");
  EXPECT_EQ(rep.rows.back().name, "noise_spectral");
  EXPECT_NEAR(rep.rows.back().scores.spread, rmse, 0.05 * rmse);
  EXPECT_LT(rep.rows.back().scores.upper_energy_ratio, rep.rows[rep.rows.size() - 2].scores.upper_energy_ratio);
}

TEST(EvalMetrics, BadLayoutIsAConfigError) {
  EXPECT_THROW(fe::Evaluator(block_layout(16, 24, 0)), finecast::ConfigError);
  EXPECT_THROW(fe::Evaluator(block_layout(16, 24, 5)), finecast::ConfigError);
  EXPECT_THROW(fe::Evaluator(block_layout(4, 4, 2, {1, 1})), finecast::ConfigError);
  try {
    fe::Evaluator ev(block_layout(10, 24, 4));
    FAIL() << "expected ConfigError";
  } catch (const finecast::ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("10 x 24"), std::string::npos) << e.what();
  }
}

TEST(EvalReport, CsvAndJsonCarryEveryRowAndMarkUndefinedValues) {
  const auto L = block_layout(2, 2, 2);
  fe::Evaluator ev(L);
  const std::vector<double> t = {1, 1, 1, 1};  // flat truth: std ratio and spectra undefined
  ev.add(t.data(), {t.data()});
  fe::EvalReport r = ev.report();
  r.meta = {{"truth", "a \"quoted\" path"}};
  const std::string csv = fe::to_csv(r);
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'),
            2 + static_cast<long>(fe::all_baselines().size()));  // header, model, baselines
  EXPECT_EQ(csv.rfind("name,members,n_points,rmse", 0), 0u);
  EXPECT_NE(csv.find("model,1,4,0,0,0,0,0,0,,,0\n"), std::string::npos) << csv;
  const std::string json = fe::to_json(r);
  EXPECT_NE(json.find("\"std_ratio\": null"), std::string::npos);
  EXPECT_NE(json.find("\"a \\\"quoted\\\" path\""), std::string::npos);
  EXPECT_EQ(json.find("nan"), std::string::npos);
  EXPECT_NE(fe::format_table(r).find("bicubic_cons"), std::string::npos);
}
