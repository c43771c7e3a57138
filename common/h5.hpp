// SPDX-License-Identifier: BSD-3-Clause
// finecast's one HDF5 layer (checkpoints, rolling-buffer snapshots): RAII over the C API,
// named datasets, groups and attributes, and one checksum scheme (Fletcher-32 on every chunk).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "common/error.hpp"
#include "common/schema.hpp"

namespace finecast::h5 {

/// Element types finecast stores; each maps to a fixed little-endian HDF5 type.
enum class Type { kFloat32, kFloat64, kInt64, kUInt8 };

/// Bytes per element of `t`.
size_t type_size(Type t);
/// "float32", "float64", "int64" or "uint8".
const char* type_name(Type t);

/// Shape and type of a stored dataset.
struct DatasetInfo {
  Type type;
  std::vector<int64_t> shape;
  int64_t numel() const;
};

/// How a File reports failures: which error it raises and what the file is, in words.
struct Reporting {
  ErrorCode code = ErrorCode::kIo;  ///< IoError for data files, CheckpointError for checkpoints
  std::string subject;              ///< put before the path, e.g. "rolling buffer snapshot"
};

/// One open HDF5 file. Every failure raises the Reporting's error, naming the file, the object
/// and HDF5's own innermost message; HDF5's automatic error printing is silenced during calls.
///
/// Integrity: files are written with v1.8+ object headers (metadata checksums), and every
/// non-empty dataset is chunked with the Fletcher-32 filter, which HDF5 verifies on each read:
/// a flipped byte anywhere in the data makes read() fail with "checksum" in the message.
class File {
 public:
  /// Creates (truncating) a file.
  static File create(const std::string& path, Reporting reporting = {});
  /// Opens an existing file read-only; says so when it does not exist or is not HDF5.
  static File open_read(const std::string& path, Reporting reporting = {});
  File(File&&) noexcept;
  File& operator=(File&&) noexcept;
  File(const File&) = delete;
  File& operator=(const File&) = delete;
  ~File();

  const std::string& path() const { return path_; }
  /// Flushes everything to the OS (used before an atomic rename); on a full disk the file is
  /// discarded (see close()) and the error raised.
  void flush();
  /// Closes the file, reporting errors. A file being written first reserves the space its
  /// remaining metadata needs (fallocate); when the disk cannot give it, or an earlier write
  /// failed, the file is discarded instead: HDF5 1.10 cannot close a file whose flush failed (the
  /// ID stays open on freed memory and HDF5's clean-up at exit crashes), so it never gets to flush
  /// on a full disk. A discarded file's content is not kept; the caller removes it (AtomicFile).
  void close();
  /// Closes a file being written without keeping what it holds (any HDF5 writes still pending go
  /// to memory, never to the disk), so that no HDF5 ID is left open whatever state the disk is in.
  /// The destructor does this for a file being written that close() did not close.
  void discard() noexcept;

  /// Creates group `name` ("a/b/c", intermediates included).
  void create_group(const std::string& name);
  /// True when a link `name` exists (every intermediate group included).
  bool exists(const std::string& name) const;
  /// True when `name` is a dataset (false for groups).
  bool is_dataset(const std::string& name) const;
  /// Names of the direct children of group `name`, sorted.
  std::vector<std::string> children(const std::string& group) const;

  /// Writes dataset `name` (shape {} = scalar) from `data`, as one checksummed chunk.
  void write(const std::string& name, Type type, const void* data, const std::vector<int64_t>& shape);
  /// Writes dataset `name` of `shape` one row (index along the first dimension) at a time,
  /// `row(i)` pointing at row i; one checksummed chunk per row. For data that is not contiguous
  /// in memory (a ring buffer) or too large for one chunk.
  void write_rows(const std::string& name, Type type, const std::vector<int64_t>& shape,
                  const std::function<const void*(int64_t)>& row);
  /// Writes a 1-D dataset of fixed-length strings (as long as the longest, NUL padded).
  void write_strings(const std::string& name, const std::vector<std::string>& values);
  /// Type and shape of dataset `name`. In a file opened for reading, a shape whose data would
  /// not fit in the file (finecast writes no compressed data) is refused as damaged, so no
  /// caller sizes a buffer from a corrupt header.
  DatasetInfo info(const std::string& name) const;
  /// Reads dataset `name` into `out`, which must hold exactly `numel` elements of `type`.
  void read(const std::string& name, Type type, void* out, int64_t numel) const;
  /// Reads a 1-D dataset of fixed-length strings written by write_strings.
  std::vector<std::string> read_strings(const std::string& name) const;

  void set_attr(const std::string& object, const std::string& key, int64_t value);
  void set_attr(const std::string& object, const std::string& key, double value);
  void set_attr(const std::string& object, const std::string& key, const std::string& value);
  /// A typed attribute: a scalar int64, float64 or string, or a 1-D array of one of them (strings
  /// fixed-length, as long as the longest; an empty array keeps its element type).
  void set_attr_value(const std::string& object, const std::string& key, const schema::Value& value);
  bool has_attr(const std::string& object, const std::string& key) const;
  std::vector<std::string> attr_names(const std::string& object) const;
  /// Attributes are single values; an array attribute (a damaged or foreign file) is refused.
  int64_t attr_int(const std::string& object, const std::string& key) const;
  double attr_double(const std::string& object, const std::string& key) const;
  std::string attr_string(const std::string& object, const std::string& key) const;
  /// An attribute as set_attr or set_attr_value wrote it, typed by what the file stores: integers
  /// as int64, floats as double, strings as strings; a scalar dataspace as one value, a 1-D one as
  /// an array (of one value too). Other types and shapes are refused.
  schema::Value attr_value(const std::string& object, const std::string& key) const;
  /// Whether the attribute holds a string (rather than a number).
  bool attr_is_string(const std::string& object, const std::string& key) const;

  /// Raises this file's error: "<subject> <path>: <what>".
  [[noreturn]] void fail(const std::string& what) const;

 private:
  File(std::string path, int64_t id, Reporting reporting, int64_t size = -1, bool writable = false)
      : path_(std::move(path)), id_(id), reporting_(std::move(reporting)), size_(size), writable_(writable) {}
  /// Closes the file without raising: discard() for a file being written.
  void release() noexcept;
  /// Reserves the disk space the final flush of a file being written needs; "" or why not.
  std::string reserve_for_flush();
  /// Raises this file's error unless attribute `attribute` (an hid_t) holds exactly one value.
  void check_single_value(int64_t attribute, const std::string& object, const std::string& key) const;
  /// Raises this file's error with HDF5's innermost messages appended.
  [[noreturn]] void fail_hdf5(const std::string& what) const;
  std::string path_;
  int64_t id_ = -1;  // hid_t, kept as int64_t so this header needs no hdf5.h
  Reporting reporting_;
  int64_t size_ = -1;  // bytes of a file opened for reading (bounds what a dataset can hold)
  bool writable_ = false;
  mutable bool broken_ = false;  // a write failed: the file can only be discarded
};

}  // namespace finecast::h5
