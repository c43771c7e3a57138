// SPDX-License-Identifier: BSD-3-Clause
// The U-Net denoiser over k x k blocks: its LibTorch modules, their TorchScript definition and
// its registry entry.
#include <torch/torch.h>

#include <cmath>

#include "trainer/denoisers/registry.hpp"
#include "trainer/denoisers/script_source.hpp"
#include "trainer/models.hpp"

namespace finecast::trainer::denoisers::unet {

namespace {

namespace nn = torch::nn;
using models::activation;

/// k with k*k == patch_size (rounded).
int64_t side(int64_t patch_size) {
  return static_cast<int64_t>(std::llround(std::sqrt(static_cast<double>(patch_size))));
}

/// Two 3x3 convolutions with a per-channel bias from the conditioning vector, plus a skip.
class CondBlockImpl : public nn::Module {
 public:
  CondBlockImpl(int64_t in, int64_t out, int64_t cond, Activation act) : act_(act) {
    conv1_ = register_module("conv1", nn::Conv2d(nn::Conv2dOptions(in, out, 3).padding(1)));
    conv2_ = register_module("conv2", nn::Conv2d(nn::Conv2dOptions(out, out, 3).padding(1)));
    film_ = register_module("cond", nn::Linear(cond, out));
    if (in != out) skip_ = register_module("skip", nn::Conv2d(nn::Conv2dOptions(in, out, 1)));
  }
  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& cond) {
    auto h = conv1_->forward(activation(x, act_)) + film_->forward(cond).unsqueeze(-1).unsqueeze(-1);
    h = conv2_->forward(activation(h, act_));
    return h + (skip_ ? skip_->forward(x) : x);
  }

 private:
  Activation act_;
  nn::Conv2d conv1_{nullptr}, conv2_{nullptr}, skip_{nullptr};
  nn::Linear film_{nullptr};
};
TORCH_MODULE(CondBlock);

/// Multi-head self-attention over the h*w tokens of a [B, ch, h, w] map, pre-normalised (layer
/// norm without affine parameters), with a residual connection.
class SelfAttentionImpl : public nn::Module {
 public:
  SelfAttentionImpl(int64_t channels, int64_t heads) : ch_(channels), heads_(heads) {
    qkv_ = register_module("qkv", nn::Linear(channels, 3 * channels));
    out_ = register_module("proj", nn::Linear(channels, channels));
  }
  torch::Tensor forward(const torch::Tensor& x) {
    const int64_t b = x.size(0), h = x.size(2), w = x.size(3), n = h * w, d = ch_ / heads_;
    auto tokens = x.flatten(2).transpose(1, 2);  // [B, N, ch]
    auto qkv = qkv_->forward(torch::layer_norm(tokens, {ch_})).view({b, n, 3, heads_, d}).permute({2, 0, 3, 1, 4});
    auto q = qkv[0], k = qkv[1], v = qkv[2];  // [B, heads, N, d]
    auto att = torch::softmax(torch::matmul(q, k.transpose(-2, -1)) / std::sqrt(static_cast<double>(d)), -1);
    auto o = torch::matmul(att, v).transpose(1, 2).reshape({b, n, ch_});
    return x + out_->forward(o).transpose(1, 2).reshape({b, ch_, h, w});
  }

