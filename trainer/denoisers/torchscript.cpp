// SPDX-License-Identifier: BSD-3-Clause
// A user's TorchScript module as the denoiser (model.arch: torchscript): reading and checking the
// module, the network that trains its parameters, and its registry entry. The exported module
// calls the user's own forward, so there is no TorchScript definition here.
#include <torch/script.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>

#include "trainer/denoisers/registry.hpp"
#include "trainer/models.hpp"

namespace finecast::trainer {

namespace denoisers::torchscript {

namespace {

/// "[2, 16]".
std::string shape_text(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

}  // namespace

/// A user's TorchScript module as a denoiser: its parameters are registered under their own
/// (dotted) names in a tree of plain modules, so that finecast's flat buffers, initialisation,
/// optimizer, EMA and checkpoints treat them as those of a built-in network; the module's
/// forward(x_t, t, context) computes with the very same tensors.
class TorchScriptDenoiser : public models::Denoiser {
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

namespace {

void validate(const ModelOptions& o) {
  if (o.file.empty() && !o.torchscript)
    throw std::invalid_argument(
        "model.file: arch torchscript needs the denoiser's TorchScript file (model.file: denoiser.pt)");
}

std::shared_ptr<models::Denoiser> make(const ModelOptions& options, const c10::Device& device) {
  ModelOptions o = options;
  if (!o.torchscript) o.torchscript = models::read_torchscript(o.file);
  return std::make_shared<TorchScriptDenoiser>(o, device);
}

/// A user's module as torch.jit.script writes it: one hidden layer over (x_t, context, the step
/// embedding), held in memory (no model.file).
ModelOptions example() {
  ModelOptions o = tiny_options(Arch::kTorchscript);
  static const auto bytes = [&] {
    auto cu = std::make_shared<torch::jit::CompilationUnit>();
    torch::jit::Module m(c10::QualifiedName("__torch__.example.Denoiser"), cu, true);
    auto layer = [&](const std::string& name, int64_t fan_in, int64_t fan_out) {
      torch::jit::Module l(c10::QualifiedName("__torch__.example." + name), cu, true);
      l.register_parameter("weight", torch::zeros({fan_out, fan_in}), false);
      l.register_parameter("bias", torch::zeros({fan_out}), false);
      m.register_module(name, l);
    };
    const int64_t hidden = 24;
    layer("hidden", o.patch_size + o.context_size + o.time_embedding, hidden);
    layer("out", hidden, o.patch_size);
    m.register_buffer("step_table", models::sinusoidal_table(o.diffusion_steps, o.time_embedding));
    m.define(R"(
def forward(self, x_t: Tensor, t: Tensor, context: Tensor) -> Tensor:
    h = torch.cat([x_t, context, self.step_table.index_select(0, t)], 1)
    h = torch.tanh(torch.linear(h, self.hidden.weight, self.hidden.bias))
    return torch.linear(h, self.out.weight, self.out.bias)
)");
    std::ostringstream out;
    m.save(out);
    return std::make_shared<const std::string>(out.str());
  }();
  o.torchscript = bytes;
  return o;
}

}  // namespace

const Entry& entry() {
  static const Entry e = [] {
    Entry r;
    r.arch = Arch::kTorchscript;
    r.can.user_module = true;
    r.validate = validate;
    r.make = make;
    r.activation_floats = unet_activation_floats;  // unknown network: sized as a U-Net of its options
    r.example = example;
    return r;
  }();
  return e;
}

}  // namespace denoisers::torchscript

namespace models {

const torch::jit::Module* torchscript_module(const Denoiser& net) {
  const auto* scripted = dynamic_cast<const denoisers::torchscript::TorchScriptDenoiser*>(&net);
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

}  // namespace models

}  // namespace finecast::trainer
