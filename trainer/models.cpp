// SPDX-License-Identifier: BSD-3-Clause
// Denoiser networks: MLP (the reference model) and a small conditional U-Net for k x k blocks.
#include "trainer/models.hpp"

#include <torch/script.h>

#include <array>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
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
  if (o.arch == Arch::kGraph && lattice_side(o.patch_size) < 4)
    bad("patch_size",
        "the graph denoiser needs a triangle of r*r cells with r a power of 2 and >= 4 (an ICON "
        "patch at least two levels finer than its coarse cell), got " +
            std::to_string(o.patch_size));
  if (o.arch == Arch::kTorchscript && o.file.empty() && !o.torchscript)
    bad("file", "arch torchscript needs the denoiser's TorchScript file (model.file: denoiser.pt)");
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
    channels_ = o.static_channels;
    cond1_ = register_module("cond1", nn::Linear(o.context_size - channels_ * o.patch_size + o.time_embedding, cond));
    cond2_ = register_module("cond2", nn::Linear(cond, cond));
    in_ = register_module("conv_in", nn::Conv2d(nn::Conv2dOptions(1 + channels_, c, 3).padding(1)));
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
    // The context's head is the conditioning vector, its tail the fine covariate fields.
    const SplitContext split = split_context(context, channels_, k_ * k_);
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
class GraphDenoiser : public Denoiser {
 public:
  GraphDenoiser(const ModelOptions& o, const torch::Device& device)
      : table_(sinusoidal_table(o.diffusion_steps, o.time_embedding).to(device)), act_(o.activation) {
    table_ = register_buffer("step_table", table_);
    channels_ = o.static_channels;
    p_ = o.patch_size;
    const int64_t c = o.unet_channels, cond = 4 * c;
    cond1_ = register_module("cond1", nn::Linear(o.context_size - channels_ * p_ + o.time_embedding, cond));
    cond2_ = register_module("cond2", nn::Linear(cond, cond));
    in_ = register_module("in", nn::Linear(1 + channels_, c));
    place_ = register_parameter("place", torch::zeros({p_, c}));
    // Three levels: side r, r/2, r/4; the pooling order lists each parent's four children together.
    const int64_t r = lattice_side(p_);
    std::vector<torch::Tensor> nb;
    for (int level = 0; level < 3; ++level) {
      const TriangleLattice L = triangle_lattice(r >> level);
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
    const SplitContext split = split_context(context, channels_, p_);
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

/// "[2, 16]".
std::string shape_text(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

/// A user's TorchScript module as a denoiser: its parameters are registered under their own
/// (dotted) names in a tree of plain modules, so that finecast's flat buffers, initialisation,
/// optimizer, EMA and checkpoints treat them as those of a built-in network; the module's
/// forward(x_t, t, context) computes with the very same tensors.
class TorchScriptDenoiser : public Denoiser {
 public:
  TorchScriptDenoiser(const ModelOptions& o, const torch::Device& device)
      : where_("model.file " + o.file + ": "), wanted_(wanted_signature(o)) {
    const std::string& where = where_;
    try {
      std::istringstream in(*o.torchscript);
      module_ = torch::jit::load(in, device);
    } catch (const c10::Error& e) {
      throw std::invalid_argument(where + "not a TorchScript module torch::jit::load can read (" +
                                  std::string(e.what_without_backtrace()) + ")");
    }
    check_signature(o, where, device);
    std::map<std::string, std::shared_ptr<torch::nn::Module>> holders;
    for (const auto& p : module_.named_parameters(/*recurse=*/true)) {
      if (p.value.scalar_type() != torch::kFloat32)
        throw std::invalid_argument(where + "parameter " + p.name + " is " +
                                    std::string(c10::toString(p.value.scalar_type())) + ", finecast trains float32");
      torch::nn::Module* owner = this;
      std::string path;
      size_t start = 0;
      for (size_t dot = p.name.find('.'); dot != std::string::npos; dot = p.name.find('.', start)) {
        path += (path.empty() ? "" : ".") + p.name.substr(start, dot - start);
        auto& holder = holders[path];
        if (!holder) holder = owner->register_module(p.name.substr(start, dot - start), std::make_shared<Holder>());
        owner = holder.get();
        start = dot + 1;
      }
      owner->register_parameter(p.name.substr(start), p.value);
    }
    if (parameters().empty()) throw std::invalid_argument(where + "the module has no parameters to train");
    module_.train();
  }

  /// Every call's result is checked too: a module may compute another shape for another batch
  /// than the start-up probe's (LibTorch's own error would then name neither the file nor why).
  torch::Tensor forward(const torch::Tensor& x_t, const torch::Tensor& context, const torch::Tensor& t) override {
    const c10::IValue out = module_.forward({x_t, t, context});
    if (!out.isTensor() || out.toTensor().sizes() != x_t.sizes())
      throw std::invalid_argument(
          where_ + "forward returns " +
          (out.isTensor() ? "shape " + shape_text(out.toTensor().sizes().vec()) : out.type()->str()) +
          " for a batch of " + std::to_string(x_t.size(0)) + ", expected " + shape_text(x_t.sizes().vec()) +
          "; finecast calls " + wanted_);
    return out.toTensor();
  }

  const torch::jit::Module& module() const { return module_; }

  using torch::nn::Module::to;
  /// The module's buffers move too (its parameters are those registered here).
  void to(torch::Device device, bool non_blocking) override {
    module_.to(device, non_blocking);
    torch::nn::Module::to(device, non_blocking);
  }

 private:
  struct Holder : torch::nn::Module {};

  static std::string wanted_signature(const ModelOptions& o) {
    return "forward(x_t: Tensor[B," + std::to_string(o.patch_size) + "], t: Tensor[B] int64, context: Tensor[B," +
           std::to_string(o.context_size) + "]) -> Tensor[B," + std::to_string(o.patch_size) + "]";
  }

  /// forward(x_t: Tensor[B,P], t: Tensor[B] int64, context: Tensor[B,C]) -> Tensor[B,P] float32:
  /// its schema, then one call on a batch of two.
  void check_signature(const ModelOptions& o, const std::string& where, const torch::Device& device) {
    const std::string& wanted = wanted_;
    const auto method = module_.find_method("forward");
    if (!method) throw std::invalid_argument(where + "the module has no method forward; finecast calls " + wanted);
    const auto& args = method->function().getSchema().arguments();  // self first
    std::string names;
    for (size_t i = 1; i < args.size(); ++i) names += (i > 1 ? ", " : "") + args[i].name();
    if (args.size() != 4)
      throw std::invalid_argument(where + "forward takes " + std::to_string(args.size() - 1) + " input(s) (" + names +
                                  "), finecast calls " + wanted);
    for (size_t i = 1; i < args.size(); ++i)
      if (!args[i].type()->isSubtypeOf(*c10::TensorType::get()))
        throw std::invalid_argument(where + "forward's input " + args[i].name() + " is " + args[i].type()->str() +
                                    ", finecast passes a Tensor: " + wanted);
    const int64_t B = 2;
    const auto f32 = torch::TensorOptions().dtype(torch::kFloat32).device(device);
    c10::IValue out;
    try {
      torch::NoGradGuard no_grad;
      out = module_.forward({torch::zeros({B, o.patch_size}, f32),
                             torch::full({B}, o.diffusion_steps - 1, f32.dtype(torch::kInt64)),
                             torch::zeros({B, o.context_size}, f32)});
    } catch (const std::exception& e) {
      // The interpreter's message ends with the error itself: keep its last line.
      std::string what = e.what();
      while (!what.empty() && what.back() == '\n') what.pop_back();
      const auto nl = what.rfind('\n');
      if (nl != std::string::npos) what = what.substr(nl + 1);
      throw std::invalid_argument(where + "forward fails on x_t [2, " + std::to_string(o.patch_size) +
                                  "] float32, t [2] int64, context [2, " + std::to_string(o.context_size) +
                                  "] float32 (" + what + "); finecast calls " + wanted);
    }
    if (!out.isTensor())
      throw std::invalid_argument(where + "forward returns " + out.type()->str() + ", expected a Tensor: " + wanted);
    const torch::Tensor y = out.toTensor();
    if (y.sizes().vec() != std::vector<int64_t>{B, o.patch_size})
      throw std::invalid_argument(where + "forward returns shape " + shape_text(y.sizes().vec()) +
                                  " for a batch of 2, expected " + shape_text({B, o.patch_size}) + ": " + wanted);
    if (y.scalar_type() != torch::kFloat32)
      throw std::invalid_argument(where + "forward returns " + std::string(c10::toString(y.scalar_type())) +
                                  ", expected float32: " + wanted);
  }

  std::string where_;   ///< "model.file <path>: ", before every message about the module
  std::string wanted_;  ///< the signature finecast calls
  torch::jit::Module module_;
};

}  // namespace

const torch::jit::Module* torchscript_module(const Denoiser& net) {
  const auto* scripted = dynamic_cast<const TorchScriptDenoiser*>(&net);
  return scripted ? &scripted->module() : nullptr;
}

std::shared_ptr<const std::string> read_torchscript(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::invalid_argument("model.file " + path + ": cannot be read (arch torchscript needs it)");
  // torch.jit.save writes a zip archive: anything else is refused from its first bytes, before a
  // large file (or an endless one such as /dev/zero) is read into memory whole.
  char magic[4] = {};
  in.read(magic, sizeof magic);
  if (in.gcount() != 4 || std::memcmp(magic, "PK\x03\x04", 4) != 0) {
    std::string head;
    for (std::streamsize i = 0; i < in.gcount(); ++i) {
      char hex[8];
      std::snprintf(hex, sizeof hex, "%s%02x", i ? " " : "", static_cast<unsigned char>(magic[i]));
      head += hex;
    }
    throw std::invalid_argument("model.file " + path +
                                ": not a TorchScript file (torch.jit.save writes a zip archive, which starts with "
                                "the bytes 50 4b 03 04; this file " +
                                (head.empty() ? std::string("is empty") : "starts with " + head) + ")");
  }
  in.seekg(0);
  std::ostringstream bytes;
  bytes << in.rdbuf();
  return std::make_shared<const std::string>(bytes.str());
}

std::string torchscript_hash(const std::string& bytes) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : bytes) h = (h ^ c) * 1099511628211ull;
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

std::shared_ptr<Denoiser> make_denoiser(const ModelOptions& options, const torch::Device& device) {
  validate(options);
  std::shared_ptr<Denoiser> net;
  if (options.arch == Arch::kMlp)
    net = std::make_shared<MlpDenoiser>(options, device);
  else if (options.arch == Arch::kUnet)
    net = std::make_shared<UNetDenoiser>(options, device);
  else if (options.arch == Arch::kGraph)
    net = std::make_shared<GraphDenoiser>(options, device);
  else {
    ModelOptions o = options;
    if (!o.torchscript) o.torchscript = read_torchscript(o.file);
    net = std::make_shared<TorchScriptDenoiser>(o, device);
  }
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