 private:
  int64_t ch_, heads_;
  nn::Linear qkv_{nullptr}, out_{nullptr};
};
TORCH_MODULE(SelfAttention);

/// Heads of the attention over 2c channels: 4 when they divide.
int64_t heads(int64_t channels) { return channels % 4 == 0 ? 4 : 1; }

/// One down/up level U-Net over the k x k block; context and step enter through the
/// conditioning vector of every block.
class UNetDenoiser : public models::Denoiser {
 public:
  UNetDenoiser(const ModelOptions& o, const torch::Device& device)
      : table_(models::sinusoidal_table(o.diffusion_steps, o.time_embedding).to(device)), k_(side(o.patch_size)) {
    table_ = register_buffer("step_table", table_);
    const int64_t c = o.unet_channels, cond = 4 * c;
    channels_ = o.static_channels;
    cond1_ = register_module("cond1", nn::Linear(o.context_size - channels_ * o.patch_size + o.time_embedding, cond));
    cond2_ = register_module("cond2", nn::Linear(cond, cond));
    in_ = register_module("conv_in", nn::Conv2d(nn::Conv2dOptions(1 + channels_, c, 3).padding(1)));
    const auto& a = o.activation;
    down1_ = register_module("down1", CondBlock(c, c, cond, a));
    downsample_ = register_module("downsample", nn::Conv2d(nn::Conv2dOptions(c, 2 * c, 3).stride(2).padding(1)));
    down2_ = register_module("down2", CondBlock(2 * c, 2 * c, cond, a));
    // Attention at the lowest resolution ((k/2)^2 tokens of 2c channels).
    if (o.attention) attn_ = register_module("attn", SelfAttention(2 * c, heads(2 * c)));
    mid_ = register_module("mid", CondBlock(2 * c, 2 * c, cond, a));
    upconv_ = register_module("upconv", nn::Conv2d(nn::Conv2dOptions(2 * c, c, 3).padding(1)));
    up_ = register_module("up", CondBlock(2 * c, c, cond, a));
    act_ = a;
    out_ = register_module("conv_out", nn::Conv2d(nn::Conv2dOptions(c, 1, 3).padding(1)));
  }

  torch::Tensor forward(const torch::Tensor& x_t, const torch::Tensor& context, const torch::Tensor& t) override {
    const int64_t b = x_t.size(0);
    // The context's head is the conditioning vector, its tail the fine covariate fields.
    const models::SplitContext split = models::split_context(context, channels_, k_ * k_);
    auto cond = activation(cond1_->forward(torch::cat({split.head, table_.index_select(0, t)}, 1)), act_);
    cond = activation(cond2_->forward(cond), act_);
    auto image = x_t.reshape({b, 1, k_, k_});
    if (channels_ > 0) image = torch::cat({image, split.fields.reshape({b, channels_, k_, k_})}, 1);
    auto h0 = in_->forward(image);
    auto s1 = down1_->forward(h0, cond);
    auto h = down2_->forward(downsample_->forward(s1), cond);
    if (attn_) h = attn_->forward(h);
    h = mid_->forward(h, cond);
    // Nearest-neighbour x2 upsampling spelled with repeat_interleave: one overload in every LibTorch.
    h = upconv_->forward(h.repeat_interleave(2, 2).repeat_interleave(2, 3));
    h = up_->forward(torch::cat({h, s1}, 1), cond);
    return out_->forward(activation(h, act_)).reshape({b, k_ * k_});
  }

