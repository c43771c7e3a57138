// SPDX-License-Identifier: BSD-3-Clause
// finecast-export: a trained checkpoint as one TorchScript module for torch.jit.load (Python),
// FTorch (Fortran) or any LibTorch program (docs/export.md).
#include "trainer/export/export_command.hpp"

#include <exception>
#include <filesystem>
#include <string>

#include "common/cli.hpp"
#include "common/error.hpp"
#include "common/log.hpp"
#include "trainer/checkpoint.hpp"
#include "trainer/sample_flags.hpp"

namespace finecast::trainer {
namespace {

/// A checkpoint file, or a directory's newest valid checkpoint.
std::string resolve_checkpoint(const std::string& path) {
  namespace fs = std::filesystem;
  if (!fs::exists(path)) throw finecast::IoError("--checkpoint " + path + ": no such file or directory");
  if (!fs::is_directory(path)) return path;
  auto newest = newest_valid_checkpoint(path, [](const std::string& why) { finecast::log::warning(why); });
  if (!newest)
    throw finecast::IoError("--checkpoint " + path + ": the directory holds no valid checkpoint (ckpt_*.h5)");
  return *newest;
}

}  // namespace

int export_main(int argc, char** argv, ExportExtension* extension) {
  CLI::App app{
      "finecast-export: writes a trained finecast checkpoint as one TorchScript module: the EMA weights, the\n"
      "normalisation, the noise schedule and the sampler, with forward(context, noise, coarse=None, weights=None,\n"
      "base=None) -> fine samples [N, members, P] and denoise(x_t, t, context) -> the network's output. Load it\n"
      "with torch.jit.load in Python or torch_model_load in FTorch (docs/export.md).\n"
      "Example: finecast-export --checkpoint out/demo/checkpoints --output downscaler.pt (samples as the run that "
      "wrote\n"
      "the checkpoint did; --sampler, --steps, ... override)"};
  std::string checkpoint, output = "downscaler.pt", log_level = "info";
  ExportOptions opt;
  SampleOverrides given;
  app.add_option("--checkpoint", checkpoint, "checkpoint file (.h5), or a directory: its newest valid checkpoint")
      ->required();
  app.add_option("--output,-o", output, "TorchScript file to write")->capture_default_str();
  // forward() samples as the checkpoint's run did unless told otherwise; it has no churn and no
  // recentring.
  add_sample_flags(app, given, " (forward applies it; an attribute of the module)");
  if (extension) extension->add_flags(app);
  finecast::cli::add_log_level(app, log_level);
  finecast::cli::add_version(app, "finecast-export");
  CLI11_PARSE(app, argc, argv);
  try {
    finecast::log::configure(-1, finecast::log::parse_level(log_level), true);
    const std::string path = resolve_checkpoint(checkpoint);
    const Downscaler model = Downscaler::load_checkpoint(path, "cpu");
    opt.metadata = read_checkpoint_metadata(path);
    // The plugin's conditioning spec, read by type from /conditioning (version 2 on; before, the
    // module's attributes come from its text in /metadata). The module's metadata dictionary
    // shows it as text too.
    if (const auto spec = read_checkpoint_group(path, "conditioning")) {
      opt.conditioning = export_conditioning(*spec, path);
      for (const auto& [key, value] : *spec) opt.metadata[key] = finecast::schema::to_text(value);
      // A step after the sampler's (the conditioning pipeline's), which the module does not have.
      if (const auto blend = spec->find("patch.global_blend"); blend != spec->end()) {
        const double w = finecast::schema::value_as<double>(blend->second);
        if (w < 1.0)
          finecast::log::warning(path + " was trained with patch.global_blend " + finecast::schema::format_real(w) +
                                 ": the exported module's members are the model's own, their mean not moved "
                                 "toward the global regression");
      }
      if (const auto k = spec->find("patch.spread_regression"); k != spec->end()) {
        const double exponent = finecast::schema::value_as<double>(k->second);
        if (exponent > 0.0)
          finecast::log::warning(path + " was trained with patch.spread_regression " +
                                 finecast::schema::format_real(exponent) +
                                 ": the exported module's members keep sample.inflation's spread, not spread by "
                                 "the regression's share per patch");
      }
    }
    // How the checkpoint's run sampled (its /sampling), else the plugin's defaults; then the flags.
    const auto recorded = read_checkpoint_sampling(path);
    if (recorded) opt.sample = *recorded;
    if (opt.sample.churn > 0 && !given.churn)
      throw finecast::ConfigError(path + " samples with sample.churn " +
                                  finecast::schema::format_real(opt.sample.churn) +
                                  ", which the exported sampler does not have: give --churn 0 to export it without");
    if (opt.sample.recentre_sigma > 0 && !given.recentre_sigma)
      throw finecast::ConfigError(path + " samples with sample.recentre_sigma " +
                                  finecast::schema::format_real(opt.sample.recentre_sigma) +
                                  ", which the exported sampler does not have: give --recentre-sigma 0 to export it "
                                  "without");
    opt.sample = overridden(opt.sample, given);
    const std::string extended = extension ? extension->extend(path, model, opt) : std::string();
    export_torchscript(model, opt, output);
    const ModelOptions& mo = model.model_options();
    finecast::log::info(
        "Exported " + path + " (" + name(mo.arch) + ", context " + std::to_string(mo.context_size) + ", patch " +
        std::to_string(mo.patch_size) + ", optimizer step " + std::to_string(model.step()) + ") to " + output +
        ": forward samples with " + sampling_text(opt.sample) +
        (recorded ? " (options not given: sample.* of the config it was trained with)"
                  : " (options not given: the plugin's defaults; the checkpoint records no /sampling)") +
        " and reads noise [" + std::to_string(export_noise_draws(mo, opt.sample)) + ", N * members, " +
        std::to_string(mo.patch_size) + "]");
    if (!extended.empty()) finecast::log::info(extended);
  } catch (const std::exception& e) {
    finecast::log::error(e.what());
    return 1;
  }
  return 0;
}

}  // namespace finecast::trainer
