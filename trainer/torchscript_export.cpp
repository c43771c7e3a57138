// SPDX-License-Identifier: BSD-3-Clause
// The exported TorchScript module: the sampling network's parameters and buffers copied into a
// torch::jit::Module tree of the same names, and methods compiled from TorchScript source that
// spell out, operation by operation, what the network (its definition in trainer/denoisers/, beside
// its C++ module) and sampling.cpp's eager sampler compute, so that the module reproduces
// Downscaler::sample for the same noise.
#include "trainer/torchscript_export.hpp"

#include <torch/script.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <limits>
#include <set>
#include <sstream>
#include <stdexcept>
#include <type_traits>
#include <variant>
#include <vector>

#include "common/error.hpp"
#include "trainer/denoisers/registry.hpp"
#include "trainer/denoisers/script_source.hpp"
#include "trainer/diffusion.hpp"
#include "trainer/downscaler_impl.hpp"
#include "trainer/sampling_internal.hpp"

namespace finecast::trainer {

namespace {

namespace jit = torch::jit;

using denoisers::script::identifier;

/// The tensors of the network, as a tree of modules of the same (dotted) names.
struct Node {
  std::map<std::string, Node> children;
  std::vector<std::pair<std::string, torch::Tensor>> parameters, buffers;
};

void insert(Node& root, const std::string& dotted, const torch::Tensor& value, bool parameter) {
  Node* node = &root;
  size_t start = 0;
  for (size_t dot = dotted.find('.'); dot != std::string::npos; dot = dotted.find('.', start)) {
    node = &node->children[identifier(dotted.substr(start, dot - start))];
    start = dot + 1;
  }
  (parameter ? node->parameters : node->buffers).emplace_back(identifier(dotted.substr(start)), value);
}

/// A tensor and a submodule of one name (the graph denoiser's buffer "up0" beside its block
/// "up0") are two attributes in TorchScript: the tensor becomes "<name>_tensor".
void separate_clashes(Node& node) {
  for (auto* leaves : {&node.parameters, &node.buffers})
    for (auto& [name, value] : *leaves)
      if (node.children.count(name)) name += "_tensor";
  for (auto& [name, child] : node.children) separate_clashes(child);
}

jit::Module build(const Node& node, const std::string& type_name, const std::shared_ptr<jit::CompilationUnit>& cu) {
  jit::Module m(c10::QualifiedName(type_name), cu, /*shouldMangle=*/true);
  for (const auto& [name, value] : node.parameters) m.register_parameter(name, value, /*is_buffer=*/false);
  for (const auto& [name, value] : node.buffers) m.register_buffer(name, value);
  for (const auto& [name, child] : node.children) m.register_module(name, build(child, type_name + "." + name, cu));
  return m;
}

/// sampling.cpp's eager path and diffusion.cpp's samplers, with their per-step coefficients
/// (diffusion::sampler_steps, the table the C++ samplers step with) as float64 buffers (read back
/// as Python floats, so every scalar is the double the C++ code uses).
const char* kSamplerSource = R"TS(
    def normalise_context(self, context: Tensor) -> Tensor:
        context = torch.max(torch.min(context, self.context_max), self.context_min)
        return (context - self.context_mean) / self.context_std

    def _row_inflation(self, context: Tensor) -> Tensor:
        f = context.new_full([context.size(0)], self.inflation)
        if self.inflation_range == 0.0 or context.size(1) == 0:
            return f
        width = self.range_max - self.range_min
        outside = torch.clamp_min(torch.maximum(self.range_min - context, context - self.range_max), 0.0)
        known = width > 0
        excess = torch.where(known, outside / torch.where(known, width, torch.ones_like(width)), torch.zeros_like(outside))
        return f * torch.pow(1.0 + excess.amax(1), self.inflation_range)

    def _remove_mean(self, x: Tensor, w: Optional[Tensor]) -> Tensor:
        if w is None:
            return x - x.mean(1, True)
        return x - (x * w).sum(1, True)

    def _patch_mean(self, x: Tensor, w: Optional[Tensor]) -> Tensor:
        if w is None:
            return x.mean(1)
        return (x * w).sum(1)

