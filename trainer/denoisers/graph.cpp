// SPDX-License-Identifier: BSD-3-Clause
// The graph denoiser over the triangles of an ICON patch: its LibTorch modules, their TorchScript
// definition and its registry entry.
#include <torch/torch.h>

#include <array>

#include "trainer/denoisers/registry.hpp"
#include "trainer/denoisers/script_source.hpp"
#include "trainer/models.hpp"

namespace finecast::trainer::denoisers::graph {

namespace {

namespace nn = torch::nn;
using models::activation;

/// A convolution over a triangle lattice: each cell's features and those of its three edge
/// neighbours (in the lattice's edge-direction order; zeros outside the patch) through one
/// linear map.
class GraphConvImpl : public nn::Module {
 public:
  GraphConvImpl(int64_t in, int64_t out, torch::Tensor neighbours) : in_(in), n_(neighbours.numel() / 3) {
    neighbours_ = register_buffer("neighbours", neighbours);
    lin_ = register_module("lin", nn::Linear(4 * in, out));
  }
  torch::Tensor forward(const torch::Tensor& h) {  // [B, N, in]
    const int64_t b = h.size(0);
    auto padded = torch::cat({h, torch::zeros({b, 1, in_}, h.options())}, 1);
    auto nb = padded.index_select(1, neighbours_).reshape({b, n_, 3 * in_});
    return lin_->forward(torch::cat({h, nb}, 2));
  }

 private:
  int64_t in_, n_;
  torch::Tensor neighbours_;
  nn::Linear lin_{nullptr};
};
TORCH_MODULE(GraphConv);

/// Two graph convolutions with a per-channel bias from the conditioning vector, plus a skip.
class GraphBlockImpl : public nn::Module {
 public:
  GraphBlockImpl(int64_t in, int64_t out, int64_t cond, Activation act, const torch::Tensor& neighbours) : act_(act) {
    conv1_ = register_module("conv1", GraphConv(in, out, neighbours));
    conv2_ = register_module("conv2", GraphConv(out, out, neighbours));
    film_ = register_module("cond", nn::Linear(cond, out));
    if (in != out) skip_ = register_module("skip", nn::Linear(in, out));
  }
  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& cond) {
    auto h = conv1_->forward(activation(x, act_)) + film_->forward(cond).unsqueeze(1);
    h = conv2_->forward(activation(h, act_));
    return h + (skip_ ? skip_->forward(x) : x);
  }

 private:
  Activation act_;
  GraphConv conv1_{nullptr}, conv2_{nullptr};
  nn::Linear film_{nullptr}, skip_{nullptr};
};
TORCH_MODULE(GraphBlock);

/// A U-Net over the triangles of an ICON patch (r x r cells of the canonical lattice): graph
/// convolutions at the patch's own level and two coarser ones (each cell pooled with its three
/// siblings, as the refinement made them), context and step through the conditioning vector of
/// every block, the fine covariates as input channels, a learned embedding of each cell's place.
class GraphDenoiser : public models::Denoiser {
 public:
  GraphDenoiser(const ModelOptions& o, const torch::Device& device)
      : table_(models::sinusoidal_table(o.diffusion_steps, o.time_embedding).to(device)), act_(o.activation) {
    table_ = register_buffer("step_table", table_);
    channels_ = o.static_channels;
    p_ = o.patch_size;
    const int64_t c = o.unet_channels, cond = 4 * c;
    cond1_ = register_module("cond1", nn::Linear(o.context_size - channels_ * p_ + o.time_embedding, cond));
    cond2_ = register_module("cond2", nn::Linear(cond, cond));
    in_ = register_module("in", nn::Linear(1 + channels_, c));
    place_ = register_parameter("place", torch::zeros({p_, c}));
    // Three levels: side r, r/2, r/4; the pooling order lists each parent's four children together.
    const int64_t r = models::lattice_side(p_);
    std::vector<torch::Tensor> nb;
    for (int level = 0; level < 3; ++level) {
      const models::TriangleLattice L = models::triangle_lattice(r >> level);
      nb.push_back(torch::tensor(L.neighbours, torch::kInt64));
      if (level < 2) {
        std::vector<int64_t> order(L.parent.size()), count(L.parent.size() / 4, 0);
        for (size_t s = 0; s < L.parent.size(); ++s)
          order[static_cast<size_t>(L.parent[s] * 4 + count[L.parent[s]]++)] = static_cast<int64_t>(s);
        pool_[level] = register_buffer("pool" + std::to_string(level), torch::tensor(order, torch::kInt64));
        up_[level] = register_buffer("up" + std::to_string(level), torch::tensor(L.parent, torch::kInt64));
      }
    }
    const auto& a = o.activation;
    down0_ = register_module("down0", GraphBlock(c, c, cond, a, nb[0]));
    down1_ = register_module("down1", GraphBlock(c, 2 * c, cond, a, nb[1]));
    mid_ = register_module("mid", GraphBlock(2 * c, 2 * c, cond, a, nb[2]));
    up1_ = register_module("up1", GraphBlock(4 * c, 2 * c, cond, a, nb[1]));
    up0_ = register_module("up0", GraphBlock(3 * c, c, cond, a, nb[0]));
    out_ = register_module("out", nn::Linear(c, 1));
  }

