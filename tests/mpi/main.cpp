// SPDX-License-Identifier: BSD-3-Clause
// GoogleTest main for tests run under mpiexec: every rank runs every test; only rank 0 prints
// the report, and the exit code is non-zero when any rank failed.
#include <gtest/gtest.h>
#include <mpi.h>

#include "common/leak_check.hpp"

int main(int argc, char** argv) {
  {
    const finecast::IgnoreLeaksHere open_mpi_init;
    MPI_Init(&argc, &argv);
  }
  ::testing::InitGoogleTest(&argc, argv);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (rank != 0) {
    auto& listeners = ::testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
  }
  int failed = RUN_ALL_TESTS() != 0 ? 1 : 0;
  int any_failed = 0;
  MPI_Allreduce(&failed, &any_failed, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (rank != 0 && failed) std::fprintf(stderr, "rank %d: some tests failed\n", rank);
  finecast::leak_check_before_mpi_finalize();
  MPI_Finalize();
  return any_failed;
}
