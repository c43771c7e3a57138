// SPDX-License-Identifier: BSD-3-Clause
// The checkpoint directory's file names: written by one function, read back by another, and the
// temporary files of interrupted writes taken for none of them.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <utility>

#include "common/checkpoint_files.hpp"
#include "tests/coupling/io_test_util.hpp"

namespace cf = finecast::checkpoint_files;
namespace tio = finecast::testing_io;

namespace {
std::string base(const std::string& path) { return path.substr(path.rfind('/') + 1); }
}  // namespace

TEST(CheckpointFiles, EveryNameWrittenIsReadBackWithItsStep) {
  EXPECT_EQ(cf::checkpoint_path("ckpts", 60), "ckpts/ckpt_00000060.h5");
  EXPECT_EQ(cf::best_path("ckpts"), "ckpts/ckpt_best.h5");
  EXPECT_EQ(cf::buffer_path("ckpts", 60), "ckpts/buffer_00000060.h5");
  EXPECT_EQ(cf::buffer_path("ckpts", 60, 3), "ckpts/buffer_00000060.p3.h5");
  for (const long long step : {0LL, 7LL, 123456789012LL}) {
    EXPECT_EQ(cf::checkpoint_step(base(cf::checkpoint_path("d", step))), step);
    EXPECT_EQ(cf::buffer_step(base(cf::buffer_path("d", step))), step);
    EXPECT_EQ(cf::buffer_step(base(cf::buffer_path("d", step, 12))), step);
  }
  // Not checkpoints: the best state, buffers, temporary files (common/atomic_file: "<path>.tmp"),
  // other names.
  for (const char* name : {"ckpt_best.h5", "ckpt_.h5", "ckpt_00000060.h5.tmp", "ckpt_0000006x.h5", "buffer_00000060.h5",
                           "xckpt_00000060.h5", "ckpt_00000060.nc"})
    EXPECT_FALSE(cf::checkpoint_step(name)) << name;
  for (const char* name : {"buffer.h5", "buffer_.h5", "buffer_00000060.h5.tmp", "buffer_00000060.p.h5",
                           "buffer_00000060.px.h5", "ckpt_00000060.h5"})
    EXPECT_FALSE(cf::buffer_step(name)) << name;
}

TEST(CheckpointFiles, ADirectoryListsItsCheckpointsNewestStepFirst) {
  tio::ScratchDir dir;
  const std::string d = dir.file("ckpts");
  EXPECT_TRUE(cf::checkpoints_newest_first(d).empty()) << "no directory, no checkpoints";
  std::filesystem::create_directories(d);
  for (const std::string& path : {cf::checkpoint_path(d, 120), cf::checkpoint_path(d, 60), cf::checkpoint_path(d, 1200),
                                  cf::best_path(d), cf::buffer_path(d, 120), cf::checkpoint_path(d, 180) + ".tmp"})
    std::ofstream(path) << "x";
  const auto found = cf::checkpoints_newest_first(d);
  ASSERT_EQ(found.size(), 3u);
  EXPECT_EQ(found[0], std::make_pair(1200LL, cf::checkpoint_path(d, 1200)));
  EXPECT_EQ(found[1], std::make_pair(120LL, cf::checkpoint_path(d, 120)));
  EXPECT_EQ(found[2], std::make_pair(60LL, cf::checkpoint_path(d, 60)));
}
