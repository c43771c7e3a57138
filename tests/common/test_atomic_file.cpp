// SPDX-License-Identifier: BSD-3-Clause
// AtomicFile: a target is replaced whole on commit and left alone otherwise.
#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "common/atomic_file.hpp"
#include "tests/coupling/io_test_util.hpp"

namespace {

namespace tio = finecast::testing_io;

void write_through(finecast::AtomicFile& f, const std::string& text) {
  std::ofstream(f.tmp_path(), std::ios::binary | std::ios::trunc) << text;
}

}  // namespace

TEST(AtomicFile, CommitReplacesTheTargetAndAbandoningLeavesIt) {
  tio::ScratchDir dir;
  const std::string target = dir.file("out.txt");
  {
    finecast::AtomicFile f(target);
    write_through(f, "first");
    EXPECT_FALSE(tio::exists(target)) << "nothing appears before commit()";
    f.commit();
    EXPECT_TRUE(f.committed());
  }
  EXPECT_EQ(tio::slurp(target), "first");
  EXPECT_FALSE(tio::exists(target + ".tmp"));
  {
    finecast::AtomicFile f(target);
    write_through(f, "second, never committed");
  }
  EXPECT_EQ(tio::slurp(target), "first");
  EXPECT_FALSE(tio::exists(target + ".tmp")) << "an abandoned temporary is removed";
  {
    finecast::AtomicFile f(target);
    f.set_remove_on_abandon(false);
    write_through(f, "kept for inspection");
  }
  EXPECT_EQ(tio::slurp(target), "first");
  EXPECT_EQ(tio::slurp(target + ".tmp"), "kept for inspection");
}

TEST(AtomicFile, FailuresThrowTheCallersErrorType) {
  tio::ScratchDir dir;
  EXPECT_THROW(finecast::AtomicFile(dir.file("no/such/folder/x.h5")), finecast::IoError);
  try {
    finecast::AtomicFile f(dir.file("no/such/folder/x.h5"), finecast::ErrorCode::kCheckpoint);
    FAIL() << "expected CheckpointError";
  } catch (const finecast::CheckpointError& e) {
    EXPECT_NE(std::string(e.what()).find("does not exist"), std::string::npos) << e.what();
  }
  // A folder where the target should be makes the rename fail; the temporary goes away.
  tio::ScratchDir blocked;
  const std::string target = blocked.file("target");
  ASSERT_EQ(std::system(("mkdir -p '" + target + "/sub'").c_str()), 0);
  {
    finecast::AtomicFile f(target, finecast::ErrorCode::kCheckpoint);
    write_through(f, "data");
    EXPECT_THROW(f.commit(), finecast::CheckpointError);
  }
  EXPECT_FALSE(tio::exists(target + ".tmp"));
}
