// SPDX-License-Identifier: BSD-3-Clause
// libfinecast_trainer_module.so: the plugin's interface to the trainer (plugin/comin_plugin/
// trainer_module.hpp) implemented with trainer::Downscaler. Only trainer ranks load it, so only
// they map LibTorch. It exports one symbol, finecast_trainer_module_v2.
#include <memory>

#include "plugin/comin_plugin/trainer_module.hpp"
#include "trainer/checkpoint.hpp"
#include "trainer/device.hpp"
#include "trainer/downscaler.hpp"
#include "trainer/threads.hpp"

namespace finecast::plugin {
namespace {

class DownscalerModel final : public Model {
 public:
  DownscalerModel(trainer::Downscaler model, std::string device)
      : model_(std::move(model)), device_(std::move(device)) {}

  void restore(const std::string& checkpoint) override { model_.restore(checkpoint); }
  int64_t step() const override { return model_.step(); }
  void set_reducer(std::shared_ptr<trainer::Reducer> reducer) override { model_.set_reducer(std::move(reducer)); }
  void set_pause_gate(std::shared_ptr<trainer::PauseGate> gate) override { model_.set_pause_gate(std::move(gate)); }

  trainer::SessionStats train_session(const trainer::DataView& data, int epochs, int threads,
                                      const std::function<void(const std::string&)>& on_event,
                                      const std::function<void(const trainer::SessionStats&)>& on_epoch) override {
    const trainer::ScopedTorchThreads scope(threads);
    return model_.train_session(data, epochs, on_event, on_epoch);
  }

  void sample(const float* context, const float* coarse, const float* weights, int64_t n,
              const trainer::SampleOptions& options, uint64_t seed, int threads, float* out) override {
    const trainer::ScopedTorchThreads scope(threads);
    model_.sample(context, coarse, weights, n, options, seed, out);
  }
  int64_t rows_beyond_training_range(const float* context, int64_t n, double margin) const override {
    return model_.rows_beyond_training_range(context, n, margin);
  }

  std::string device_identity() const override { return trainer::device_identity(device_); }
  void limit_device_memory(double fraction) override { trainer::limit_device_memory(device_, fraction); }

  std::string save_in_dir(const std::string& dir, int keep, const std::map<std::string, std::string>& metadata,
                          const trainer::CheckpointGroups& groups) override {
    return trainer::save_checkpoint_in_dir(model_, dir, keep, metadata, groups);
  }

 private:
  trainer::Downscaler model_;
  std::string device_;  ///< the LibTorch device it trains on
};

class Module final : public TrainerModule {
 public:
  std::unique_ptr<Model> create_model(const trainer::ModelOptions& model, const trainer::TrainOptions& train,
                                      const std::string& device_request, const std::string& sample_device, int threads,
                                      std::string& device_line) override {
    const trainer::ScopedTorchThreads scope(threads);
    const trainer::DeviceChoice device = trainer::select_device(device_request);
    device_line = device.log_line();
    return std::make_unique<DownscalerModel>(trainer::Downscaler(model, train, device.torch_device, sample_device),
                                             device.torch_device);
  }

  std::map<std::string, std::string> checkpoint_metadata(const std::string& checkpoint) override {
    return trainer::Downscaler::checkpoint_metadata(checkpoint);
  }

  std::optional<schema::Record> checkpoint_group(const std::string& checkpoint, const std::string& group) override {
    return trainer::read_checkpoint_group(checkpoint, group);
  }

  void verify_checkpoint(const std::string& checkpoint) override { trainer::verify_checkpoint(checkpoint); }
};

}  // namespace
}  // namespace finecast::plugin

extern "C" __attribute__((visibility("default"))) finecast::plugin::TrainerModule* finecast_trainer_module_v2() {
  static finecast::plugin::Module module;
  return &module;
}
