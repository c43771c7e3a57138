// SPDX-License-Identifier: BSD-3-Clause
// Random training rows of any model's shapes (LibTorch), for the tests that compare paths on
// the same data: the export and registry agreement tests.
#pragma once

#include <ATen/CPUGeneratorImpl.h>
#include <torch/torch.h>

#include <vector>

#include "trainer/downscaler.hpp"

namespace finecast::trainer::testing {

/// Random rows of the model's shapes: the first context value is the area-weighted patch mean of
/// `fine` (the coarse value, as in a one-field context), the rest noise.
struct RandomRows {
  std::vector<float> context, fine, coarse, weights;
  int64_t n = 0;
  RandomRows(const ModelOptions& mo, int64_t rows, uint64_t seed) : n(rows) {
    auto gen = at::make_generator<at::CPUGeneratorImpl>(seed);
    auto ctx = torch::randn({rows, mo.context_size}, gen);
    auto f = torch::randn({rows, mo.patch_size}, gen) * 0.5 + 2.0 * ctx.narrow(1, 0, 1);
    auto w = torch::rand({rows, mo.patch_size}, gen) + 0.5;
    w = w / w.sum(1, true);
    ctx.narrow(1, 0, 1).copy_((f * w).sum(1, true));
    context.assign(ctx.data_ptr<float>(), ctx.data_ptr<float>() + ctx.numel());
    fine.assign(f.data_ptr<float>(), f.data_ptr<float>() + f.numel());
    weights.assign(w.data_ptr<float>(), w.data_ptr<float>() + w.numel());
    for (int64_t i = 0; i < rows; ++i) coarse.push_back(context[static_cast<size_t>(i * mo.context_size)]);
  }
  DataView view() const { return {context.data(), fine.data(), weights.data(), n}; }
};

}  // namespace finecast::trainer::testing
