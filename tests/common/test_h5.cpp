// SPDX-License-Identifier: BSD-3-Clause
// The HDF5 layer: round trips of every kind of dataset, the Fletcher-32 checksum on every
// chunk, and failures reported as the caller's error type naming the file.
#include <gtest/gtest.h>
#include <hdf5.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "common/h5.hpp"
#include "tests/coupling/io_test_util.hpp"

namespace {

namespace h5 = finecast::h5;
namespace tio = finecast::testing_io;

bool contains(const std::string& s, const std::string& what) { return s.find(what) != std::string::npos; }

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
    f.write_rows("rows", h5::Type::kFloat32, {3, 2, 4}, [&](int64_t i) { return data.data() + (2 - i) * 8; });
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
  EXPECT_EQ(f.children("/"), (std::vector<std::string>{"dates", "group", "no_dates", "none", "rows"}));
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
        f.write_rows("x", h5::Type::kFloat32, {4, 16}, [&](int64_t i) { return data.data() + i * 16; });
      else
        f.write("x", h5::Type::kFloat32, data.data(), {4, 16});
      f.close();
    }
    std::string bytes = tio::slurp(path);
    const std::string needle(reinterpret_cast<const char*>(data.data() + 3 * 16 + 5), 4 * sizeof(float));
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

// A damaged or foreign file may hold an array where finecast expects one value, or claim a shape
// far larger than itself. Reading an array attribute into one value once wrote past the value
// (a stack/heap overflow); a claimed shape sized the caller's buffer (terabytes). Both are now
// refused with the file's error before anything is read or allocated.
TEST(H5, ArrayAttributesAndImpossibleShapesAreRefused) {
  tio::ScratchDir dir;
  const std::string path = dir.file("damaged.h5");
  {
    const hid_t file = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    ASSERT_GE(file, 0);
    const hsize_t four = 4, three = 3;
    const hid_t four_space = H5Screate_simple(1, &four, nullptr), three_space = H5Screate_simple(1, &three, nullptr);
    const int64_t ints[4] = {1, 2, 3, 4};
    hid_t a = H5Acreate2(file, "ints", H5T_STD_I64LE, four_space, H5P_DEFAULT, H5P_DEFAULT);
    H5Awrite(a, H5T_NATIVE_INT64, ints);
    H5Aclose(a);
    const double doubles[4] = {1, 2, 3, 4};
    a = H5Acreate2(file, "doubles", H5T_IEEE_F64LE, four_space, H5P_DEFAULT, H5P_DEFAULT);
    H5Awrite(a, H5T_NATIVE_DOUBLE, doubles);
    H5Aclose(a);
    const hid_t fixed = H5Tcopy(H5T_C_S1);
    H5Tset_size(fixed, 8);
    const char strings[3][8] = {"finecas", "t-downs", "caler"};
    a = H5Acreate2(file, "strings", fixed, three_space, H5P_DEFAULT, H5P_DEFAULT);
    H5Awrite(a, fixed, strings);
    H5Aclose(a);
    const hid_t vlen = H5Tcopy(H5T_C_S1);
    H5Tset_size(vlen, H5T_VARIABLE);
    const char* vstrings[3] = {"a", "b", "c"};
    a = H5Acreate2(file, "vstrings", vlen, three_space, H5P_DEFAULT, H5P_DEFAULT);
    H5Awrite(a, vlen, vstrings);
    H5Aclose(a);
    // Chunked datasets allocate nothing until written: a header can claim any shape.
    const hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
    const hsize_t chunk[2] = {16, 16};
    H5Pset_chunk(dcpl, 2, chunk);
    const hsize_t huge[2] = {hsize_t(1) << 20, hsize_t(1) << 20}, overflow[2] = {hsize_t(1) << 40, hsize_t(1) << 40};
    const hid_t huge_space = H5Screate_simple(2, huge, nullptr),
                overflow_space = H5Screate_simple(2, overflow, nullptr);
    H5Dclose(H5Dcreate2(file, "huge", H5T_IEEE_F32LE, huge_space, H5P_DEFAULT, dcpl, H5P_DEFAULT));
    H5Dclose(H5Dcreate2(file, "overflow", H5T_IEEE_F32LE, overflow_space, H5P_DEFAULT, dcpl, H5P_DEFAULT));
    for (hid_t id : {four_space, three_space, huge_space, overflow_space}) H5Sclose(id);
    H5Tclose(fixed);
    H5Tclose(vlen);
    H5Pclose(dcpl);
    H5Fclose(file);
  }
  const h5::File f = h5::File::open_read(path);
  auto error = [](const std::function<void()>& fn) {
    try {
      fn();
    } catch (const finecast::IoError& e) {
      return std::string(e.what());
    }
    return std::string("no IoError");
  };
  EXPECT_TRUE(contains(error([&] { f.attr_int("/", "ints"); }), "attribute /@ints holds 4 values, expected one"));
  EXPECT_TRUE(contains(error([&] { f.attr_double("/", "doubles"); }), "holds 4 values, expected one"));
  EXPECT_TRUE(contains(error([&] { f.attr_string("/", "strings"); }), "holds 3 values, expected one"));
  EXPECT_TRUE(contains(error([&] { f.attr_string("/", "vstrings"); }), "holds 3 values, expected one"));
  const std::string huge = error([&] { f.info("huge"); });
  EXPECT_TRUE(contains(huge, "dataset huge claims 4398046511104 bytes, more than the whole file")) << huge;
  EXPECT_TRUE(contains(huge, path)) << huge;
  const std::string overflow = error([&] { f.info("overflow"); });
  EXPECT_TRUE(contains(overflow, "dataset overflow claims an impossible shape")) << overflow;
}

