// SPDX-License-Identifier: BSD-3-Clause
// Measured thread counts for training and sampling.
#include "trainer/thread_tuning.hpp"

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/Parallel.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <thread>
#include <vector>

#include "trainer/threads.hpp"
#include "trainer/training_internal.hpp"

namespace finecast::trainer::threads {

namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

/// "1: 0.31 ms, 2: 0.52 ms" and the index of the fastest.
std::string describe(const std::vector<double>& per_step, size_t* best) {
  std::string s;
  *best = 0;
  for (size_t i = 0; i < per_step.size(); ++i) {
    char buf[48];
    std::snprintf(buf, sizeof buf, "%s%zu: %.3g ms", i ? ", " : "", i + 1, per_step[i] * 1e3);
    s += buf;
    if (per_step[i] < per_step[*best]) *best = i;
  }
  return s;
}

}  // namespace

int search_limit(int64_t max_threads) {
  if (max_threads > 0) return static_cast<int>(max_threads);
  return std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
}

int tune_training(Downscaler::Impl& im, const EpochTensors& data,
                  const std::function<void(const std::string&)>& event) {
  const int limit = search_limit(im.to.max_threads);
  const int before = at::get_num_threads();
  if (limit <= 1) {
    event("train.threads auto: 1 core available; using 1 thread");
    return 1;
  }
  const TrainState saved = im.capture_state();
  const int64_t global = im.to.batch_size * im.to.accumulate, b = std::min(global, data.n);
  auto gen = at::make_generator<at::CPUGeneratorImpl>(12345);
  StepDraws d;
  d.idx = torch::randperm(data.n, gen, torch::TensorOptions().dtype(torch::kInt64)).narrow(0, 0, b);
  d.t = torch::randint(0, im.mo.diffusion_steps, {b}, gen, torch::TensorOptions().dtype(torch::kInt64));
  d.eps = torch::randn({b, im.mo.patch_size}, gen, torch::TensorOptions().dtype(torch::kFloat32));
  // Enough steps for a stable minimum, but not more than about a tenth of an epoch's work.
  const int steps = static_cast<int>(std::clamp<int64_t>(data.n / b / 10, 3, 20));
  std::vector<double> per_step;
  try {
    for (int n = 1; n <= limit; ++n) {
      set_thread_count(n);
      auto one = [&] {
        const LossAndNorm r = forward_backward(im, data, d);
        apply_update(im, r.norm);
      };
      one();  // warm-up: thread pool, buffers
      if (im.cuda) torch::cuda::synchronize();
      double best = 1e300;
      for (int rep = 0; rep < 3; ++rep) {
        const auto t0 = std::chrono::steady_clock::now();
        for (int s = 0; s < steps; ++s) one();
        if (im.cuda) torch::cuda::synchronize();
        best = std::min(best, seconds_since(t0) / steps);
      }
      per_step.push_back(best);
    }
  } catch (const std::exception& e) {
    im.apply_state(saved);
    set_thread_count(before);
    event(std::string("train.threads auto: measuring failed (") + e.what() + "); keeping " + std::to_string(before) +
          " threads");
    return before;
  }
  im.apply_state(saved);
  size_t best = 0;
  const std::string measured = describe(per_step, &best);  // sets best: evaluate before using it
  const std::string line = "train.threads auto: per step at batch " + std::to_string(b) + " with 1.." +
                           std::to_string(limit) + " threads: " + measured + "; using " + std::to_string(best + 1);
  {
    std::lock_guard<std::mutex> lock(im.log_mutex);
    im.thread_log.push_back(line);
  }
  event(line);
  return static_cast<int>(best + 1);
}

int tune_sampling(const Downscaler::Impl& im, const sampling::Model& m, int64_t rows, const SampleOptions& o) {
  const int64_t B = rows * o.members;
  if (auto it = im.sample_threads.find(B); it != im.sample_threads.end()) return it->second;
  const int limit = search_limit(o.max_threads);
  if (limit <= 1) return im.sample_threads[B] = 1;
  const int before = at::get_num_threads();
  const int64_t C = im.mo.context_size;
  auto gen = at::make_generator<at::CPUGeneratorImpl>(54321);
  const auto ctx = torch::randn({rows, std::max<int64_t>(C, 1)}, gen, torch::TensorOptions().dtype(torch::kFloat32));
  std::vector<float> coarse(static_cast<size_t>(rows), 0.0f), out(static_cast<size_t>(B * im.mo.patch_size));
  SampleOptions probe = o;
  probe.sampler = Sampler::kDdim;  // a few network evaluations at the batch size of the real sampling
  probe.steps = 3;
  probe.eta = 0;
  std::vector<double> per_call;
  for (int n = 1; n <= limit; ++n) {
    set_thread_count(n);
    auto once = [&] {
      sampling::draw(im, m, ctx.data_ptr<float>(), coarse.data(), nullptr, rows, probe, 1, out.data(), {});
    };
    once();
    double best = 1e300;
    for (int rep = 0; rep < 3; ++rep) {
      const auto t0 = std::chrono::steady_clock::now();
      once();
      best = std::min(best, seconds_since(t0));
    }
    per_call.push_back(best);
  }
  set_thread_count(before);
  size_t best = 0;
  const std::string measured = describe(per_call, &best);
  const std::string line = "sample.threads auto: per call (3 DDIM steps) of " + std::to_string(B) + " rows with 1.." +
                           std::to_string(limit) + " threads: " + measured + "; using " + std::to_string(best + 1);
  {
    std::lock_guard<std::mutex> lock(im.log_mutex);
    im.thread_log.push_back(line);
  }
  return im.sample_threads[B] = static_cast<int>(best + 1);
}

}  // namespace finecast::trainer::threads
