// SPDX-License-Identifier: BSD-3-Clause
// The trainer ranks' sums (gradients, losses, normalisation statistics) and maxima (the training
// range of the context) over MPI: the
// trainer's Reducer interface on a communicator of their own, called from the training thread.
#pragma once

#include <mpi.h>

#include <cstdint>

#include "trainer/reducer.hpp"

namespace finecast::plugin {

class MpiReducer : public trainer::Reducer {
 public:
  /// `comm` is used by this reducer only (the plugin gives it a duplicate), so the sums of a
  /// background session never match another thread's collectives.
  explicit MpiReducer(MPI_Comm comm);
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  void sum(double* values, int64_t n) override { reduce(values, n, MPI_DOUBLE, sizeof(double), MPI_SUM); }
  void sum(float* values, int64_t n) override { reduce(values, n, MPI_FLOAT, sizeof(float), MPI_SUM); }
  void max(double* values, int64_t n) override { reduce(values, n, MPI_DOUBLE, sizeof(double), MPI_MAX); }

 private:
  void reduce(void* values, int64_t n, MPI_Datatype type, int64_t bytes, MPI_Op op);
  MPI_Comm comm_;
  int rank_ = 0, size_ = 1;
};

}  // namespace finecast::plugin
