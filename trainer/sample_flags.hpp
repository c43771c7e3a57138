// SPDX-License-Identifier: BSD-3-Clause
// The sampler flags of the programs that sample a trained checkpoint (finecast-downscale,
// finecast-export): one spelling, check and help text each. Header-only, for programs (CLI11).
#pragma once

#include <CLI/CLI.hpp>
#include <string>

#include "common/cli.hpp"
#include "trainer/options.hpp"

namespace finecast::trainer {

/// --sampler, --steps, --eta, --ddpm-variance, --inflation, --inflation-range, --churn, --recentre-sigma,
/// --clip-context and --clip-margin into `given`, each set only when given on the command line: the others default to
/// how the checkpoint's run sampled (its /sampling). `inflation_note` ends --inflation's help (how this program applies
/// it).
inline void add_sample_flags(CLI::App& app, SampleOverrides& given, const std::string& inflation_note) {
  const auto by_default = [](const std::string& key, const std::string& otherwise) {
    return " (default: the checkpoint's training config, sample." + key + ", else " + otherwise + ")";
  };
  app.add_option_function<std::string>(
         "--sampler", [&given](const std::string& v) { given.sampler = v; },
         "ddim | ddpm" + by_default("sampler", "ddim"))
      ->check(CLI::IsMember({"ddim", "ddpm"}));
  app.add_option_function<int64_t>(
         "--steps", [&given](int64_t v) { given.steps = v; }, "DDIM steps" + by_default("steps", "10"))
      ->check(finecast::cli::positive());
  app.add_option_function<double>(
         "--eta", [&given](double v) { given.eta = v; },
         "DDIM noise per step: 0 deterministic, 1 ancestral (sharper fine scales)" + by_default("eta", "0"))
      ->check(CLI::Range(0.0, 1.0));
  app.add_option_function<std::string>(
         "--ddpm-variance", [&given](const std::string& v) { given.ddpm_variance = v; },
         "DDPM step variance: posterior (beta~_t) | beta (beta_t: more spread)" +
             by_default("ddpm_variance", "posterior"))
      ->check(CLI::IsMember({"posterior", "beta"}));
  app.add_option_function<double>(
         "--inflation", [&given](double v) { given.inflation = v; },
         "post-hoc spread inflation: each member's deviation from the ensemble mean times this; fit it on data "
         "that is not scored" +
             inflation_note + by_default("inflation", "1"))
      ->check(CLI::Range(0.0, 100.0));
  app.add_option_function<double>(
         "--inflation-range", [&given](double v) { given.inflation_range = v; },
         "per-patch inflation beyond the training range: a patch's deviations times inflation * (1 + e)^this, e = "
         "how far its context lies beyond the checkpoint's training range (the largest over its features, in units "
         "of the range's width; 0 inside)" +
             by_default("inflation_range", "0"))
      ->check(CLI::Range(0.0, 10.0));
  app.add_option_function<double>(
         "--churn", [&given](double v) { given.churn = v; },
         "EDM churn: each step re-noises x_t to the first step whose noise level is at least (1 + churn) times "
         "its own and steps from there (docs/training.md)" +
             by_default("churn", "0"))
      ->check(CLI::Range(0.0, 10.0));
  app.add_option_function<double>(
         "--recentre-sigma", [&given](double v) { given.recentre_sigma = v; },
         "move each patch's members onto the denoiser's estimate of their mean, made at the step whose noise "
         "level is nearest this sigma, instead of their own mean, which carries the noise of M draws (0: none; "
         "docs/training.md)" +
             by_default("recentre_sigma", "0"))
      ->check(CLI::NonNegativeNumber);
  app.add_option_function<std::string>(
         "--clip-context", [&given](const std::string& v) { given.clip_context = v == "true"; },
         "true | false: hold each context feature of the network within --clip-margin of the range it had in "
         "training, so that it does not extrapolate far (checkpoints from before 2026-12-02 keep no range and "
         "sample unclipped)" +
             by_default("clip_context", "true"))
      ->check(CLI::IsMember({"true", "false"}));
  app.add_option_function<double>(
         "--clip-margin", [&given](double v) { given.clip_margin = v; },
         "with --clip-context true: how far beyond its training range a feature may go, as a fraction of the "
         "range's width at each end (0: at the range)" +
             by_default("clip_margin", "0.25"))
      ->check(CLI::Range(0.0, 100.0));
}

}  // namespace finecast::trainer
