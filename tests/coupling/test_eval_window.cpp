// SPDX-License-Identifier: BSD-3-Clause
// Grid matching and region selection for finecast-eval.
#include <gtest/gtest.h>

#include <vector>

#include "common/error.hpp"
#include "eval/window.hpp"

namespace fe = finecast::eval;

TEST(EvalWindow, FindOffsetLocatesACroppedGrid) {
  const std::vector<double> full = {0, 1.5, 3, 4.5, 6, 7.5};
  EXPECT_EQ(fe::find_offset(full, {3, 4.5, 6}), 2);
  EXPECT_EQ(fe::find_offset(full, full), 0);
  EXPECT_EQ(fe::find_offset(full, {3.2, 4.7}), -1);  // shifted by more than the tolerance
  EXPECT_EQ(fe::find_offset(full, {3, 6}), -1);      // another spacing
  EXPECT_EQ(fe::find_offset({0, 1}, {0, 1, 2}), -1);
  // Descending latitudes work the same way.
  EXPECT_EQ(fe::find_offset({80, 70, 60, 50}, {60, 50}), 2);
}

TEST(EvalWindow, GlobalLongitudes) {
  std::vector<double> lon;
  for (int i = 0; i < 192; ++i) lon.push_back(1.875 * i);
  EXPECT_TRUE(fe::is_global_lon(lon));
  lon.pop_back();
  EXPECT_FALSE(fe::is_global_lon(lon));
}

TEST(EvalWindow, RegionLongitudesWrapModulo360) {
  const fe::Region r = fe::parse_region("-10,10,350,20");  // across 0 degrees
  EXPECT_TRUE(r.contains_lon(355));
  EXPECT_TRUE(r.contains_lon(-5));
  EXPECT_TRUE(r.contains_lon(15));
  EXPECT_FALSE(r.contains_lon(25));
  EXPECT_FALSE(r.contains_lat(11));
  EXPECT_TRUE(fe::parse_region("-90,90,-180,180").contains_lon(123));
  EXPECT_FALSE(fe::parse_region("0,1,100,110").contains_lon(-100));
}

TEST(EvalWindow, BadRegionsAreConfigErrors) {
  EXPECT_THROW(fe::parse_region("1,2,3"), finecast::ConfigError);
  EXPECT_THROW(fe::parse_region("1,2,3,x"), finecast::ConfigError);
  EXPECT_THROW(fe::parse_region("20,10,0,5"), finecast::ConfigError);
  EXPECT_THROW(fe::parse_region("-95,10,0,5"), finecast::ConfigError);
}

TEST(EvalWindow, BlocksInsideKeepsOnlyWholeBlocks) {
  std::vector<double> c;
  for (int i = 0; i < 12; ++i) c.push_back(i);
  // Cells 3..8 inside; with k = 3 only block 1 (cells 3..5) and block 2 (6..8) are whole.
  const auto [b0, b1] = fe::blocks_inside(
      c, 3, [](double v) { return v >= 3 && v <= 8; }, "x");
  EXPECT_EQ(b0, 1);
  EXPECT_EQ(b1, 3);
  EXPECT_THROW(fe::blocks_inside(
                   c, 3, [](double v) { return v == 4; }, "x"),
               finecast::ConfigError);
  EXPECT_THROW(fe::blocks_inside(
                   c, 3, [](double v) { return v < 3 || v > 8; }, "x"),
               finecast::ConfigError);  // blocks 0 and 3: not contiguous
}
