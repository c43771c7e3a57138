// SPDX-License-Identifier: BSD-3-Clause
// The plugin's LibTorch side, behind an interface. libfinecast_comin.so does not link LibTorch:
// the trainer ranks load libfinecast_trainer_module.so (plugin/trainer_module/) with dlopen when
// they set up, so the host's other ranks never map LibTorch (about a gigabyte of libraries, and
// its start-up time). Both libraries are built together, so the interface is C++ (virtual
// functions; the types are the trainer's torch-free public structs).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "trainer/downscaler.hpp"
#include "trainer/options.hpp"
#include "trainer/reducer.hpp"

namespace finecast::plugin {

/// A trainer rank's model (a trainer::Downscaler). `threads` is the LibTorch thread count for
/// the call, set on the calling thread and restored afterwards.
class Model {
 public:
  virtual ~Model() = default;
  /// Loads weights, optimizer and normalisation; checks them against this model's options.
  virtual void restore(const std::string& checkpoint) = 0;
  /// Optimizer steps taken so far.
  virtual int64_t step() const = 0;
  /// The group's sums for data-parallel training (train.ranks > 1).
  virtual void set_reducer(std::shared_ptr<trainer::Reducer> reducer) = 0;
  /// Training waits before each optimizer step while `gate` is held (trainer::PauseGate).
  virtual void set_pause_gate(std::shared_ptr<trainer::PauseGate> gate) = 0;
  /// `on_epoch` (may be empty) gets the session's stats after each epoch, on the calling thread.
  virtual trainer::SessionStats train_session(const trainer::DataView& data, int epochs, int threads,
                                              const std::function<void(const std::string&)>& on_event,
                                              const std::function<void(const trainer::SessionStats&)>& on_epoch) = 0;
  /// Draws `options.members` fine fields per patch into `out` [n][members][patch_size].
  virtual void sample(const float* context, const float* coarse, const float* weights, int64_t n,
                      const trainer::SampleOptions& options, uint64_t seed, int threads, float* out) = 0;
  /// How many of the `n` contexts have a feature beyond the training range widened by `margin`
  /// (trainer::Downscaler::rows_beyond_training_range; 0 for a checkpoint without the range).
  virtual int64_t rows_beyond_training_range(const float* context, int64_t n, double margin) const = 0;
  /// What the placement report names this model's device by: "cpu", "mps", or for CUDA the
  /// device's UUID ("GPU-8f6b...", as nvidia-smi prints it: the same GPU gives the same UUID in
  /// every process, whatever its CUDA_VISIBLE_DEVICES).
  virtual std::string device_identity() const = 0;
  /// Caps this process's share of the model's CUDA device memory at `fraction` (LibTorch's caching
  /// allocator refuses allocations beyond it); no effect on other devices.
  virtual void limit_device_memory(double fraction) = 0;
  /// Writes the checkpoint of the current step into `dir` (keep-last-K), with the typed attribute
  /// groups `groups` (the conditioning spec); returns its path.
  virtual std::string save_in_dir(const std::string& dir, int keep, const std::map<std::string, std::string>& metadata,
                                  const trainer::CheckpointGroups& groups) = 0;
};

/// What the plugin needs of the trainer library besides a model.
class TrainerModule {
 public:
  virtual ~TrainerModule() = default;
  /// The device for `device_request` ("auto", "cpu", "cuda:1", ...) and a model on it;
  /// `device_line` receives the start-up line naming the device.
  virtual std::unique_ptr<Model> create_model(const trainer::ModelOptions& model, const trainer::TrainOptions& train,
                                              const std::string& device_request, const std::string& sample_device,
                                              int threads, std::string& device_line) = 0;
  /// The metadata a checkpoint was written with (trainer::Downscaler::checkpoint_metadata).
  virtual std::map<std::string, std::string> checkpoint_metadata(const std::string& checkpoint) = 0;
  /// A typed attribute group of a checkpoint, nullopt when it has none (trainer::read_checkpoint_group).
  virtual std::optional<schema::Record> checkpoint_group(const std::string& checkpoint, const std::string& group) = 0;
  /// Throws CheckpointError naming the first problem of a damaged checkpoint (trainer::verify_checkpoint).
  virtual void verify_checkpoint(const std::string& checkpoint) = 0;
};

/// The module's one exported symbol: returns its TrainerModule (static, lives as long as the
/// process). The name carries a version, so that a module of another build is refused.
inline constexpr const char* kTrainerModuleEntry = "finecast_trainer_module_v2";
inline constexpr const char* kTrainerModuleFile = "libfinecast_trainer_module.so";

/// Loads the module once per process, from the directory of libfinecast_comin.so (the
/// environment variable FINECAST_TRAINER_MODULE names another file); it stays loaded until the
/// process ends (LibTorch does not support being unloaded). Throws ConfigError naming the file and
/// the loader's message when it cannot be loaded.
TrainerModule& trainer_module();

/// Whether LibTorch is mapped into this process (from /proc/self/maps).
bool libtorch_loaded();
/// This process's peak resident memory in MiB (VmHWM of /proc/self/status; 0 when unknown).
double peak_resident_mib();

}  // namespace finecast::plugin
