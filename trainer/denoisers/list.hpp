// SPDX-License-Identifier: BSD-3-Clause
// The registered denoisers, one line each: the Arch value and its name in model.arch. Torch-free
// (options.hpp builds the enum from it). Adding a denoiser is its file trainer/denoisers/<name>.cpp,
// which defines denoisers::<name>::entry() (docs/architecture.md, "A new denoiser"), and its
// line here; the registry (registry.cpp) and the names of model.arch follow from this list.
#pragma once

// X(enumerator, name): Arch::<enumerator>, model.arch: <name>, the entry denoisers::<name>::entry().
#define FINECAST_DENOISERS(X) \
  X(kMlp, mlp)                \
  X(kUnet, unet)              \
  X(kGraph, graph)            \
  X(kTorchscript, torchscript)
