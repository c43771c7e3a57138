// SPDX-License-Identifier: BSD-3-Clause
// Denoiser networks: MLP (the reference model) and a small conditional U-Net for k x k blocks.
#include "trainer/models.hpp"

#include <cmath>
#include <map>
#include <stdexcept>

#include "trainer/fused_mlp.hpp"

namespace finecast::trainer::models {

namespace nn = torch::nn;

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
  if (o.attention && o.arch != Arch::kUnet)
    bad("attention", "self-attention is part of the unet only (arch is " + name(o.arch) + ")");
  if (o.arch == Arch::kUnet) {
    const auto k = static_cast<int64_t>(std::llround(std::sqrt(static_cast<double>(o.patch_size))));
    if (k * k != o.patch_size || k % 2 != 0 || k < 4)
      bad("patch_size", "the unet needs a square k*k patch with k even and >= 4, got " + std::to_string(o.patch_size));
  }
}

torch::Tensor activation(const torch::Tensor& x, Activation act) {
  switch (act) {
    case Activation::kSilu: return torch::silu(x);
    case Activation::kGelu: return torch::gelu(x, "tanh");
    case Activation::kRelu: return torch::relu(x);
  }
  return x;
}

namespace {

/// Input = concat(noisy patch, context, step embedding); depth layers of width `hidden`.
class MlpDenoiser : public Denoiser {
 public:
  MlpDenoiser(const ModelOptions& o, const torch::Device& device)
      : table_(sinusoidal_table(o.diffusion_steps, o.time_embedding).to(device)), act_(o.activation) {
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
    for (auto& l : layers_) h = activation(l->forward(h), act_);
    return out_->forward(h);
  }

 private:
  torch::Tensor table_;
  Activation act_;
  std::vector<nn::Linear> layers_;
  nn::Linear out_{nullptr};
};

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

/// One down/up level U-Net over the k x k block; context and step enter through the
/// conditioning vector of every block.
class UNetDenoiser : public Denoiser {
 public:
  UNetDenoiser(const ModelOptions& o, const torch::Device& device)
      : table_(sinusoidal_table(o.diffusion_steps, o.time_embedding).to(device)),
        k_(static_cast<int64_t>(std::llround(std::sqrt(static_cast<double>(o.patch_size))))) {
    table_ = register_buffer("step_table", table_);
    const int64_t c = o.unet_channels, cond = 4 * c;
    cond1_ = register_module("cond1", nn::Linear(o.context_size + o.time_embedding, cond));
    cond2_ = register_module("cond2", nn::Linear(cond, cond));
    in_ = register_module("conv_in", nn::Conv2d(nn::Conv2dOptions(1, c, 3).padding(1)));
    const auto& a = o.activation;
    down1_ = register_module("down1", CondBlock(c, c, cond, a));
    downsample_ = register_module("downsample", nn::Conv2d(nn::Conv2dOptions(c, 2 * c, 3).stride(2).padding(1)));
    down2_ = register_module("down2", CondBlock(2 * c, 2 * c, cond, a));
    // Attention at the lowest resolution ((k/2)^2 tokens of 2c channels): 4 heads when they divide.
    if (o.attention) attn_ = register_module("attn", SelfAttention(2 * c, (2 * c) % 4 == 0 ? 4 : 1));
    mid_ = register_module("mid", CondBlock(2 * c, 2 * c, cond, a));
    upconv_ = register_module("upconv", nn::Conv2d(nn::Conv2dOptions(2 * c, c, 3).padding(1)));
    up_ = register_module("up", CondBlock(2 * c, c, cond, a));
    act_ = a;
    out_ = register_module("conv_out", nn::Conv2d(nn::Conv2dOptions(c, 1, 3).padding(1)));
  }

  torch::Tensor forward(const torch::Tensor& x_t, const torch::Tensor& context, const torch::Tensor& t) override {
    const int64_t b = x_t.size(0);
    auto cond = activation(cond1_->forward(torch::cat({context, table_.index_select(0, t)}, 1)), act_);
    cond = activation(cond2_->forward(cond), act_);
    auto h0 = in_->forward(x_t.reshape({b, 1, k_, k_}));
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
  Activation act_;
  SelfAttention attn_{nullptr};
  nn::Linear cond1_{nullptr}, cond2_{nullptr};
  nn::Conv2d in_{nullptr}, downsample_{nullptr}, upconv_{nullptr}, out_{nullptr};
  CondBlock down1_{nullptr}, down2_{nullptr}, mid_{nullptr}, up_{nullptr};
};

}  // namespace

std::shared_ptr<Denoiser> make_denoiser(const ModelOptions& options, const torch::Device& device) {
  validate(options);
  std::shared_ptr<Denoiser> net;
  if (options.arch == Arch::kMlp) net = std::make_shared<MlpDenoiser>(options, device);
  else net = std::make_shared<UNetDenoiser>(options, device);
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
