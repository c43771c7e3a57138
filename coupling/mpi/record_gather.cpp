// SPDX-License-Identifier: BSD-3-Clause
#include "coupling/mpi/record_gather.hpp"

#include <algorithm>
#include <numeric>
#include <string>

#include "coupling/error.hpp"

namespace finecast::coupling {

RecordGather::RecordGather(MPI_Comm comm, const std::vector<int64_t>& slot_cells, int64_t n_cells, int64_t piece) {
  if (piece <= 0) throw InternalError("record gather: pieces of " + std::to_string(piece) + " cells");
  int rank = 0;
  CHECK_MPI(MPI_Comm_rank(comm, &rank));
  root_ = rank == 0;
  // This rank's slots by cell: each piece's are a consecutive run.
  std::vector<int64_t> by_cell(slot_cells.size());
  std::iota(by_cell.begin(), by_cell.end(), int64_t{0});
  std::sort(by_cell.begin(), by_cell.end(), [&](int64_t a, int64_t b) {
    return slot_cells[static_cast<size_t>(a)] < slot_cells[static_cast<size_t>(b)];
  });
  // A cell outside 0..n_cells-1 falls into the first or the last piece, whose plan refuses it.
  auto lo = by_cell.begin();
  std::vector<int64_t> owned, cells;
  for (int64_t first = 0; first < n_cells; first += piece) {
    Piece p;
    p.first = first;
    p.count = std::min(piece, n_cells - first);
    const bool last = first + p.count >= n_cells;
    auto hi = last ? by_cell.end() : std::partition_point(lo, by_cell.end(), [&](int64_t slot) {
      return slot_cells[static_cast<size_t>(slot)] < first + p.count;
    });
    p.slots.assign(lo, hi);
    cells.resize(p.slots.size());
    for (size_t i = 0; i < p.slots.size(); ++i) cells[i] = slot_cells[static_cast<size_t>(p.slots[i])] - first;
    owned.resize(root_ ? static_cast<size_t>(p.count) : 0);
    std::iota(owned.begin(), owned.end(), int64_t{0});
    p.plan = std::make_unique<Redistribution>(comm, owned, cells, p.count);
    pieces_.push_back(std::move(p));
    lo = hi;
  }
}

RecordGather::~RecordGather() = default;

void RecordGather::gather(int n_fields, const Pack& pack, const Put& put) {
  for (Piece& p : pieces_) {
    slot_values_.resize(p.slots.size() * static_cast<size_t>(n_fields));
    pack(p.slots, slot_values_.data());
    values_.resize(root_ ? static_cast<size_t>(p.count * n_fields) : 0);
    p.plan->reverse(n_fields, slot_values_.data(), values_.data());
    if (root_) put(p.first, p.count, values_.data());
  }
}

}  // namespace finecast::coupling
