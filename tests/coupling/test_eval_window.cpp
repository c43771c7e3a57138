// SPDX-License-Identifier: BSD-3-Clause
// Grid matching and region selection for finecast-eval.
#include <gtest/gtest.h>

#include <string>
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

// Hold-outs of several boxes joined by ';': each box parsed as one, a patch held out when one box
// holds it; a text with an empty or malformed box is not a region (so it is read as FILE:VAR,
// which then fails naming it) and parsing it names the box at fault.
TEST(EvalWindow, SeveralBoxesHoldOutTheUnionOfTheirPatches) {
  EXPECT_TRUE(fe::is_regions_text("0,90,-180,0"));
  EXPECT_TRUE(fe::is_regions_text("0,90,-180,0;-90,0,0,180"));
  for (const char* bad :
       {"", ";", "0,90,-180,0;", ";0,90,-180,0", "0,90,-180,0;;1,2,3,4", "0,90,-180,0;1,2,3", "mask.nc:held"})
    EXPECT_FALSE(fe::is_regions_text(bad)) << bad;
  const std::vector<fe::Region> boxes = fe::parse_regions("0,90,-180,0;-90,0,0,180", "--hold-out");
  ASSERT_EQ(boxes.size(), 2u);
  EXPECT_EQ(boxes[1].lat0, -90);
  EXPECT_EQ(boxes[1].lon1, 180);
  try {
    fe::parse_regions("0,90,-180,0;-90,0,0", "--hold-out");
    ADD_FAILURE() << "a box of 3 numbers was accepted";
  } catch (const finecast::ConfigError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("--hold-out '0,90,-180,0;-90,0,0'"), std::string::npos) << what;
    EXPECT_NE(what.find("'-90,0,0'"), std::string::npos) << what;
  }
  // The union: a patch (here a point per patch) inside either box, once even where both hold it.
  const std::vector<double> lat = {45, -45, 45, -45, 0}, lon = {-90, 90, 90, -90, 0};
  auto inside = [&](const fe::Region& r) {
    std::vector<char> m(lat.size());
    for (std::size_t i = 0; i < lat.size(); ++i) m[i] = r.contains_lat(lat[i]) && r.contains_lon(lon[i]);
    return m;
  };
  EXPECT_EQ(fe::union_of_boxes(boxes, inside), (std::vector<char>{1, 1, 0, 0, 1}));
  EXPECT_EQ(fe::union_of_boxes(fe::parse_regions("0,90,-180,0;0,90,-180,0", "--hold-out"), inside), inside(boxes[0]));
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
