// SPDX-License-Identifier: BSD-3-Clause
// The MLP denoiser (the reference model): its LibTorch module, its TorchScript definition and its
// registry entry. The fused CPU path (fused_mlp.cpp) computes the same network by hand.
#include <torch/torch.h>

#include "trainer/denoisers/registry.hpp"
#include "trainer/denoisers/script_source.hpp"
#include "trainer/models.hpp"

namespace finecast::trainer::denoisers::mlp {

namespace {

namespace nn = torch::nn;

/// Input = concat(noisy patch, context, step embedding); depth layers of width `hidden`.
class MlpDenoiser : public models::Denoiser {
 public:
  MlpDenoiser(const ModelOptions& o, const torch::Device& device)
      : table_(models::sinusoidal_table(o.diffusion_steps, o.time_embedding).to(device)), act_(o.activation) {
    // A buffer, so that module.to(device) moves it with the weights (not a parameter: not trained).
    table_ = register_buffer("step_table", table_);
    int64_t in = o.patch_size + o.context_size + o.time_embedding;
    for (int64_t i = 0; i < o.depth; ++i) {
      layers_.push_back(register_module("layer" + std::to_string(i), nn::Linear(in, o.hidden)));
      in = o.hidden;
    }
    out_ = register_module("out", nn::Linear(in, o.patch_size));
  }

  torch::Tensor forward(const torch::Tensor& x_t, const torch::Tensor& context, const torch::Tensor& t) override {
    auto h = torch::cat({x_t, context, table_.index_select(0, t)}, 1);
    for (auto& l : layers_) h = models::activation(l->forward(h), act_);
    return out_->forward(h);
  }

 private:
  torch::Tensor table_;
  Activation act_;
  std::vector<nn::Linear> layers_;
  nn::Linear out_{nullptr};
};

/// MlpDenoiser::forward as TorchScript.
std::string torchscript(const ModelOptions& mo, const std::set<std::string>&) {
  using script::attr;
  std::string s =
      "    def denoise(self, x_t: Tensor, t: Tensor, context: Tensor) -> Tensor:\n"
      "        h = torch.cat([x_t, context, " +
      attr("step_table") + ".index_select(0, t)], 1)\n";
  for (int64_t i = 0; i < mo.depth; ++i) {
    const std::string l = "layer" + std::to_string(i);
    s += "        h = self._act(torch.linear(h, " + attr(l + ".weight") + ", " + attr(l + ".bias") + "))\n";
  }
  s += "        return torch.linear(h, " + attr("out.weight") + ", " + attr("out.bias") + ")\n";
  return s;
}

int64_t activation_floats(const ModelOptions& o) {
  const int64_t in = o.patch_size + o.context_size + o.time_embedding;
  return in + 3 * o.depth * o.hidden + 6 * o.patch_size;
}

ModelOptions example() {
  ModelOptions o = tiny_options(Arch::kMlp);
  o.hidden = 32;
  o.depth = 2;
  return o;
}

}  // namespace

const Entry& entry() {
  static const Entry e = [] {
    Entry r;
    r.arch = Arch::kMlp;
    r.can.fused_cpu = true;
    r.can.graph_capture = true;
    r.own_options = {"hidden", "depth"};
    r.validate = [](const ModelOptions&) {};
    r.make = construct<MlpDenoiser>;
    r.torchscript = torchscript;
    r.activation_floats = activation_floats;
    r.example = example;
    return r;
  }();
  return e;
}

}  // namespace finecast::trainer::denoisers::mlp
