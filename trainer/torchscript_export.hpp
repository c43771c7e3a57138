// SPDX-License-Identifier: BSD-3-Clause
// A trained downscaler as one TorchScript module (finecast-export; docs/export.md): the EMA
// weights, the normalisation, the noise schedule and the sampler in a file that torch.jit.load
// (Python) and FTorch (Fortran) read without finecast. Torch-free API.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <variant>
#include <vector>

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

/// What the exported module's forward() samples with; the rest comes from the model.
struct ExportOptions {
  SampleOptions sample;  ///< sampler, steps, eta, ddpm variance and inflation (members and threads are the caller's)
  /// The checkpoint's user metadata (context_fields, target, patch.*, ...; finecast-export adds
  /// the attributes of /conditioning as text): the module's attributes, and how forward() finds
  /// each patch's coarse value in the context.
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
