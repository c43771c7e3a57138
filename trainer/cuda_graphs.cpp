// SPDX-License-Identifier: BSD-3-Clause
// Runners: eager everywhere; CUDA graph capture and replay in CUDA builds.
#include "trainer/cuda_graphs.hpp"

#include <stdexcept>
#include <vector>

#if FINECAST_HAVE_CUDA
#include <ATen/cuda/CUDAEvent.h>
#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda_runtime_api.h>
#endif

namespace finecast::trainer::graphs {

namespace {

/// Runs the body directly; copies are synchronous.
class EagerRunner : public Runner {
 public:
  torch::Tensor host_buffer(int64_t n, torch::ScalarType type) override {
    return torch::empty({n}, torch::TensorOptions().dtype(type));
  }
  void copy_in(torch::Tensor& dst, const torch::Tensor& src, int) override { dst.copy_(src); }
  void wait_slot(int) override {}
  void run(const std::function<void()>& body) override { body(); }
  void synchronize() override {
    if (device_cuda_) torch::cuda::synchronize();
  }
  bool captured() const override { return false; }
  void follow_current_stream() override {}
  bool device_cuda_ = false;
};

#if FINECAST_HAVE_CUDA
/// Warm-up on a side stream, one capture, then replays. Copies from pinned host memory are
/// enqueued on the same stream before each run; an event per host slot tells the host when it
/// may refill that slot (the copy of batch k+1 is prepared while batch k computes).
class CudaGraphRunner : public Runner {
 public:
  CudaGraphRunner(const torch::Device& device, int warmup)
      : device_(device), warmup_(warmup), stream_(c10::cuda::getStreamFromPool(false, device.index())) {}
  ~CudaGraphRunner() override {
    try {
      stream_.synchronize();
    } catch (...) {
    }
  }
  torch::Tensor host_buffer(int64_t n, torch::ScalarType type) override {
    return torch::empty({n}, torch::TensorOptions().dtype(type).pinned_memory(true));
  }
  void copy_in(torch::Tensor& dst, const torch::Tensor& src, int slot) override {
    c10::cuda::CUDAStreamGuard guard(stream_);
    dst.copy_(src, /*non_blocking=*/true);
    if (static_cast<size_t>(slot) >= events_.size()) events_.resize(static_cast<size_t>(slot) + 1);
    events_[static_cast<size_t>(slot)].record(stream_);
  }
  void wait_slot(int slot) override {
    if (static_cast<size_t>(slot) < events_.size()) events_[static_cast<size_t>(slot)].synchronize();
  }
  void run(const std::function<void()>& body) override {
    c10::cuda::CUDAStreamGuard guard(stream_);
    if (runs_ < warmup_) {
      body();
      ++runs_;
      return;
    }
    if (!graph_) {
      stream_.synchronize();
      auto g = std::make_unique<at::cuda::CUDAGraph>();
      // Thread-local capture mode: a sampling thread may use the GPU while this one captures.
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 1)
      g->capture_begin({0, 0}, cudaStreamCaptureModeThreadLocal);
#else
      g->capture_begin();
#endif
      try {
        body();
        count_nodes();
      } catch (...) {
        try {
          g->capture_end();
        } catch (...) {
        }
        throw;
      }
      g->capture_end();
      graph_ = std::move(g);
    }
    graph_->replay();
    ++runs_;
  }
  void synchronize() override { stream_.synchronize(); }
  void follow_current_stream() override {
    at::cuda::CUDAEvent ready;
    ready.record(c10::cuda::getCurrentCUDAStream(device_.index()));
    ready.block(stream_);
  }
  bool captured() const override { return graph_ != nullptr; }
  int64_t graph_nodes() const override { return nodes_; }
  int64_t graph_kernels() const override { return kernels_; }
  double time_replays(int n) override {
    if (!graph_ || n < 1) return -1;
    c10::cuda::CUDAStreamGuard guard(stream_);
    stream_.synchronize();
    at::cuda::CUDAEvent start(cudaEventDefault), stop(cudaEventDefault);  // timing enabled
    start.record(stream_);
    for (int i = 0; i < n; ++i) graph_->replay();
    stop.record(stream_);
    stop.synchronize();
    return static_cast<double>(start.elapsed_time(stop)) / 1000.0 / n;
  }

 private:
  /// The nodes of the graph being captured (before capture_end), for graph_nodes().
  void count_nodes() {
    cudaStreamCaptureStatus status{};
    cudaGraph_t graph = nullptr;
    if (cudaStreamGetCaptureInfo(stream_.stream(), &status, nullptr, &graph) != cudaSuccess || graph == nullptr) return;
    size_t n = 0;
    if (cudaGraphGetNodes(graph, nullptr, &n) != cudaSuccess) return;
    std::vector<cudaGraphNode_t> nodes(n);
    if (n > 0 && cudaGraphGetNodes(graph, nodes.data(), &n) != cudaSuccess) return;
    nodes_ = static_cast<int64_t>(n);
    kernels_ = 0;
    for (cudaGraphNode_t node : nodes) {
      cudaGraphNodeType type{};
      if (cudaGraphNodeGetType(node, &type) == cudaSuccess && type == cudaGraphNodeTypeKernel) ++kernels_;
    }
  }
  int64_t nodes_ = 0, kernels_ = 0;
  torch::Device device_;
  int warmup_;
  int runs_ = 0;
  c10::cuda::CUDAStream stream_;
  std::vector<at::cuda::CUDAEvent> events_;
  std::unique_ptr<at::cuda::CUDAGraph> graph_;
};
#endif

}  // namespace

bool compiled() {
#if FINECAST_HAVE_CUDA
  return true;
#else
  return false;
#endif
}

std::unique_ptr<Runner> make_runner(const torch::Device& device, int warmup) {
#if FINECAST_HAVE_CUDA
  if (device.is_cuda()) return std::make_unique<CudaGraphRunner>(device, warmup);
#else
  (void)warmup;
#endif
  auto r = std::make_unique<EagerRunner>();
  r->device_cuda_ = device.is_cuda();
  return r;
}

}  // namespace finecast::trainer::graphs
