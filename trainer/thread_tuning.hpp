// SPDX-License-Identifier: BSD-3-Clause
// threads: auto — the intra-op thread count chosen by timing a few real steps (internal).
#pragma once

#include <functional>
#include <string>

#include "trainer/data.hpp"
#include "trainer/downscaler_impl.hpp"
#include "trainer/sampling_internal.hpp"

namespace finecast::trainer::threads {

/// Upper end of the search: `max_threads` when > 0, else the hardware's cores.
int search_limit(int64_t max_threads);

/// Times a few training steps at the configured batch with 1..N threads on `data` and returns
/// the fastest count; the training state (weights, optimizer, generator, step) is restored
/// afterwards, so tuning changes nothing but the thread count. Logs one line through `event`.
int tune_training(Downscaler::Impl& im, const EpochTensors& data, const std::function<void(const std::string&)>& event);

/// The thread count for sampling `rows` rows x o.members members: measured once per batch
/// size (a short DDIM sampling with 1..N threads) and remembered.
int tune_sampling(const Downscaler::Impl& im, const sampling::Model& m, int64_t rows, const SampleOptions& o);

}  // namespace finecast::trainer::threads
