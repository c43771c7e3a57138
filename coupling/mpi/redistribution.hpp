// SPDX-License-Identifier: BSD-3-Clause
// Patch-parallel redistribution: every rank's owned fine cells go straight to the trainer rank
// that owns their patch, in one MPI_Alltoallv per step, and the trainers' values come back the
// same way (reverse: the write-back; with the lead as the owner, the samples' way to the output,
// record_gather.hpp). No rank ever holds a whole field.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <vector>

namespace finecast::coupling {

/// The plan is built once, collectively, through a distributed directory (cell g is looked up on
/// rank g * size / n_global), so no rank ever sees the ids of the whole field either: each rank
/// sends its owned ids, each trainer the ids of its slots (its patches' fine cells in canonical
/// order), and each owner learns the trainer and slot of each of its cells.
class Redistribution {
 public:
  /// Collective over `comm` (duplicated). `owned_global`: this rank's global cell ids in the
  /// order its values are passed to forward(). `slot_cells`: on a trainer, the global cell id of
  /// each of its slots; empty on other ranks. Throws (on every rank) when the owned ids are not
  /// each of 0..n_global-1 exactly once, or a slot's cell is in no rank's owned ids or in two
  /// slots.
  Redistribution(MPI_Comm comm, const std::vector<int64_t>& owned_global, const std::vector<int64_t>& slot_cells,
                 int64_t n_global);
  ~Redistribution();
  Redistribution(const Redistribution&) = delete;
  Redistribution& operator=(const Redistribution&) = delete;

  /// Collective: local [n_fields][n_owned] -> slots [n_fields][n_slots] on the trainers (other
  /// ranks pass nullptr). Cells in no slot are not sent.
  void forward(int n_fields, const float* local, float* slots);
  /// Collective inverse of forward: slots [n_fields][n_slots] on the trainers (other ranks pass
  /// nullptr) -> local [n_fields][n_owned]; owned cells in no slot get NaN. After forward, each
  /// owned cell in a slot gets its value back exactly (the same plan, the exchange's roles swapped).
  void reverse(int n_fields, const float* slots, float* local);
  /// reverse() of one field (the write-back of the ensemble mean).
  void reverse(const float* slots, float* local) { reverse(1, slots, local); }

  int64_t n_owned() const { return n_owned_; }
  int64_t n_slots() const { return static_cast<int64_t>(recv_slot_.size()); }
  /// Values this rank sends and receives per forward() of one field (for the scaling benchmark).
  int64_t values_sent() const { return static_cast<int64_t>(send_pos_.size()); }
  int64_t values_received() const { return n_slots(); }
  /// Other ranks this rank sends values to, and receives values from, per exchange (messages of
  /// the forward exchange; the reverse swaps them).
  int messages_sent() const { return peers(send_counts_); }
  int messages_received() const { return peers(recv_counts_); }

 private:
  /// The per-rank counts and displacements of the exchange of n_fields values per cell.
  void scale_counts(int n_fields);
  int peers(const std::vector<int>& counts) const {
    int n = 0;
    for (size_t r = 0; r < counts.size(); ++r) n += counts[r] > 0 && static_cast<int>(r) != rank_;
    return n;
  }
  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0, size_ = 1;
  int64_t n_owned_ = 0;
  std::vector<int64_t> send_pos_;  ///< owned positions in send order (grouped by trainer, slot order)
  std::vector<int> send_counts_, send_displs_;
  std::vector<int64_t> recv_slot_;  ///< the slot of each received value (grouped by source rank)
  std::vector<int> recv_counts_, recv_displs_;
  std::vector<float> send_buf_, recv_buf_;
  std::vector<int> field_send_counts_, field_send_displs_, field_recv_counts_, field_recv_displs_;
};

}  // namespace finecast::coupling
