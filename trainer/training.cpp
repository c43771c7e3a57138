// SPDX-License-Identifier: BSD-3-Clause
// The training loop: epochs over shuffled global batches, micro-batch accumulation, the fused
// CPU path or autograd, NaN/Inf recovery, out-of-memory back-off, and the training session
// (time split, validation, early stopping, plateau, best state, threads).
#include <ATen/Parallel.h>

#include <algorithm>
#include <limits>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <stdexcept>

#include "common/thread_clock.hpp"
#include "trainer/threads.hpp"
#include "trainer/adamw.hpp"
#include "trainer/autocast.hpp"
#include "trainer/denoisers/registry.hpp"
#include "trainer/philox_fill.hpp"
#include "trainer/downscaler.hpp"
#include "trainer/downscaler_impl.hpp"
#include "trainer/thread_tuning.hpp"
#include "trainer/train_graph.hpp"
#include "trainer/training_internal.hpp"
#include "trainer/validation.hpp"

#if FINECAST_HAVE_CUDA
#include <c10/cuda/CUDACachingAllocator.h>
#endif

namespace finecast::trainer {

void validate_train_options(const TrainOptions& t) {
  auto bad = [](const std::string& key, const std::string& why) {
    throw std::invalid_argument("train." + key + ": " + why);
  };
  schema::check(train_options_table(), t, "train.");  // every value in its range
  if (t.validation_members == 1) bad("validation_members", "must be 0 (no CRPS) or >= 2 (an ensemble), got 1");
  if (t.validation_metric != ValidationMetric::kLoss && t.validation_members == 0)
    bad("validation_metric", name(t.validation_metric) + " needs validation_members >= 2");
  // These act on the validation score, which needs held-out data.
  if (t.validation == 0) {
    if (t.early_stop > 0) bad("early_stop", "needs train.validation > 0 (a held-out part to score)");
    if (t.plateau > 0) bad("plateau", "needs train.validation > 0 (a held-out part to score)");
    if (t.keep_best) bad("keep_best", "needs train.validation > 0 (a held-out part to score)");
    if (t.crps_held_out && t.crps_steps > 0)
      bad("crps_held_out", "needs train.validation > 0 (a held-out part to tune on)");
  }
}

int64_t estimate_batch_bytes(const ModelOptions& mo, int64_t parameters, int64_t b) {
  // Parameters, gradient, Adam moments, EMA, denominator and the NaN-recovery copies.
  const int64_t fixed = 4 * parameters * 9;
  const int64_t per_sample = denoisers::entry(mo.arch).activation_floats(mo);
  // x2: forward activations plus the backward pass's temporaries of the same size.
  return fixed + 2 * 4 * per_sample * b;
}

bool is_out_of_memory(const std::exception& e) {
  if (dynamic_cast<const DeviceMemoryLimit*>(&e)) return true;
  if (dynamic_cast<const c10::OutOfMemoryError*>(&e)) return true;
  if (dynamic_cast<const c10::Error*>(&e)) {
    const std::string what = e.what();
    return what.find("out of memory") != std::string::npos ||
           what.find("CUBLAS_STATUS_ALLOC_FAILED") != std::string::npos;
  }
  return false;
}

bool uses_fused(const Downscaler::Impl& im) { return im.fused_mlp != nullptr; }

bool fused_runs(const ModelOptions& mo, const TrainOptions& to, const torch::Device& device) {
  return denoisers::capabilities(mo.arch).fused_cpu && device.is_cpu() && fused::compiled() && !to.force_autograd;
}

TrainPath train_path(const Downscaler::Impl& im, int64_t global, bool group) {
  // The fused trainer has no noise augmentation of the context: autograd trains it.
  if (fused_runs(im.mo, im.to, im.device) && im.to.context_noise <= 0) return TrainPath::kFused;
  // No capture of a scripted module (its graph executor may re-specialise during the first
  // calls), after a failed capture, or with train.context_noise (drawn per step outside the
  // captured inputs).
  const bool capturable = denoisers::capabilities(im.mo.arch).graph_capture &&
                          ((im.cuda && im.to.cuda_graphs && graphs::compiled()) || im.force_graph_path) &&
                          !im.train_graph_failed && im.to.context_noise <= 0;
  if (!capturable) return TrainPath::kEager;
  if (global > 0) {
    if (group || im.micro_batch != global) return TrainPath::kEager;
    if (im.to.max_device_memory > 0 && estimate_batch_bytes(im.mo, im.flat.numel(), global) > im.to.max_device_memory)
      return TrainPath::kEager;
  }
  return TrainPath::kGraph;
}

namespace {

/// Throws DeviceMemoryLimit when the estimate for a micro-batch of `b` exceeds the limit.
void check_memory_limit(const Downscaler::Impl& im, int64_t b) {
  if (im.to.max_device_memory <= 0) return;
  const int64_t need = estimate_batch_bytes(im.mo, im.flat.numel(), b);
  if (need > im.to.max_device_memory)
    throw DeviceMemoryLimit("a micro-batch of " + std::to_string(b) + " needs about " + std::to_string(need) +
                            " bytes, above train.max_device_memory = " + std::to_string(im.to.max_device_memory));
}

LossAndNorm fused_forward_backward(Downscaler::Impl& im, const EpochTensors& data, const StepDraws& d) {
  const int64_t b = d.idx.size(0), P = im.mo.patch_size, micro = std::max<int64_t>(1, im.micro_batch);
  fused::EpochInputs in;
  in.x0 = data.r0.data_ptr<float>();
  in.context = data.ctx.data_ptr<float>();
  in.weights = data.w.defined() ? data.w.data_ptr<float>() : nullptr;
  in.sqrt_ab = im.schedule.sqrt_ab.data_ptr<float>();
  in.sqrt_1mab = im.schedule.sqrt_1mab.data_ptr<float>();
  const int64_t* idx = d.idx.data_ptr<int64_t>();
  const int64_t* t = d.t.data_ptr<int64_t>();
  const float* eps = d.eps.data_ptr<float>();
  // The mean over the step's rows: all the group's in data-parallel training (d.rows).
  const int64_t rows = d.rows > 0 ? d.rows : b;
  const double scale = 1.0 / (static_cast<double>(rows) * static_cast<double>(P));
  double sse = 0;
  if (b == 0) im.grad.zero_();  // a member holding none of the step's rows adds nothing
  for (int64_t m0 = 0; m0 < b; m0 += micro) {
    fused::MicroBatch mb;
    mb.b = std::min(micro, b - m0);
    check_memory_limit(im, mb.b);
    mb.idx = idx + m0;
    mb.t = t + m0;
    mb.eps = eps + m0 * P;
    sse += im.fused_mlp->train_micro(im.flat.data_ptr<float>(), im.grad.data_ptr<float>(), in, mb, scale, m0 == 0);
  }
  LossAndNorm r;
  r.loss = sse * scale;
  r.norm = adamw::norm_cpu(im.grad.data_ptr<float>(), im.grad.numel());
  return r;
}

LossAndNorm autograd_forward_backward(Downscaler::Impl& im, const EpochTensors& data, const StepDraws& d) {
  const int64_t b = d.idx.size(0), micro = std::max<int64_t>(1, im.micro_batch);
  const int64_t rows = d.rows > 0 ? d.rows : b;  // all the group's rows in data-parallel training
  const bool v_obj = im.mo.objective == Objective::kV, conservative = im.mo.conservative;
  const bool bf16 = im.to.bf16 && im.cuda;
  im.grad.zero_();
  torch::Tensor loss_sum;
  for (int64_t m0 = 0; m0 < b; m0 += micro) {
    const int64_t mb = std::min(micro, b - m0);
    check_memory_limit(im, mb);
    auto idx = d.idx.narrow(0, m0, mb);
    auto t = d.t.narrow(0, m0, mb);
    auto eps = d.eps.narrow(0, m0, mb);
    if (im.cuda) {
      idx = idx.to(im.device, /*non_blocking=*/true);
      t = t.to(im.device, true);
      eps = eps.to(im.device, true);
    }
    auto wb = data.w.defined() ? data.w.index_select(0, idx) : torch::Tensor();
    auto x0 = data.r0.index_select(0, idx);
    auto cb = data.ctx.index_select(0, idx);
    if (d.ctx_noise.defined()) cb = cb + d.ctx_noise.narrow(0, m0, mb).to(cb.device()) * im.to.context_noise;
    if (conservative) eps = diffusion::remove_mean(eps, wb);
    auto a = im.schedule.sqrt_ab.index_select(0, t).unsqueeze(1);
    auto s = im.schedule.sqrt_1mab.index_select(0, t).unsqueeze(1);
    auto x_t = torch::addcmul(a * x0, s, eps);
    auto target = v_obj ? a * eps - s * x0 : eps;
    torch::Tensor loss;
    {
      AutocastBf16 autocast(bf16);
      auto out = im.net->forward(x_t, cb, t);
      if (bf16) out = out.to(torch::kFloat32);
      if (conservative) out = diffusion::remove_mean(out, wb);
      loss = torch::mse_loss(out, target);
    }
    // Each micro-batch's mean loss weighted by its share of the global batch: the accumulated
    // gradient is that of the global batch's mean loss.
    if (mb != rows) loss = loss * (static_cast<double>(mb) / static_cast<double>(rows));
    loss.backward();
    loss_sum = loss_sum.defined() ? loss_sum + loss.detach() : loss.detach();
  }
  if (!loss_sum.defined()) return {};  // no rows here: a zero gradient
  // Loss and gradient norm in one device-to-host copy (on CUDA one wait per step, not two).
  const auto both = torch::stack({loss_sum.to(torch::kFloat32), im.grad.norm()}).to(torch::kCPU);
  LossAndNorm r;
  r.loss = both[0].item<double>();
  r.norm = both[1].item<double>();
  return r;
}

/// Halves the micro-batch after an out-of-memory error; false when it cannot shrink further.
bool back_off(Downscaler::Impl& im, int64_t global, const std::exception& e,
              const std::function<void(const std::string&)>& event) {
  if (im.micro_batch <= 1) return false;
  const int64_t before = im.micro_batch;
  im.micro_batch = (im.micro_batch + 1) / 2;
  im.accumulate = (global + im.micro_batch - 1) / im.micro_batch;
  im.train_graph.reset();  // captured for the old shape
#if FINECAST_HAVE_CUDA
  if (im.cuda) c10::cuda::CUDACachingAllocator::emptyCache();
#endif
  event("train: out of device memory at micro-batch " + std::to_string(before) + " (" + e.what() +
        "); micro-batch now " + std::to_string(im.micro_batch) + ", " + std::to_string(im.accumulate) +
        " micro-batches per optimizer step (global batch " + std::to_string(global) + " kept)");
  return true;
}

}  // namespace

LossAndNorm forward_backward(Downscaler::Impl& im, const EpochTensors& data, const StepDraws& d) {
  LossAndNorm r = uses_fused(im) ? fused_forward_backward(im, data, d) : autograd_forward_backward(im, data, d);
  if (d.rows == 0 || !im.reducer) return r;
  // Data-parallel: the step's gradient and loss are the sums of the members' parts (each
  // already divided by the whole step's rows); the norm is that of the sum.
  torch::NoGradGuard no_grad;
  if (im.grad.is_cpu()) {
    im.reducer->sum(im.grad.data_ptr<float>(), im.grad.numel());
  } else {
    auto host = im.grad.to(torch::kCPU).contiguous();
    im.reducer->sum(host.data_ptr<float>(), host.numel());
    im.grad.copy_(host);
  }
  im.reducer->sum(&r.loss, 1);
  r.norm =
      im.grad.is_cpu() ? adamw::norm_cpu(im.grad.data_ptr<float>(), im.grad.numel()) : im.grad.norm().item<double>();
  return r;
}

namespace {
/// The Philox training noise of the step about to be taken ([b,P] on the CPU): the stream is the
/// optimizer step, so the graph path (which draws it on the device) and the eager paths agree.
torch::Tensor philox_noise(const Downscaler::Impl& im, int64_t b) {
  auto eps = torch::empty({b, im.mo.patch_size}, torch::TensorOptions().dtype(torch::kFloat32));
  philox::fill_normal_cpu(eps.data_ptr<float>(), eps.numel(), philox::key_of(im.to.seed),
                          static_cast<uint64_t>(im.step), philox::kTrainingNoise);
  return eps;
}

/// The part of a step's draws on this member's rows (data-parallel): the same global draws on
/// every member, each keeping the rows it holds.
StepDraws local_part(const StepDraws& d, const std::vector<int64_t>& global_to_local) {
  const int64_t b = d.idx.size(0);
  const int64_t* idx = d.idx.data_ptr<int64_t>();
  std::vector<int64_t> keep, local;
  for (int64_t i = 0; i < b; ++i)
    if (const int64_t l = global_to_local[static_cast<size_t>(idx[i])]; l >= 0) keep.push_back(i), local.push_back(l);
  StepDraws out;
  const auto pos = torch::tensor(keep, torch::kInt64);
  out.idx = torch::tensor(local, torch::kInt64);
  out.t = d.t.index_select(0, pos);
  out.eps = d.eps.index_select(0, pos);
  if (d.ctx_noise.defined()) out.ctx_noise = d.ctx_noise.index_select(0, pos);
  out.rows = b;
  return out;
}
}  // namespace

void apply_update(Downscaler::Impl& im, double grad_norm) {
  const double lr = im.current_lr();
  const adamw::StepParams p = adamw::step_params(im.to, im.step, lr, grad_norm);
  torch::NoGradGuard no_grad;
  if (!im.cuda && im.device.is_cpu()) {
    adamw::update_cpu(im.flat.data_ptr<float>(), im.grad.data_ptr<float>(), im.exp_avg.data_ptr<float>(),
                      im.exp_avg_sq.data_ptr<float>(), im.ema.data_ptr<float>(), im.flat.numel(), p);
  } else {
    adamw::update_tensors(im.flat, im.grad, im.exp_avg, im.exp_avg_sq, im.ema, im.denom, p);
  }
  ++im.step;
}

/// The losses of an epoch's good steps, and its statistics.
struct EpochTally {
  double loss_sum = 0;
  int64_t good = 0;
  EpochStats stats;
};

/// Adds what a CUDA graph's replays did this epoch to the tally and drops the graph.
void collect_graph(graphs::TrainGraph*& graph, EpochTally& tally,
                   const std::function<void(const std::string&)>& event) {
  if (!graph) return;
  const auto g = graph->finish_epoch(event);
  tally.loss_sum += g.loss_sum;
  tally.good += g.good;
  tally.stats.bad_steps += g.bad;
  graph = nullptr;
}

/// The weights and optimizer state at the start of the epoch: what too many bad steps in a row
/// fall back to.
void keep_good_state(Downscaler::Impl& im) {
  torch::NoGradGuard no_grad;
  im.good_flat = im.flat.clone();
  im.good_exp_avg = im.exp_avg.clone();
  im.good_exp_avg_sq = im.exp_avg_sq.clone();
}

/// One step's loss and gradient norm; on out of device memory the micro-batch is halved (the
/// global batch kept by accumulation) and the step tried again, down to a micro-batch of 1.
LossAndNorm step_with_back_off(Downscaler::Impl& im, const EpochTensors& data, const StepDraws& d, int64_t global,
                               graphs::TrainGraph*& graph, EpochTally& tally,
                               const std::function<void(const std::string&)>& event) {
  while (true) {
    try {
      return forward_backward(im, data, d);
    } catch (const std::exception& e) {
      if (!is_out_of_memory(e)) throw;
      collect_graph(graph, tally, event);  // the graph was captured for the old shape
      if (!back_off(im, global, e, event))
        throw std::runtime_error("train: out of device memory even at micro-batch 1 (" + std::string(e.what()) + ")");
      ++tally.stats.oom_backoffs;
    }
  }
}

/// A step with a non-finite loss or gradient is skipped; after train.max_bad_steps in a row the
/// weights of the start of the epoch come back.
void skip_bad_step(Downscaler::Impl& im, const LossAndNorm& r, EpochTally& tally,
                   const std::function<void(const std::string&)>& event) {
  ++tally.stats.bad_steps;
  ++im.total_bad;
  ++im.consecutive_bad;
  event("train_epoch: step " + std::to_string(im.step) + " skipped: loss " + std::to_string(r.loss) +
        ", gradient norm " + std::to_string(r.norm) + " (" + std::to_string(im.consecutive_bad) + " in a row)");
  if (im.consecutive_bad < im.to.max_bad_steps) return;
  torch::NoGradGuard no_grad;
  im.flat.copy_(im.good_flat);
  im.exp_avg.copy_(im.good_exp_avg);
  im.exp_avg_sq.copy_(im.good_exp_avg_sq);
  event("train_epoch: " + std::to_string(im.consecutive_bad) +
        " bad steps in a row; restored the last good weights (from the start of this epoch)");
  im.consecutive_bad = 0;
}

EpochStats run_epoch(Downscaler::Impl& im, const EpochTensors& data,
                     const std::function<void(const std::string&)>& event) {
  const auto t0 = std::chrono::steady_clock::now();
  EpochTally tally;
  EpochStats& st = tally.stats;
  // Data-parallel: every member draws over the group's rows and trains on its own part.
  const bool group = im.reducer && data.global_n > 0;
  const int64_t n = group ? data.global_n : data.n;
  if (n == 0) {
    st.step = im.step;
    return st;
  }
  keep_good_state(im);
  if (im.to.bf16 && !im.cuda) event("train.bf16 is honoured on CUDA only; training in float32 on " + im.device.str());

  const auto long_cpu = torch::TensorOptions().dtype(torch::kInt64);
  const auto float_cpu = torch::TensorOptions().dtype(torch::kFloat32);
  const int64_t P = im.mo.patch_size;
  const int64_t global = im.to.batch_size * im.to.accumulate;
  auto perm = torch::randperm(n, im.gen, long_cpu);
  // On CUDA, full global batches replay a captured graph of the whole step (graphs::TrainGraph);
  // it reports its losses and bad steps at the end of the epoch.
  graphs::TrainGraph* graph =
      train_path(im, global, group) == TrainPath::kGraph ? graphs::train_graph_for(im, data, global) : nullptr;

  for (int64_t start = 0; start < n; start += global) {
    if (im.pause) im.pause->wait_while_held();  // the host samples on these cores meanwhile
    if (im.budget_reached()) {
      st.budget_spent = true;
      break;
    }
    const int64_t b = std::min(global, n - start);
    StepDraws d;
    d.idx = perm.narrow(0, start, b);
    d.t = diffusion::draw_timesteps(im.to, im.schedule, b, im.gen);
    // Philox noise on the graph path is drawn on the device, inside the step (train_graph.cpp).
    const bool philox = im.to.noise_generator == NoiseGenerator::kPhilox;
    if (!philox)
      d.eps = torch::randn({b, P}, im.gen, float_cpu);
    else if (!(graph && graph->accepts(b)))
      d.eps = philox_noise(im, b);
    // Drawn after eps, so that without it the generator's sequence is what it was.
    if (im.to.context_noise > 0 && im.mo.context_size > 0)
      d.ctx_noise = torch::randn({b, im.mo.context_size}, im.gen, float_cpu);
    if (group) d = local_part(d, data.global_to_local);
    if (graph && graph->accepts(b)) {
      try {
        graph->step(d);
        ++st.batches;
        continue;
      } catch (const std::exception& e) {
        // The step did not run: collect the graph's epoch so far and go on eagerly (which backs
        // off on out-of-memory like any other step).
        collect_graph(graph, tally, event);
        if (!d.eps.defined()) d.eps = philox_noise(im, b);
        im.train_graph.reset();
        im.train_graph_failed = true;
        event(std::string("train: CUDA graph step failed (") + e.what() + "); continuing without graphs");
      }
    }
    if (graph) graph->wait();  // an eager step after replays (the partial last batch)
    const LossAndNorm r = step_with_back_off(im, data, d, global, graph, tally, event);
    ++st.batches;
    if (!std::isfinite(r.loss) || !std::isfinite(r.norm)) {
      skip_bad_step(im, r, tally, event);
      continue;
    }
    im.consecutive_bad = 0;
    tally.loss_sum += r.loss;
    ++tally.good;
    apply_update(im, r.norm);
  }
  collect_graph(graph, tally, event);
  st.avg_loss = tally.good > 0 ? tally.loss_sum / static_cast<double>(tally.good) : 0.0;
  st.step = im.step;
  st.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return st;
}

// ---------------------------------------------------------------------------------------------

void Downscaler::update_normalisation(const DataView& data) {
  auto& im = *impl_;
  torch::NoGradGuard no_grad;
  CleanData c = clean(data, im.mo.context_size, im.mo.patch_size, "update_normalisation");
  accumulate_normalisation(im.sums, c, im.mo.context_size);
}

EpochStats Downscaler::train_epoch(const DataView& data, const std::function<void(const std::string&)>& on_event) {
  auto& im = *impl_;
  const auto t0 = std::chrono::steady_clock::now();
  auto event = [&](const std::string& s) {
    if (on_event) on_event(s);
  };
  const auto C = im.mo.context_size, P = im.mo.patch_size;
  if (im.sums.context_count == 0 && im.sums.residual_count == 0) update_normalisation(data);
  im.norm = im.derive_norm();
  CleanData c;
  {
    torch::NoGradGuard no_grad;
    c = clean(data, C, P, "train_epoch");
  }
  if (c.dropped > 0)
    event("train_epoch: dropped " + std::to_string(c.dropped) + " of " + std::to_string(data.n) +
          " samples holding NaN/Inf");
  const EpochTensors e = normalise(c, im.norm, im.device);
  EpochStats st = run_epoch(im, e, event);
  st.skipped_samples = c.dropped;
  st.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return st;
}

void Downscaler::set_reducer(std::shared_ptr<Reducer> reducer) { impl_->reducer = std::move(reducer); }

void Downscaler::set_pause_gate(std::shared_ptr<PauseGate> gate) { impl_->pause = std::move(gate); }

namespace {

/// Data-parallel bookkeeping of a session: the group's split by time (from the union of the
/// members' time steps) and each kept row's index among the group's kept rows (renumbered past
/// rows any member dropped), so that training rows are 0..train_rows-1 in every member.
struct GroupRows {
  TimeSplit split;              ///< this member's rows (indices into its kept rows)
  std::vector<int64_t> global;  ///< per kept row, its index among the group's kept rows
  int64_t train_rows = 0, validation_rows = 0;
};

/// Every member's `mine` (global row numbers), as one sorted list on every member.
std::vector<double> group_union(Reducer& r, const std::vector<int64_t>& mine) {
  const int size = r.size(), me = r.rank();
  std::vector<double> counts(static_cast<size_t>(size), 0.0);
  counts[static_cast<size_t>(me)] = static_cast<double>(mine.size());
  r.sum(counts.data(), size);
  int64_t total = 0, offset = 0;
  for (int k = 0; k < size; ++k) {
    if (k < me) offset += static_cast<int64_t>(counts[static_cast<size_t>(k)]);
    total += static_cast<int64_t>(counts[static_cast<size_t>(k)]);
  }
  std::vector<double> all(static_cast<size_t>(total), 0.0);
  for (size_t i = 0; i < mine.size(); ++i) all[static_cast<size_t>(offset) + i] = static_cast<double>(mine[i]);
  if (total > 0) r.sum(all.data(), total);
  std::sort(all.begin(), all.end());
  return all;
}

/// How many of the sorted `all` are below `x`.
int64_t count_below(const std::vector<double>& all, int64_t x) {
  return std::lower_bound(all.begin(), all.end(), static_cast<double>(x)) - all.begin();
}

GroupRows group_rows(Reducer& r, const DataView& data, const torch::Tensor& kept_rows, int64_t kept,
                     const std::vector<int64_t>& times, double fraction) {
  GroupRows g;
  const int size = r.size(), me = r.rank();
  // Rows every member dropped (NaN/Inf), so that the kept rows can be numbered as one process
  // would number them.
  std::vector<int64_t> dropped;
  {
    std::vector<uint8_t> is_kept(static_cast<size_t>(data.n), kept_rows.defined() ? 0 : 1);
    for (int64_t i = 0; kept_rows.defined() && i < kept; ++i)
      is_kept[static_cast<size_t>(kept_rows.data_ptr<int64_t>()[i])] = 1;
    for (int64_t row = 0; row < data.n; ++row)
      if (!is_kept[static_cast<size_t>(row)]) dropped.push_back(data.global_row[row]);
  }
  const std::vector<double> all_dropped = group_union(r, dropped);
  g.global.resize(static_cast<size_t>(kept));
  for (int64_t i = 0; i < kept; ++i) {
    const int64_t row = kept_rows.defined() ? kept_rows.data_ptr<int64_t>()[i] : i;
    const int64_t gr = data.global_row[row];
    g.global[static_cast<size_t>(i)] = gr - count_below(all_dropped, gr);
  }
  // The group's distinct time steps, then the held-out ones by the single-process rule.
  // Each member's last time step + 1 in its own slot (the others 0), so the sum holds them all.
  double t_end = 0;
  for (int64_t t : times) t_end = std::max(t_end, static_cast<double>(t + 1));
  std::vector<double> ends_t(static_cast<size_t>(size), 0.0);
  ends_t[static_cast<size_t>(me)] = t_end;
  r.sum(ends_t.data(), size);
  const auto steps = static_cast<int64_t>(*std::max_element(ends_t.begin(), ends_t.end()));
  std::vector<double> present(static_cast<size_t>(std::max<int64_t>(steps, 0)), 0.0);
  for (int64_t t : times) present[static_cast<size_t>(t)] = 1.0;
  if (steps > 0) r.sum(present.data(), steps);
  std::vector<int64_t> distinct;
  for (int64_t t = 0; t < steps; ++t)
    if (present[static_cast<size_t>(t)] > 0) distinct.push_back(t);
  const TimeSplit by_step = split_by_time(distinct.data(), static_cast<int64_t>(distinct.size()), fraction);
  const int64_t cut = by_step.validation.empty() ? std::numeric_limits<int64_t>::max()
                                                 : distinct[static_cast<size_t>(by_step.validation.front())];
  g.split.steps = by_step.steps;
  g.split.validation_steps = by_step.validation_steps;
  for (int64_t i = 0; i < kept; ++i)
    (times[static_cast<size_t>(i)] >= cut ? g.split.validation : g.split.train).push_back(i);
  // Training rows come first in the group's order (rows are ordered by time): 0..train_rows-1.
  double n[3] = {static_cast<double>(g.split.train.size()), static_cast<double>(g.split.validation.size()), 0.0};
  for (int64_t i : g.split.train) n[2] = std::max(n[2], static_cast<double>(g.global[static_cast<size_t>(i)] + 1));
  std::vector<double> ends(static_cast<size_t>(size), 0.0);
  ends[static_cast<size_t>(me)] = n[2];
  r.sum(n, 2);
  r.sum(ends.data(), size);
  g.train_rows = static_cast<int64_t>(n[0]);
  g.validation_rows = static_cast<int64_t>(n[1]);
  if (*std::max_element(ends.begin(), ends.end()) > static_cast<double>(g.train_rows))
    throw std::invalid_argument(
        "train_session: DataView::global_row must order the group's rows by time (the "
        "training rows first)");
  return g;
}

/// The group's split by samples (validation_split: patches): each member's own rows by the
/// sample rule, and the training rows renumbered 0..train_rows-1 in the group's order past the
/// held-out rows of every member, as one process holding all rows would number them.
void group_patch_split(Reducer& r, GroupRows& g, const TimeSplit& mine) {
  g.split = mine;
  std::vector<int64_t> held;
  for (int64_t i : mine.validation) held.push_back(g.global[static_cast<size_t>(i)]);
  const std::vector<double> all_held = group_union(r, held);
  for (int64_t i : mine.train) {
    auto& gr = g.global[static_cast<size_t>(i)];
    gr -= count_below(all_held, gr);
  }
  double n[2] = {static_cast<double>(mine.train.size()), static_cast<double>(mine.validation.size())};
  r.sum(n, 2);
  g.train_rows = static_cast<int64_t>(n[0]);
  g.validation_rows = static_cast<int64_t>(n[1]);
}

/// The buffer time of each kept row (a row's index when the data give no times).
std::vector<int64_t> times_of_rows(const DataView& data, const CleanData& all) {
  const int64_t kept = all.fine.size(0);
  std::vector<int64_t> times(static_cast<size_t>(kept));
  const torch::Tensor rows = all.rows.defined() ? all.rows.contiguous() : torch::Tensor();
  for (int64_t i = 0; i < kept; ++i) {
    const int64_t row = rows.defined() ? rows.data_ptr<int64_t>()[i] : i;
    times[static_cast<size_t>(i)] = data.time ? data.time[row] : row;
  }
  return times;
}

/// The kept rows `rows` of `all` (all of it when that is every row).
CleanData select_rows(const CleanData& all, const std::vector<int64_t>& rows) {
  if (static_cast<int64_t>(rows.size()) == all.fine.size(0)) return all;
  CleanData c;
  auto idx = torch::tensor(rows, torch::kInt64);
  c.context = all.context.index_select(0, idx);
  c.fine = all.fine.index_select(0, idx);
  if (all.weights.defined()) c.weights = all.weights.index_select(0, idx);
  return c;
}

/// Adds the session's training rows to the normalisation statistics; in a group, every
/// member's rows (the same statistics on all of them).
void add_session_normalisation(Downscaler::Impl& im, const CleanData& train, int64_t C) {
  if (!im.reducer) {
    accumulate_normalisation(im.sums, train, C);
    return;
  }
  NormSums session;
  accumulate_normalisation(session, train, C);
  session.context_sum.resize(static_cast<size_t>(C), 0.0);
  session.context_sumsq.resize(static_cast<size_t>(C), 0.0);
  std::vector<double> flat{session.context_count, session.residual_count, session.residual_sumsq, session.fine_sumsq};
  flat.insert(flat.end(), session.context_sum.begin(), session.context_sum.end());
  flat.insert(flat.end(), session.context_sumsq.begin(), session.context_sumsq.end());
  im.reducer->sum(flat.data(), static_cast<int64_t>(flat.size()));
  im.sums.context_count += flat[0];
  im.sums.residual_count += flat[1];
  im.sums.residual_sumsq += flat[2];
  im.sums.fine_sumsq += flat[3];
  im.sums.context_sum.resize(static_cast<size_t>(C), 0.0);
  im.sums.context_sumsq.resize(static_cast<size_t>(C), 0.0);
  for (int64_t k = 0; k < C; ++k) {
    im.sums.context_sum[static_cast<size_t>(k)] += flat[static_cast<size_t>(4 + k)];
    im.sums.context_sumsq[static_cast<size_t>(k)] += flat[static_cast<size_t>(4 + C + k)];
  }
  // The group's training range: the largest of -min and of max (a member without rows adds -inf).
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<double> extremes(static_cast<size_t>(2 * C), -inf);
  for (size_t k = 0; k < session.context_min.size() && k < static_cast<size_t>(C); ++k) {
    extremes[k] = -session.context_min[k];
    extremes[static_cast<size_t>(C) + k] = session.context_max[k];
  }
  im.reducer->max(extremes.data(), 2 * C);
  im.sums.context_min.resize(static_cast<size_t>(C), inf);
  im.sums.context_max.resize(static_cast<size_t>(C), -inf);
  for (size_t k = 0; k < static_cast<size_t>(C); ++k) {
    im.sums.context_min[k] = std::min(im.sums.context_min[k], -extremes[k]);
    im.sums.context_max[k] = std::max(im.sums.context_max[k], extremes[static_cast<size_t>(C) + k]);
  }
}

/// The session's epochs, within train.max_seconds and train.max_steps (per session, or on from
/// the run's earlier sessions).
void run_epochs(Downscaler::Impl& im, EpochTensors& e, int64_t epochs, int64_t dropped, SessionStats& st,
                const std::function<void(const std::string&)>& event,
                const std::function<void(const SessionStats&)>& on_epoch, const std::function<bool()>& after_epoch) {
  const TrainOptions& to = im.to;
  const bool run_scope = to.budget == BudgetScope::kRun;
  im.budget_active = to.max_seconds > 0;
  im.budget_before = run_scope ? im.validation.budget_used : 0.0;
  im.budget_start = std::chrono::steady_clock::now();
  im.step_budget_active = to.max_steps > 0;
  im.budget_step0 = run_scope ? 0 : im.step;
  im.budget_warm_end = std::max<int64_t>(0, to.warmup_steps - im.budget_step0);
  const int64_t step_at_start = im.step;
  const bool spent_at_start = im.budget_reached();
  if (im.budget_active && im.budget_before >= to.max_seconds)
    event("train: the run's training budget (train.max_seconds " + std::to_string(to.max_seconds) +
          " s) is spent; session skipped");
  else if (spent_at_start)
    event("train: the run's step budget (train.max_steps " + std::to_string(to.max_steps) +
          ") is spent; session skipped");
  // What the session (or the run) was planned to train: its epochs of whole passes, capped by
  // the step budget. A time budget that ends it far earlier makes the result depend on the
  // machine's load, which nothing else would show.
  const int64_t global = std::max<int64_t>(1, to.batch_size * to.accumulate);
  const int64_t rows = e.global_n > 0 ? e.global_n : e.n;
  const double per_epoch = std::ceil(static_cast<double>(rows) / static_cast<double>(global));
  double planned = static_cast<double>(step_at_start - im.budget_step0) + static_cast<double>(epochs) * per_epoch;
  if (im.step_budget_active) planned = std::min(planned, static_cast<double>(to.max_steps));
  st.planned_steps = static_cast<int64_t>(std::min(planned, 9e18));
  st.session_steps_planned = std::max<int64_t>(0, st.planned_steps - (step_at_start - im.budget_step0));
  for (int64_t k = 0; k < epochs; ++k) {
    if (im.budget_reached()) {
      st.budget_spent = true;
      break;
    }
    EpochStats es = run_epoch(im, e, event);
    es.skipped_samples = k == 0 ? dropped : 0;
    st.epochs.push_back(es);
    st.session_steps = im.step - step_at_start;
    // Validation first, so that this epoch's progress call carries its notes.
    const bool stop = after_epoch && after_epoch();  // early stopping within the session
    if (on_epoch) on_epoch(st);
    if (stop) break;
    if (es.budget_spent) {
      st.budget_spent = true;
      break;
    }
  }
  const bool time_ran_out = im.budget_active && im.budget_used() >= to.max_seconds;
  const bool steps_ran_out = im.step_budget_active && im.budget_steps() >= to.max_steps;
  st.budget_steps = im.budget_steps();
  if (im.budget_active) {
    st.budget_used = im.budget_used();
    if (run_scope) im.validation.budget_used = st.budget_used;
  }
  if (st.budget_spent && time_ran_out && !steps_ran_out)
    event("train: training budget train.max_seconds " + std::to_string(to.max_seconds) + " s spent after " +
          std::to_string(st.epochs.size()) + " epoch(s), optimizer step " + std::to_string(im.step));
  else if (st.budget_spent && steps_ran_out)
    st.notes.push_back("train: step budget train.max_steps " + std::to_string(to.max_steps) + " reached after " +
                       std::to_string(st.epochs.size()) + " epoch(s), optimizer step " + std::to_string(im.step));
  if (time_ran_out && !steps_ran_out && !spent_at_start && 2 * st.budget_steps < st.planned_steps)
    event("train: the time budget (train.max_seconds " + std::to_string(to.max_seconds) + " s) ended " +
          (run_scope ? "the run's training" : "the session") + " after " + std::to_string(st.budget_steps) + " of " +
          std::to_string(st.planned_steps) +
          " planned optimizer steps (fewer than half): the result depends on the machine's load; "
          "train.max_steps gives a fixed amount of training");
  im.budget_active = false;
  im.step_budget_active = false;
}

/// Scores the held-out rows (in a group: the group's mean, weighted by each member's rows) and
/// records the score for early stopping, the plateau and keep-best. The scores, a plateau and
/// early stopping are notes (st.notes); skipping validation for lack of memory is an event.
void validate_session(Downscaler::Impl& im, const CleanData& held_out, int64_t group_rows, SessionStats& st,
                      const std::function<void(const std::string&)>& event) {
  const auto note = [&st](const std::string& line) { st.notes.push_back(line); };
  validation::Scores sc;
  const int64_t n_here = held_out.fine.defined() ? held_out.fine.size(0) : 0;
  if (n_here > 0) {
    try {
      sc = validation::score(im, held_out, note);
    } catch (const std::exception& e) {
      if (!is_out_of_memory(e)) throw;
      event(std::string("validation skipped: out of device memory (") + e.what() + ")");
    }
  }
  if (im.reducer) {
    const auto n = static_cast<double>(n_here);
    const bool l = std::isfinite(sc.loss), c = std::isfinite(sc.crps);
    double w[5] = {l ? sc.loss * n : 0.0, l ? n : 0.0, c ? sc.crps * n : 0.0, c ? n : 0.0, c ? sc.crps_fair * n : 0.0};
    im.reducer->sum(w, 5);
    sc.loss = w[1] > 0 ? w[0] / w[1] : SessionStats::kNone;
    sc.crps = w[3] > 0 ? w[2] / w[3] : SessionStats::kNone;
    sc.crps_fair = w[3] > 0 ? w[4] / w[3] : SessionStats::kNone;
    st.validation_samples = group_rows;
  }
  st.validation_loss = sc.loss;
  st.validation_crps = sc.crps;
  st.score = im.to.validation_metric == ValidationMetric::kCrps       ? sc.crps
             : im.to.validation_metric == ValidationMetric::kCrpsFair ? sc.crps_fair
                                                                      : sc.loss;
  st.improved = validation::record(im, st.score, note);
}

}  // namespace

SessionStats Downscaler::train_session(const DataView& data, int64_t epochs,
                                       const std::function<void(const std::string&)>& on_event,
                                       const std::function<void(const SessionStats&)>& on_epoch) {
  auto& im = *impl_;
  const auto t0 = std::chrono::steady_clock::now();
  auto event = [&](const std::string& s) {
    if (on_event) on_event(s);
  };
  if (epochs < 0) throw std::invalid_argument("train_session: epochs must be >= 0");
  SessionStats st;
  SessionAnatomy& anatomy = st.anatomy;
  const double cpu_start = thread_cpu_seconds();
  double cpu_in_epochs = 0;
  // Each part's seconds since the previous part ended (the anatomy of the session).
  auto part_start = t0;
  auto lap = [&part_start](double& part) {
    const auto now = std::chrono::steady_clock::now();
    part += std::chrono::duration<double>(now - part_start).count();
    part_start = now;
  };
  auto finish = [&]() {
    const auto& v = im.validation;
    st.best_score = v.best_score;
    st.best_step = v.best_step;
    st.sessions_without_improvement = v.sessions_without_improvement;
    st.lr_scale = v.lr_scale;
    st.stopped = v.stopped;
    st.micro_batch = im.micro_batch;
    st.accumulate = im.accumulate;
    st.train_threads = im.train_threads;
    st.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    st.anatomy.cpu_outside_epochs = thread_cpu_seconds() - cpu_start - cpu_in_epochs;
    return st;
  };
  if (im.validation.stopped) {
    event("train: early stopping stopped training (best validation " + name(im.to.validation_metric) + " " +
          std::to_string(im.validation.best_score) + " at step " + std::to_string(im.validation.best_step) +
          "); session skipped");
    return finish();
  }
  const auto C = im.mo.context_size, P = im.mo.patch_size;
  CleanData all;
  {
    torch::NoGradGuard no_grad;
    all = clean(data, C, P, "train_session");
  }
  lap(anatomy.cleaning);
  if (all.dropped > 0)
    event("train_session: dropped " + std::to_string(all.dropped) + " of " + std::to_string(data.n) +
          " samples holding NaN/Inf");
  // The split by time: of this process's rows, or in a group of the group's rows.
  const int64_t kept = all.fine.size(0);
  const std::vector<int64_t> times = times_of_rows(data, all);
  const bool group = im.reducer != nullptr;
  if (group && data.n > 0 && (!data.global_row || !data.time))
    throw std::invalid_argument("train_session: data-parallel training needs DataView::global_row and time");
  const bool by_patches = im.to.validation_split == ValidationSplit::kPatches;
  GroupRows g;
  if (group) {
    const torch::Tensor rows = all.rows.defined() ? all.rows.contiguous() : torch::Tensor();
    g = group_rows(*im.reducer, data, rows, kept, times, by_patches ? 0.0 : im.to.validation);
    if (by_patches) group_patch_split(*im.reducer, g, split_by_patches(all, im.to.validation, im.to.seed));
  }
  const TimeSplit split = group        ? g.split
                          : by_patches ? split_by_patches(all, im.to.validation, im.to.seed)
                                       : split_by_time(times.data(), kept, im.to.validation);
  const int64_t n_validation = group ? g.validation_rows : static_cast<int64_t>(split.validation.size());
  const int64_t n_train = group ? g.train_rows : static_cast<int64_t>(split.train.size());
  if (by_patches && im.to.validation > 0 && n_train + n_validation > 0 && (n_validation == 0 || n_train == 0))
    throw std::invalid_argument("train.validation_split: patches with train.validation " +
                                std::to_string(im.to.validation) + " left " +
                                (n_validation == 0 ? "no validation" : "no training") + " samples of " +
                                std::to_string(n_train + n_validation) + " (a share of the samples on average; " +
                                (n_validation == 0 ? "raise" : "lower") + " train.validation or buffer more samples)");
  if (!by_patches && im.to.validation > 0 && n_validation == 0 && kept > 0 &&
      (im.to.keep_best || im.to.early_stop > 0 || im.to.plateau > 0))
    event("validation: train.validation_split time holds out nothing from " + std::to_string(split.steps) +
          " time step(s): no score for keep_best, early_stop or plateau this session "
          "(train.validation_split: patches holds out samples of one step)");
  const CleanData train = select_rows(all, split.train);
  const CleanData held_out = split.validation.empty() ? CleanData{} : select_rows(all, split.validation);
  st.train_samples = static_cast<int64_t>(split.train.size());
  st.validation_samples = static_cast<int64_t>(split.validation.size());
  st.validation_steps = split.validation_steps;
  lap(anatomy.split);

  add_session_normalisation(im, train, C);
  im.norm = im.derive_norm();
  EpochTensors e = normalise(train, im.norm, im.device);
  if (group) {
    // Training rows are 0..train_rows-1 among the group's (group_rows, group_patch_split).
    e.global_n = g.train_rows;
    e.global_to_local.assign(static_cast<size_t>(g.train_rows), -1);
    for (size_t i = 0; i < split.train.size(); ++i)
      e.global_to_local[static_cast<size_t>(g.global[static_cast<size_t>(split.train[i])])] = static_cast<int64_t>(i);
  }
  lap(anatomy.normalisation);
  if (im.to.threads == -1 && im.train_threads == 0 && e.n > 0) {
    im.train_threads = threads::tune_training(im, e, event);
  } else if (im.to.threads > 0) {
    im.train_threads = static_cast<int>(im.to.threads);
  }
  set_thread_count(im.train_threads);
  lap(anatomy.thread_tuning);

  // train.validation_every: also at the end of every epoch that reaches the next multiple.
  int64_t validated_at = -1;
  const int64_t every = im.to.validation_every;
  auto after_epoch = [&]() {
    if (every <= 0 || n_validation == 0 || im.step - std::max<int64_t>(validated_at, 0) < every) return false;
    const auto v0 = std::chrono::steady_clock::now();
    validate_session(im, held_out, g.validation_rows, st, event);
    anatomy.validation += std::chrono::duration<double>(std::chrono::steady_clock::now() - v0).count();
    validated_at = im.step;
    return im.validation.stopped;
  };
  const double cpu_epochs = thread_cpu_seconds();
  run_epochs(im, e, epochs, all.dropped, st, event, on_epoch, after_epoch);
  if (st.session_steps > 0 && (!im.to.crps_held_out || n_validation > 0))
    crps_finetune(im,
                  !im.to.crps_held_out      ? e
                  : held_out.fine.defined() ? normalise(held_out, im.norm, im.device)
                                            : EpochTensors{},  // a group member holding none of it
                  st, [&](const std::string& line) {
                    st.notes.push_back(line);
                    if (on_epoch) on_epoch(st);  // the progress line goes out with the notes, no new epoch
                  });
  cpu_in_epochs = thread_cpu_seconds() - cpu_epochs;
  for (const EpochStats& k : st.epochs) anatomy.epochs += k.seconds;
  part_start = std::chrono::steady_clock::now();  // (the epochs' progress lines: other)
  st.trained = true;
  ++im.validation.sessions;
  if (n_validation > 0 && validated_at != im.step) validate_session(im, held_out, g.validation_rows, st, event);
  lap(anatomy.validation);
  publish();
  lap(anatomy.publishing);
  return finish();
}

const ValidationRecord& Downscaler::validation_record() const { return impl_->validation; }
int64_t Downscaler::micro_batch() const { return impl_->micro_batch; }
int64_t Downscaler::accumulation() const { return impl_->accumulate; }

}  // namespace finecast::trainer
