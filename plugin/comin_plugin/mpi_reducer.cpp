// SPDX-License-Identifier: BSD-3-Clause
#include "plugin/comin_plugin/mpi_reducer.hpp"

#include <algorithm>

#include "coupling/error.hpp"

namespace finecast::plugin {

MpiReducer::MpiReducer(MPI_Comm comm) : comm_(comm) {
  CHECK_MPI(MPI_Comm_rank(comm_, &rank_));
  CHECK_MPI(MPI_Comm_size(comm_, &size_));
}

void MpiReducer::reduce(void* values, int64_t n, MPI_Datatype type, int64_t bytes, MPI_Op op) {
  // In pieces that fit MPI's int counts.
  constexpr int64_t kPiece = int64_t{1} << 30;
  for (int64_t at = 0; at < n; at += kPiece) {
    const int count = static_cast<int>(std::min(kPiece, n - at));
    CHECK_MPI(MPI_Allreduce(MPI_IN_PLACE, static_cast<char*>(values) + at * bytes, count, type, op, comm_));
  }
}

}  // namespace finecast::plugin
