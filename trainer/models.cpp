// SPDX-License-Identifier: BSD-3-Clause
// What the denoisers share: the step embedding, activations, the triangle lattice, the split of
// the context, option checks, and building and initialising a network through the registry
// (trainer/denoisers/).
#include "trainer/models.hpp"

#include <cmath>
#include <map>
#include <stdexcept>

#include "trainer/denoisers/registry.hpp"

namespace finecast::trainer::models {

torch::Tensor sinusoidal_table(int64_t steps, int64_t dim) {
  const int64_t half = dim / 2;
  auto t = torch::arange(steps, torch::kFloat64).unsqueeze(1);
  // Frequencies from 1 down to 1/10000, as in the Transformer / DDPM embeddings.
  auto freq = torch::exp(-std::log(10000.0) * torch::arange(half, torch::kFloat64) / std::max<int64_t>(half, 1));
  auto arg = t * freq.unsqueeze(0);
  auto table = torch::cat({torch::sin(arg), torch::cos(arg)}, 1);
  if (table.size(1) < dim) table = torch::cat({table, torch::zeros({steps, dim - table.size(1)}, torch::kFloat64)}, 1);
  return table.to(torch::kFloat32).contiguous();
}

void validate(const ModelOptions& o) {
  auto bad = [](const std::string& key, const std::string& why) {
    throw std::invalid_argument("model." + key + ": " + why);
  };
  schema::check(model_options_table(), o, "model.");  // every value in its range
  const denoisers::Entry& arch = denoisers::entry(o.arch);
  if (o.attention && !arch.can.attention)
    bad("attention", "self-attention is part of the unet only (arch is " + name(o.arch) + ")");
  arch.validate(o);
  if (o.static_channels * o.patch_size > o.context_size)
    bad("static_channels", std::to_string(o.static_channels) + " fine fields of " + std::to_string(o.patch_size) +
                               " values do not fit a context of " + std::to_string(o.context_size));
}

int64_t lattice_side(int64_t patch_size) {
  int64_t r = 1;
  while (r * r < patch_size) r *= 2;
  return r * r == patch_size ? r : 0;
}

TriangleLattice triangle_lattice(int64_t r) {
  // Slot of (i, j, down) in the canonical order of docs/grids.md.
  auto slot = [r](int64_t i, int64_t j, bool down) { return 2 * r * i - i * i + 2 * j + (down ? 1 : 0); };
  TriangleLattice L;
  L.side = r;
  const int64_t P = r * r;
  L.neighbours.assign(static_cast<size_t>(P * 3), P);
  L.parent.assign(static_cast<size_t>(P), -1);
  L.down.assign(static_cast<size_t>(P), 0);
  for (int64_t i = 0; i < r; ++i)
    for (int64_t j = 0; i + j < r; ++j)
      for (int d = 0; d < 2; ++d) {
        if (d == 1 && i + j > r - 2) continue;
        const int64_t s = slot(i, j, d == 1);
        int64_t* nb = &L.neighbours[static_cast<size_t>(s * 3)];
        // One neighbour across each edge direction: the beta-constant, gamma-constant and
        // beta+gamma-constant edge, in that order (P = none: outside the patch).
        if (d == 0) {
          if (i >= 1) nb[0] = slot(i - 1, j, true);
          if (j >= 1) nb[1] = slot(i, j - 1, true);
          if (i + j <= r - 2) nb[2] = slot(i, j, true);
        } else {
          nb[0] = slot(i + 1, j, false);
          nb[1] = slot(i, j + 1, false);
          nb[2] = slot(i, j, false);
        }
        L.down[static_cast<size_t>(s)] = static_cast<uint8_t>(d);
        if (r >= 2) {
          // The parent in the lattice of side r/2: upward children with both coordinates odd and
          // downward ones with either odd lie in a downward parent.
          const bool parent_down = d == 0 ? (i % 2 == 1 && j % 2 == 1) : (i % 2 == 1 || j % 2 == 1);
          const int64_t h = r / 2, I = i / 2, J = j / 2;
          L.parent[static_cast<size_t>(s)] = 2 * h * I - I * I + 2 * J + (parent_down ? 1 : 0);
        }
      }
  return L;
}

SplitContext split_context(const torch::Tensor& context, int64_t static_channels, int64_t patch_size) {
  SplitContext s;
  const int64_t fine = static_channels * patch_size, head = context.size(1) - fine;
  s.head = context.narrow(1, 0, head);
  if (static_channels > 0)
    s.fields = context.narrow(1, head, fine).reshape({context.size(0), static_channels, patch_size});
  return s;
}

torch::Tensor activation(const torch::Tensor& x, Activation act) {
  switch (act) {
    case Activation::kSilu:
      return torch::silu(x);
    case Activation::kGelu:
      return torch::gelu(x, "tanh");
    case Activation::kRelu:
      return torch::relu(x);
  }
  return x;
}

std::shared_ptr<Denoiser> make_denoiser(const ModelOptions& options, const torch::Device& device) {
  validate(options);
  std::shared_ptr<Denoiser> net = denoisers::entry(options.arch).make(options, device);
  net->to(device);
  return net;
}

void init_parameters(torch::nn::Module& net, at::Generator& gen) {
  torch::NoGradGuard no_grad;
  std::map<std::string, int64_t> fan_in;
  const auto params = net.named_parameters(true);
  for (const auto& item : params) {
    const auto& key = item.key();
    if (key.size() > 7 && key.compare(key.size() - 7, 7, ".weight") == 0 && item.value().dim() >= 2)
      fan_in[key.substr(0, key.size() - 7)] = item.value().numel() / item.value().size(0);
  }
  for (const auto& item : params) {
    const auto& key = item.key();
    const auto dot = key.rfind('.');
    const std::string owner = dot == std::string::npos ? key : key.substr(0, dot);
    auto it = fan_in.find(owner);
    const int64_t fi = it != fan_in.end() ? it->second : std::max<int64_t>(1, item.value().numel());
    const double bound = 1.0 / std::sqrt(static_cast<double>(fi));
    // Drawn on the CPU so that the same seed gives the same weights on every device.
    auto draw = torch::empty(item.value().sizes(), torch::kFloat32);
    draw.uniform_(-bound, bound, gen);
    item.value().copy_(draw);
  }
}

}  // namespace finecast::trainer::models
