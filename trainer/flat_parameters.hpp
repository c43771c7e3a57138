// SPDX-License-Identifier: BSD-3-Clause
// Parameters as views of one flat buffer, and gradients as views of another (internal).
#pragma once

#include <torch/torch.h>

#include <string>
#include <vector>

namespace finecast::trainer {

/// Makes every parameter of `net` a view of one flat buffer (returned), so that optimizer, EMA,
/// clipping and publishing are a handful of operations on contiguous memory. Names, offsets
/// and shapes are appended to the vectors when given.
torch::Tensor flatten_parameters(torch::nn::Module& net, const torch::Device& device, std::vector<std::string>* names,
                                 std::vector<int64_t>* offsets, std::vector<std::vector<int64_t>>* shapes);

/// Points each parameter's .grad at its slice of `grad`; backward then accumulates in place.
void attach_gradients(torch::nn::Module& net, const torch::Tensor& grad);

}  // namespace finecast::trainer
