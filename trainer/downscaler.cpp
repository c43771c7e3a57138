// SPDX-License-Identifier: BSD-3-Clause
// The Downscaler's construction, state copies, accessors and publishing of the sampling weights.
// Training is in training.cpp, sampling in sampling.cpp, checkpoints in checkpoint_io.cpp.
#include "trainer/downscaler.hpp"

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/Parallel.h>

#include <stdexcept>

#include "trainer/sample_graph.hpp"
#include "trainer/train_graph.hpp"
#include "trainer/denoisers/registry.hpp"
#include "trainer/downscaler_impl.hpp"
#include "trainer/flat_parameters.hpp"
#include "trainer/torch_device.hpp"
#include "trainer/training_internal.hpp"

namespace finecast::trainer {

namespace {

/// The fused MLP over `net`'s flat layout, or null where it does not run.
std::unique_ptr<fused::Mlp> make_fused(const ModelOptions& mo, const fused::Layout& layout, const torch::Tensor& table,
                                       bool runs) {
  if (!runs) return nullptr;
  return std::make_unique<fused::Mlp>(mo, layout, table.data_ptr<float>());
}

}  // namespace

Downscaler::Impl::Impl(const ModelOptions& m, const TrainOptions& t, const std::string& dev, const std::string& sdev)
    : mo(m), to(t), device(parse_torch_device(dev)), sample_device(parse_torch_device(sdev.empty() ? dev : sdev)) {
  models::validate(mo);
  validate_train_options(to);
  // A TorchScript denoiser is read once; every copy of the network (training, sampling,
  // validation) loads these bytes, and checkpoints embed them.
  const denoisers::Capabilities& can = denoisers::capabilities(mo.arch);
  if (can.user_module && !mo.torchscript) mo.torchscript = models::read_torchscript(mo.file);
  cuda = device.is_cuda();
  schedule = diffusion::make_schedule(mo.schedule, mo.diffusion_steps, device);
  sample_schedule = diffusion::make_schedule(mo.schedule, mo.diffusion_steps, sample_device);
  gen = at::make_generator<at::CPUGeneratorImpl>(to.seed);

  net = models::make_denoiser(mo, torch::kCPU);
  models::init_parameters(*net, gen);
  net->to(device);
  flat = flatten_parameters(*net, device, &names, &offsets, &shapes);
  grad = torch::zeros_like(flat);
  attach_gradients(*net, grad);
  exp_avg = torch::zeros_like(flat);
  exp_avg_sq = torch::zeros_like(flat);
  denom = torch::zeros_like(flat);
  ema = flat.clone();
  micro_batch = to.batch_size;
  accumulate = to.accumulate;

  sample_net = models::make_denoiser(mo, sample_device);
  sample_flat = flatten_parameters(*sample_net, sample_device, nullptr, nullptr, nullptr);
  sample_flat.copy_(ema);
  norm = derive_norm();
  sample_norm = derive_normalisation(sums, mo.context_size, sample_device);

  if (can.fused_cpu) step_table_cpu = models::sinusoidal_table(mo.diffusion_steps, mo.time_embedding);
  fused_mlp = make_fused(mo, fused_layout(), step_table_cpu, train_path(*this) == TrainPath::kFused);
  sample_fused = make_fused(mo, fused_layout(), step_table_cpu, fused_runs(mo, to, sample_device));
  // A scripted module runs eagerly: its graph executor may re-specialise during the first calls,
  // which a CUDA graph capture cannot hold.
  if (can.graph_capture) sample_graphs = graphs::make_sample_graphs(sample_device);
}

Downscaler::Impl::~Impl() = default;

torch::Tensor Downscaler::Impl::view(const torch::Tensor& buf, size_t i) const {
  int64_t n = 1;
  for (auto d : shapes[i]) n *= d;
  return buf.narrow(0, offsets[i], n).view(shapes[i]);
}

fused::Layout Downscaler::Impl::fused_layout() const {
  fused::Layout l;
  if (!denoisers::capabilities(mo.arch).fused_cpu) return l;
  auto offset_of = [&](const std::string& name) {
    for (size_t i = 0; i < names.size(); ++i)
      if (names[i] == name) return offsets[i];
    throw std::logic_error("fused MLP: no parameter " + name);
  };
  for (int64_t i = 0; i < mo.depth; ++i) {
    l.weight.push_back(offset_of("layer" + std::to_string(i) + ".weight"));
    l.bias.push_back(offset_of("layer" + std::to_string(i) + ".bias"));
  }
  l.weight.push_back(offset_of("out.weight"));
  l.bias.push_back(offset_of("out.bias"));
  return l;
}

TrainState Downscaler::Impl::capture_state() const {
  torch::NoGradGuard no_grad;
  TrainState s;
  s.flat = flat.to(torch::kCPU, /*non_blocking=*/false, /*copy=*/true);
  s.ema = ema.to(torch::kCPU, false, true);
  s.exp_avg = exp_avg.to(torch::kCPU, false, true);
  s.exp_avg_sq = exp_avg_sq.to(torch::kCPU, false, true);
  s.sums = sums;
  s.rng_state = gen.get_state();
  s.step = step;
  s.consecutive_bad = consecutive_bad;
  s.total_bad = total_bad;
  s.validation = validation;
  return s;
}

void Downscaler::Impl::apply_state(const TrainState& s) {
  torch::NoGradGuard no_grad;
  flat.copy_(s.flat);
  ema.copy_(s.ema);
  exp_avg.copy_(s.exp_avg);
  exp_avg_sq.copy_(s.exp_avg_sq);
  sums = s.sums;
  gen.set_state(s.rng_state);
  step = s.step;
  consecutive_bad = s.consecutive_bad;
  total_bad = s.total_bad;
  validation = s.validation;
  norm = derive_norm();
}

// ---------------------------------------------------------------------------------------------
Downscaler::Downscaler(const ModelOptions& model, const TrainOptions& train, const std::string& device)
    : impl_(std::make_unique<Impl>(model, train, device, "")) {}
Downscaler::Downscaler(const ModelOptions& model, const TrainOptions& train, const std::string& device,
                       const std::string& sample_device)
    : impl_(std::make_unique<Impl>(model, train, device, sample_device)) {}
Downscaler::Downscaler(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Downscaler::Downscaler(Downscaler&&) noexcept = default;
Downscaler& Downscaler::operator=(Downscaler&&) noexcept = default;
Downscaler::~Downscaler() = default;

int64_t Downscaler::step() const { return impl_->step; }
int64_t Downscaler::parameter_count() const { return impl_->flat.numel(); }
const ModelOptions& Downscaler::model_options() const { return impl_->mo; }
const TrainOptions& Downscaler::train_options() const { return impl_->to; }
std::string Downscaler::device() const { return impl_->device.str(); }
std::string Downscaler::sample_device() const { return impl_->sample_device.str(); }
double Downscaler::learning_rate(int64_t step) const {
  return diffusion::learning_rate(impl_->to, step) * impl_->validation.lr_scale;
}

double Downscaler::Impl::current_lr() const {
  double fraction = budget_active ? budget_used() / to.max_seconds : -1.0;
  if (step_budget_active)
    fraction = std::max(fraction, diffusion::step_budget_fraction(to, budget_steps(), budget_warm_end));
  return diffusion::learning_rate(to, step, fraction) * validation.lr_scale;
}

std::string Downscaler::training_path() const {
  switch (train_path(*impl_)) {
    case TrainPath::kFused:
      return "fused-cpu";
    case TrainPath::kGraph:
      return "autograd+cuda-graphs";
    case TrainPath::kEager:
      break;
  }
  return "autograd";
}

std::vector<std::string> Downscaler::thread_choices() const {
  std::lock_guard<std::mutex> lock(impl_->log_mutex);
  return impl_->thread_log;
}

void set_torch_threads(int n) {
  if (n > 0) torch::set_num_threads(n);
}

void Downscaler::publish() {
  auto& im = *impl_;
  torch::NoGradGuard no_grad;
  // The EMA weights cross to the sample device here (in memory), if it differs.
  NormApplied n = derive_normalisation(im.sums, im.mo.context_size, im.sample_device);
  // Across devices, stage the copy outside the lock so sampling threads wait only for a local copy.
  const torch::Tensor weights = im.sample_device == im.device ? im.ema : im.ema.to(im.sample_device);
  std::lock_guard<std::mutex> lock(im.sample_mutex);
  im.sample_flat.copy_(weights);
  im.sample_norm = n;
}

}  // namespace finecast::trainer
