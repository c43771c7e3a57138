// SPDX-License-Identifier: BSD-3-Clause
// bf16 autocast for the forward pass on CUDA (internal); the autocast state is thread-local.
#pragma once

#include <ATen/autocast_mode.h>
#include <torch/torch.h>

namespace finecast::trainer {

/// Switches CUDA bf16 autocast on for its lifetime when `on`.
class AutocastBf16 {
 public:
  explicit AutocastBf16(bool on) : on_(on) {
    if (!on_) return;
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 4)
    at::autocast::set_autocast_dtype(at::kCUDA, at::kBFloat16);
    at::autocast::set_autocast_enabled(at::kCUDA, true);
#else
    at::autocast::set_autocast_gpu_dtype(at::kBFloat16);
    at::autocast::set_enabled(true);
#endif
  }
  ~AutocastBf16() {
    if (!on_) return;
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 4)
    at::autocast::set_autocast_enabled(at::kCUDA, false);
#else
    at::autocast::set_enabled(false);
#endif
    at::autocast::clear_cache();
  }
  AutocastBf16(const AutocastBf16&) = delete;
  AutocastBf16& operator=(const AutocastBf16&) = delete;

 private:
  bool on_;
};

}  // namespace finecast::trainer
