// SPDX-License-Identifier: BSD-3-Clause
// Checkpoint format checks, verification, keep-last-K directories and newest-valid fallback.
#include "trainer/checkpoint.hpp"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <vector>

#include "common/h5.hpp"
#include "trainer/checkpoint_format.hpp"
#include "trainer/downscaler.hpp"

namespace fs = std::filesystem;

namespace finecast::trainer {

namespace format {

void check_header(const h5::File& f) {
  if (!f.has_attr("/", "format"))
    throw CheckpointError(f.path() + ": not a finecast checkpoint (the root attribute `format` is missing)");
  const std::string name = f.attr_string("/", "format");
  if (name != kCheckpointFormatName)
    throw CheckpointError(f.path() + ": not a finecast checkpoint (format is \"" + name + "\", expected \"" +
                          kCheckpointFormatName + "\")");
  if (!f.has_attr("/", "format_version"))
    throw CheckpointError(f.path() + ": the root attribute `format_version` is missing");
  const int64_t v = f.attr_int("/", "format_version");
  if (v < kCheckpointOldestReadableVersion || v > kCheckpointFormatVersion)
    throw CheckpointError(f.path() + ": checkpoint format version " + std::to_string(v) + ", but this build reads versions " +
                          std::to_string(kCheckpointOldestReadableVersion) + " to " +
                          std::to_string(kCheckpointFormatVersion) +
                          (v > kCheckpointFormatVersion ? " (written by a newer finecast)" : " (written by an older finecast)"));
}

void write_model_options(h5::File& f, const ModelOptions& o) {
  f.create_group("options");
  f.set_attr("options", "arch", o.arch);
  f.set_attr("options", "context_size", o.context_size);
  f.set_attr("options", "patch_size", o.patch_size);
  f.set_attr("options", "hidden", o.hidden);
  f.set_attr("options", "depth", o.depth);
  f.set_attr("options", "time_embedding", o.time_embedding);
  f.set_attr("options", "unet_channels", o.unet_channels);
  f.set_attr("options", "diffusion_steps", o.diffusion_steps);
  f.set_attr("options", "schedule", o.schedule);
  f.set_attr("options", "objective", o.objective);
  f.set_attr("options", "conservative", static_cast<int64_t>(o.conservative));
  f.set_attr("options", "activation", o.activation);
  f.set_attr("options", "attention", static_cast<int64_t>(o.attention));
}

ModelOptions read_model_options(const h5::File& f) {
  if (!f.exists("options")) throw CheckpointError(f.path() + ": the group /options (model options) is missing");
  ModelOptions o;
  o.arch = f.attr_string("options", "arch");
  o.context_size = f.attr_int("options", "context_size");
  o.patch_size = f.attr_int("options", "patch_size");
  o.hidden = f.attr_int("options", "hidden");
  o.depth = f.attr_int("options", "depth");
  o.time_embedding = f.attr_int("options", "time_embedding");
  o.unet_channels = f.attr_int("options", "unet_channels");
  o.diffusion_steps = f.attr_int("options", "diffusion_steps");
  o.schedule = f.attr_string("options", "schedule");
  o.objective = f.attr_string("options", "objective");
  o.conservative = f.attr_int("options", "conservative") != 0;
  // Added in format version 2; version 1 models are silu without attention.
  if (f.has_attr("options", "activation")) o.activation = f.attr_string("options", "activation");
  if (f.has_attr("options", "attention")) o.attention = f.attr_int("options", "attention") != 0;
  return o;
}

void write_train_options(h5::File& f, const TrainOptions& o) {
  f.create_group("train_options");
  f.set_attr("train_options", "batch_size", o.batch_size);
  f.set_attr("train_options", "lr", o.lr);
  f.set_attr("train_options", "weight_decay", o.weight_decay);
  f.set_attr("train_options", "warmup_steps", o.warmup_steps);
  f.set_attr("train_options", "decay_steps", o.decay_steps);
  f.set_attr("train_options", "min_lr_ratio", o.min_lr_ratio);
  f.set_attr("train_options", "grad_clip", o.grad_clip);
  f.set_attr("train_options", "ema_decay", o.ema_decay);
  f.set_attr("train_options", "bf16", static_cast<int64_t>(o.bf16));
  f.set_attr("train_options", "max_bad_steps", o.max_bad_steps);
  // uint64 seeds above 2^63 keep their bits through the int64 attribute.
  f.set_attr("train_options", "seed", static_cast<int64_t>(o.seed));
  f.set_attr("train_options", "accumulate", o.accumulate);
  f.set_attr("train_options", "validation", o.validation);
  f.set_attr("train_options", "validation_members", o.validation_members);
  f.set_attr("train_options", "validation_max_samples", o.validation_max_samples);
  f.set_attr("train_options", "validation_metric", o.validation_metric);
  f.set_attr("train_options", "early_stop", o.early_stop);
  f.set_attr("train_options", "plateau", o.plateau);
  f.set_attr("train_options", "plateau_factor", o.plateau_factor);
  f.set_attr("train_options", "plateau_min_scale", o.plateau_min_scale);
  f.set_attr("train_options", "keep_best", static_cast<int64_t>(o.keep_best));
  f.set_attr("train_options", "max_device_memory", o.max_device_memory);
  f.set_attr("train_options", "force_autograd", static_cast<int64_t>(o.force_autograd));
  f.set_attr("train_options", "threads", o.threads);
  f.set_attr("train_options", "max_threads", o.max_threads);
  f.set_attr("train_options", "cuda_graphs", static_cast<int64_t>(o.cuda_graphs));
}

TrainOptions read_train_options(const h5::File& f) {
  if (!f.exists("train_options")) throw CheckpointError(f.path() + ": the group /train_options is missing");
  TrainOptions o;
  o.batch_size = f.attr_int("train_options", "batch_size");
  o.lr = f.attr_double("train_options", "lr");
  o.weight_decay = f.attr_double("train_options", "weight_decay");
  o.warmup_steps = f.attr_int("train_options", "warmup_steps");
  o.decay_steps = f.attr_int("train_options", "decay_steps");
  o.min_lr_ratio = f.attr_double("train_options", "min_lr_ratio");
  o.grad_clip = f.attr_double("train_options", "grad_clip");
  o.ema_decay = f.attr_double("train_options", "ema_decay");
  o.bf16 = f.attr_int("train_options", "bf16") != 0;
  o.max_bad_steps = f.attr_int("train_options", "max_bad_steps");
  o.seed = static_cast<uint64_t>(f.attr_int("train_options", "seed"));
  // Added in format version 2: each read only where present, else its default.
  const char* g = "train_options";
  auto opt_int = [&](const char* key, int64_t& v) {
    if (f.has_attr(g, key)) v = f.attr_int(g, key);
  };
  auto opt_double = [&](const char* key, double& v) {
    if (f.has_attr(g, key)) v = f.attr_double(g, key);
  };
  auto opt_bool = [&](const char* key, bool& v) {
    if (f.has_attr(g, key)) v = f.attr_int(g, key) != 0;
  };
  opt_int("accumulate", o.accumulate);
  opt_double("validation", o.validation);
  opt_int("validation_members", o.validation_members);
  opt_int("validation_max_samples", o.validation_max_samples);
  if (f.has_attr(g, "validation_metric")) o.validation_metric = f.attr_string(g, "validation_metric");
  opt_int("early_stop", o.early_stop);
  opt_int("plateau", o.plateau);
  opt_double("plateau_factor", o.plateau_factor);
  opt_double("plateau_min_scale", o.plateau_min_scale);
  opt_bool("keep_best", o.keep_best);
  opt_int("max_device_memory", o.max_device_memory);
  opt_bool("force_autograd", o.force_autograd);
  opt_int("threads", o.threads);
  opt_int("max_threads", o.max_threads);
  opt_bool("cuda_graphs", o.cuda_graphs);
  return o;
}

std::string describe_differences(const ModelOptions& a, const ModelOptions& b) {
  std::string out;
  auto add = [&](const char* key, const std::string& fa, const std::string& fb) {
    if (fa == fb) return;
    if (!out.empty()) out += "; ";
    out += std::string(key) + ": file has " + fa + ", this model has " + fb;
  };
  add("arch", a.arch, b.arch);
  add("context_size", std::to_string(a.context_size), std::to_string(b.context_size));
  add("patch_size", std::to_string(a.patch_size), std::to_string(b.patch_size));
  if (a.arch == "mlp" && b.arch == "mlp") {
    add("hidden", std::to_string(a.hidden), std::to_string(b.hidden));
    add("depth", std::to_string(a.depth), std::to_string(b.depth));
  }
  if (a.arch == "unet" && b.arch == "unet") add("unet_channels", std::to_string(a.unet_channels), std::to_string(b.unet_channels));
  if (a.arch == "unet" && b.arch == "unet") add("attention", a.attention ? "true" : "false", b.attention ? "true" : "false");
  add("activation", a.activation, b.activation);
  add("time_embedding", std::to_string(a.time_embedding), std::to_string(b.time_embedding));
  add("diffusion_steps", std::to_string(a.diffusion_steps), std::to_string(b.diffusion_steps));
  add("schedule", a.schedule, b.schedule);
  add("objective", a.objective, b.objective);
  add("conservative", a.conservative ? "true" : "false", b.conservative ? "true" : "false");
  return out;
}

}  // namespace format

namespace {

void read_all(const h5::File& f, const std::string& group, std::vector<char>& buf) {
  for (const auto& child : f.children(group)) {
    const std::string name = (group == "/" ? "" : group) + "/" + child;
    if (!f.is_dataset(name)) {
      read_all(f, name, buf);
      continue;
    }
    const auto info = f.info(name);
    buf.resize(static_cast<size_t>(info.numel()) * h5::type_size(info.type));
    f.read(name, info.type, buf.data(), info.numel());
  }
}

/// Checkpoint files of `dir` with their steps, newest first.
std::vector<std::pair<long long, fs::path>> list_checkpoints(const std::string& dir) {
  std::vector<std::pair<long long, fs::path>> out;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return out;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    // Exactly "ckpt_" + digits + ".h5": temporary files of interrupted writes never match.
    if (name.size() < 9 || name.compare(0, 5, "ckpt_") != 0 || name.compare(name.size() - 3, 3, ".h5") != 0) continue;
    const std::string digits = name.substr(5, name.size() - 8);
    if (digits.empty() || digits.find_first_not_of("0123456789") != std::string::npos) continue;
    out.emplace_back(std::stoll(digits), entry.path());
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  return out;
}

}  // namespace

void verify_checkpoint(const std::string& path) {
  std::error_code ec;
  if (!fs::exists(path, ec)) throw CheckpointError(path + ": no such checkpoint file");
  h5::File f = h5::File::open_read(path, format::kCheckpointReporting);
  format::check_header(f);
  format::read_model_options(f);
  for (const char* group : {"model", "ema", "optimizer", "normalisation", "rng"})
    if (!f.exists(group)) throw CheckpointError(path + ": the group /" + std::string(group) + " is missing");
  std::vector<char> buf;
  read_all(f, "/", buf);
}

std::map<std::string, std::string> read_checkpoint_metadata(const std::string& path) {
  h5::File f = h5::File::open_read(path, format::kCheckpointReporting);
  format::check_header(f);
  std::map<std::string, std::string> out;
  if (!f.exists("metadata")) return out;
  for (const auto& key : f.attr_names("metadata")) out[key] = f.attr_string("metadata", key);
  return out;
}

std::string checkpoint_path_for_step(const std::string& dir, long long step) {
  char name[40];
  std::snprintf(name, sizeof name, "ckpt_%08lld.h5", step);
  return (fs::path(dir) / name).string();
}

std::string best_checkpoint_path(const std::string& dir) { return (fs::path(dir) / "ckpt_best.h5").string(); }

std::string save_checkpoint_in_dir(const Downscaler& model, const std::string& dir, int keep,
                                   const std::map<std::string, std::string>& metadata) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw CheckpointError(dir + ": cannot create the checkpoint directory (" + ec.message() + ")");
  const std::string path = checkpoint_path_for_step(dir, model.step());
  model.save_checkpoint(path, metadata);
  if (model.best_state_step() >= 0) {
    // Rewritten only when the kept best state changed since the file was written.
    const std::string best = best_checkpoint_path(dir);
    bool current = false;
    if (fs::exists(best, ec)) {
      try {
        h5::File f = h5::File::open_read(best);
        current = f.has_attr("/", "step") && f.attr_int("/", "step") == model.best_state_step();
      } catch (const std::exception&) {
        current = false;
      }
    }
    if (!current) model.save_best_checkpoint(best, metadata);
  }
  if (keep > 0) {
    const auto all = list_checkpoints(dir);
    for (size_t i = static_cast<size_t>(keep); i < all.size(); ++i) fs::remove(all[i].second, ec);
  }
  return path;
}

std::optional<std::string> newest_valid_checkpoint(const std::string& dir,
                                                   const std::function<void(const std::string&)>& on_skip) {
  for (const auto& [step, path] : list_checkpoints(dir)) {
    try {
      verify_checkpoint(path.string());
      return path.string();
    } catch (const CheckpointError& e) {
      if (on_skip) on_skip(std::string("skipping invalid checkpoint: ") + e.what());
    }
  }
  return std::nullopt;
}

}  // namespace finecast::trainer
