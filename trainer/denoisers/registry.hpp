// SPDX-License-Identifier: BSD-3-Clause
// The registry of denoisers (internal): per architecture, how its network is made and validated,
// what it can do (fused CPU path, CUDA graph capture, a user's module), the TorchScript source of
// its forward for the exported module, and a tiny valid configuration. The trainer asks these
// capabilities instead of naming architectures. Torch-free: the LibTorch types appear only as
// declarations, so checkpoint and option code reads the capabilities without LibTorch headers.
#pragma once

#include <cstdint>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "trainer/options.hpp"

namespace c10 {
struct Device;
}  // namespace c10

namespace finecast::trainer::models {
class Denoiser;
}  // namespace finecast::trainer::models

namespace finecast::trainer::denoisers {

/// What an architecture can do besides the eager (autograd) path, which every one has.
struct Capabilities {
  /// The fused CPU MLP (fused_mlp.cpp) trains and samples it on the CPU where the build has a CBLAS:
  /// its parameters are the MLP's (layer<i>.weight/bias, out.weight/bias over the step table).
  bool fused_cpu = false;
  /// Its training step and sampler loop can be captured in CUDA graphs (a scripted module cannot:
  /// its graph executor re-specialises during the first calls).
  bool graph_capture = false;
  /// model.attention applies to it.
  bool attention = false;
  /// The network is a user's TorchScript module (model.file): its bytes are part of the model,
  /// checkpoints embed them, and the exported module calls its forward.
  bool user_module = false;
};

/// One registered architecture (a file under trainer/denoisers/ defines it, list.hpp registers it).
struct Entry {
  Arch arch = Arch::kMlp;
  Capabilities can;
  /// Options that shape only this architecture's network: a checkpoint's value is compared with
  /// the model's only when both are of this architecture.
  std::vector<std::string> own_options;
  /// The checks of the options beyond their ranges that this architecture needs; throws
  /// std::invalid_argument naming the key ("model.<key>: ...").
  void (*validate)(const ModelOptions& options) = nullptr;
  /// Builds the network (after validate) on `device`; its weights are still to be drawn
  /// (models::init_parameters).
  std::shared_ptr<models::Denoiser> (*make)(const ModelOptions& options, const c10::Device& device) = nullptr;
  /// TorchScript source of the exported module's method `denoise(self, x_t, t, context)` (and
  /// its helpers), which computes what the network's forward does with the tensors of the same
  /// names under self.net (`parameters`: the network's parameter names); null for a user's
  /// module, whose own forward the export calls.
  std::string (*torchscript)(const ModelOptions& options, const std::set<std::string>& parameters) = nullptr;
  /// Floats per sample that a training step keeps for backward (train.max_device_memory's estimate).
  int64_t (*activation_floats)(const ModelOptions& options) = nullptr;
  /// The smallest options worth testing (tests/trainer/test_registry.cpp runs every path with it).
  ModelOptions (*example)() = nullptr;
};

/// The entry of `arch`.
const Entry& entry(Arch arch);
/// What `arch` can do.
inline const Capabilities& capabilities(Arch arch) { return entry(arch).can; }
/// Every registered entry, in the order of list.hpp.
const std::vector<const Entry*>& all();

/// `Entry::make` of a network class constructed from (options, device).
template <class Net>
std::shared_ptr<models::Denoiser> construct(const ModelOptions& options, const c10::Device& device) {
  return std::make_shared<Net>(options, device);
}

/// What every entry's example starts from: `arch` with 3 context values, patches of 16, a step
/// embedding of 16 and 20 diffusion steps.
ModelOptions tiny_options(Arch arch);

/// The activation estimate of a convolutional U-Net of model.unet_channels over P cells: full-
/// resolution maps of c channels, half-resolution maps of 2c and the lowest level's attention.
int64_t unet_activation_floats(const ModelOptions& options);

}  // namespace finecast::trainer::denoisers