// A full disk on a real (tmpfs) file system, where the write() shim of the plugin tests never
// got: HDF5 1.10 cannot close a file whose flush failed (its ID stays open on freed memory, and
// HDF5's clean-up at exit then crashes the process). A file that does not fit is discarded
// instead, whether the data fails to go in or only the metadata of the close would not fit:
// the error names the file, and no HDF5 ID of it stays open. Needs root with mount permission.
TEST(H5, AFileThatDoesNotFitOnAFullDiskIsDiscardedWithNothingLeftOpen) {
  tio::ScratchDir dir;
  const std::string mnt = dir.file("small");
  std::system(("mkdir -p '" + mnt + "'").c_str());
  if (std::system(("mount -t tmpfs -o size=256k finecast_test '" + mnt + "' 2>/dev/null").c_str()) != 0)
    GTEST_SKIP() << "cannot mount a small tmpfs here (needs root with mount permission)";
  struct Unmount {
    std::string path;
    ~Unmount() { std::system(("umount -l '" + path + "'").c_str()); }
  } unmount{mnt};
  const std::vector<float> big = rows_of(1, 100000);    // 400 kB: more than the file system holds
  const std::vector<float> almost = rows_of(1, 50000);  // 200 kB: fits, with too little left for the close
  struct Case {
    const char* name;
    std::function<void(h5::File&)> write;
    const char* message;
  };
  const Case cases[] = {
      {"data", [&](h5::File& f) { f.write("x", h5::Type::kFloat32, big.data(), {100000}); }, "cannot write dataset x"},
      {"rows",
       [&](h5::File& f) {
         f.write_rows("x", h5::Type::kFloat32, {8, 12500}, [&](int64_t i) { return big.data() + i * 12500; });
       },
       "cannot write dataset x"},
      {"close", [&](h5::File& f) { f.write("x", h5::Type::kFloat32, almost.data(), {50000}); },
       "the file is discarded"},
  };
  for (const Case& c : cases) {
    const std::string path = mnt + "/" + c.name + ".h5";
    try {
      h5::File f = h5::File::create(path);
      c.write(f);
      f.close();
      ADD_FAILURE() << c.name << ": no error on a full disk";
    } catch (const finecast::IoError& e) {
      EXPECT_TRUE(contains(e.what(), c.message)) << c.name << ": " << e.what();
      EXPECT_TRUE(contains(e.what(), path)) << c.name << ": " << e.what();
    }
    EXPECT_EQ(H5Fget_obj_count(H5F_OBJ_ALL, H5F_OBJ_ALL), 0) << c.name << ": an HDF5 ID is still open";
    std::remove(path.c_str());
  }
  // The file system works again once the files are gone, and a file that fits keeps its data.
  {
    h5::File f = h5::File::create(mnt + "/ok.h5");
    f.write("x", h5::Type::kFloat32, almost.data(), {1000});
    f.close();
  }
  EXPECT_EQ(h5::File::open_read(mnt + "/ok.h5").info("x").shape, (std::vector<int64_t>{1000}));
}
