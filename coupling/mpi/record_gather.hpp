// SPDX-License-Identifier: BSD-3-Clause
// The trainers' values of a whole field to one writing rank, a piece at a time: the reverse of a
// redistribution whose cells that rank owns (the output of the plugin's samples).
#pragma once

#include <mpi.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "coupling/mpi/redistribution.hpp"

namespace finecast::coupling {

/// Gathers values on slots (cells of a global field, each in one slot of one rank) to rank 0 of
/// the communicator in pieces of consecutive cells, so that no rank holds a whole field: per
/// piece a Redistribution plan whose cells rank 0 owns, run in reverse. Cell ids travel once, as
/// integers, when the plans are built; a gather moves the values only.
class RecordGather {
 public:
  /// Collective over `comm` (each plan duplicates it). `slot_cells`: the global cell of each of
  /// this rank's slots (empty on a rank without any); `n_cells`: cells of the whole field;
  /// `piece`: cells per piece (> 0). Throws (on every rank) when a cell is in two slots or
  /// outside 0..n_cells-1.
  RecordGather(MPI_Comm comm, const std::vector<int64_t>& slot_cells, int64_t n_cells, int64_t piece);
  ~RecordGather();
  RecordGather(const RecordGather&) = delete;
  RecordGather& operator=(const RecordGather&) = delete;

  /// Fills values [n_fields][slots.size()] of this rank's slots `slots` (indices into its
  /// slot_cells).
  using Pack = std::function<void(const std::vector<int64_t>& slots, float* values)>;
  /// Receives on rank 0 cells first..first+count-1 as values [n_fields][count]; NaN where no
  /// rank has a slot.
  using Put = std::function<void(int64_t first, int64_t count, const float* values)>;
  /// Collective: each piece in cell order, packed on every rank, to `put` on rank 0.
  void gather(int n_fields, const Pack& pack, const Put& put);

  int64_t pieces() const { return static_cast<int64_t>(pieces_.size()); }

 private:
  struct Piece {
    int64_t first = 0, count = 0;
    std::vector<int64_t> slots;  ///< this rank's slots with a cell in the piece, in the plan's order
    std::unique_ptr<Redistribution> plan;
  };
  bool root_ = false;
  std::vector<Piece> pieces_;
  std::vector<float> slot_values_, values_;  ///< one piece's, reused
};

}  // namespace finecast::coupling