  torch::Tensor forward(const torch::Tensor& x_t, const torch::Tensor& context, const torch::Tensor& t) override {
    const models::SplitContext split = models::split_context(context, channels_, p_);
    auto cond = activation(cond1_->forward(torch::cat({split.head, table_.index_select(0, t)}, 1)), act_);
    cond = activation(cond2_->forward(cond), act_);
    auto cells = x_t.unsqueeze(2);  // [B, P, 1]
    if (channels_ > 0) cells = torch::cat({cells, split.fields.transpose(1, 2)}, 2);
    auto h0 = in_->forward(cells) + place_.unsqueeze(0);
    auto s0 = down0_->forward(h0, cond);
    auto s1 = down1_->forward(pool(s0, 0), cond);
    auto h = mid_->forward(pool(s1, 1), cond);
    h = up1_->forward(torch::cat({h.index_select(1, up_[1]), s1}, 2), cond);
    h = up0_->forward(torch::cat({h.index_select(1, up_[0]), s0}, 2), cond);
    return out_->forward(activation(h, act_)).squeeze(2);
  }

 private:
  /// Mean of each parent's four children at `level`.
  torch::Tensor pool(const torch::Tensor& h, int level) const {
    const int64_t b = h.size(0), n = h.size(1), c = h.size(2);
    return h.index_select(1, pool_[level]).reshape({b, n / 4, 4, c}).mean(2);
  }

  torch::Tensor table_;
  Activation act_;
  int64_t channels_ = 0, p_ = 0;
  torch::Tensor place_;
  std::array<torch::Tensor, 2> pool_, up_;
  nn::Linear cond1_{nullptr}, cond2_{nullptr}, in_{nullptr}, out_{nullptr};
  GraphBlock down0_{nullptr}, down1_{nullptr}, mid_{nullptr}, up1_{nullptr}, up0_{nullptr};
};

/// GraphDenoiser::forward, GraphBlock and GraphConv as TorchScript. The buffers "up0", "up1"
/// share their names with blocks: the export names them "<name>_tensor".
std::string torchscript(const ModelOptions& mo, const std::set<std::string>& parameters) {
  using script::attr;
  std::string s =
      "    def _graph_conv(self, h: Tensor, weight: Tensor, bias: Tensor, neighbours: Tensor) -> Tensor:\n"
      "        b = h.size(0)\n"
      "        c = h.size(2)\n"
      "        n = neighbours.size(0) // 3\n"
      "        padded = torch.cat([h, h.new_zeros([b, 1, c])], 1)\n"
      "        nb = padded.index_select(1, neighbours).reshape([b, n, 3 * c])\n"
      "        return torch.linear(torch.cat([h, nb], 2), weight, bias)\n"
      "    def _pool(self, h: Tensor, order: Tensor) -> Tensor:\n"
      "        b = h.size(0)\n"
      "        n = h.size(1)\n"
      "        c = h.size(2)\n"
      "        return h.index_select(1, order).reshape([b, n // 4, 4, c]).mean(2)\n";
  for (const char* block : {"down0", "down1", "mid", "up1", "up0"}) {
    const std::string b = block;
    const std::string skip = parameters.count(b + ".skip.weight")
                                 ? "torch.linear(x, " + attr(b + ".skip.weight") + ", " + attr(b + ".skip.bias") + ")"
                                 : "x";
    s += script::with_prefix(
        "    def _block_" + b +
            "(self, x: Tensor, cond: Tensor) -> Tensor:\n"
            "        h = self._graph_conv(self._act(x), {P}.conv1.lin.weight, {P}.conv1.lin.bias, "
            "{P}.conv1.neighbours) + torch.linear(cond, {P}.cond.weight, {P}.cond.bias).unsqueeze(1)\n"
            "        h = self._graph_conv(self._act(h), {P}.conv2.lin.weight, {P}.conv2.lin.bias, "
            "{P}.conv2.neighbours)\n"
            "        return h + " +
            skip + "\n",
        attr(b));
  }
  s += "    def denoise(self, x_t: Tensor, t: Tensor, context: Tensor) -> Tensor:\n";
  s += script::conditioning(mo);
  s += "        cells = x_t.unsqueeze(2)\n";
  if (mo.static_channels > 0) s += "        cells = torch.cat([cells, fields.transpose(1, 2)], 2)\n";
  s += "        h0 = torch.linear(cells, " + attr("in.weight") + ", " + attr("in.bias") + ") + " + attr("place") +
       ".unsqueeze(0)\n";
  s += "        s0 = self._block_down0(h0, cond)\n";
  s += "        s1 = self._block_down1(self._pool(s0, " + attr("pool0") + "), cond)\n";
  s += "        h = self._block_mid(self._pool(s1, " + attr("pool1") + "), cond)\n";
  s += "        h = self._block_up1(torch.cat([h.index_select(1, " + attr("up1") + "_tensor), s1], 2), cond)\n";
  s += "        h = self._block_up0(torch.cat([h.index_select(1, " + attr("up0") + "_tensor), s0], 2), cond)\n";
  s += "        return torch.linear(self._act(h), " + attr("out.weight") + ", " + attr("out.bias") + ").squeeze(2)\n";
  return s;
}

void validate(const ModelOptions& o) {
  if (models::lattice_side(o.patch_size) < 4)
    throw std::invalid_argument(
        "model.patch_size: the graph denoiser needs a triangle of r*r cells with r a power of 2 and >= 4 (an ICON "
        "patch at least two levels finer than its coarse cell), got " +
        std::to_string(o.patch_size));
}

ModelOptions example() {
  ModelOptions o = tiny_options(Arch::kGraph);
  o.unet_channels = 4;
  o.static_channels = 1;
  o.context_size += o.patch_size;
  o.activation = Activation::kGelu;
  o.objective = Objective::kEps;
  return o;
}

}  // namespace

const Entry& entry() {
  static const Entry e = [] {
    Entry r;
    r.arch = Arch::kGraph;
    r.can.graph_capture = true;
    r.validate = validate;
    r.make = construct<GraphDenoiser>;
    r.torchscript = torchscript;
    r.activation_floats = unet_activation_floats;
    r.example = example;
    return r;
  }();
  return e;
}

}  // namespace finecast::trainer::denoisers::graph
