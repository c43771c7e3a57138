// SPDX-License-Identifier: BSD-3-Clause
// Fixed-shape work replayed from a captured CUDA graph, and the staging of its inputs through
// pinned host memory (internal). Everything but the capture itself runs on any device, so the
// orchestration is tested on the CPU; the capture runs only in a CUDA build on a GPU.
#pragma once

#include <torch/torch.h>

#include <functional>
#include <memory>

namespace finecast::trainer::graphs {

/// True in a CUDA build (a CUDA LibTorch): it can capture CUDA graphs, and has finecast's CUDA
/// kernels (cuda_kernels.hpp).
bool compiled();

/// Runs a fixed-shape body again and again. On a CUDA device (CUDA build): on its own stream,
/// eagerly for the first `warmup` runs (allocator, cuBLAS workspaces, autograd streams), then
/// captured once into a CUDA graph and replayed. Elsewhere: eagerly every time.
class Runner {
 public:
  virtual ~Runner() = default;
  /// A host buffer of n elements: pinned (page-locked) on CUDA, so copies from it are asynchronous.
  virtual torch::Tensor host_buffer(int64_t n, torch::ScalarType type) = 0;
  /// Enqueues dst.copy_(src) on the runner's stream (asynchronous from pinned memory) and marks
  /// `slot` so that wait_slot(slot) returns once src may be overwritten.
  virtual void copy_in(torch::Tensor& dst, const torch::Tensor& src, int slot) = 0;
  virtual void wait_slot(int slot) = 0;
  /// Runs the body: warm-up, capture + replay, or replay.
  virtual void run(const std::function<void()>& body) = 0;
  /// Waits (host) for everything enqueued on the runner's stream.
  virtual void synchronize() = 0;
  /// Makes the runner's stream wait for the work already enqueued on the device's current
  /// stream (e.g. weights written by eager code) before what it runs next.
  virtual void follow_current_stream() = 0;
  virtual bool captured() const = 0;

  // What a benchmark reads (bench/bench_trainer.cpp: the anatomy of a step).
  /// Nodes and kernel nodes of the captured graph; 0 before a capture and where runs are eager.
  virtual int64_t graph_nodes() const { return 0; }
  virtual int64_t graph_kernels() const { return 0; }
  /// Replays the captured graph n times back to back on its current inputs (so it changes what
  /// the body writes: for benchmarks only) and returns the GPU seconds per replay (CUDA events);
  /// -1 when nothing is captured.
  virtual double time_replays(int n) {
    (void)n;
    return -1;
  }
};

/// The runner for `device`: a CUDA graph runner where compiled() and device is CUDA, else eager.
std::unique_ptr<Runner> make_runner(const torch::Device& device, int warmup);

}  // namespace finecast::trainer::graphs