 private:
  torch::Tensor table_;
  int64_t k_;
  int64_t channels_ = 0;
  Activation act_;
  SelfAttention attn_{nullptr};
  nn::Linear cond1_{nullptr}, cond2_{nullptr};
  nn::Conv2d in_{nullptr}, downsample_{nullptr}, upconv_{nullptr}, out_{nullptr};
  CondBlock down1_{nullptr}, down2_{nullptr}, mid_{nullptr}, up_{nullptr};
};

/// UNetDenoiser::forward, CondBlock and SelfAttention as TorchScript.
std::string torchscript(const ModelOptions& mo, const std::set<std::string>& parameters) {
  using script::attr;
  const int64_t k = side(mo.patch_size);
  const std::string K = std::to_string(k);
  std::string s;
  for (const char* block : {"down1", "down2", "mid", "up"}) {
    const std::string b = block;
    const std::string skip = parameters.count(b + ".skip.weight")
                                 ? "torch.conv2d(x, " + attr(b + ".skip.weight") + ", " + attr(b + ".skip.bias") + ")"
                                 : "x";
    s += script::with_prefix(
        "    def _block_" + b +
            "(self, x: Tensor, cond: Tensor) -> Tensor:\n"
            "        h = torch.conv2d(self._act(x), {P}.conv1.weight, {P}.conv1.bias, [1, 1], [1, 1]) + "
            "torch.linear(cond, {P}.cond.weight, {P}.cond.bias).unsqueeze(-1).unsqueeze(-1)\n"
            "        h = torch.conv2d(self._act(h), {P}.conv2.weight, {P}.conv2.bias, [1, 1], [1, 1])\n"
            "        return h + " +
            skip + "\n",
        attr(b));
  }
  if (mo.attention) {
    const int64_t ch = 2 * mo.unet_channels, d = ch / heads(ch);
    s += script::with_prefix(
        "    def _attention(self, x: Tensor) -> Tensor:\n"
        "        b = x.size(0)\n"
        "        h = x.size(2)\n"
        "        w = x.size(3)\n"
        "        n = h * w\n"
        "        tokens = x.flatten(2).transpose(1, 2)\n"
        "        qkv = torch.linear(torch.layer_norm(tokens, [" +
            std::to_string(ch) + "]), {P}.qkv.weight, {P}.qkv.bias).view([b, n, 3, " + std::to_string(heads(ch)) +
            ", " + std::to_string(d) +
            "]).permute([2, 0, 3, 1, 4])\n"
            "        att = torch.softmax(torch.matmul(qkv[0], qkv[1].transpose(-2, -1)) / " +
            script::literal(std::sqrt(static_cast<double>(d))) +
            ", -1)\n"
            "        o = torch.matmul(att, qkv[2]).transpose(1, 2).reshape([b, n, " +
            std::to_string(ch) +
            "])\n"
            "        return x + torch.linear(o, {P}.proj.weight, {P}.proj.bias).transpose(1, 2).reshape([b, " +
            std::to_string(ch) + ", h, w])\n",
        attr("attn"));
  }
  s += "    def denoise(self, x_t: Tensor, t: Tensor, context: Tensor) -> Tensor:\n";
  s += script::conditioning(mo);
  s += "        b = x_t.size(0)\n";
  s += "        image = x_t.reshape([b, 1, " + K + ", " + K + "])\n";
  if (mo.static_channels > 0)
    s += "        image = torch.cat([image, fields.reshape([b, " + std::to_string(mo.static_channels) + ", " + K +
         ", " + K + "])], 1)\n";
  auto conv = [](const std::string& x, const std::string& name, const std::string& stride) {
    return "torch.conv2d(" + x + ", " + attr(name + ".weight") + ", " + attr(name + ".bias") + ", [" + stride + ", " +
           stride + "], [1, 1])";
  };
  s += "        h0 = " + conv("image", "conv_in", "1") + "\n";
  s += "        s1 = self._block_down1(h0, cond)\n";
  s += "        h = self._block_down2(" + conv("s1", "downsample", "2") + ", cond)\n";
  if (mo.attention) s += "        h = self._attention(h)\n";
  s += "        h = self._block_mid(h, cond)\n";
  s += "        h = " + conv("h.repeat_interleave(2, 2).repeat_interleave(2, 3)", "upconv", "1") + "\n";
  s += "        h = self._block_up(torch.cat([h, s1], 1), cond)\n";
  s += "        return " + conv("self._act(h)", "conv_out", "1") + ".reshape([b, " + std::to_string(k * k) + "])\n";
  return s;
}

void validate(const ModelOptions& o) {
  const int64_t k = side(o.patch_size);
  if (k * k != o.patch_size || k % 2 != 0 || k < 4)
    throw std::invalid_argument("model.patch_size: the unet needs a square k*k patch with k even and >= 4, got " +
                                std::to_string(o.patch_size));
}

ModelOptions example() {
  ModelOptions o = tiny_options(Arch::kUnet);
  o.unet_channels = 4;
  o.attention = true;
  o.static_channels = 1;
  o.context_size += o.patch_size;
  return o;
}

}  // namespace

const Entry& entry() {
  static const Entry e = [] {
    Entry r;
    r.arch = Arch::kUnet;
    r.can.graph_capture = true;
    r.can.attention = true;
    r.own_options = {"unet_channels", "attention"};
    r.validate = validate;
    r.make = construct<UNetDenoiser>;
    r.torchscript = torchscript;
    r.activation_floats = unet_activation_floats;
    r.example = example;
    return r;
  }();
  return e;
}

}  // namespace finecast::trainer::denoisers::unet
