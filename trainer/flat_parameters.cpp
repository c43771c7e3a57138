// SPDX-License-Identifier: BSD-3-Clause
// Parameters and gradients as views of flat buffers.
#include "trainer/flat_parameters.hpp"

namespace finecast::trainer {

torch::Tensor flatten_parameters(torch::nn::Module& net, const torch::Device& device, std::vector<std::string>* names,
                                 std::vector<int64_t>* offsets, std::vector<std::vector<int64_t>>* shapes) {
  torch::NoGradGuard no_grad;
  const auto params = net.named_parameters(true);
  int64_t total = 0;
  for (const auto& p : params) total += p.value().numel();
  auto flat = torch::zeros({total}, torch::TensorOptions().dtype(torch::kFloat32).device(device));
  int64_t off = 0;
  for (const auto& p : params) {
    auto v = p.value();
    const int64_t n = v.numel();
    auto slot = flat.narrow(0, off, n).view(v.sizes());
    slot.copy_(v);
    v.set_data(slot);
    if (names) {
      names->push_back(p.key());
      offsets->push_back(off);
      shapes->push_back(v.sizes().vec());
    }
    off += n;
  }
  return flat;
}

void attach_gradients(torch::nn::Module& net, const torch::Tensor& grad) {
  int64_t off = 0;
  for (auto& p : net.parameters(true)) {
    const int64_t n = p.numel();
    p.mutable_grad() = grad.narrow(0, off, n).view(p.sizes());
    off += n;
  }
}

}  // namespace finecast::trainer
