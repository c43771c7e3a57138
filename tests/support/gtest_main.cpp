// SPDX-License-Identifier: BSD-3-Clause
// main() of the test executables that ctest runs a GoogleTest suite at a time
// (finecast_gtest_batches in tests/CMakeLists.txt). As GoogleTest's own main, except that a run
// whose every selected test was skipped (GTEST_SKIP: no GPU, no ComIn sources) and none failed
// exits with 77, which ctest reports as skipped rather than passed.
#include <gtest/gtest.h>

int main(int argc, char** argv) {
  testing::InitGoogleTest(&argc, argv);
  const int failed = RUN_ALL_TESTS();
  const testing::UnitTest& unit = *testing::UnitTest::GetInstance();
  const bool all_skipped = unit.test_to_run_count() > 0 && unit.skipped_test_count() == unit.test_to_run_count();
  return failed == 0 && all_skipped ? 77 : failed;
}
