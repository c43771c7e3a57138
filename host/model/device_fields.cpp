// SPDX-License-Identifier: BSD-3-Clause
#include "host/model/device_fields.hpp"

#include <map>
#include <utility>

#include "coupling/error.hpp"

#if FINECAST_HOST_CUDA
#include <cuda_runtime_api.h>
#endif

namespace finecast::host {

#if FINECAST_HOST_CUDA

namespace {

void check(cudaError_t e, const std::string& what) {
  if (e != cudaSuccess) throw Error("finecast-host device_fields: " + what + ": " + cudaGetErrorString(e));
}

struct DeviceArray {
  void* device = nullptr;
  double* host = nullptr;
  size_t bytes = 0;
};

}  // namespace

struct DeviceFields::Impl {
  comin::Host& host;
  int domain = 1;
  std::map<std::string, DeviceArray> arrays;
  std::string line;
  explicit Impl(comin::Host& h) : host(h) {}
};

bool device_fields_built() { return true; }

DeviceFields::DeviceFields(comin::Host& host, const std::vector<std::string>& names, int domain, MPI_Comm comm)
    : impl_(std::make_unique<Impl>(host)) {
  impl_->domain = domain;
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count < 1)
    throw ConfigError("device_fields: true, but this rank sees no GPU (cudaGetDeviceCount); set device_fields: false");
  MPI_Comm node;
  MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
  int local = 0;
  MPI_Comm_rank(node, &local);
  MPI_Comm_free(&node);
  const int gpu = local % count;
  check(cudaSetDevice(gpu), "cudaSetDevice(" + std::to_string(gpu) + ")");
  cudaDeviceProp prop{};
  check(cudaGetDeviceProperties(&prop, gpu), "cudaGetDeviceProperties");
  int driver = 0;
  cudaDriverGetVersion(&driver);
  impl_->line =
      "GPU " + std::to_string(gpu) + " (" + prop.name + ", " + std::to_string(prop.totalGlobalMem >> 30) + " GiB)";
  comin::DeviceSupport support;
  support.name = prop.name;
  support.vendor = "NVIDIA";
  support.driver = "CUDA " + std::to_string(driver / 1000) + "." + std::to_string(driver % 1000 / 10);
  Impl* impl = impl_.get();
  support.sync = [impl](const std::string& name, int, bool to_device) {
    const DeviceArray& a = impl->arrays.at(name);
    check(to_device ? cudaMemcpy(a.device, a.host, a.bytes, cudaMemcpyHostToDevice)
                    : cudaMemcpy(a.host, a.device, a.bytes, cudaMemcpyDeviceToHost),
          "sync of " + name);
  };
  host.set_device(std::move(support));
  for (const std::string& name : names) {
    DeviceArray a;
    a.host = host.variable(name, domain);
    if (a.host == nullptr) throw InternalError("device_fields: no double variable " + name);
    a.bytes = host.variable_bytes(name, domain);
    check(cudaMalloc(&a.device, a.bytes), "cudaMalloc of " + name + " (" + std::to_string(a.bytes) + " bytes)");
    impl_->arrays[name] = a;
    host.set_device_pointer(name, domain, a.device);
  }
  upload(names);
}

DeviceFields::~DeviceFields() {
  for (auto& [name, a] : impl_->arrays) cudaFree(a.device);
}

void DeviceFields::upload(const std::vector<std::string>& names) {
  for (const std::string& name : names) {
    const DeviceArray& a = impl_->arrays.at(name);
    check(cudaMemcpy(a.device, a.host, a.bytes, cudaMemcpyHostToDevice), "upload of " + name);
  }
}

const std::string& DeviceFields::device_line() const { return impl_->line; }

#else  // no CUDA runtime in this build

struct DeviceFields::Impl {};

bool device_fields_built() { return false; }

DeviceFields::DeviceFields(comin::Host&, const std::vector<std::string>&, int, MPI_Comm) {
  throw ConfigError(
      "device_fields: true needs a finecast-host built with CUDA (scripts/build_cuda.sh or "
      "scripts/device/build_cuda.sh --full); this one was built for the CPU: set device_fields: false");
}

DeviceFields::~DeviceFields() = default;
void DeviceFields::upload(const std::vector<std::string>&) {}
const std::string& DeviceFields::device_line() const {
  static const std::string none;
  return none;
}

#endif

}  // namespace finecast::host
