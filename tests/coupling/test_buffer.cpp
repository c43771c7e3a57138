// SPDX-License-Identifier: BSD-3-Clause
// Rolling buffer: FIFO eviction, validity, unbiased sampling, HDF5 snapshot round trip and errors.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <map>
#include <random>

#include "coupling/buffer/rolling_buffer.hpp"
#include "common/error.hpp"
#include "tests/coupling/io_test_util.hpp"

namespace finecast::coupling {
namespace {

using testing_io::ScratchDir;

constexpr int C = 3, P = 4;

// Step s, patch i: context values 1000 s + 10 i + c, fine values -(1000 s + 10 i + p).
void make_step(int s, int64_t n, std::vector<float>& ctx, std::vector<float>& fine) {
  ctx.resize(n * C);
  fine.resize(n * P);
  for (int64_t i = 0; i < n; ++i) {
    for (int c = 0; c < C; ++c) ctx[i * C + c] = static_cast<float>(1000 * s + 10 * i + c);
    for (int p = 0; p < P; ++p) fine[i * P + p] = -static_cast<float>(1000 * s + 10 * i + p);
  }
}

RollingBuffer filled(int capacity, int64_t n, int first, int last, const std::vector<uint8_t>* valid = nullptr) {
  RollingBuffer buf(capacity, n, C, P);
  std::vector<float> ctx, fine;
  for (int s = first; s <= last; ++s) {
    make_step(s, n, ctx, fine);
    buf.push("2021-01-01T" + std::to_string(10 + s) + ":00:00", ctx.data(), fine.data(),
             valid ? valid->data() : nullptr);
  }
  return buf;
}

TEST(RollingBuffer, EvictsOldestStepFirst) {
  const RollingBuffer buf = filled(3, 2, 0, 4);
  EXPECT_EQ(buf.steps(), 3);
  EXPECT_EQ(buf.samples(), 6);
  EXPECT_EQ(buf.pushed_total(), 5);
  EXPECT_EQ(buf.datetime(0), "2021-01-01T12:00:00");
  EXPECT_EQ(buf.datetime(2), "2021-01-01T14:00:00");
  std::vector<float> ctx, fine, w;
  buf.snapshot(ctx, fine, w);
  ASSERT_EQ(ctx.size(), 6u * C);
  ASSERT_EQ(fine.size(), 6u * P);
  // Oldest held step (2) first, patches in order.
  const int want_step[6] = {2, 2, 3, 3, 4, 4};
  for (int k = 0; k < 6; ++k) {
    EXPECT_EQ(ctx[k * C], 1000.0f * want_step[k] + 10.0f * (k % 2)) << k;
    EXPECT_EQ(fine[k * P + 3], -(1000.0f * want_step[k] + 10.0f * (k % 2) + 3)) << k;
  }
  for (float v : w) EXPECT_EQ(v, 0.25f);  // uniform 1/P when no weights were given
}

TEST(RollingBuffer, InvalidAndNonFinitePatchesAreExcludedAndCounted) {
  RollingBuffer buf(4, 3, C, P);
  std::vector<float> ctx, fine;
  make_step(0, 3, ctx, fine);
  const uint8_t valid[3] = {1, 0, 1};
  EXPECT_EQ(buf.push("a", ctx.data(), fine.data(), valid), 2);
  make_step(1, 3, ctx, fine);
  fine[2 * P + 1] = std::numeric_limits<float>::quiet_NaN();
  ctx[0] = std::numeric_limits<float>::infinity();
  EXPECT_EQ(buf.push("b", ctx.data(), fine.data(), nullptr), 1);
  EXPECT_EQ(buf.samples(), 3);
  EXPECT_EQ(buf.rejected_total(), 3);
  std::vector<float> c, f, w;
  buf.snapshot(c, f, w);
  ASSERT_EQ(c.size(), 3u * C);
  EXPECT_EQ(c[0], 0.0f);         // step 0 patch 0
  EXPECT_EQ(c[C], 20.0f);        // step 0 patch 2
  EXPECT_EQ(c[2 * C], 1010.0f);  // step 1 patch 1
  for (float v : f) EXPECT_TRUE(std::isfinite(v));
}

TEST(RollingBuffer, BytesFollowTheShape) {
  const RollingBuffer buf(48, 80, 7, 256);
  const size_t samples = 48u * 80u * (7 + 256) * 4;
  const size_t extra = 48u * 80u * (1 + 4) + 80u * 256u * 4;  // valid flags, valid lists, weights
  EXPECT_EQ(buf.bytes(), samples + extra);
  EXPECT_NE(buf.describe().find("48 steps x 80 patches"), std::string::npos) << buf.describe();
}

TEST(RollingBuffer, WeightsAreStoredPerPatch) {
  std::vector<float> weights(2 * P);
  for (size_t i = 0; i < weights.size(); ++i) weights[i] = 0.1f * static_cast<float>(i + 1);
  RollingBuffer buf(2, 2, C, P, weights);
  std::vector<float> ctx, fine;
  for (int s = 0; s < 3; ++s) {
    make_step(s, 2, ctx, fine);
    buf.push("t", ctx.data(), fine.data());
  }
  std::vector<float> c, f, w;
  buf.snapshot(c, f, w);
  ASSERT_EQ(w.size(), 4u * P);
  for (int k = 0; k < 4; ++k)
    for (int p = 0; p < P; ++p) EXPECT_EQ(w[k * P + p], weights[(k % 2) * P + p]);
  EXPECT_THROW(RollingBuffer(2, 2, C, P, std::vector<float>(3)), std::invalid_argument);
}

TEST(RollingBuffer, SamplingIsUniformOverValidSamples) {
  // Steps with 5, 2 and 5 valid patches: a per-step draw would favour step 1's patches 2.5x.
  RollingBuffer buf(3, 5, C, P);
  std::vector<float> ctx, fine;
  const uint8_t all[5] = {1, 1, 1, 1, 1}, two[5] = {0, 1, 0, 0, 1};
  for (int s = 0; s < 3; ++s) {
    make_step(s, 5, ctx, fine);
    buf.push("t", ctx.data(), fine.data(), s == 1 ? two : all);
  }
  ASSERT_EQ(buf.samples(), 12);
  std::mt19937_64 rng(1234);
  const int64_t draws = 120000;
  std::vector<float> c(draws * C);
  buf.sample_batch(rng, draws, c.data(), nullptr, nullptr);
  std::map<int, int64_t> counts;
  for (int64_t b = 0; b < draws; ++b) counts[static_cast<int>(c[b * C])]++;
  ASSERT_EQ(counts.size(), 12u);  // every valid sample drawn, no invalid one
  EXPECT_EQ(counts.count(1000), 0u);
  double chi2 = 0;
  const double expect = static_cast<double>(draws) / 12.0;
  for (const auto& [key, n] : counts) chi2 += (n - expect) * (n - expect) / expect;
  EXPECT_LT(chi2, 40.0) << "11 degrees of freedom: P(chi2 > 40) < 1e-4";
}

TEST(RollingBuffer, SamplingDependsOnlyOnContentAndSeed) {
  // Same held steps (3..5) at different ring positions draw the same batch.
  const RollingBuffer wrapped = filled(3, 4, 0, 5);
  const RollingBuffer fresh = filled(3, 4, 3, 5);
  std::mt19937_64 a(7), b(7);
  std::vector<float> ca(64 * C), cb(64 * C), fa(64 * P), fb(64 * P), wa(64 * P), wb(64 * P);
  wrapped.sample_batch(a, 64, ca.data(), fa.data(), wa.data());
  fresh.sample_batch(b, 64, cb.data(), fb.data(), wb.data());
  EXPECT_EQ(ca, cb);
  EXPECT_EQ(fa, fb);
  for (int64_t k = 0; k < 64; ++k) EXPECT_EQ(fa[k * P], -ca[k * C]);  // context and fine from the same sample
  EXPECT_THROW(RollingBuffer(2, 2, C, P).sample_batch(a, 1, ca.data(), fa.data(), wa.data()), std::logic_error);
}

TEST(RollingBufferSnapshot, RoundTripPreservesEverything) {
  ScratchDir dir;
  const std::vector<uint8_t> valid = {1, 0, 1, 1};
  const RollingBuffer buf = filled(3, 4, 0, 4, &valid);
  const std::string path = dir.file("buffer.h5");
  buf.save_h5(path);
  EXPECT_FALSE(testing_io::exists(path + ".tmp"));
  const RollingBuffer back = RollingBuffer::load_h5(path);
  EXPECT_EQ(back.capacity(), 3);
  EXPECT_EQ(back.steps(), 3);
  EXPECT_EQ(back.samples(), buf.samples());
  EXPECT_EQ(back.pushed_total(), 5);
  EXPECT_EQ(back.rejected_total(), buf.rejected_total());
  for (int s = 0; s < 3; ++s) EXPECT_EQ(back.datetime(s), buf.datetime(s));
  std::vector<float> c1, f1, w1, c2, f2, w2;
  buf.snapshot(c1, f1, w1);
  back.snapshot(c2, f2, w2);
  EXPECT_EQ(c1, c2);
  EXPECT_EQ(f1, f2);
  EXPECT_EQ(w1, w2);

  // A smaller configured capacity keeps the newest steps.
  const RollingBuffer small = RollingBuffer::load_h5(path, 2, 4, C, P);
  EXPECT_EQ(small.steps(), 2);
  EXPECT_EQ(small.datetime(0), buf.datetime(1));
  // An empty buffer saves and loads too.
  RollingBuffer(5, 4, C, P).save_h5(dir.file("empty.h5"));
  EXPECT_EQ(RollingBuffer::load_h5(dir.file("empty.h5")).steps(), 0);
}

// A buffer held in parts by 3 trainer ranks (patches 0-3, 4-6, 7-9) is re-sharded for 2 ranks
// (0-4, 5-9) and for 1: each range's samples, step by step, equal the whole buffer's.
TEST(RollingBufferSnapshot, PartsOfAnyShardingLoadAnyRange) {
  ScratchDir dir;
  const int64_t n = 10;
  std::vector<uint8_t> valid(n, 1);
  valid[5] = 0;
  const RollingBuffer whole = filled(4, n, 0, 5, &valid);
  const int64_t bounds[] = {0, 4, 7, 10};
  std::vector<std::string> parts;
  for (int k = 0; k < 3; ++k) {
    const int64_t first = bounds[k], count = bounds[k + 1] - bounds[k];
    RollingBuffer part(4, count, C, P);
    std::vector<float> ctx, fine;
    for (int s = 2; s <= 5; ++s) {  // the steps the whole buffer holds
      make_step(s, n, ctx, fine);
      part.push(whole.datetime(s - 2), ctx.data() + first * C, fine.data() + first * P, valid.data() + first);
    }
    parts.push_back(dir.file("buffer.p" + std::to_string(k) + ".h5"));
    part.save_h5(parts.back(), first, n);
  }
  std::vector<float> wc, wf, ww;
  whole.snapshot(wc, wf, ww);
  for (const auto& [first, count] : {std::pair<int64_t, int64_t>{0, 5}, {5, 5}, {0, 10}, {3, 2}}) {
    SCOPED_TRACE("patches " + std::to_string(first) + "+" + std::to_string(count));
    const RollingBuffer b = RollingBuffer::load_h5_range(parts, 4, first, count, C, P);
    ASSERT_EQ(b.steps(), whole.steps());
    std::vector<float> c, f, w;
    b.snapshot(c, f, w);
    // The whole buffer's samples of this range, in the same order (step-major, valid only).
    std::vector<float> ec, ef;
    size_t k = 0;
    for (int s = 0; s < whole.steps(); ++s)
      for (int64_t i = 0; i < n; ++i) {
        if (!valid[i]) continue;
        if (i >= first && i < first + count) {
          ec.insert(ec.end(), wc.begin() + k * C, wc.begin() + (k + 1) * C);
          ef.insert(ef.end(), wf.begin() + k * P, wf.begin() + (k + 1) * P);
        }
        ++k;
      }
    EXPECT_EQ(c, ec);
    EXPECT_EQ(f, ef);
  }
  // A missing part is named.
  const std::vector<std::string> two(parts.begin(), parts.begin() + 2);
  try {
    RollingBuffer::load_h5_range(two, 4, 0, 10, C, P);
    ADD_FAILURE() << "an incomplete snapshot must be refused";
  } catch (const IoError& e) {
    EXPECT_NE(std::string(e.what()).find("patch 7 is in none of the parts"), std::string::npos) << e.what();
  }
  // The parts of another grid (of 10 patches, read for a grid of 6, whose range they do cover)
  // are refused as such, not cut to the range.
  EXPECT_NO_THROW(RollingBuffer::load_h5_range(parts, 4, 0, 6, C, P, 10));
  try {
    RollingBuffer::load_h5_range(parts, 4, 0, 6, C, P, 6);
    ADD_FAILURE() << "a snapshot of another grid must be refused";
  } catch (const GridError& e) {
    EXPECT_NE(std::string(e.what()).find(parts[0] + ": written on a grid of 10 patches, this run's grid has 6"),
              std::string::npos)
        << e.what();
  }
}

std::string load_error(const std::string& path, int cap = -1, int64_t n = -1, int c = -1, int p = -1) {
  try {
    RollingBuffer::load_h5(path, cap, n, c, p);
  } catch (const IoError& e) {
    return e.what();
  }
  return "no error";
}

TEST(RollingBufferSnapshot, BadFilesGiveClearErrors) {
  ScratchDir dir;
  const std::string path = dir.file("buffer.h5");
  filled(3, 40, 0, 2).save_h5(path);

  std::string e = load_error(dir.file("missing.h5"));
  EXPECT_NE(e.find("missing.h5"), std::string::npos) << e;
  EXPECT_NE(e.find("does not exist"), std::string::npos) << e;

  e = load_error(path, 3, 40, C + 1, P);
  EXPECT_NE(e.find("context size C = 3 but this run uses 4"), std::string::npos) << e;
  e = load_error(path, 3, 41, C, P);
  EXPECT_NE(e.find("patches per step = 40"), std::string::npos) << e;

  const std::string bytes = testing_io::slurp(path);
  testing_io::spit(dir.file("truncated.h5"), bytes.substr(0, bytes.size() / 2));
  e = load_error(dir.file("truncated.h5"));
  EXPECT_NE(e.find("truncated.h5"), std::string::npos) << e;

  testing_io::spit(dir.file("text.h5"), "not an HDF5 file\n");
  e = load_error(dir.file("text.h5"));
  EXPECT_NE(e.find("not an HDF5 file"), std::string::npos) << e;

  // Flip one byte of the sample data (context is written first, just after the metadata): the
  // checksum must catch it.
  std::vector<float> ctx, fine;
  make_step(1, 40, ctx, fine);
  const std::string needle(reinterpret_cast<const char*>(&ctx[5 * C]), sizeof(float) * C);
  const size_t at = bytes.find(needle);
  ASSERT_NE(at, std::string::npos);
  std::string corrupt = bytes;
  corrupt[at + 1] ^= 0x5A;
  testing_io::spit(dir.file("corrupt.h5"), corrupt);
  e = load_error(dir.file("corrupt.h5"));
  EXPECT_NE(e.find("checksum"), std::string::npos) << e;
}

TEST(RollingBufferSnapshot, SaveReplacesAtomically) {
  ScratchDir dir;
  const std::string path = dir.file("buffer.h5");
  filled(3, 4, 0, 1).save_h5(path);
  filled(3, 4, 0, 2).save_h5(path);
  EXPECT_EQ(RollingBuffer::load_h5(path).steps(), 3);
  EXPECT_THROW(filled(3, 4, 0, 1).save_h5(dir.file("no/such/folder/buffer.h5")), IoError);
  EXPECT_EQ(RollingBuffer::load_h5(path).steps(), 3);
}

}  // namespace
}  // namespace finecast::coupling
