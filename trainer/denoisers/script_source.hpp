// SPDX-License-Identifier: BSD-3-Clause
// Pieces of TorchScript source text shared by the denoisers' definitions (each beside the C++
// module it mirrors) and the exported module (torchscript_export.cpp). Torch-free.
#pragma once

#include <string>

#include "trainer/options.hpp"

namespace finecast::trainer::denoisers::script {

/// A double as TorchScript source that reads back to the same double.
std::string literal(double v);

/// `name` as a TorchScript attribute name: a Python keyword ("in", the graph denoiser's input
/// layer) gets a trailing underscore.
std::string identifier(const std::string& name);

/// "self.net.<path>" with each component an identifier: the network's tensor `path` in the
/// exported module.
std::string attr(const std::string& path);

/// `text` with every "{P}" replaced by `prefix`.
std::string with_prefix(std::string text, const std::string& prefix);

/// The hidden activation applied to `x` (models::activation).
std::string activation(Activation a);

/// The conditioning vector of the U-Net and the graph denoiser (context head and step embedding
/// through cond1, cond2) as the lines that set `cond` (and `fields`, the fine covariates).
std::string conditioning(const ModelOptions& mo);

}  // namespace finecast::trainer::denoisers::script
