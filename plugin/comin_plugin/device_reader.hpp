// SPDX-License-Identifier: BSD-3-Clause
// Reading a GPU host's fields from their device copies (coupling.device_fields): ComIn hands out
// device pointers to a plugin that asks with COMIN_FLAG_DEVICE, and then copies nothing for it.
// The plugin copies only the owned cells of the level it needs, through the CUDA driver API of
// libcuda.so.1, loaded at run time: the same plugin binary runs on hosts without a GPU.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "coupling/mpi/owned_cells.hpp"

namespace finecast::plugin {

class DeviceReader {
 public:
  /// The CUDA driver, loaded and initialised; null with `why` set when it cannot be (no
  /// libcuda.so.1, no GPU, a driver without the functions used).
  static std::unique_ptr<DeviceReader> open(std::string& why);
  ~DeviceReader();
  DeviceReader(const DeviceReader&) = delete;
  DeviceReader& operator=(const DeviceReader&) = delete;

  /// Copies `region` of the device array at `device` (elements of `element_bytes`) densely into
  /// `dst` (region.elements() elements), in one 2-D copy; synchronous. Throws Error naming host
  /// variable `name` when the driver fails (e.g. `device` is no device pointer).
  void copy(const void* device, const coupling::ArrayRegion& region, int64_t element_bytes, void* dst,
            const std::string& name);

 private:
  struct Driver;
  explicit DeviceReader(std::unique_ptr<Driver> driver);
  std::unique_ptr<Driver> driver_;
};

}  // namespace finecast::plugin
