// SPDX-License-Identifier: BSD-3-Clause
// The placement report of the lead trainer (plugin/comin_plugin/placement.cpp): which device each
// trainer uses, which host ranks share its node and GPU, and the warning when a trainer shares a
// GPU with host ranks. A pure function, so the GPU cases are tested without GPUs.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "plugin/comin_plugin/placement.hpp"

namespace fp = finecast::plugin;

namespace {

fp::RankPlacement host(const std::string& node, const std::string& visible = "*") {
  return {node, visible, "", -1, false};
}

fp::RankPlacement trainer(const std::string& node, const std::string& device, int index, bool external = false,
                          const std::string& visible = "*") {
  return {node, visible, device, index, external};
}

}  // namespace

// On the CPU: one line naming the device and the host ranks of its node; no warning.
TEST(Placement, ACpuTrainerIsLoggedWithTheHostRanksOfItsNode) {
  const auto r = fp::placement_report({trainer("n1", "cpu", 0), host("n1"), host("n1"), host("n2")}, 0.5);
  ASSERT_EQ(r.info.size(), 1u);
  EXPECT_EQ(r.info[0],
            "Placement: trainer 0 (rank 0, a host rank) on node n1: device cpu; host rank(s) on its node: 0-2");
  EXPECT_TRUE(r.warnings.empty());
}

// A GPU ICON runs one rank per GPU: a trainer on host rank 0's GPU, with host ranks of its node
// that see the same GPUs, is warned about, with the fix and its memory cap.
TEST(Placement, ATrainerSharingAGpuWithHostRanksIsAWarningWithTheFix) {
  const std::string gpu = "GPU-8f6b1c2e-0000-1111-2222-333344445555";
  const auto r = fp::placement_report({trainer("g1", gpu, 0), host("g1"), host("g1"), host("g2")}, 0.5);
  ASSERT_EQ(r.info.size(), 1u);
  EXPECT_NE(r.info[0].find("device " + gpu + " (CUDA_VISIBLE_DEVICES *), at most 50% of its memory"), std::string::npos)
      << r.info[0];
  EXPECT_NE(r.info[0].find("seeing the same GPUs: 0-2"), std::string::npos) << r.info[0];
  ASSERT_EQ(r.warnings.size(), 1u);
  EXPECT_NE(r.warnings[0].find("trainer 0 on GPU " + gpu + " of node g1 shares it with host rank(s) 0-2"),
            std::string::npos)
      << r.warnings[0];
  EXPECT_NE(r.warnings[0].find("train.placement: external"), std::string::npos) << r.warnings[0];
  EXPECT_NE(r.warnings[0].find("50% of its memory, train.device_memory_fraction"), std::string::npos) << r.warnings[0];
}

// External trainers on GPUs of their own (another CUDA_VISIBLE_DEVICES, or another node): no
// warning; a host rank with its own GPU does not count.
TEST(Placement, TrainersOnGpusOfTheirOwnAreNotWarnedAbout) {
  const auto r = fp::placement_report(
      {host("g1", "0"), host("g1", "1"), trainer("g1", "GPU-a", 0, true, "2"), trainer("g2", "GPU-b", 1, true, "0")},
      1.0);
  ASSERT_EQ(r.info.size(), 2u);
  EXPECT_NE(r.info[0].find("trainer 0 (rank 2, finecast-trainer) on node g1"), std::string::npos) << r.info[0];
  EXPECT_NE(r.info[0].find("host rank(s) on its node: 0-1"), std::string::npos) << r.info[0];
  EXPECT_EQ(r.info[0].find("seeing the same GPUs"), std::string::npos) << r.info[0];
  EXPECT_NE(r.info[1].find("no host rank on its node"), std::string::npos) << r.info[1];
  EXPECT_TRUE(r.warnings.empty());
}
