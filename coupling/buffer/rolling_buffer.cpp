// SPDX-License-Identifier: BSD-3-Clause
// Rolling buffer: ring slots, FIFO eviction, unbiased uniform sampling over valid samples.
#include "coupling/buffer/rolling_buffer.hpp"

#include <fmt/format.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <stdexcept>

namespace finecast::coupling {
namespace {

// Unbiased draw in [0, n) by rejection; std::uniform_int_distribution is not specified
// identically across standard libraries, and draws must be reproducible from the seed.
uint64_t draw_below(std::mt19937_64& rng, uint64_t n) {
  const uint64_t limit = std::numeric_limits<uint64_t>::max() - std::numeric_limits<uint64_t>::max() % n;
  uint64_t r;
  do r = rng();
  while (r >= limit);
  return r % n;
}

bool all_finite(const float* v, int n) {
  for (int i = 0; i < n; ++i)
    if (!std::isfinite(v[i])) return false;
  return true;
}

}  // namespace

RollingBuffer::RollingBuffer(int capacity_steps, int64_t patches_per_step, int C, int P,
                             std::vector<float> patch_weights)
    : capacity_(capacity_steps), n_(patches_per_step), C_(C), P_(P), weights_(std::move(patch_weights)) {
  if (capacity_steps < 1)
    throw std::invalid_argument("rolling buffer capacity must be >= 1 step, got " + std::to_string(capacity_steps));
  if (patches_per_step < 1 || patches_per_step > std::numeric_limits<int32_t>::max())
    throw std::invalid_argument("rolling buffer patches per step must be in 1..2^31-1, got " +
                                std::to_string(patches_per_step));
  if (C < 1 || P < 1)
    throw std::invalid_argument("rolling buffer needs context size >= 1 and patch size >= 1, got C=" +
                                std::to_string(C) + " P=" + std::to_string(P));
  const size_t nP = static_cast<size_t>(n_) * P_;
  if (weights_.empty()) {
    weights_.assign(nP, 1.0f / static_cast<float>(P_));
  } else if (weights_.size() != nP) {
    throw std::invalid_argument("rolling buffer patch weights have " + std::to_string(weights_.size()) +
                                " values, expected patches x P = " + std::to_string(nP));
  }
  const size_t cap = static_cast<size_t>(capacity_);
  context_.resize(cap * n_ * C_);
  fine_.resize(cap * nP);
  valid_.resize(cap * n_);
  valid_list_.resize(cap * n_);
  valid_count_.assign(cap, 0);
  datetime_.resize(cap);
}

int64_t RollingBuffer::push(const std::string& datetime, const float* context, const float* fine,
                            const uint8_t* valid) {
  if (!context || !fine) throw std::invalid_argument("RollingBuffer::push: context and fine must not be null");
  int slot;
  if (steps_ == capacity_) {
    slot = head_;
    samples_ -= valid_count_[slot];
    head_ = (head_ + 1) % capacity_;
  } else {
    slot = slot_of(steps_);
    ++steps_;
  }
  const size_t s = static_cast<size_t>(slot);
  float* ctx = context_.data() + s * n_ * C_;
  float* fn = fine_.data() + s * n_ * P_;
  std::memcpy(ctx, context, sizeof(float) * n_ * C_);
  std::memcpy(fn, fine, sizeof(float) * n_ * P_);
  uint8_t* v = valid_.data() + s * n_;
  int32_t* list = valid_list_.data() + s * n_;
  int64_t count = 0;
  for (int64_t i = 0; i < n_; ++i) {
    const bool ok = (!valid || valid[i]) && all_finite(ctx + i * C_, C_) && all_finite(fn + i * P_, P_);
    v[i] = ok ? 1 : 0;
    if (ok) list[count++] = static_cast<int32_t>(i);
  }
  valid_count_[s] = count;
  datetime_[s] = datetime;
  samples_ += count;
  rejected_total_ += n_ - count;
  ++pushed_total_;
  return count;
}

size_t RollingBuffer::bytes() const {
  return context_.size() * sizeof(float) + fine_.size() * sizeof(float) + weights_.size() * sizeof(float) +
         valid_.size() + valid_list_.size() * sizeof(int32_t);
}

std::string RollingBuffer::describe() const {
  return fmt::format("rolling buffer: {} steps x {} patches x ({} context + {} fine) floats, {:.1f} MiB allocated",
                     capacity_, n_, C_, P_, static_cast<double>(bytes()) / (1024.0 * 1024.0));
}

const std::string& RollingBuffer::datetime(int step) const {
  if (step < 0 || step >= steps_)
    throw std::out_of_range("rolling buffer step " + std::to_string(step) + " outside 0.." +
                            std::to_string(steps_ - 1));
  return datetime_[static_cast<size_t>(slot_of(step))];
}

void RollingBuffer::snapshot(std::vector<float>& context, std::vector<float>& fine, std::vector<float>& weights,
                             std::vector<int64_t>* step_of_sample) const {
  if (step_of_sample) step_of_sample->resize(static_cast<size_t>(samples_));
  context.resize(static_cast<size_t>(samples_) * C_);
  fine.resize(static_cast<size_t>(samples_) * P_);
  weights.resize(static_cast<size_t>(samples_) * P_);
  size_t k = 0;
  for (int step = 0; step < steps_; ++step) {
    const size_t s = static_cast<size_t>(slot_of(step));
    const int32_t* list = valid_list_.data() + s * n_;
    for (int64_t j = 0; j < valid_count_[s]; ++j, ++k) {
      const size_t i = static_cast<size_t>(list[j]);
      std::memcpy(context.data() + k * C_, context_.data() + (s * n_ + i) * C_, sizeof(float) * C_);
      std::memcpy(fine.data() + k * P_, fine_.data() + (s * n_ + i) * P_, sizeof(float) * P_);
      std::memcpy(weights.data() + k * P_, weights_.data() + i * P_, sizeof(float) * P_);
      if (step_of_sample) (*step_of_sample)[k] = step;
    }
  }
}

void RollingBuffer::sample_batch(std::mt19937_64& rng, int64_t batch, float* context, float* fine,
                                 float* weights) const {
  if (samples_ == 0) throw std::logic_error("RollingBuffer::sample_batch: the buffer holds no valid samples");
  for (int64_t b = 0; b < batch; ++b) {
    int64_t r = static_cast<int64_t>(draw_below(rng, static_cast<uint64_t>(samples_)));
    // At most `capacity` slots (48 by default): a linear walk is cheaper than keeping prefix sums
    // current.
    int step = 0;
    size_t s = static_cast<size_t>(slot_of(0));
    while (r >= valid_count_[s]) {
      r -= valid_count_[s];
      s = static_cast<size_t>(slot_of(++step));
    }
    const size_t i = static_cast<size_t>(valid_list_[s * n_ + static_cast<size_t>(r)]);
    if (context) std::memcpy(context + b * C_, context_.data() + (s * n_ + i) * C_, sizeof(float) * C_);
    if (fine) std::memcpy(fine + b * P_, fine_.data() + (s * n_ + i) * P_, sizeof(float) * P_);
    if (weights) std::memcpy(weights + b * P_, weights_.data() + i * P_, sizeof(float) * P_);
  }
}

}  // namespace finecast::coupling
