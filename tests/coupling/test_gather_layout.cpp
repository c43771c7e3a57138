// SPDX-License-Identifier: BSD-3-Clause
// The pure half of the gather: owned-cell offsets in 5-D host arrays, pack and unpack.
#include <gtest/gtest.h>

#include <vector>

#include "comin.h"
#include "common/error.hpp"
#include "coupling/mpi/owned_cells.hpp"

namespace finecast::coupling {
namespace {

constexpr int NP = COMIN_DIM_SEMANTICS_NPROMA, BL = COMIN_DIM_SEMANTICS_BLOCK, LV = COMIN_DIM_SEMANTICS_LEVEL,
              UN = COMIN_DIM_SEMANTICS_UNUSED, UB = COMIN_DIM_SEMANTICS_UNBLOCK, CT = COMIN_DIM_SEMANTICS_CONTAINER;

// 10 local cells, nproma 4 (3 blocks, the last partial); cells 2 and 7 are halo.
struct Decomp {
  std::vector<int> decomp = {0, 0, 1, 0, 0, 0, 0, 2, 0, 0, 0, 0};
  std::vector<int> glb = {11, 3, 99, 7, 1, 20, 5, 98, 2, 14, 0, 0};
  int n_local = 10;
};

TEST(GatherLayout, BlockedCellFieldMatchesComInFormula) {
  // comin_api.md: (jc, jk, jb) sits at (jc-1) + nproma*((jk-1) + nlev*(jb-1)).
  const int nproma = 4, nlev = 5, nblks = 3;
  const int shape[5] = {nproma, nlev, nblks, 1, 1};
  const int sem[5] = {NP, LV, BL, UN, UN};
  Decomp d;
  for (int level : {0, 2, 4}) {
    const OwnedCells cells = owned_cells(shape, sem, nproma, d.n_local, d.decomp.data(), d.glb.data(), level);
    std::vector<int64_t> want_off, want_glb;
    for (int j = 0; j < d.n_local; ++j) {
      if (d.decomp[j] != 0) continue;
      const int jc = j % nproma + 1, jb = j / nproma + 1, jk = level + 1;
      want_off.push_back((jc - 1) + nproma * ((jk - 1) + nlev * (jb - 1)));
      want_glb.push_back(d.glb[j] - 1);
    }
    EXPECT_EQ(cells.offsets, want_off) << "level " << level;
    EXPECT_EQ(cells.global_index, want_glb);
    EXPECT_EQ(cells.size(), 8);
  }
}

TEST(GatherLayout, DimensionOrderIsReadFromSemanticsNotAssumed) {
  // (nproma, nblks, container, nlev, unused): the level is the slowest of the three.
  const int nproma = 4, nblks = 3, nlev = 2;
  const int shape[5] = {nproma, nblks, 1, nlev, 1};
  const int sem[5] = {NP, BL, CT, LV, UN};
  Decomp d;
  const OwnedCells cells = owned_cells(shape, sem, nproma, d.n_local, d.decomp.data(), d.glb.data(), 1);
  size_t k = 0;
  for (int j = 0; j < d.n_local; ++j) {
    if (d.decomp[j] != 0) continue;
    EXPECT_EQ(cells.offsets[k++], (j % nproma) + nproma * (j / nproma) + nproma * nblks * 1);
  }
  EXPECT_EQ(k, cells.offsets.size());
}

TEST(GatherLayout, UnblockedCellField) {
  const int shape[5] = {1, 12, 3, 1, 1};
  const int sem[5] = {UN, UB, LV, UN, UN};
  Decomp d;
  const OwnedCells cells = owned_cells(shape, sem, 4, d.n_local, d.decomp.data(), d.glb.data(), 2);
  ASSERT_EQ(cells.size(), 8);
  EXPECT_EQ(cells.offsets[0], 0 + 2 * 12);
  EXPECT_EQ(cells.offsets[2], 3 + 2 * 12);  // owned cells are 0, 1, 3, ...: halo cell 2 is skipped
}

TEST(GatherLayout, BadLayoutsAreRejectedWithTheShape) {
  Decomp d;
  const int shape[5] = {4, 1, 3, 1, 1};
  const int no_nproma[5] = {LV, LV, BL, UN, UN};
  EXPECT_THROW(owned_cells(shape, no_nproma, 4, d.n_local, d.decomp.data(), d.glb.data()), GridError);
  const int sem[5] = {NP, LV, BL, UN, UN};
  try {
    owned_cells(shape, sem, 8, d.n_local, d.decomp.data(), d.glb.data());
    FAIL() << "nproma mismatch accepted";
  } catch (const GridError& e) {
    EXPECT_NE(std::string(e.what()).find("shape (4, 1, 3, 1, 1)"), std::string::npos) << e.what();
  }
  const int short_shape[5] = {4, 1, 2, 1, 1};  // 10 cells need 3 blocks
  EXPECT_THROW(owned_cells(short_shape, sem, 4, d.n_local, d.decomp.data(), d.glb.data()), GridError);
  EXPECT_THROW(owned_cells(shape, sem, 4, d.n_local, d.decomp.data(), d.glb.data(), 1),
               GridError);  // 1 level only
  std::vector<int> bad_glb = d.glb;
  bad_glb[0] = 0;  // glb_index is 1-based
  EXPECT_THROW(owned_cells(shape, sem, 4, d.n_local, d.decomp.data(), bad_glb.data()), GridError);
}

TEST(GatherLayout, PackAndUnpackTouchOnlyOwnedValues) {
  const int nproma = 4, nlev = 2, nblks = 3;
  const int shape[5] = {nproma, nlev, nblks, 1, 1};
  const int sem[5] = {NP, LV, BL, UN, UN};
  Decomp d;
  const OwnedCells cells = owned_cells(shape, sem, nproma, d.n_local, d.decomp.data(), d.glb.data(), 1);
  std::vector<double> field(nproma * nlev * nblks);
  for (size_t i = 0; i < field.size(); ++i) field[i] = 0.5 + static_cast<double>(i);
  std::vector<float> packed(static_cast<size_t>(cells.size()));
  pack(field.data(), cells, packed.data());
  for (int64_t i = 0; i < cells.size(); ++i) EXPECT_EQ(packed[i], static_cast<float>(field[cells.offsets[i]]));

  std::vector<double> back(field.size(), -1.0);
  unpack(packed.data(), cells, back.data());
  std::vector<bool> touched(field.size(), false);
  for (int64_t off : cells.offsets) touched[static_cast<size_t>(off)] = true;
  for (size_t i = 0; i < back.size(); ++i) EXPECT_EQ(back[i], touched[i] ? field[i] : -1.0) << i;

  std::vector<float> ffield(field.begin(), field.end()), fback(field.size(), -1.0f), fpacked(packed.size());
  pack(ffield.data(), cells, fpacked.data());
  EXPECT_EQ(fpacked, packed);
  unpack(fpacked.data(), cells, fback.data());
  for (size_t i = 0; i < fback.size(); ++i) EXPECT_EQ(fback[i], touched[i] ? ffield[i] : -1.0f);
}

// What a 2-D device copy (cudaMemcpy2D, cuMemcpy2D) of cells.region moves: its rows, densely.
std::vector<double> copy_region(const std::vector<double>& field, const ArrayRegion& r) {
  std::vector<double> dense;
  for (int64_t row = 0; row < r.rows; ++row)
    for (int64_t c = 0; c < r.width; ++c) dense.push_back(field.at(static_cast<size_t>(r.first + row * r.pitch + c)));
  return dense;
}

TEST(GatherLayout, TheOwnedCellsRegionHoldsEveryOwnedCellAndLittleElse) {
  struct Case {
    std::vector<int> shape, sem;
    int level;
    int64_t want_elements;  // what the copy moves
  };
  const std::vector<Case> cases = {
      // ICON's (nproma, nlev, nblks): one run of nproma per block, a level of 5.
      {{4, 5, 3, 1, 1}, {NP, LV, BL, UN, UN}, 0, 12},
      {{4, 5, 3, 1, 1}, {NP, LV, BL, UN, UN}, 4, 12},
      // (nproma, nblks, container, nlev): the level's cells are contiguous.
      {{4, 3, 1, 2, 1}, {NP, BL, CT, LV, UN}, 1, 12},
      // unblocked: from the first to the last owned cell.
      {{1, 12, 3, 1, 1}, {UN, UB, LV, UN, UN}, 2, 10},
      // NPROMA not the fastest dimension: the span from the first to the last owned cell.
      {{3, 4, 1, 1, 1}, {BL, NP, UN, UN, UN}, 0, 12 - 2},
  };
  Decomp d;
  for (const Case& c : cases) {
    const OwnedCells cells =
        owned_cells(c.shape.data(), c.sem.data(), 4, d.n_local, d.decomp.data(), d.glb.data(), c.level);
    int64_t total = 1;
    for (int n : c.shape) total *= n;
    std::vector<double> field(static_cast<size_t>(total));
    for (size_t i = 0; i < field.size(); ++i) field[i] = 0.25 + static_cast<double>(i);
    const std::vector<double> dense = copy_region(field, cells.region);
    std::vector<float> direct(static_cast<size_t>(cells.size())), staged(direct.size());
    pack(field.data(), cells, direct.data());
    pack_staged(dense.data(), cells, staged.data());
    EXPECT_EQ(staged, direct) << "shape " << c.shape[0] << "x" << c.shape[1] << "x" << c.shape[2];
    EXPECT_EQ(cells.region.elements(), c.want_elements) << "level " << c.level;
    EXPECT_LE(cells.region.width, cells.region.pitch);
    std::vector<float> fdense(dense.begin(), dense.end()), fstaged(direct.size());
    pack_staged(fdense.data(), cells, fstaged.data());
    EXPECT_EQ(fstaged, direct);
  }
}

}  // namespace
}  // namespace finecast::coupling
