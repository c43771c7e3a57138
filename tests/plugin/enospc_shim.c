/* SPDX-License-Identifier: BSD-3-Clause
 * A full disk for the tests, without privileges: preloaded (LD_PRELOAD), it makes write(),
 * pwrite() and writev() fail with ENOSPC for files whose path contains FINECAST_TEST_ENOSPC,
 * once FINECAST_TEST_ENOSPC_AFTER bytes (default 0) have been written to such files, and
 * posix_fallocate() and fallocate() of more than the bytes left fail with ENOSPC (allocate nothing). The
 * writers of finecast see exactly what a full disk gives them. Test tool only. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <unistd.h>

static long long written = 0;

/* The byte limit when fd is one of the chosen files, else -1. */
static long long limit_of(int fd) {
  const char* pattern = getenv("FINECAST_TEST_ENOSPC");
  if (pattern == NULL || *pattern == '\0') return -1;
  char link[64], path[4096];
  snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
  const ssize_t n = readlink(link, path, sizeof path - 1);
  if (n <= 0) return -1;
  path[n] = '\0';
  if (strstr(path, pattern) == NULL) return -1;
  const char* after = getenv("FINECAST_TEST_ENOSPC_AFTER");
  return after != NULL ? atoll(after) : 0;
}

static int full(int fd, size_t count) {
  const long long limit = limit_of(fd);
  if (limit < 0) return 0;
  if (written + (long long)count > limit) {
    errno = ENOSPC;
    return 1;
  }
  written += (long long)count;
  return 0;
}

ssize_t write(int fd, const void* buf, size_t count) {
  static ssize_t (*real)(int, const void*, size_t) = NULL;
  if (real == NULL) real = (ssize_t(*)(int, const void*, size_t))dlsym(RTLD_NEXT, "write");
  return full(fd, count) ? -1 : real(fd, buf, count);
}

ssize_t pwrite(int fd, const void* buf, size_t count, off_t offset) {
  static ssize_t (*real)(int, const void*, size_t, off_t) = NULL;
  if (real == NULL) real = (ssize_t(*)(int, const void*, size_t, off_t))dlsym(RTLD_NEXT, "pwrite");
  return full(fd, count) ? -1 : real(fd, buf, count, offset);
}

ssize_t pwrite64(int fd, const void* buf, size_t count, off_t offset) {
  static ssize_t (*real)(int, const void*, size_t, off_t) = NULL;
  if (real == NULL) real = (ssize_t(*)(int, const void*, size_t, off_t))dlsym(RTLD_NEXT, "pwrite64");
  return full(fd, count) ? -1 : real(fd, buf, count, offset);
}

ssize_t writev(int fd, const struct iovec* iov, int iovcnt) {
  static ssize_t (*real)(int, const struct iovec*, int) = NULL;
  if (real == NULL) real = (ssize_t(*)(int, const struct iovec*, int))dlsym(RTLD_NEXT, "writev");
  size_t count = 0;
  for (int i = 0; i < iovcnt; ++i) count += iov[i].iov_len;
  return full(fd, count) ? -1 : real(fd, iov, iovcnt);
}

/* Room asked for, not written: only checked against what is left. */
static int no_room(int fd, off_t len) {
  const long long limit = limit_of(fd);
  return limit >= 0 && written + (long long)len > limit;
}

int posix_fallocate(int fd, off_t offset, off_t len) {
  static int (*real)(int, off_t, off_t) = NULL;
  if (real == NULL) real = (int (*)(int, off_t, off_t))dlsym(RTLD_NEXT, "posix_fallocate");
  return no_room(fd, len) ? ENOSPC : real(fd, offset, len);
}

int posix_fallocate64(int fd, off_t offset, off_t len) {
  static int (*real)(int, off_t, off_t) = NULL;
  if (real == NULL) real = (int (*)(int, off_t, off_t))dlsym(RTLD_NEXT, "posix_fallocate64");
  return no_room(fd, len) ? ENOSPC : real(fd, offset, len);
}

/* fallocate() (the writers reserve room with FALLOC_FL_KEEP_SIZE): the same check, errno set. */
int fallocate(int fd, int mode, off_t offset, off_t len) {
  static int (*real)(int, int, off_t, off_t) = NULL;
  if (real == NULL) real = (int (*)(int, int, off_t, off_t))dlsym(RTLD_NEXT, "fallocate");
  if (no_room(fd, len)) {
    errno = ENOSPC;
    return -1;
  }
  return real(fd, mode, offset, len);
}

int fallocate64(int fd, int mode, off_t offset, off_t len) {
  static int (*real)(int, int, off_t, off_t) = NULL;
  if (real == NULL) real = (int (*)(int, int, off_t, off_t))dlsym(RTLD_NEXT, "fallocate64");
  if (no_room(fd, len)) {
    errno = ENOSPC;
    return -1;
  }
  return real(fd, mode, offset, len);
}
