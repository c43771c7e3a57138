// SPDX-License-Identifier: BSD-3-Clause
// The rolling buffer of training samples: the last N coupling steps of patches, FIFO.
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace finecast::coupling {

/// Holds the patches of the last `capacity_steps` coupling steps in preallocated ring slots.
/// A sample is one (step, patch): a context vector of C floats and P fine values. The fine-cell
/// area weights of each patch are the same at every step (they come from the PatchMap), so
/// they are stored once. Patches flagged invalid or holding a non-finite value are kept out
/// of snapshot() and sample_batch() and counted.
class RollingBuffer {
 public:
  /// `patch_weights` is [patches_per_step][P] (empty: uniform 1/P). Throws std::invalid_argument.
  RollingBuffer(int capacity_steps, int64_t patches_per_step, int C, int P, std::vector<float> patch_weights = {});

  /// Copies one step (context [n][C], fine [n][P], valid [n] or nullptr = all valid) into the
  /// next ring slot, evicting the oldest step when full; no allocation. Returns the number of
  /// valid samples stored from this step.
  int64_t push(const std::string& datetime, const float* context, const float* fine, const uint8_t* valid = nullptr);

  int capacity() const { return capacity_; }
  int steps() const { return steps_; }
  int64_t patches_per_step() const { return n_; }
  int context_size() const { return C_; }
  int patch_size() const { return P_; }
  /// Valid samples now held.
  int64_t samples() const { return samples_; }
  /// Patches pushed but not held because they were invalid, since construction.
  int64_t rejected_total() const { return rejected_total_; }
  /// Steps pushed since construction (or since the saved buffer's construction, after load).
  int64_t pushed_total() const { return pushed_total_; }
  /// Bytes allocated for samples: capacity x patches x (C + P) x 4, plus the valid flags,
  /// the per-step index of valid patches and the weights.
  size_t bytes() const;
  /// One line for the start-up log: shape and memory.
  std::string describe() const;
  /// Model time of a held step, 0 = oldest.
  const std::string& datetime(int step) const;
  /// The weights [n][P] used for every step (uniform 1/P when none were given).
  const std::vector<float>& patch_weights() const { return weights_; }

  /// Consistent copy of every valid sample, oldest step first, patches in order:
  /// context [samples][C], fine [samples][P], weights [samples][P]; `step_of_sample` (when
  /// given) receives each sample's step, 0 = oldest (for splits by time).
  void snapshot(std::vector<float>& context, std::vector<float>& fine, std::vector<float>& weights,
                std::vector<int64_t>* step_of_sample = nullptr) const;

  /// Draws `batch` samples uniformly over the valid (step, patch) pairs, with replacement; the
  /// draws depend only on the rng state and the held samples (not on the ring position), so a
  /// reloaded buffer draws the same batch. Throws std::logic_error when the buffer is empty.
  void sample_batch(std::mt19937_64& rng, int64_t batch, float* context, float* fine, float* weights) const;

  /// Writes the buffer to an HDF5 file atomically (tmp + rename), with a checksum. A buffer that
  /// holds patches first_patch..first_patch+n-1 of patches_total (one trainer rank's part) says
  /// so in the file, so that a run with another number of trainer ranks can re-shard it.
  void save_h5(const std::string& path, int64_t first_patch = 0, int64_t patches_total = -1) const;

  /// Patches first..first+count-1 from the parts of a snapshot written by any number of trainer
  /// ranks (each part saved with its patch range): each part's overlap is taken, the parts must
  /// agree on the steps and cover the range. Re-buffers into `capacity_steps`, keeping the newest
  /// steps. Throws IoError naming the file and the mismatch; GridError when a part was written
  /// for a grid of another number of patches than `patches_total` (-1: not checked).
  static RollingBuffer load_h5_range(const std::vector<std::string>& parts, int capacity_steps, int64_t first,
                                     int64_t count, int C, int P, int64_t patches_total = -1);
  /// Reads a buffer saved by save_h5 with its saved shape. Throws IoError naming the file and
  /// the problem (missing, not HDF5, missing dataset, inconsistent shape, checksum mismatch).
  static RollingBuffer load_h5(const std::string& path);
  /// As load_h5(path), but checks patches/C/P against the running configuration (IoError naming
  /// both values) and re-buffers into `capacity_steps`, keeping the newest steps.
  static RollingBuffer load_h5(const std::string& path, int capacity_steps, int64_t patches_per_step, int C, int P);

 private:
  int slot_of(int step) const { return (head_ + step) % capacity_; }

  int capacity_;
  int64_t n_;
  int C_, P_;
  std::vector<float> context_, fine_, weights_;
  std::vector<uint8_t> valid_;
  std::vector<int32_t> valid_list_;    // per slot: indices of its valid patches
  std::vector<int64_t> valid_count_;   // per slot
  std::vector<std::string> datetime_;  // per slot
  int head_ = 0, steps_ = 0;
  int64_t samples_ = 0, rejected_total_ = 0, pushed_total_ = 0;
};

}  // namespace finecast::coupling
