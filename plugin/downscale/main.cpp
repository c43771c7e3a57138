// SPDX-License-Identifier: BSD-3-Clause
// finecast-downscale: applies a trained checkpoint to a NetCDF field (single process, no MPI).
#include <CLI/CLI.hpp>
#include <exception>
#include <string>
#include <vector>

#include "common/cli.hpp"
#include "common/log.hpp"
#include "coupling/grid/icon_geometry.hpp"
#include "coupling/io/plausibility.hpp"
#include "plugin/downscale/downscale.hpp"
#include "trainer/sample_flags.hpp"

int main(int argc, char** argv) {
  namespace fp = finecast::plugin;
  CLI::App app{
      "finecast-downscale: samples an ensemble of fine fields from a trained finecast checkpoint "
      "(written on any\n"
      "device). The input is either the coarse field on the coarse grid or a fine field that is "
      "coarsened first\n"
      "(to compare with the truth); the output is the plugin's NetCDF layout, with <var>_coarse.\n"
      "Example: finecast-downscale --checkpoint out/checkpoints --input tas.nc --var tas --output "
      "down.nc --members 8"};
  fp::DownscaleOptions opt;
  std::string log_level = "info";
  std::vector<std::string> checkpoints;
  app.add_option("--checkpoint", checkpoints,
                 "checkpoint file (.h5), or a directory: its newest valid checkpoint; repeated: the members are "
                 "pooled, --members / N from each (the k-th, from 0, with --seed + k: distinct seeds, logged)")
      ->required();
  app.add_option("--input,-i", opt.input, "NetCDF file with the field (fine or coarse)")->required();
  app.add_option("--var", opt.vars,
                 "field(s) the model was trained on, in the plugin's `fields` order; the first is "
                 "downscaled")
      ->required();
  app.add_option("--output,-o", opt.output, "output NetCDF file")->capture_default_str();
  app.add_option("--members", opt.members, "ensemble members")->capture_default_str()->check(finecast::cli::positive());
  app.add_option("--device", opt.device, "auto | cpu | cuda | cuda:N | mps")->capture_default_str();
  app.add_option("--grid", opt.grid,
                 "fine grid: the ICON grid file (required for ICON input), or a lat-lon file "
                 "(default: the input)");
  app.add_option("--grid-var", opt.grid_var, "lat-lon: the variable of --grid whose coordinates define the grid");
  app.add_option("--geometry", opt.geometry,
                 std::string(finecast::coupling::kIconGeometryHelp) + " (default: the checkpoint's grid.geometry)")
      ->check(CLI::IsMember({"file", "uniform"}));
  auto* block =
      app.add_option("--block", opt.block, "lat-lon: block size (default: sqrt of the checkpoint's patch size)")
          ->check(finecast::cli::positive());
  app.add_option("--coarse-level", opt.coarse_level,
                 "ICON: patches are the cells of R2B<L> (default: from the checkpoint's patch size)")
      ->check(finecast::cli::non_negative())
      ->excludes(block);
  app.add_option("--input-kind", opt.input_kind, "auto (by the number of values) | fine | coarse")
      ->capture_default_str()
      ->check(CLI::IsMember({"auto", "fine", "coarse"}));
  app.add_option("--static", opt.statics,
                 "FILE:VAR, a fine static covariate on the input's grid (or a larger grid holding it, matched by "
                 "coordinates), for checkpoints trained with patch.static: one per covariate, in the checkpoint's "
                 "order (VAR defaults to the name the checkpoint records)");
  app.add_option("--orography", opt.orography,
                 "FILE[:VAR]: the surface height on the fine grid, for checkpoints trained with "
                 "patch.orography (VAR defaults to the field the checkpoint names; finecast-host "
                 "writes its own with --write-orography FILE)");
  app.add_option("--hold-out", opt.hold_out,
                 "sample only the patches finecast-eval --hold-out scores: a box lat0,lat1,lon0,lon1 (patches wholly "
                 "inside, in the grid's own coordinates; several boxes joined by ';') or FILE:VAR, a mask on the fine "
                 "grid (patches with a non-zero cell); their contexts still come from the whole field, the other "
                 "patches are written as missing");
  app.add_option("--region", opt.region,
                 "lat0,lat1,lon0,lon1: sample only the patches wholly inside (finecast-eval --region); with "
                 "--hold-out, the patches both select");
  // The sampling options default to how the checkpoint's run sampled (DownscaleOptions::sample):
  // only those given here override it.
  finecast::trainer::add_sample_flags(app, opt.sample, "; with several --checkpoint, within each one's members");
  app.add_option("--global-blend", opt.global_blend,
                 "W in [0, 1]: move the members' mean to the global regression + W (mean - it), keeping each member's "
                 "deviation (patch.global_blend; default: the checkpoint's own; 1 = off)")
      ->check(CLI::Range(0.0, 1.0));
  app.add_option("--spread-regression", opt.spread_regression,
                 "k >= 0: spread each patch's members around their mean by r2^k, r2 the mean square over the patch of "
                 "what the global regression on the covariates adds to the interpolant (patch.spread_regression; "
                 "default: the checkpoint's own; 0 = off)")
      ->check(CLI::Range(0.0, 10.0));
  finecast::cli::add_time(app, opt.times, "time step(s) to downscale (default: all)");
  app.add_option("--seed", opt.seed, "sampling seed")->capture_default_str();
  app.add_option("--threads", opt.threads, "torch threads (0: LibTorch's default)")
      ->check(finecast::cli::non_negative());
  std::vector<std::string> plausible;
  app.add_option("--plausible", plausible, finecast::coupling::kPlausibleOptionHelp);
  finecast::cli::add_log_level(app, log_level);
  finecast::cli::add_version(app, "finecast-downscale");
  CLI11_PARSE(app, argc, argv);
  opt.checkpoint = checkpoints.front();
  opt.pool.assign(checkpoints.begin() + 1, checkpoints.end());
  try {
    finecast::log::configure(-1, finecast::log::parse_level(log_level), true);
    finecast::coupling::set_plausible_overrides(plausible, "--plausible");
    fp::run_downscale(opt);
  } catch (const std::exception& e) {
    finecast::log::error(e.what());
    return 1;
  }
  return 0;
}
