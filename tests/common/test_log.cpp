// SPDX-License-Identifier: BSD-3-Clause
// The log's default output: every line, newline included, leaves in one write() call, so the
// lines of several ranks sharing a pipe never run into each other.
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <string>

#include "common/log.hpp"

namespace flog = finecast::log;

namespace {

/// What one recv() on a SOCK_SEQPACKET socket returns: exactly the bytes of one write().
std::string next_write(int fd) {
  char buffer[8192];
  const ssize_t n = recv(fd, buffer, sizeof buffer, 0);
  return n > 0 ? std::string(buffer, static_cast<size_t>(n)) : std::string();
}

}  // namespace

// A SOCK_SEQPACKET socket keeps the boundaries of the writes made to it: stderr (unbuffered)
// wrote a warning as two writes, the text and then its newline, and the lines of two ranks ran
// together as "[finecast r0] WARNING: a[finecast r1] WARNING: b". A child process logs into it.
TEST(Log, EveryLineWithItsNewlineIsOneWrite) {
  int fds[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_SEQPACKET, 0, fds), 0);
  std::fflush(nullptr);  // the child starts with nothing of this process's pending output
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    close(fds[0]);
    dup2(fds[1], STDERR_FILENO);
    dup2(fds[1], STDOUT_FILENO);
    flog::configure(3, flog::Level::kInfo, true);
    std::fputs("the host's own text, ", stdout);  // stdio's pending text goes out first
    flog::info(std::string(3000, 'x'));
    flog::warning("a warning\nof two lines");
    std::fflush(nullptr);
    _exit(0);
  }
  close(fds[1]);
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  EXPECT_EQ(next_write(fds[0]), "the host's own text, ");
  EXPECT_EQ(next_write(fds[0]), "[finecast r3] " + std::string(3000, 'x') + "\n");
  EXPECT_EQ(next_write(fds[0]), "[finecast r3] WARNING: a warning\nof two lines\n");
  EXPECT_EQ(next_write(fds[0]), "");
  close(fds[0]);
}
