// SPDX-License-Identifier: BSD-3-Clause
// A trained downscaler as one TorchScript module (finecast-export; docs/export.md): the EMA
// weights, the normalisation, the noise schedule and the sampler in a file that torch.jit.load
// (Python) and FTorch (Fortran) read without finecast. Torch-free API.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "common/schema.hpp"
#include "trainer/downscaler.hpp"

namespace finecast::trainer {

/// A table of numbers, row-major, that the module carries for its caller: int64, float64 or
/// float32 values of the given shape.
struct ExportTable {
  std::vector<int64_t> shape;
  std::variant<std::vector<int64_t>, std::vector<double>, std::vector<float>> values;
};

/// An attribute beside the tables: a flag, an integer, a real, a name or a list of either.
using ExportValue = std::variant<bool, int64_t, double, std::string, std::vector<int64_t>, std::vector<std::string>>;

/// A submodule of tables (buffers) and attributes that the module holds but does not use itself:
/// what a caller needs around forward(), e.g. finecast-export's grid tables (docs/export.md),
/// which a layer that knows the grid builds. Python reads them as `module.<name>.<table>`.
struct ExportSubmodule {
  std::string name;
  std::vector<std::pair<std::string, ExportTable>> tables;
  std::vector<std::pair<std::string, ExportValue>> attributes;
};

/// What the model is conditioned on, as far as the module needs it (its attributes, and where
/// forward() finds each patch's coarse value in the context): part of the plugin's conditioning
/// spec, which the trainer stores without knowing it.
struct ExportConditioning {
  std::vector<std::string> fields;      ///< the context's coarse fields, in order
  std::string target;                   ///< the downscaled field
  std::vector<std::string> covariates;  ///< patch.static
  std::string residual = "mean";        ///< patch.residual
  bool relative_context = false;        ///< patch.relative_context
  std::optional<bool> static_features;  ///< patch.static_features; unknown where not recorded
  bool orography = false;               ///< patch.orography names a field
};

/// From a checkpoint's typed /conditioning group (the plugin's spec, spec_version 2 on), read by
/// type: lists as arrays, flags as 0/1. A value of another type is a CheckpointError naming
/// `source`, the key and what was expected.
ExportConditioning export_conditioning(const schema::Record& group, const std::string& source);
/// From the text in /metadata of checkpoints written before the group (spec_version 1: "fields",
/// lists joined by commas, flags "true"; version 0: the fields under "context_fields").
ExportConditioning export_conditioning(const std::map<std::string, std::string>& metadata);

/// What the exported module's forward() samples with; the rest comes from the model.
struct ExportOptions {
  SampleOptions sample;  ///< sampler, steps, eta, ddpm variance and inflation (members and threads are the caller's)
  /// What the model is conditioned on; nullopt: read from `metadata`'s text (older checkpoints).
  std::optional<ExportConditioning> conditioning;
  /// The checkpoint's user metadata (units, grid, ...; finecast-export adds the attributes of
  /// /conditioning as text): the module's `metadata` dictionary, `units` and `grid`.
  std::map<std::string, std::string> metadata;
  /// Submodules of tables the module carries for its caller (none by default). Their names must
  /// be identifiers that the module does not use already.
  std::vector<ExportSubmodule> submodules;
};

/// Writes the published (EMA) weights of `model` with the sampler of `options` as a TorchScript
/// module to `path`. Methods: forward(context, noise, coarse=None, weights=None, base=None) ->
/// [N, members, P] fine samples exactly as Downscaler::sample draws them for that noise
/// (plus the residual base), denoise(x_t, t, context) -> the network's raw output,
/// normalise_context(context), and options.submodules. Throws std::invalid_argument naming a bad
/// option or a submodule's table whose values do not fill its shape, and
/// finecast::IoError when the file cannot be written.
void export_torchscript(const Downscaler& model, const ExportOptions& options, const std::string& path);

/// How many noise fields forward() reads per sample ([draws, N * members, P]): x_T plus one per
/// noisy sampler update (DDPM: T; DDIM: 1, or `steps` when eta > 0).
int64_t export_noise_draws(const ModelOptions& model, const SampleOptions& sample);

/// The noise Downscaler::sample draws for `seed` when it samples n patches with these options,
/// as forward() reads it: [export_noise_draws, n * members, P], row-major (docs/export.md).
std::vector<float> export_noise(const ModelOptions& model, const SampleOptions& sample, int64_t n, uint64_t seed);

}  // namespace finecast::trainer
