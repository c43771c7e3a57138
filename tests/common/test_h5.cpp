// SPDX-License-Identifier: BSD-3-Clause
// The HDF5 layer: round trips of every kind of dataset, the Fletcher-32 checksum on every
// chunk, and failures reported as the caller's error type naming the file.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "common/h5.hpp"
#include "tests/coupling/io_test_util.hpp"

namespace {

namespace h5 = finecast::h5;
namespace tio = finecast::testing_io;

bool contains(const std::string& s, const std::string& what) {
  return s.find(what) != std::string::npos;
}

/// Rows 0..rows-1 of `cols` floats; row r holds r * 1000 + column + 0.25 (distinct bytes).
std::vector<float> rows_of(int64_t rows, int64_t cols) {
  std::vector<float> v(static_cast<size_t>(rows * cols));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) v[r * cols + c] = static_cast<float>(r * 1000 + c) + 0.25f;
  return v;
}

}  // namespace

TEST(H5, RowsStringsScalarsAndAttributesRoundTrip) {
  tio::ScratchDir dir;
  const std::string path = dir.file("a.h5");
  const std::vector<float> data = rows_of(3, 8);
  {
    h5::File f = h5::File::create(path);
    // Rows handed over out of order in memory (as a ring buffer does): row i is data row 2 - i.
    f.write_rows("rows", h5::Type::kFloat32, {3, 2, 4},
                 [&](int64_t i) { return data.data() + (2 - i) * 8; });
    f.write_rows("none", h5::Type::kUInt8, {0, 5}, [](int64_t) -> const void* { return nullptr; });
    f.write_strings("dates", {"2000-01-01T00:00:00", "", "x"});
    f.write_strings("no_dates", {});
    const double scalar = 2.5;
    f.write("group/scalar", h5::Type::kFloat64, &scalar, {});
    f.set_attr("/", "count", int64_t{-7});
    f.set_attr("group", "name", std::string("finecast"));
    f.close();
  }
  const h5::File f = h5::File::open_read(path);
  const h5::DatasetInfo info = f.info("rows");
  EXPECT_EQ(info.type, h5::Type::kFloat32);
  EXPECT_EQ(info.shape, (std::vector<int64_t>{3, 2, 4}));
  std::vector<float> back(24);
  f.read("rows", h5::Type::kFloat32, back.data(), 24);
  for (int64_t i = 0; i < 3; ++i)
    EXPECT_EQ(0, std::memcmp(back.data() + i * 8, data.data() + (2 - i) * 8, 8 * sizeof(float)));
  EXPECT_EQ(f.info("none").shape, (std::vector<int64_t>{0, 5}));
  EXPECT_EQ(f.read_strings("dates"), (std::vector<std::string>{"2000-01-01T00:00:00", "", "x"}));
  EXPECT_TRUE(f.read_strings("no_dates").empty());
  double scalar = 0;
  f.read("group/scalar", h5::Type::kFloat64, &scalar, 1);
  EXPECT_EQ(scalar, 2.5);
  EXPECT_EQ(f.attr_int("/", "count"), -7);
  EXPECT_EQ(f.attr_string("group", "name"), "finecast");
  EXPECT_EQ(f.children("/"),
            (std::vector<std::string>{"dates", "group", "no_dates", "none", "rows"}));
}

TEST(H5, AFlippedByteInAnyChunkFailsTheReadWithChecksum) {
  // Both layouts: one chunk per dataset (write) and one chunk per row (write_rows, last row).
  for (const bool by_rows : {false, true}) {
    SCOPED_TRACE(by_rows ? "write_rows" : "write");
    tio::ScratchDir dir;
    const std::string path = dir.file("a.h5");
    const std::vector<float> data = rows_of(4, 16);
    {
      h5::File f = h5::File::create(path);
      if (by_rows)
        f.write_rows("x", h5::Type::kFloat32, {4, 16},
                     [&](int64_t i) { return data.data() + i * 16; });
      else
        f.write("x", h5::Type::kFloat32, data.data(), {4, 16});
      f.close();
    }
    std::string bytes = tio::slurp(path);
    const std::string needle(reinterpret_cast<const char*>(data.data() + 3 * 16 + 5),
                             4 * sizeof(float));
    const size_t at = bytes.find(needle);
    ASSERT_NE(at, std::string::npos) << "raw data is stored uncompressed";
    bytes[at + 2] ^= 0x10;
    tio::spit(path, bytes);
    const h5::File f = h5::File::open_read(path, {finecast::ErrorCode::kIo, "test data"});
    std::vector<float> back(64);
    try {
      f.read("x", h5::Type::kFloat32, back.data(), 64);
      FAIL() << "a damaged chunk was read without error";
    } catch (const finecast::IoError& e) {
      EXPECT_TRUE(contains(e.what(), "test data " + path + ": cannot read dataset x")) << e.what();
      EXPECT_TRUE(contains(e.what(), "checksum")) << e.what();
    }
  }
}

TEST(H5, FailuresThrowTheCallersErrorTypeNamingTheFile) {
  tio::ScratchDir dir;
  const h5::Reporting as_checkpoint{finecast::ErrorCode::kCheckpoint, ""};
  try {
    h5::File::open_read(dir.file("absent.h5"), as_checkpoint);
    FAIL() << "expected CheckpointError";
  } catch (const finecast::CheckpointError& e) {
    EXPECT_TRUE(contains(e.what(), dir.file("absent.h5") + ": does not exist")) << e.what();
  }
  tio::spit(dir.file("text.h5"), "plain text\n");
  EXPECT_THROW(h5::File::open_read(dir.file("text.h5")), finecast::IoError);
  {
    h5::File f = h5::File::create(dir.file("a.h5"), as_checkpoint);
    const int64_t v = 1;
    f.write("v", h5::Type::kInt64, &v, {1});
    f.close();
  }
  const h5::File f = h5::File::open_read(dir.file("a.h5"), as_checkpoint);
  EXPECT_THROW(f.info("missing"), finecast::CheckpointError);
  EXPECT_THROW(f.attr_int("/", "missing"), finecast::CheckpointError);
  int64_t two[2];
  try {
    f.read("v", h5::Type::kInt64, two, 2);
    FAIL() << "expected CheckpointError";
  } catch (const finecast::CheckpointError& e) {
    EXPECT_TRUE(contains(e.what(), "dataset v has 1 elements, expected 2")) << e.what();
  }
}