    def _model(self, x: Tensor, t: int, ctx: Tensor, w: Optional[Tensor]) -> Tensor:
        tt = torch.full_like(x.select(1, 0), t).long()  # define() resolves no dtype names
        y = self.denoise(x, tt, ctx)
        if self.conservative:
            y = self._remove_mean(y, w)
        return y

    def _estimates(self, x: Tensor, out: Tensor, i: int, w: Optional[Tensor]) -> Tuple[Tensor, Tensor]:
        a = float(self.coef_a[i])
        b = float(self.coef_b[i])
        if self.v_objective:
            x0 = a * x - b * out
            eps = b * x + a * out
        else:
            x0 = (x - b * out) / a
            eps = out
        if self.x0_clip > 0.0:
            clipped = x0.clamp(-self.x0_clip, self.x0_clip)
            if self.conservative:
                clipped = self._remove_mean(clipped, w)
            eps = (x - a * clipped) / b
            x0 = clipped
        elif self.conservative:
            x0 = self._remove_mean(x0, w)
        return x0, eps

    def sample_residual(self, ctx: Tensor, noise: Tensor, w: Optional[Tensor]) -> Tensor:
        x = noise[0]
        if self.conservative:
            x = self._remove_mean(x, w)
        n = self.timesteps.size(0)
        for i in range(n):
            t = int(self.timesteps[i])
            x0, eps = self._estimates(x, self._model(x, t, ctx, w), i, w)
            if self.ddpm:
                mean = float(self.coef_x0[i]) * x0 + float(self.coef_x[i]) * x
                if t > 0:
                    z = noise[n - t]
                    if self.conservative:
                        z = self._remove_mean(z, w)
                    mean.add_(z, alpha=float(self.coef_z[i]))
                x = mean
            elif i + 1 == n:
                x = x0
            else:
                x = float(self.coef_x0[i]) * x0 + float(self.coef_eps[i]) * eps
                sigma = float(self.coef_z[i])
                if sigma > 0.0:
                    z = noise[i + 1]
                    if self.conservative:
                        z = self._remove_mean(z, w)
                    x.add_(z, alpha=sigma)
        return x

