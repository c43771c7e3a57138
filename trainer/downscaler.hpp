// SPDX-License-Identifier: BSD-3-Clause
// The conditional diffusion downscaler: options, training, sampling, checkpoints (torch-free API).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "trainer/checkpoint.hpp"

namespace finecast::trainer {

/// The model part of the config; stored in every checkpoint and checked on load.
struct ModelOptions {
  std::string arch = "mlp";         ///< mlp | unet
  int64_t context_size = 7;         ///< C: context values per patch
  int64_t patch_size = 256;         ///< P: fine values per patch (unet: a square k*k, k even)
  int64_t hidden = 256;             ///< MLP width
  int64_t depth = 3;                ///< MLP hidden layers (C=7, P=256: 281K parameters)
  int64_t time_embedding = 64;      ///< size of the sinusoidal step embedding
  int64_t unet_channels = 32;       ///< U-Net base channels
  int64_t diffusion_steps = 50;     ///< T
  std::string schedule = "cosine";  ///< linear | cosine
  std::string objective = "eps";    ///< eps | v
  bool conservative = true;         ///< every sample's weighted patch mean equals the coarse value
};

/// Optimisation settings; not part of the model, but stored in checkpoints for the record.
struct TrainOptions {
  int64_t batch_size = 16;
  double lr = 1e-3;            ///< peak learning rate (AdamW)
  double weight_decay = 1e-4;  ///< AdamW decoupled weight decay
  int64_t warmup_steps = 100;  ///< linear warm-up from lr/warmup_steps to lr
  int64_t decay_steps = 10000; ///< cosine decay from lr to lr*min_lr_ratio after the warm-up
  double min_lr_ratio = 0.1;
  double grad_clip = 1.0;      ///< max global gradient norm; <= 0 disables clipping
  double ema_decay = 0.999;    ///< EMA of the weights used for sampling
  bool bf16 = false;           ///< bf16 autocast; honoured on CUDA only (ignored, with an event, on CPU)
  int64_t max_bad_steps = 10;  ///< consecutive NaN/Inf steps before the last good weights are restored
  uint64_t seed = 42;          ///< seeds the trainer's own generator (noise, steps, shuffling)
};

/// How sample() draws.
struct SampleOptions {
  std::string sampler = "ddim";  ///< ddpm (ancestral, all T steps) | ddim (deterministic, `steps` steps)
  int64_t steps = 10;            ///< DDIM steps (ignored by ddpm)
  int64_t members = 8;           ///< ensemble members per patch, drawn in one batch
  double eta = 0.0;              ///< ddim noise: 0 deterministic .. 1 ancestral (ddpm-like); in [0, 1]
};

/// n samples, row-major: context [n,C], fine [n,P], optional weights [n,P] (area weights of the
/// fine cells of each patch; rows are normalised to sum 1; nullptr = uniform). Not copied.
struct DataView {
  const float* context = nullptr;
  const float* fine = nullptr;
  const float* weights = nullptr;
  int64_t n = 0;
};

/// What one train_epoch did.
struct EpochStats {
  double avg_loss = 0;     ///< mean loss over the good steps (0 when there were none)
  int64_t batches = 0;     ///< steps attempted
  int64_t bad_steps = 0;   ///< steps skipped for a NaN/Inf loss or gradient
  int64_t skipped_samples = 0;  ///< rows dropped because they held NaN/Inf
  double seconds = 0;      ///< wall time of the epoch
  int64_t step = 0;        ///< optimizer steps taken so far (all sessions)
};

/// The conditional diffusion downscaler (pimpl; move-only). One thread trains; any number of
/// threads may call sample() concurrently with training.
class Downscaler {
 public:
  /// Builds the model on `device` ("cpu", "cuda", "cuda:N", "mps"); throws std::invalid_argument
  /// naming a bad option.
  Downscaler(const ModelOptions& model, const TrainOptions& train, const std::string& device);
  Downscaler(Downscaler&&) noexcept;
  Downscaler& operator=(Downscaler&&) noexcept;
  ~Downscaler();

  /// Accumulates per-feature statistics of the context and the scalar residual statistics
  /// (fine minus coarse). Rows holding NaN/Inf are ignored. train_epoch calls it itself once
  /// when no statistics exist yet.
  void update_normalisation(const DataView& data);

  /// One pass over `data` in a seeded random order. `on_event` receives one line per notable
  /// event (bad step, restore of the last good weights, dropped rows, bf16 ignored).
  EpochStats train_epoch(const DataView& data,
                         const std::function<void(const std::string&)>& on_event = {});

  /// Copies the current EMA weights and normalisation to the sampling copy (thread-safe).
  /// train_epoch does not call it; the caller publishes at the end of a training session.
  void publish();

  /// Draws members fine patches per row from the last published weights; safe while another
  /// thread trains. coarse [n] is each patch's coarse value; weights [n,P] or nullptr;
  /// out [n, members, P]. Deterministic for a given seed on CPU.
  /// `progress(rows_done, n)`, when given, is called at every sampler step (rows_done counts the
  /// finished part of the current batch pro rata) and after each internal batch of rows (bounded
  /// batches keep memory flat; 16384 / members rows each), for progress lines.
  void sample(const float* context, const float* coarse, const float* weights, int64_t n,
              const SampleOptions& options, uint64_t seed, float* out,
              const std::function<void(int64_t rows_done, int64_t rows)>& progress = {}) const;

  /// Writes an HDF5 checkpoint atomically (temporary file in the same directory, flushed, renamed).
  void save_checkpoint(const std::string& path,
                       const std::map<std::string, std::string>& metadata = {}) const;
  /// Builds a Downscaler from a checkpoint's options and state, on `device`.
  static Downscaler load_checkpoint(const std::string& path, const std::string& device);
  /// Loads a checkpoint into this object; throws CheckpointError naming every incompatibility
  /// (architecture, shapes, missing tensors, format version). On error this object is unchanged.
  void restore(const std::string& path);
  /// The user metadata stored with a checkpoint.
  static std::map<std::string, std::string> checkpoint_metadata(const std::string& path);

  int64_t step() const;
  int64_t parameter_count() const;
  const ModelOptions& model_options() const;
  const TrainOptions& train_options() const;
  /// The LibTorch device string in use, e.g. "cpu" or "cuda:0".
  std::string device() const;
  /// Learning rate used at optimizer step `step` (warm-up, then cosine decay).
  double learning_rate(int64_t step) const;

 private:
  struct Impl;  // trainer/downscaler_impl.hpp (internal, LibTorch)
  friend struct DownscalerInternals;  // white-box access for the trainer's own tests
  explicit Downscaler(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

/// Sets LibTorch's intra-op thread count (process-wide).
void set_torch_threads(int n);

}  // namespace finecast::trainer
