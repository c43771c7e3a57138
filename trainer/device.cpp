// SPDX-License-Identifier: BSD-3-Clause
#include "trainer/device.hpp"

#include <torch/torch.h>

#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <thread>

#ifdef FINECAST_HAVE_CUDA
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDACachingAllocator.h>
#endif

namespace finecast::trainer {

DeviceRequest parse_device(const std::string& text) {
  DeviceRequest r;
  if (text == "auto") return r;
  if (text == "cpu") {
    r.kind = DeviceRequest::Kind::kCpu;
    return r;
  }
  if (text == "mps") {
    r.kind = DeviceRequest::Kind::kMps;
    return r;
  }
  if (text == "cuda") {
    r.kind = DeviceRequest::Kind::kCuda;
    return r;
  }
  if (text.rfind("cuda:", 0) == 0) {
    const std::string ord = text.substr(5);
    if (!ord.empty() && ord.find_first_not_of("0123456789") == std::string::npos && ord.size() < 6) {
      r.kind = DeviceRequest::Kind::kCuda;
      r.index = std::stoi(ord);
      return r;
    }
  }
  throw std::invalid_argument("device must be one of auto, cpu, cuda, cuda:N, mps; got \"" + text + "\"");
}

DeviceProbe torch_device_probe() {
  DeviceProbe p;
  p.cuda_device_count = [] { return torch::cuda::is_available() ? static_cast<int>(torch::cuda::device_count()) : 0; };
  p.mps_available = [] {
#if defined(TORCH_VERSION_MAJOR) && TORCH_VERSION_MAJOR >= 2
    return torch::mps::is_available();
#else
    return false;  // LibTorch 1.x has no MPS query in its C++ API
#endif
  };
  p.cuda_device_name = [](int i) -> std::string {
#ifdef FINECAST_HAVE_CUDA
    return at::cuda::getDeviceProperties(i)->name;
#else
    (void)i;
    return "";
#endif
  };
  p.cuda_device_memory_gib = [](int i) -> double {
#ifdef FINECAST_HAVE_CUDA
    return static_cast<double>(at::cuda::getDeviceProperties(i)->totalGlobalMem) / (1024.0 * 1024.0 * 1024.0);
#else
    (void)i;
    return 0.0;
#endif
  };
  p.cpu_threads = [] { return static_cast<int>(torch::get_num_threads()); };
  return p;
}

namespace {

DeviceChoice cuda_choice(int index, const DeviceProbe& probe) {
  DeviceChoice c;
  c.torch_device = "cuda:" + std::to_string(index);
  std::string name = probe.cuda_device_name ? probe.cuda_device_name(index) : "";
  if (name.empty()) name = "GPU " + std::to_string(index);
  const double gib = probe.cuda_device_memory_gib ? probe.cuda_device_memory_gib(index) : 0.0;
  c.description = "CUDA - " + name;
  if (gib > 0) {
    char buf[32];
    std::snprintf(buf, sizeof buf, " (%.0f GiB)", gib);
    c.description += buf;
  }
  return c;
}

DeviceChoice cpu_choice(const DeviceProbe& probe, const std::string& why) {
  DeviceChoice c;
  c.torch_device = "cpu";
  const int threads = probe.cpu_threads ? probe.cpu_threads() : 1;
  c.description = "CPU (" + std::to_string(threads) + (threads == 1 ? " thread" : " threads") + why + ")";
  return c;
}

}  // namespace

DeviceChoice select_device(const DeviceRequest& request, const DeviceProbe& probe) {
  const int n_cuda = probe.cuda_device_count ? probe.cuda_device_count() : 0;
  const bool mps = probe.mps_available ? probe.mps_available() : false;
  switch (request.kind) {
    case DeviceRequest::Kind::kCpu:
      return cpu_choice(probe, "");
    case DeviceRequest::Kind::kCuda: {
      const int index = request.index < 0 ? 0 : request.index;
      if (n_cuda == 0)
        throw std::runtime_error(
            "device: cuda was requested but no CUDA device is available "
            "(this LibTorch has no CUDA support or no GPU is visible); use device: auto or cpu");
      if (index >= n_cuda)
        throw std::runtime_error("device: cuda:" + std::to_string(index) + " was requested but only " +
                                 std::to_string(n_cuda) +
                                 " CUDA device(s) are visible (cuda:0 .. cuda:" + std::to_string(n_cuda - 1) + ")");
      return cuda_choice(index, probe);
    }
    case DeviceRequest::Kind::kMps:
      if (!mps)
        throw std::runtime_error("device: mps was requested but Apple MPS is not available; use device: auto or cpu");
      return DeviceChoice{"mps", "MPS - Apple GPU"};
    case DeviceRequest::Kind::kAuto:
      if (n_cuda > 0) return cuda_choice(0, probe);
      if (mps) return DeviceChoice{"mps", "MPS - Apple GPU"};
      return cpu_choice(probe, "; no GPU found, training will be slower");
  }
  throw std::logic_error("unreachable device kind");
}

DeviceChoice select_device(const std::string& text) { return select_device(parse_device(text), torch_device_probe()); }

namespace {

/// The CUDA ordinal of "cuda" / "cuda:N"; -1 for other devices.
int cuda_index(const std::string& torch_device) {
  if (torch_device == "cuda") return 0;
  if (torch_device.rfind("cuda:", 0) != 0) return -1;
  return std::atoi(torch_device.c_str() + 5);
}

}  // namespace

std::string device_identity(const std::string& torch_device) {
  const int index = cuda_index(torch_device);
  if (index < 0) return torch_device;
#ifdef FINECAST_HAVE_CUDA
  const unsigned char* b = reinterpret_cast<const unsigned char*>(at::cuda::getDeviceProperties(index)->uuid.bytes);
  char uuid[64];
  std::snprintf(uuid, sizeof uuid, "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0],
                b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]);
  return uuid;
#else
  return torch_device;
#endif
}

void limit_device_memory(const std::string& torch_device, double fraction) {
  const int index = cuda_index(torch_device);
  if (index < 0) return;
  if (!(fraction > 0.0 && fraction <= 1.0))
    throw std::invalid_argument("the device memory fraction must be in (0, 1]; got " + std::to_string(fraction));
#ifdef FINECAST_HAVE_CUDA
  c10::cuda::CUDACachingAllocator::setMemoryFraction(fraction, static_cast<c10::DeviceIndex>(index));
#endif
}

}  // namespace finecast::trainer
