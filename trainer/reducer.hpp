// SPDX-License-Identifier: BSD-3-Clause
// Data-parallel training over a group of processes: what the trainer needs from the group, as an
// interface the caller implements (the plugin with MPI on its trainer ranks; the trainer itself
// knows no MPI).
#pragma once

#include <cstdint>

namespace finecast::trainer {

/// Sums (and maxima) across the group, in place, with the same result on every member
/// (MPI_Allreduce). Every member calls each operation in the same order.
class Reducer {
 public:
  virtual ~Reducer() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  virtual void sum(double* values, int64_t n) = 0;
  virtual void sum(float* values, int64_t n) = 0;
  virtual void max(double* values, int64_t n) = 0;
};

}  // namespace finecast::trainer
