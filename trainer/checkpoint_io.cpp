// SPDX-License-Identifier: BSD-3-Clause
// The tensor side of checkpoints: the Downscaler's state to and from HDF5 (CPU float32 datasets
// by parameter name), written atomically.
#include <ATen/CPUGeneratorImpl.h>

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "common/atomic_file.hpp"
#include "common/h5.hpp"
#include "trainer/checkpoint_format.hpp"
#include "trainer/denoisers/registry.hpp"
#include "trainer/downscaler.hpp"
#include "trainer/downscaler_impl.hpp"
#include "trainer/training_internal.hpp"

namespace finecast::trainer {

namespace {

constexpr const char* kBuffers[] = {"model", "ema", "optimizer/exp_avg", "optimizer/exp_avg_sq"};

void write_validation(h5::File& f, const ValidationRecord& v) {
  f.create_group("validation");
  f.set_attr("validation", "best_score", v.best_score);
  f.set_attr("validation", "best_step", v.best_step);
  f.set_attr("validation", "sessions_without_improvement", v.sessions_without_improvement);
  f.set_attr("validation", "sessions_since_reduction", v.sessions_since_reduction);
  f.set_attr("validation", "lr_scale", v.lr_scale);
  f.set_attr("validation", "stopped", static_cast<int64_t>(v.stopped));
  f.set_attr("validation", "sessions", v.sessions);
  f.set_attr("validation", "budget_used", v.budget_used);
}

ValidationRecord read_validation(const h5::File& f) {
  ValidationRecord v;
  if (!f.exists("validation")) return v;  // format version 1
  const char* g = "validation";
  v.best_score = f.attr_double(g, "best_score");
  v.best_step = f.attr_int(g, "best_step");
  v.sessions_without_improvement = f.attr_int(g, "sessions_without_improvement");
  v.sessions_since_reduction = f.attr_int(g, "sessions_since_reduction");
  v.lr_scale = f.attr_double(g, "lr_scale");
  v.stopped = f.attr_int(g, "stopped") != 0;
  v.sessions = f.attr_int(g, "sessions");
  if (f.has_attr(g, "budget_used")) v.budget_used = f.attr_double(g, "budget_used");  // newer files
  return v;
}

/// arch torchscript: the module's bytes (/torchscript/module, uint8) with their hash and the file
/// they came from, so that a resume and finecast-downscale need nothing else.
void write_torchscript(h5::File& f, const ModelOptions& mo) {
  if (!denoisers::capabilities(mo.arch).user_module || !mo.torchscript) return;
  const std::string& bytes = *mo.torchscript;
  f.create_group("torchscript");
  f.write("torchscript/module", h5::Type::kUInt8, bytes.data(), {static_cast<int64_t>(bytes.size())});
  f.set_attr("torchscript", "hash", models::torchscript_hash(bytes));
  f.set_attr("torchscript", "file", mo.file);
}

/// The embedded module of an arch torchscript checkpoint, checked against its recorded hash.
std::shared_ptr<const std::string> read_torchscript(const h5::File& f, const std::string& path) {
  if (!f.exists("torchscript/module"))
    throw CheckpointError(path +
                          ": model.arch is torchscript but the checkpoint embeds no module (/torchscript/module)");
  const auto info = f.info("torchscript/module");
  std::string bytes(static_cast<size_t>(info.numel()), '\0');
  f.read("torchscript/module", h5::Type::kUInt8, bytes.data(), info.numel());
  const std::string hash = models::torchscript_hash(bytes);
  if (f.has_attr("torchscript", "hash") && f.attr_string("torchscript", "hash") != hash)
    throw CheckpointError(path + ": the embedded TorchScript module's hash is " + hash + ", the checkpoint records " +
                          f.attr_string("torchscript", "hash"));
  return std::make_shared<const std::string>(std::move(bytes));
}

/// Writes `state` (tensors on any device) with the options of `im`, atomically.
void write_checkpoint(const std::string& path, const Downscaler::Impl& im, const TrainState& state,
                      const std::map<std::string, std::string>& metadata, const CheckpointGroups& groups) {
  // Weights that are not finite would poison every run that resumes from them.
  for (const auto* t : {&state.flat, &state.ema})
    if (!torch::isfinite(*t).all().item<bool>())
      throw CheckpointError(path + ": not written: the model's " +
                            (t == &state.flat ? "weights" : "averaged (EMA) weights") +
                            " contain NaN or Inf (the last good checkpoint is kept)");
  AtomicFile out(path, ErrorCode::kCheckpoint);
  {
    h5::File f = h5::File::create(out.tmp_path(), format::kCheckpointReporting);
    f.set_attr("/", "format", std::string(kCheckpointFormatName));
    f.set_attr("/", "format_version", static_cast<int64_t>(kCheckpointFormatVersion));
    f.set_attr("/", "step", state.step);
    f.set_attr("/", "consecutive_bad_steps", state.consecutive_bad);
    f.set_attr("/", "total_bad_steps", state.total_bad);
    f.set_attr("/", "parameter_count", im.flat.numel());
    f.set_attr("/", "written_on_device", im.device.str());
    format::write_model_options(f, im.mo);
    format::write_train_options(f, im.to);
    write_torchscript(f, im.mo);
    torch::NoGradGuard no_grad;
    const torch::Tensor* buffers[] = {&state.flat, &state.ema, &state.exp_avg, &state.exp_avg_sq};
    for (size_t b = 0; b < 4; ++b) {
      const auto host = buffers[b]->to(torch::kCPU).contiguous();
      f.create_group(kBuffers[b]);
      for (size_t i = 0; i < im.names.size(); ++i) {
        const auto v = im.view(host, i).contiguous();
        f.write(std::string(kBuffers[b]) + "/" + im.names[i], h5::Type::kFloat32, v.data_ptr<float>(), im.shapes[i]);
      }
    }
    f.set_attr("optimizer", "kind", std::string("adamw"));
    f.set_attr("optimizer", "step", state.step);
    const auto& s = state.sums;
    const int64_t C = im.mo.context_size;
    std::vector<double> csum = s.context_sum, csq = s.context_sumsq;
    csum.resize(static_cast<size_t>(C), 0.0);
    csq.resize(static_cast<size_t>(C), 0.0);
    f.create_group("normalisation");
    f.write("normalisation/context_count", h5::Type::kFloat64, &s.context_count, {});
    f.write("normalisation/context_sum", h5::Type::kFloat64, csum.data(), {C});
    f.write("normalisation/context_sumsq", h5::Type::kFloat64, csq.data(), {C});
    f.write("normalisation/residual_count", h5::Type::kFloat64, &s.residual_count, {});
    f.write("normalisation/residual_sumsq", h5::Type::kFloat64, &s.residual_sumsq, {});
    f.write("normalisation/fine_sumsq", h5::Type::kFloat64, &s.fine_sumsq, {});
    if (C > 0 && static_cast<int64_t>(s.context_min.size()) == C && static_cast<int64_t>(s.context_max.size()) == C) {
      f.write("normalisation/context_min", h5::Type::kFloat64, s.context_min.data(), {C});
      f.write("normalisation/context_max", h5::Type::kFloat64, s.context_max.data(), {C});
    }
    const auto rng = state.rng_state.contiguous();
    f.write("rng/state", h5::Type::kUInt8, rng.data_ptr<uint8_t>(), {rng.numel()});
    f.set_attr("rng", "kind", std::string("pytorch-cpu-mt19937"));
    write_validation(f, state.validation);
    f.create_group("metadata");
    for (const auto& [k, v] : metadata) f.set_attr("metadata", k, v);
    for (const auto& [group, attributes] : groups) {
      if (group.empty() || group.find('/') != std::string::npos || f.exists(group))
        throw CheckpointError(path + ": not written: the group name \"" + group +
                              "\" is empty, nested or one of the checkpoint's own groups");
      f.create_group(group);
      for (const auto& [key, value] : attributes) f.set_attr_value(group, key, value);
    }
    f.close();
  }
  out.commit();
}

}  // namespace

void Downscaler::save_checkpoint(const std::string& path, const std::map<std::string, std::string>& metadata,
                                 const CheckpointGroups& groups) const {
  const auto& im = *impl_;
  TrainState s;  // views of the live buffers: nothing copied but what the writer copies to the host
  s.flat = im.flat;
  s.ema = im.ema;
  s.exp_avg = im.exp_avg;
  s.exp_avg_sq = im.exp_avg_sq;
  s.sums = im.sums;
  s.rng_state = im.gen.get_state();
  s.step = im.step;
  s.consecutive_bad = im.consecutive_bad;
  s.total_bad = im.total_bad;
  s.validation = im.validation;
  write_checkpoint(path, im, s, metadata, groups);
}

bool Downscaler::save_best_checkpoint(const std::string& path, const std::map<std::string, std::string>& metadata,
                                      const CheckpointGroups& groups) const {
  const auto& im = *impl_;
  if (!im.best) return false;
  write_checkpoint(path, im, *im.best, metadata, groups);
  return true;
}

int64_t Downscaler::best_state_step() const { return impl_->best ? impl_->best->step : -1; }

void Downscaler::restore(const std::string& path) {
  auto& im = *impl_;
  if (!std::filesystem::exists(path)) throw CheckpointError(path + ": no such checkpoint file");
  h5::File f = h5::File::open_read(path, format::kCheckpointReporting);
  format::check_header(f);
  const ModelOptions file_mo = format::read_model_options(f);
  const std::string diff = format::describe_differences(file_mo, im.mo);
  if (!diff.empty()) throw CheckpointError(path + ": incompatible with this model: " + diff);
  if (denoisers::capabilities(im.mo.arch).user_module) {
    const std::string mine = models::torchscript_hash(*im.mo.torchscript);
    const std::string theirs = models::torchscript_hash(*read_torchscript(f, path));
    if (mine != theirs)
      throw CheckpointError(path + ": its TorchScript module (hash " + theirs + ") is not this model's (model.file " +
                            im.mo.file + ", hash " + mine + ")");
  }

  // Every problem with the tensors at once, so one run tells the user everything that differs.
  std::vector<std::string> problems;
  for (const char* group : kBuffers) {
    if (!f.exists(group)) {
      problems.push_back("group /" + std::string(group) + " is missing");
      continue;
    }
    auto stored = f.children(group);
    for (size_t i = 0; i < im.names.size(); ++i) {
      const std::string name = std::string(group) + "/" + im.names[i];
      auto it = std::find(stored.begin(), stored.end(), im.names[i]);
      if (it == stored.end()) {
        problems.push_back("missing tensor /" + name);
        continue;
      }
      stored.erase(it);
      const auto info = f.info(name);
      if (info.shape != im.shapes[i] || info.type != h5::Type::kFloat32) {
        auto fmt = [](const std::vector<int64_t>& s) {
          std::string o = "[";
          for (size_t j = 0; j < s.size(); ++j) o += (j ? "," : "") + std::to_string(s[j]);
          return o + "]";
        };
        problems.push_back("/" + name + " is " + h5::type_name(info.type) + fmt(info.shape) +
                           ", the model expects float32" + fmt(im.shapes[i]));
      }
    }
    for (const auto& extra : stored) problems.push_back("unexpected tensor /" + std::string(group) + "/" + extra);
  }
  const int64_t C = im.mo.context_size;
  for (const char* ds : {"normalisation/context_count", "normalisation/context_sum", "normalisation/context_sumsq",
                         "normalisation/residual_count", "normalisation/residual_sumsq", "rng/state"})
    if (!f.exists(ds)) problems.push_back("missing dataset /" + std::string(ds));
  if (!problems.empty()) {
    std::string msg = path + ": does not fit this model:";
    for (const auto& p : problems) msg += "\n  - " + p;
    throw CheckpointError(msg);
  }

  // Read everything into staging buffers first, so a failure leaves this object unchanged.
  const int64_t N = im.flat.numel();
  TrainState s;
  torch::Tensor* staged[] = {&s.flat, &s.ema, &s.exp_avg, &s.exp_avg_sq};
  for (size_t b = 0; b < 4; ++b) {
    auto host = torch::empty({N}, torch::kFloat32);
    for (size_t i = 0; i < im.names.size(); ++i) {
      auto v = im.view(host, i);
      f.read(std::string(kBuffers[b]) + "/" + im.names[i], h5::Type::kFloat32, v.data_ptr<float>(), v.numel());
    }
    // A model with NaN or Inf weights cannot sample; refuse it here rather than at the first use.
    if (b < 2 && !torch::isfinite(host).all().item<bool>())
      throw CheckpointError(path + ": /" + kBuffers[b] + " holds NaN or Inf values; the checkpoint is unusable");
    *staged[b] = host;
  }
  s.sums.context_sum.resize(static_cast<size_t>(C));
  s.sums.context_sumsq.resize(static_cast<size_t>(C));
  f.read("normalisation/context_count", h5::Type::kFloat64, &s.sums.context_count, 1);
  f.read("normalisation/context_sum", h5::Type::kFloat64, s.sums.context_sum.data(), C);
  f.read("normalisation/context_sumsq", h5::Type::kFloat64, s.sums.context_sumsq.data(), C);
  f.read("normalisation/residual_count", h5::Type::kFloat64, &s.sums.residual_count, 1);
  f.read("normalisation/residual_sumsq", h5::Type::kFloat64, &s.sums.residual_sumsq, 1);
  if (f.exists("normalisation/fine_sumsq"))  // (not in checkpoints of earlier versions)
    f.read("normalisation/fine_sumsq", h5::Type::kFloat64, &s.sums.fine_sumsq, 1);
  if (f.exists("normalisation/context_min") && f.exists("normalisation/context_max")) {  // (since 2026-12)
    for (const char* ds : {"normalisation/context_min", "normalisation/context_max"})
      if (f.info(ds).numel() != C)
        throw CheckpointError(path + ": /" + ds + " holds " + std::to_string(f.info(ds).numel()) +
                              " values, the model has " + std::to_string(C) + " context features");
    s.sums.context_min.resize(static_cast<size_t>(C));
    s.sums.context_max.resize(static_cast<size_t>(C));
    f.read("normalisation/context_min", h5::Type::kFloat64, s.sums.context_min.data(), C);
    f.read("normalisation/context_max", h5::Type::kFloat64, s.sums.context_max.data(), C);
  }
  const auto state_info = f.info("rng/state");
  s.rng_state = torch::empty({state_info.numel()}, torch::kUInt8);
  f.read("rng/state", h5::Type::kUInt8, s.rng_state.data_ptr<uint8_t>(), s.rng_state.numel());
  s.step = f.attr_int("/", "step");
  s.consecutive_bad = f.has_attr("/", "consecutive_bad_steps") ? f.attr_int("/", "consecutive_bad_steps") : 0;
  s.total_bad = f.has_attr("/", "total_bad_steps") ? f.attr_int("/", "total_bad_steps") : 0;
  s.validation = read_validation(f);
  try {
    auto gen = at::make_generator<at::CPUGeneratorImpl>(0);
    gen.set_state(s.rng_state);
  } catch (const c10::Error& e) {
    throw CheckpointError(path + ": /rng/state is not a valid generator state (" + std::to_string(s.rng_state.numel()) +
                          " bytes)");
  }
  im.apply_state(s);
  im.best.reset();  // a kept best state belongs to the run before the restore
  publish();
}

Downscaler Downscaler::load_checkpoint(const std::string& path, const std::string& device,
                                       const std::string& sample_device) {
  if (!std::filesystem::exists(path)) throw CheckpointError(path + ": no such checkpoint file");
  ModelOptions mo;
  TrainOptions to;
  {
    h5::File f = h5::File::open_read(path, format::kCheckpointReporting);
    format::check_header(f);
    mo = format::read_model_options(f);
    to = format::read_train_options(f);
    if (denoisers::capabilities(mo.arch).user_module) mo.torchscript = read_torchscript(f, path);
  }
  try {
    models::validate(mo);
    validate_train_options(to);
  } catch (const std::invalid_argument& e) {
    throw CheckpointError(path + ": the stored options are invalid: " + e.what());
  }
  Downscaler d(mo, to, device, sample_device);
  d.restore(path);
  return d;
}

std::map<std::string, std::string> Downscaler::checkpoint_metadata(const std::string& path) {
  return read_checkpoint_metadata(path);
}

}  // namespace finecast::trainer
