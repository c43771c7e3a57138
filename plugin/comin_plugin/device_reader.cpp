// SPDX-License-Identifier: BSD-3-Clause
#include "plugin/comin_plugin/device_reader.hpp"

#include <dlfcn.h>

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "coupling/error.hpp"

namespace finecast::plugin {
namespace {

// The few types and entry points of the CUDA driver API (cuda.h) used here, declared by their
// documented ABI so that the plugin builds without the CUDA toolkit.
using CUresult = int;
using CUdevice = int;
using CUcontext = void*;
using CUdeviceptr = unsigned long long;  // NOLINT(runtime/int): the driver's type
constexpr CUresult kSuccess = 0;
constexpr int kMemoryTypeHost = 1, kMemoryTypeDevice = 2;
constexpr int kPointerAttributeDeviceOrdinal = 9;

struct Memcpy2D {  // CUDA_MEMCPY2D
  size_t srcXInBytes, srcY;
  int srcMemoryType;
  const void* srcHost;
  CUdeviceptr srcDevice;
  void* srcArray;
  size_t srcPitch;
  size_t dstXInBytes, dstY;
  int dstMemoryType;
  void* dstHost;
  CUdeviceptr dstDevice;
  void* dstArray;
  size_t dstPitch;
  size_t WidthInBytes, Height;
};

}  // namespace

struct DeviceReader::Driver {
  void* library = nullptr;
  CUresult (*init)(unsigned) = nullptr;
  CUresult (*ctx_get_current)(CUcontext*) = nullptr;
  CUresult (*ctx_push)(CUcontext) = nullptr;
  CUresult (*ctx_pop)(CUcontext*) = nullptr;
  CUresult (*device_get)(CUdevice*, int) = nullptr;
  CUresult (*primary_retain)(CUcontext*, CUdevice) = nullptr;
  CUresult (*pointer_attribute)(void*, int, CUdeviceptr) = nullptr;
  CUresult (*memcpy2d)(const Memcpy2D*) = nullptr;
  CUresult (*error_string)(CUresult, const char**) = nullptr;
  CUcontext primary = nullptr;  ///< retained for the device of the first pointer, when none is current

  ~Driver() {
    if (library) dlclose(library);
  }
  std::string describe(CUresult r) const {
    const char* text = nullptr;
    if (error_string && error_string(r, &text) == kSuccess && text) return text;
    return "CUDA driver error " + std::to_string(r);
  }
};

std::unique_ptr<DeviceReader> DeviceReader::open(std::string& why) {
  auto d = std::make_unique<Driver>();
  d->library = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!d->library) {
    const char* e = dlerror();
    why = std::string("the CUDA driver (libcuda.so.1) cannot be loaded: ") + (e ? e : "unknown reason");
    return nullptr;
  }
  auto get = [&](auto& fn, const char* name) {
    fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(d->library, name));
    if (!fn) why = std::string("the CUDA driver has no ") + name;
    return fn != nullptr;
  };
  if (!get(d->init, "cuInit") || !get(d->ctx_get_current, "cuCtxGetCurrent") ||
      !get(d->ctx_push, "cuCtxPushCurrent_v2") || !get(d->ctx_pop, "cuCtxPopCurrent_v2") ||
      !get(d->device_get, "cuDeviceGet") || !get(d->primary_retain, "cuDevicePrimaryCtxRetain") ||
      !get(d->pointer_attribute, "cuPointerGetAttribute") || !get(d->memcpy2d, "cuMemcpy2D_v2") ||
      !get(d->error_string, "cuGetErrorString"))
    return nullptr;
  if (const CUresult r = d->init(0); r != kSuccess) {
    why = "cuInit failed: " + d->describe(r);
    return nullptr;
  }
  return std::unique_ptr<DeviceReader>(new DeviceReader(std::move(d)));
}

DeviceReader::DeviceReader(std::unique_ptr<Driver> driver) : driver_(std::move(driver)) {}
DeviceReader::~DeviceReader() = default;

void DeviceReader::copy(const void* device, const coupling::ArrayRegion& region, int64_t element_bytes, void* dst,
                        const std::string& name) {
  if (region.rows == 0) return;
  Driver& d = *driver_;
  const auto ptr = static_cast<CUdeviceptr>(reinterpret_cast<uintptr_t>(device));
  // The host's thread normally has its context current (ICON's OpenACC, finecast-host's CUDA
  // runtime); otherwise the primary context of the pointer's device is made current for the copy.
  CUcontext current = nullptr;
  d.ctx_get_current(&current);
  bool pushed = false;
  if (current == nullptr) {
    if (d.primary == nullptr) {
      int ordinal = -1;
      CUdevice dev = 0;
      CUresult r = d.pointer_attribute(&ordinal, kPointerAttributeDeviceOrdinal, ptr);
      if (r == kSuccess) r = d.device_get(&dev, ordinal);
      if (r == kSuccess) r = d.primary_retain(&d.primary, dev);
      if (r != kSuccess)
        throw Error("coupling.device_fields: host variable " + name +
                    ": no CUDA context for its device pointer: " + d.describe(r));
    }
    if (const CUresult r = d.ctx_push(d.primary); r != kSuccess)
      throw Error("coupling.device_fields: host variable " + name + ": " + d.describe(r));
    pushed = true;
  }
  Memcpy2D m{};
  m.srcMemoryType = kMemoryTypeDevice;
  m.srcDevice = ptr + static_cast<CUdeviceptr>(region.first * element_bytes);
  m.srcPitch = static_cast<size_t>(region.pitch * element_bytes);
  m.dstMemoryType = kMemoryTypeHost;
  m.dstHost = dst;
  m.dstPitch = static_cast<size_t>(region.width * element_bytes);
  m.WidthInBytes = static_cast<size_t>(region.width * element_bytes);
  m.Height = static_cast<size_t>(region.rows);
  const CUresult r = d.memcpy2d(&m);
  if (pushed) {
    CUcontext popped = nullptr;
    d.ctx_pop(&popped);
  }
  if (r != kSuccess)
    throw Error("coupling.device_fields: copying host variable " + name +
                " from the host's device copy failed: " + d.describe(r));
}

}  // namespace finecast::plugin
