// SPDX-License-Identifier: BSD-3-Clause
// What the denoisers share (internal, LibTorch); each network is in trainer/denoisers/.
#pragma once

#include <torch/torch.h>

#include <memory>
#include <vector>

#include "trainer/downscaler.hpp"

namespace torch::jit {
struct Module;
}  // namespace torch::jit

namespace finecast::trainer::models {

/// A network that maps (noisy patch [B,P], normalised context [B,C], step [B] int64) to [B,P].
class Denoiser : public torch::nn::Module {
 public:
  virtual torch::Tensor forward(const torch::Tensor& x_t, const torch::Tensor& context, const torch::Tensor& t) = 0;
};

/// Sinusoidal embedding of the steps 0..T-1: [T, dim] (sin in the first half, cos in the second).
torch::Tensor sinusoidal_table(int64_t steps, int64_t dim);

/// The hidden activation `name` (silu | gelu | relu) applied to x.
torch::Tensor activation(const torch::Tensor& x, Activation act);

/// r with r*r == patch_size and r a power of 2, else 0: the side of an ICON patch's triangle.
int64_t lattice_side(int64_t patch_size);

/// The cells of a triangle refined r times along each edge, in the canonical order of
/// docs/grids.md (slot = 2 r i - i^2 + 2 j + down): each cell's neighbour across its
/// beta-constant, gamma-constant and (beta + gamma)-constant edge (r*r = outside the patch), its
/// parent in the triangle of side r/2, and whether it points down.
struct TriangleLattice {
  int64_t side = 0;
  std::vector<int64_t> neighbours;  ///< [r*r][3]
  std::vector<int64_t> parent;      ///< [r*r]
  std::vector<uint8_t> down;        ///< [r*r]
};
TriangleLattice triangle_lattice(int64_t r);

/// The context of a batch split as the U-Net and the graph denoiser read it: the conditioning
/// vector (every value but the last static_channels * P) and the fine covariate fields
/// [B, static_channels, P] (covariate s's P values in canonical order, covariate after
/// covariate; coupling/grid/patches.hpp writes them so).
struct SplitContext {
  torch::Tensor head;    ///< [B, C - S P]
  torch::Tensor fields;  ///< [B, S, P] (undefined when S = 0)
};
SplitContext split_context(const torch::Tensor& context, int64_t static_channels, int64_t patch_size);

/// Checks the options that shape a network; throws std::invalid_argument naming the option.
void validate(const ModelOptions& options);

/// The bytes of the TorchScript file `path` (arch torchscript); throws std::invalid_argument
/// naming model.file when it cannot be read.
std::shared_ptr<const std::string> read_torchscript(const std::string& path);

/// A short hash of a TorchScript module's bytes (FNV-1a, 16 hex digits): checkpoints record it,
/// and a resume refuses a checkpoint whose module differs.
std::string torchscript_hash(const std::string& bytes);

/// The user's module behind an arch torchscript network (its parameters are the network's), or
/// nullptr for the built-in networks.
const torch::jit::Module* torchscript_module(const Denoiser& net);

/// Builds the network that `options.arch` names. Its initial weights come from LibTorch's global
/// generator; callers that need determinism re-draw them with init_parameters.
std::shared_ptr<Denoiser> make_denoiser(const ModelOptions& options, const torch::Device& device);

/// Re-draws every parameter from U(-1/sqrt(fan_in), 1/sqrt(fan_in)) with `gen` (PyTorch's
/// default bounds for Linear and Conv), so initialisation is seeded without global state.
void init_parameters(torch::nn::Module& net, at::Generator& gen);

}  // namespace finecast::trainer::models
