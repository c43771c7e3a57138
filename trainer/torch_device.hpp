// SPDX-License-Identifier: BSD-3-Clause
// A LibTorch device from a device string, refused with a clear error when unusable (internal).
#pragma once

#include <torch/torch.h>

#include <string>

namespace finecast::trainer {

/// "cpu", "cuda" (= cuda:0), "cuda:N", "mps"; throws std::invalid_argument naming the string.
torch::Device parse_torch_device(const std::string& device);

}  // namespace finecast::trainer
