// SPDX-License-Identifier: BSD-3-Clause
// Checkpoint format checks, verification, keep-last-K directories and newest-valid fallback.
#include "trainer/checkpoint.hpp"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <vector>

#include "common/checkpoint_files.hpp"
#include "common/h5.hpp"
#include "trainer/checkpoint_format.hpp"
#include "trainer/denoisers/registry.hpp"
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
    throw CheckpointError(
        f.path() + ": checkpoint format version " + std::to_string(v) + ", but this build reads versions " +
        std::to_string(kCheckpointOldestReadableVersion) + " to " + std::to_string(kCheckpointFormatVersion) +
        (v > kCheckpointFormatVersion ? " (written by a newer finecast)" : " (written by an older finecast)"));
}

namespace {

/// Writes every checkpoint field of `table` as an attribute of `group`, typed by its row.
template <class S>
void write_options(h5::File& f, const std::string& group, const schema::Table<S>& table, const S& o) {
  f.create_group(group);
  for (const auto& field : schema::in_scope(table, schema::Scope::kCheckpoint))
    f.set_attr_value(group, field.key, schema::typed_get(field, o));
}

/// Reads the fields of `table` from the attributes of `group`; an attribute an older version
/// did not write (nor under an earlier name) keeps the default. A stored value the field refuses
/// is a CheckpointError naming the file and key.
template <class S>
S read_options(const h5::File& f, const std::string& group, const schema::Table<S>& table) {
  S o;
  for (const auto& field : schema::in_scope(table, schema::Scope::kCheckpoint)) {
    std::string key = field.key;
    for (const auto& old : field.old_keys)
      if (!f.has_attr(group, key) && f.has_attr(group, old)) key = old;
    if (!f.has_attr(group, key)) continue;
    try {
      schema::typed_set(field, o, f.attr_value(group, key));
    } catch (const schema::BadValue& e) {
      throw CheckpointError(f.path() + ": /" + group + " " + key + " " + e.what());
    }
  }
  return o;
}

}  // namespace

void write_model_options(h5::File& f, const ModelOptions& o) { write_options(f, "options", model_options_table(), o); }

ModelOptions read_model_options(const h5::File& f) {
  if (!f.exists("options")) throw CheckpointError(f.path() + ": the group /options (model options) is missing");
  return read_options(f, "options", model_options_table());
}

void write_train_options(h5::File& f, const TrainOptions& o) {
  write_options(f, "train_options", train_options_table(), o);
}

TrainOptions read_train_options(const h5::File& f) {
  if (!f.exists("train_options")) throw CheckpointError(f.path() + ": the group /train_options is missing");
  return read_options(f, "train_options", train_options_table());
}

std::string describe_differences(const ModelOptions& a, const ModelOptions& b) {
  // An option that shapes only one architecture's network (the MLP's width and depth, the
  // U-Net's channels and attention) is compared only when both models have that architecture.
  auto owner = [](const std::string& key) -> const denoisers::Entry* {
    for (const denoisers::Entry* e : denoisers::all())
      for (const auto& own : e->own_options)
        if (own == key) return e;
    return nullptr;
  };
  schema::Table<ModelOptions> compared;
  for (const auto& field : model_options_table()) {
    const denoisers::Entry* only = owner(field.key);
    if (only && !(a.arch == only->arch && b.arch == only->arch)) continue;
    // Where the TorchScript file was read from does not matter: the embedded module's hash does
    // (checkpoint_io.cpp).
    if (field.key == "file") continue;
    compared.push_back(field);
  }
  return schema::differences(compared, a, b, "file", "this model");
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

std::optional<schema::Record> read_checkpoint_group(const std::string& path, const std::string& group) {
  h5::File f = h5::File::open_read(path, format::kCheckpointReporting);
  format::check_header(f);
  if (!f.exists(group) || f.is_dataset(group)) return std::nullopt;
  schema::Record out;
  for (const auto& key : f.attr_names(group)) out[key] = f.attr_value(group, key);
  return out;
}

std::optional<SampleOptions> read_checkpoint_sampling(const std::string& path) {
  const auto group = read_checkpoint_group(path, kSamplingGroup);
  if (!group) return std::nullopt;
  SampleOptions o;
  try {
    schema::from_record(sample_options_table(), *group, o);
  } catch (const schema::BadValue& e) {
    throw CheckpointError(path + ": /" + kSamplingGroup + " " + e.what());
  }
  return o;
}

std::string save_checkpoint_in_dir(const Downscaler& model, const std::string& dir, int keep,
                                   const std::map<std::string, std::string>& metadata, const CheckpointGroups& groups) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw CheckpointError(dir + ": cannot create the checkpoint directory (" + ec.message() + ")");
  const std::string path = checkpoint_files::checkpoint_path(dir, model.step());
  model.save_checkpoint(path, metadata, groups);
  if (model.best_state_step() >= 0) {
    // Rewritten only when the kept best state changed since the file was written.
    const std::string best = checkpoint_files::best_path(dir);
    bool current = false;
    if (fs::exists(best, ec)) {
      try {
        h5::File f = h5::File::open_read(best);
        current = f.has_attr("/", "step") && f.attr_int("/", "step") == model.best_state_step();
      } catch (const std::exception&) {
        current = false;
      }
    }
    if (!current) model.save_best_checkpoint(best, metadata, groups);
  }
  if (keep > 0) {
    const auto all = checkpoint_files::checkpoints_newest_first(dir);
    for (size_t i = static_cast<size_t>(keep); i < all.size(); ++i) fs::remove(all[i].second, ec);
  }
  return path;
}

std::optional<std::string> newest_valid_checkpoint(const std::string& dir,
                                                   const std::function<void(const std::string&)>& on_skip) {
  for (const auto& [step, path] : checkpoint_files::checkpoints_newest_first(dir)) {
    try {
      verify_checkpoint(path);
      return path;
    } catch (const CheckpointError& e) {
      if (on_skip) on_skip(std::string("skipping invalid checkpoint: ") + e.what());
    }
  }
  return std::nullopt;
}

}  // namespace finecast::trainer
