// SPDX-License-Identifier: BSD-3-Clause
// LibTorch device strings.
#include "trainer/torch_device.hpp"

#include <stdexcept>

namespace finecast::trainer {

torch::Device parse_torch_device(const std::string& device) {
  try {
    torch::Device d(device == "cuda" ? std::string("cuda:0") : device);
    if (d.is_cuda() && !torch::cuda::is_available())
      throw std::invalid_argument("device \"" + device + "\": this LibTorch has no usable CUDA device");
    if (d.is_cuda() && d.index() < 0) d = torch::Device(torch::kCUDA, 0);
    return d;
  } catch (const c10::Error& e) {
    throw std::invalid_argument("device \"" + device + "\" is not a LibTorch device string (cpu, cuda, cuda:N, mps)");
  }
}

}  // namespace finecast::trainer
