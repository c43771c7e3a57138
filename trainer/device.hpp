// SPDX-License-Identifier: BSD-3-Clause
// Device selection: parse `device: auto | cpu | cuda | cuda:N | mps` and pick a real device.
#pragma once

#include <functional>
#include <string>

namespace finecast::trainer {

/// What the user asked for in the config key `device`.
struct DeviceRequest {
  enum class Kind { kAuto, kCpu, kCuda, kMps };
  Kind kind = Kind::kAuto;
  int index = -1;  ///< CUDA ordinal for `cuda:N`; -1 = default (0)
};

/// Parses a device string; throws std::invalid_argument naming the allowed values.
DeviceRequest parse_device(const std::string& text);

/// What the machine offers. The default probe asks LibTorch; tests inject their own.
struct DeviceProbe {
  std::function<int()> cuda_device_count;
  std::function<bool()> mps_available;
  std::function<std::string(int)> cuda_device_name;   ///< "" when unknown
  std::function<double(int)> cuda_device_memory_gib;  ///< 0 when unknown
  std::function<int()> cpu_threads;
};

/// The probe backed by LibTorch (and the CUDA runtime when finecast was built with CUDA).
DeviceProbe torch_device_probe();

/// The chosen device: a LibTorch device string plus the start-up line users see.
struct DeviceChoice {
  std::string torch_device;  ///< "cpu", "cuda:0", "mps"
  std::string description;   ///< e.g. "CUDA - NVIDIA H100 80GB HBM3 (80 GiB)"
  bool is_cuda() const { return torch_device.rfind("cuda", 0) == 0; }
  /// The line printed once at start-up: "Using device: ...".
  std::string log_line() const { return "Using device: " + description; }
};

/// Resolves a request against a probe. auto picks CUDA, then MPS, then CPU; an explicit
/// cuda/mps request that the machine cannot satisfy throws std::runtime_error (no fallback).
DeviceChoice select_device(const DeviceRequest& request, const DeviceProbe& probe);

/// Convenience: parse + select with the LibTorch probe.
DeviceChoice select_device(const std::string& text);

/// What placement logs name a LibTorch device by: "cpu", "mps", or for "cuda:N" the device's
/// UUID as nvidia-smi prints it ("GPU-8f6b1c2e-..."), which names the same physical GPU in every
/// process whatever its CUDA_VISIBLE_DEVICES ("cuda:N" itself in a build without CUDA).
std::string device_identity(const std::string& torch_device);

/// Caps this process's share of the memory of a CUDA device at `fraction` (0, 1] of the device's
/// memory: LibTorch's caching allocator refuses allocations beyond it (an out-of-memory error,
/// which training answers by halving its micro-batch). Does nothing for other devices.
void limit_device_memory(const std::string& torch_device, double fraction);

}  // namespace finecast::trainer
