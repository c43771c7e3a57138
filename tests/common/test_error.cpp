// SPDX-License-Identifier: BSD-3-Clause
// The error family: every code throws its own exception type, and the type reports its code.
#include <gtest/gtest.h>

#include <string>

#include "common/error.hpp"

namespace {

using finecast::ErrorCode;

/// Throws `code` through throw_error and checks that exactly `E` (a finecast::Error) arrives.
template <class E>
void expect_thrown_as(ErrorCode code) {
  try {
    finecast::throw_error(code, "what happened");
    FAIL() << "throw_error returned";
  } catch (const E& e) {
    EXPECT_EQ(e.code(), code);
    EXPECT_STREQ(e.what(), "what happened");
    const finecast::Error& base = e;  // one family: a caller may catch them all at once
    EXPECT_EQ(base.code(), code);
  } catch (const std::exception& e) {
    FAIL() << "code " << static_cast<int>(code) << " threw the wrong type: " << e.what();
  }
}

}  // namespace

TEST(ErrorFamily, EveryCodeThrowsItsOwnType) {
  expect_thrown_as<finecast::ConfigError>(ErrorCode::kConfig);
  expect_thrown_as<finecast::IoError>(ErrorCode::kIo);
  expect_thrown_as<finecast::GridError>(ErrorCode::kGrid);
  expect_thrown_as<finecast::CheckpointError>(ErrorCode::kCheckpoint);
  expect_thrown_as<finecast::MpiError>(ErrorCode::kMpi);
  expect_thrown_as<finecast::InternalError>(ErrorCode::kInternal);
  expect_thrown_as<finecast::Error>(ErrorCode::kError);
  // The types are distinct: an IoError is not a CheckpointError.
  EXPECT_THROW(
      {
        try {
          finecast::throw_error(ErrorCode::kIo, "x");
        } catch (const finecast::CheckpointError&) {
          FAIL() << "an IoError was caught as a CheckpointError";
        }
      },
      finecast::IoError);
}
