// SPDX-License-Identifier: BSD-3-Clause
// Gathers the owned cell values of every rank onto one root rank, reassembled by global index.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <vector>

namespace finecast::coupling {

/// One MPI_Gatherv per step (values only): the global indices are gathered once, in the
/// constructor, and the root reassembles by them, so the result is bitwise identical to the
/// serial field for any decomposition. The root need not own any cell.
class Gatherer {
 public:
  /// Collective over `comm` (which is duplicated). `owned_global` are this rank's 0-based global
  /// indices in the order its values will be passed. Throws (on every rank) when the ranks'
  /// indices together are not each of 0..n_global-1 exactly once.
  Gatherer(MPI_Comm comm, int root, std::vector<int64_t> owned_global, int64_t n_global);
  ~Gatherer();
  Gatherer(const Gatherer&) = delete;
  Gatherer& operator=(const Gatherer&) = delete;

  /// Collective: local[n_owned] -> global_out[n_global] on the root (others may pass nullptr).
  void gather(const float* local, float* global_out) { gather(1, local, global_out); }
  /// Several fields in one collective: local is [n_fields][n_owned], out [n_fields][n_global].
  void gather(int n_fields, const float* local, float* global_out);
  /// Collective inverse: global_in[n_global] on the root (nullptr elsewhere) -> local_out[n_owned].
  void scatter(const float* global_in, float* local_out) { scatter(1, global_in, local_out); }
  /// Several fields: global_in is [n_fields][n_global], local_out [n_fields][n_owned].
  void scatter(int n_fields, const float* global_in, float* local_out);

  bool is_root() const { return rank_ == root_; }
  int rank() const { return rank_; }
  int size() const { return size_; }
  int root() const { return root_; }
  int64_t n_owned() const { return static_cast<int64_t>(owned_.size()); }
  int64_t n_global() const { return n_global_; }
  MPI_Comm comm() const { return comm_; }

 private:
  void prepare_counts(int n_fields);

  MPI_Comm comm_ = MPI_COMM_NULL;
  int root_ = 0, rank_ = 0, size_ = 1;
  int64_t n_global_ = 0;
  std::vector<int64_t> owned_;
  // Root only: per rank its count and displacement (in cells), and the global index of every
  // received value in rank order.
  std::vector<int> counts_, displs_;
  std::vector<int64_t> recv_global_;
  // Per-call scratch, sized once per field count so steady-state steps do not allocate.
  std::vector<float> recv_;
  std::vector<int> field_counts_, field_displs_;
  int prepared_fields_ = 0;
};

}  // namespace finecast::coupling
