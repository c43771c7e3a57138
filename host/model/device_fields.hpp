// SPDX-License-Identifier: BSD-3-Clause
// Device copies of finecast-host's fields (run file key device_fields; a CUDA build): the host
// then looks to its plugins like ICON built for GPUs, whose fields live on the device.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "host/comin/host.hpp"

namespace finecast::host {

/// Whether this finecast-host was built with the CUDA runtime (a CUDA LibTorch build).
bool device_fields_built();

/// A device copy of each of the host's fields, declared to ComIn (Host::set_device and
/// set_device_pointer): plugins may read them with COMIN_FLAG_DEVICE, and ComIn copies the
/// fields a plugin reads without that flag to the host before each of its callbacks, whole.
/// The model computes on the host (a toy); upload() after each step puts its fields where a GPU
/// model's are. Each rank takes GPU (node-local rank mod GPUs), as ICON runs one rank per GPU.
class DeviceFields {
 public:
  /// Before load_plugins. Throws ConfigError (naming the key) when this build has no CUDA or
  /// the rank sees no GPU. `comm`: the model's ranks (for the node-local rank).
  DeviceFields(comin::Host& host, const std::vector<std::string>& names, int domain, MPI_Comm comm);
  ~DeviceFields();
  DeviceFields(const DeviceFields&) = delete;
  DeviceFields& operator=(const DeviceFields&) = delete;

  /// Copies the named fields from the host to their device copies (the end of a model step).
  void upload(const std::vector<std::string>& names);
  /// "GPU 0 (NVIDIA H200, 140 GiB)": this rank's device.
  const std::string& device_line() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace finecast::host