    def forward(self, context: Tensor, noise: Tensor, coarse: Optional[Tensor] = None,
                weights: Optional[Tensor] = None, base: Optional[Tensor] = None) -> Tensor:
        n = context.size(0)
        rows = noise.size(1)
        assert noise.dim() == 3 and noise.size(0) == self.noise_draws and noise.size(2) == self.patch_size and rows % n == 0, ("finecast: noise must be [noise_draws, N * members, patch_size] = [" + str(self.noise_draws) + ", N * members, " + str(self.patch_size) + "], got " + str(noise.size()))
        assert context.dim() == 2 and context.size(1) == self.context_size, ("finecast: context must be [N, context_size] = [N, " + str(self.context_size) + "], got " + str(context.size()))
        members = rows // n
        ctx = self.normalise_context(context).repeat_interleave(members, 0)
        w: Optional[Tensor] = None
        if weights is not None:
            w = (weights / weights.sum(1, True)).repeat_interleave(members, 0)
        if self.residual != "mean":
            assert base is not None, ("finecast: this model learned the residual from the " + self.residual + " base: pass base=[N, patch_size] (finecast's Patches::base)")
            cc = context.new_zeros([rows, 1])
        elif coarse is not None:
            cc = coarse.reshape([n, 1]).repeat_interleave(members, 0)
        else:
            assert self.coarse_slot >= 0, "finecast: the context does not hold the coarse value (patch.relative_context): pass coarse=[N]"
            cc = context.narrow(1, self.coarse_slot, 1).repeat_interleave(members, 0)
        r = self.sample_residual(ctx, noise, w)
        if (self.inflation != 1.0 or self.inflation_range != 0.0) and members > 1:
            rm = r.reshape([n, members, self.patch_size])
            mean = rm.mean(1, True)
            r = (mean + (rm - mean) * self._row_inflation(context).reshape([n, 1, 1])).reshape([rows, self.patch_size])
        fine = cc + r * self.residual_std
        if self.conservative:
            fine = fine - self._patch_mean(fine, w).unsqueeze(1) + cc
        if base is not None and self.residual != "mean":
            fine = fine + base.repeat_interleave(members, 0)
        return fine.reshape([n, members, self.patch_size])
)TS";

torch::Tensor f64(const std::vector<double>& v) { return torch::tensor(v, torch::kFloat64); }

std::vector<std::string> split_list(const std::string& text) {
  std::vector<std::string> out;
  size_t start = 0;
  while (!text.empty()) {
    const size_t comma = text.find(',', start);
    out.push_back(text.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

std::string value_of(const std::map<std::string, std::string>& meta, const std::string& key,
                     const std::string& fallback = "") {
  const auto it = meta.find(key);
  return it == meta.end() ? fallback : it->second;
}

/// Where each patch's own coarse value of the downscaled field sits in the context (the layout of
/// docs/grids.md: per field its own value, then its R ring cells; then 3 position features, the
/// orography, and per covariate 1 + 2 P values), or -1 where the context holds differences from
/// it (patch.relative_context) or the conditioning does not say enough.
int64_t coarse_slot(const ExportConditioning& c, const ModelOptions& mo) {
  if (c.relative_context) return -1;
  const auto it = std::find(c.fields.begin(), c.fields.end(), c.target);
  if (c.fields.size() <= 1) return mo.context_size > 0 ? 0 : -1;  // one field: its own value comes first
  if (it == c.fields.end() || !c.static_features) return -1;
  const auto n_static = static_cast<int64_t>(c.covariates.size());
  const int64_t per_fields =
      mo.context_size - (*c.static_features ? 3 : 0) - (c.orography ? 1 : 0) - n_static * (1 + 2 * mo.patch_size);
  const auto n_fields = static_cast<int64_t>(c.fields.size());
  if (per_fields <= 0 || per_fields % n_fields != 0) return -1;
  return (it - c.fields.begin()) * (per_fields / n_fields);
}

/// Value `key` of `group` as a T (a flag: an int64 0 or 1); `fallback` when the group lacks it.
template <class T>
T typed(const schema::Record& group, const std::string& key, const std::string& source, const char* expected,
        T fallback) {
  const auto it = group.find(key);
  if (it == group.end()) return fallback;
  if (const T* v = std::get_if<T>(&it->second)) return *v;
  throw CheckpointError(source + ": /conditioning " + key + " must be " + expected);
}

void add_string(jit::Module& m, const std::string& name, const std::string& value) {
  m.register_attribute(name, c10::StringType::get(), value);
}

void add_strings(jit::Module& m, const std::string& name, const std::vector<std::string>& values) {
  c10::List<std::string> list;
  for (const auto& v : values) list.push_back(v);
  m.register_attribute(name, c10::ListType::ofStrings(), list);
}

/// A table as a CPU tensor of its own dtype; std::invalid_argument when its values do not fill its shape.
torch::Tensor table_tensor(const std::string& where, const ExportTable& table) {
  int64_t count = 1;
  for (int64_t d : table.shape) {
    if (d < 0) throw std::invalid_argument(where + ": negative dimension");
    count *= d;
  }
  return std::visit(
      [&](const auto& values) {
        using T = typename std::decay_t<decltype(values)>::value_type;
        if (static_cast<int64_t>(values.size()) != count)
          throw std::invalid_argument(where + ": " + std::to_string(values.size()) + " values for a shape of " +
                                      std::to_string(count));
        const auto dtype = std::is_same_v<T, int64_t>  ? torch::kInt64
                           : std::is_same_v<T, double> ? torch::kFloat64
                                                       : torch::kFloat32;
        return torch::from_blob(const_cast<T*>(values.data()), table.shape, dtype).clone();
      },
      table.values);
}

void add_value(jit::Module& m, const std::string& name, const ExportValue& value) {
  if (const auto* b = std::get_if<bool>(&value)) {
    m.register_attribute(name, c10::BoolType::get(), *b);
  } else if (const auto* i = std::get_if<int64_t>(&value)) {
    m.register_attribute(name, c10::IntType::get(), *i);
  } else if (const auto* d = std::get_if<double>(&value)) {
    m.register_attribute(name, c10::FloatType::get(), *d);
  } else if (const auto* s = std::get_if<std::string>(&value)) {
    add_string(m, name, *s);
  } else if (const auto* ints = std::get_if<std::vector<int64_t>>(&value)) {
    m.register_attribute(name, c10::ListType::ofInts(), c10::List<int64_t>(*ints));
  } else {
    add_strings(m, name, std::get<std::vector<std::string>>(value));
  }
}

/// The caller's submodules of tables and attributes, each under a name the module does not use.
void add_submodules(jit::Module& m, const std::vector<ExportSubmodule>& submodules,
                    const std::shared_ptr<jit::CompilationUnit>& cu) {
  for (const auto& sub : submodules) {
    const bool word = !sub.name.empty() && std::isdigit(static_cast<unsigned char>(sub.name[0])) == 0 &&
                      std::all_of(sub.name.begin(), sub.name.end(),
                                  [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
    if (!word || identifier(sub.name) != sub.name || m.hasattr(sub.name) || m.find_method(sub.name))
      throw std::invalid_argument("export submodule \"" + sub.name +
                                  "\": not an identifier, or a name the module uses already");
    jit::Module s(c10::QualifiedName("__torch__.finecast." + sub.name), cu, /*shouldMangle=*/true);
    for (const auto& [name, table] : sub.tables) s.register_buffer(name, table_tensor(sub.name + "." + name, table));
    for (const auto& [name, value] : sub.attributes) add_value(s, name, value);
    m.register_module(sub.name, s);
  }
}

}  // namespace

ExportConditioning export_conditioning(const schema::Record& group, const std::string& source) {
  using Names = std::vector<std::string>;
  ExportConditioning c;
  c.fields = typed<Names>(group, "fields", source, "an array of names", {});
  c.target = typed<std::string>(group, "target", source, "a name", c.fields.empty() ? "" : c.fields.front());
  c.covariates = typed<Names>(group, "patch.static", source, "an array of names", {});
  c.residual = typed<std::string>(group, "patch.residual", source, "a name", "mean");
  c.relative_context = typed<int64_t>(group, "patch.relative_context", source, "a flag (int64 0 or 1)", 0) != 0;
  if (group.count("patch.static_features"))
    c.static_features = typed<int64_t>(group, "patch.static_features", source, "a flag (int64 0 or 1)", 0) != 0;
  c.orography = !typed<std::string>(group, "patch.orography", source, "a name", "").empty();
  return c;
}

ExportConditioning export_conditioning(const std::map<std::string, std::string>& meta) {
  auto flag = [&](const std::string& key) {
    const std::string v = value_of(meta, key);
    return v == "true" || v == "1";
  };
  ExportConditioning c;
  c.fields = split_list(value_of(meta, "context_fields", value_of(meta, "fields")));
  c.target = value_of(meta, "target", value_of(meta, "fields"));
  c.covariates = split_list(value_of(meta, "patch.static"));
  c.residual = value_of(meta, "patch.residual", "mean");
  c.relative_context = flag("patch.relative_context");
  if (meta.count("patch.static_features")) c.static_features = flag("patch.static_features");
  c.orography = !value_of(meta, "patch.orography").empty();
  return c;
}

int64_t export_noise_draws(const ModelOptions& model, const SampleOptions& sample) {
  return sampling::noise_draws(model, sample);
}

std::vector<float> export_noise(const ModelOptions& model, const SampleOptions& sample, int64_t n, uint64_t seed) {
  const auto noise =
      sampling::noise(sampling::noise_draws(model, sample), 0, n, sample.members, model.patch_size, seed);
  return std::vector<float>(noise.data_ptr<float>(), noise.data_ptr<float>() + noise.numel());
}

void export_torchscript(const Downscaler& model, const ExportOptions& options, const std::string& path) {
  const auto& im = internals(model);
  const ModelOptions& mo = im.mo;
  const SampleOptions& so = options.sample;
  schema::check(sample_options_table(), so, "sample.");
  if (so.churn > 0)
    throw std::invalid_argument("sample.churn: the exported TorchScript sampler has no churn (0 expected, got " +
                                std::to_string(so.churn) + ")");
  if (so.recentre_sigma > 0)
    throw std::invalid_argument(
        "sample.recentre_sigma: the exported TorchScript sampler does not recentre (0 expected, got " +
        std::to_string(so.recentre_sigma) + ")");
  const auto& meta = options.metadata;
  torch::NoGradGuard no_grad;

  // The published weights (the EMA), copied to the CPU: the file is loaded on any device.
  Node net;
  {
    std::lock_guard<std::mutex> lock(im.sample_mutex);
    for (const auto& p : im.sample_net->named_parameters(true))
      insert(net, p.key(), p.value().detach().to(torch::kCPU, false, true), true);
    for (const auto& b : im.sample_net->named_buffers(true))
      insert(net, b.key(), b.value().detach().to(torch::kCPU, false, true), false);
  }
  separate_clashes(net);
  auto cu = std::make_shared<jit::CompilationUnit>();
  jit::Module m(c10::QualifiedName("__torch__.finecast.Downscaler"), cu, /*shouldMangle=*/true);
  const jit::Module* user = models::torchscript_module(*im.sample_net);
  if (user) {
    // arch torchscript: the user's own module, with the EMA weights it holds as the sampling copy.
    // A fresh load of the embedded bytes with the sampling copy's values: Module::clone() would
    // copy every parameter as the first one, since all are views of one flat buffer.
    std::istringstream bytes(*mo.torchscript);
    jit::Module copy = torch::jit::load(bytes, torch::kCPU);
    std::lock_guard<std::mutex> lock(im.sample_mutex);
    std::map<std::string, torch::Tensor> values;
    for (const auto& p : user->named_parameters(true)) values[p.name] = p.value;
    for (const auto& b : user->named_buffers(true)) values[b.name] = b.value;
    for (const auto& p : copy.named_parameters(true)) p.value.detach().copy_(values.at(p.name));
    for (const auto& b : copy.named_buffers(true)) b.value.detach().copy_(values.at(b.name));
    copy.eval();
    m.register_module("net", copy);
  } else {
    m.register_module("net", build(net, "__torch__.finecast.Denoiser", cu));
  }

  m.register_buffer("context_mean", im.sample_norm.context_mean.to(torch::kCPU).clone());
  m.register_buffer("context_std", im.sample_norm.context_std.to(torch::kCPU).clone());
  // sample.clip_context's bounds (the training range and its margin); +-inf (no clip) when it is off
  // or the checkpoint has no range.
  const auto [lo, hi] = clip_bounds(im.sample_norm, so.clip_margin);
  const bool clip = so.clip_context && lo.defined();
  const auto unbounded = [&](double v) { return torch::full({im.mo.context_size}, v, torch::kFloat32); };
  const double inf = std::numeric_limits<double>::infinity();
  m.register_buffer("context_min", clip ? lo.to(torch::kCPU).clone() : unbounded(-inf));
  m.register_buffer("context_max", clip ? hi.to(torch::kCPU).clone() : unbounded(inf));
  // sample.inflation_range's training range (+-inf without one: no patch lies beyond it).
  const bool ranged = im.sample_norm.context_min.defined();
  m.register_buffer("range_min",
                    ranged ? im.sample_norm.context_min.to(torch::kCPU, torch::kFloat32).clone() : unbounded(-inf));
  m.register_buffer("range_max",
                    ranged ? im.sample_norm.context_max.to(torch::kCPU, torch::kFloat32).clone() : unbounded(inf));
  const auto steps = diffusion::sampler_steps(im.sample_schedule, so);  // no churn (refused above)
  auto column = [&](double diffusion::StepCoefficients::*field) {
    std::vector<double> v;
    for (const auto& c : steps) v.push_back(c.*field);
    return f64(v);
  };
  std::vector<int64_t> timesteps;
  for (const auto& c : steps) timesteps.push_back(c.t);
  m.register_buffer("timesteps", torch::tensor(timesteps, torch::kInt64));
  m.register_buffer("coef_a", column(&diffusion::StepCoefficients::a));
  m.register_buffer("coef_b", column(&diffusion::StepCoefficients::b));
  m.register_buffer("coef_x0", column(&diffusion::StepCoefficients::x0_coef));
  m.register_buffer("coef_x", column(&diffusion::StepCoefficients::x_coef));
  m.register_buffer("coef_eps", column(&diffusion::StepCoefficients::eps_coef));
  m.register_buffer("coef_z", column(&diffusion::StepCoefficients::z_coef));
  m.register_buffer("alpha_bar", f64(im.sample_schedule.alpha_bar));

  // What forward() needs, then the metadata a user reads.
  m.register_attribute("residual_std", c10::FloatType::get(), im.sample_norm.residual_std);
  m.register_attribute("inflation", c10::FloatType::get(), so.inflation);
  m.register_attribute("inflation_range", c10::FloatType::get(), so.inflation_range);
  m.register_attribute("conservative", c10::BoolType::get(), mo.conservative);
  m.register_attribute("v_objective", c10::BoolType::get(), mo.objective == Objective::kV);
  m.register_attribute("x0_clip", c10::FloatType::get(), diffusion::SamplerSetup{}.x0_clip);
  m.register_attribute("ddpm", c10::BoolType::get(), so.sampler == Sampler::kDdpm);
  m.register_attribute("noise_draws", c10::IntType::get(), sampling::noise_draws(mo, so));
  m.register_attribute("patch_size", c10::IntType::get(), mo.patch_size);
  m.register_attribute("context_size", c10::IntType::get(), mo.context_size);
  m.register_attribute("static_channels", c10::IntType::get(), mo.static_channels);
  m.register_attribute("diffusion_steps", c10::IntType::get(), mo.diffusion_steps);
  m.register_attribute("steps", c10::IntType::get(), static_cast<int64_t>(steps.size()));
  m.register_attribute("eta", c10::FloatType::get(), so.sampler == Sampler::kDdpm ? 1.0 : so.eta);
  m.register_attribute("optimizer_step", c10::IntType::get(), im.step);
  const ExportConditioning cond = options.conditioning ? *options.conditioning : export_conditioning(meta);
  m.register_attribute("coarse_slot", c10::IntType::get(), coarse_slot(cond, mo));
  add_string(m, "sampler", name(so.sampler));
  add_string(m, "arch", name(mo.arch));
  add_string(m, "objective", name(mo.objective));
  add_string(m, "schedule", name(mo.schedule));
  add_string(m, "residual", cond.residual);
  add_string(m, "target", cond.target);
  add_strings(m, "variables", cond.fields);
  add_strings(m, "covariates", cond.covariates);
  add_string(m, "units", value_of(meta, "units"));
  add_string(m, "grid", value_of(meta, "grid"));
  c10::Dict<std::string, std::string> all;
  for (const auto& [k, v] : meta) all.insert(k, v);
  m.register_attribute("metadata", c10::DictType::create(c10::StringType::get(), c10::StringType::get()), all);

  std::string source =
      "    def _act(self, x: Tensor) -> Tensor:\n        return " + denoisers::script::activation(mo.activation) + "\n";
  if (user) {
    source +=
        "    def denoise(self, x_t: Tensor, t: Tensor, context: Tensor) -> Tensor:\n"
        "        return self.net.forward(x_t, t, context)\n";
  } else {
    // The architecture's own TorchScript definition, beside its C++ module (trainer/denoisers/).
    std::set<std::string> parameters;
    for (const auto& p : im.sample_net->named_parameters(true)) parameters.insert(p.key());
    const denoisers::Entry& arch = denoisers::entry(mo.arch);
    if (!arch.torchscript)
      throw InternalError("finecast-export: model.arch " + name(mo.arch) + " registers no TorchScript definition");
    source += arch.torchscript(mo, parameters);
  }
  source += kSamplerSource;
  // define() takes one method per def at the class's indentation: strip the 4 leading spaces.
  std::string dedented;
  for (size_t start = 0; start < source.size();) {
    size_t end = source.find('\n', start);
    if (end == std::string::npos) end = source.size();
    std::string line = source.substr(start, end - start);
    if (line.compare(0, 4, "    ") == 0) line.erase(0, 4);
    dedented += line + "\n";
    start = end + 1;
  }
  try {
    m.define(dedented);
  } catch (const c10::Error& e) {
    throw InternalError(std::string("finecast-export: the TorchScript source does not compile: ") + e.what());
  }
  add_submodules(m, options.submodules, cu);
  try {
    m.save(path);
  } catch (const c10::Error& e) {
    throw IoError(path + ": cannot write the TorchScript module: " + e.what());
  }
}

}  // namespace finecast::trainer
