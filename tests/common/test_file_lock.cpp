// SPDX-License-Identifier: BSD-3-Clause
// FileLock: one process at a time, and a holder killed with SIGKILL blocks nobody after it.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>

#include "common/file_lock.hpp"
#include "tests/coupling/io_test_util.hpp"

namespace tio = finecast::testing_io;
using finecast::FileLock;

// A real second process holds the lock: this one is refused and told who holds it. Killed with
// SIGKILL, the holder leaves its lock file behind, and the next taker gets the lock all the same
// (the kernel released it); a holder that lets go removes the file.
TEST(FileLock, AHolderKilledWithSigkillBlocksNobodyAfterIt) {
  tio::ScratchDir dir;
  const std::string path = dir.file("out.nc.lock");
  int ready[2];
  ASSERT_EQ(pipe(ready), 0);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    const FileLock lock = FileLock::try_take(path, "the child");
    const char state = lock.state() == FileLock::State::kHeld ? 'h' : 'n';
    if (write(ready[1], &state, 1) != 1) _exit(1);
    for (;;) pause();  // until killed
  }
  char state = 0;
  ASSERT_EQ(read(ready[0], &state, 1), 1);
  ASSERT_EQ(state, 'h');
  {
    const FileLock second = FileLock::try_take(path, "the parent");
    EXPECT_EQ(second.state(), FileLock::State::kBusy);
    EXPECT_EQ(second.text(), "the child");
  }
  EXPECT_TRUE(tio::exists(path)) << "a refused taker leaves the holder's file alone";
  ASSERT_EQ(kill(child, SIGKILL), 0);
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFSIGNALED(status));
  ASSERT_TRUE(tio::exists(path)) << "the killed holder's lock file stays";
  {
    const FileLock after = FileLock::try_take(path, "the parent");
    EXPECT_EQ(after.state(), FileLock::State::kHeld);
    EXPECT_EQ(tio::slurp(path), "the parent\n");
    const FileLock again = FileLock::try_take(path, "the parent again");
    EXPECT_EQ(again.state(), FileLock::State::kBusy) << "a second lock of the same process is refused too";
  }
  EXPECT_FALSE(tio::exists(path)) << "the holder removes its lock file when it lets go";
  close(ready[0]);
  close(ready[1]);
}
