// SPDX-License-Identifier: BSD-3-Clause
// A small RAII layer over the HDF5 C API for checkpoints: named datasets, groups, attributes.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace finecast::trainer::h5 {

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

/// One open HDF5 file. Every failure throws CheckpointError naming the file, the object and
/// HDF5's own innermost message; HDF5's automatic error printing is silenced during calls.
class File {
 public:
  /// Creates (truncating) a file; datasets get Fletcher-32 checksums, metadata v2 checksums.
  static File create(const std::string& path);
  /// Opens an existing file read-only.
  static File open_read(const std::string& path);
  File(File&&) noexcept;
  File& operator=(File&&) noexcept;
  File(const File&) = delete;
  File& operator=(const File&) = delete;
  ~File();

  const std::string& path() const { return path_; }
  /// Flushes everything to the OS (used before the atomic rename).
  void flush();
  /// Closes the file, reporting errors (the destructor closes silently).
  void close();

  /// Creates group `name` ("a/b/c", intermediates included).
  void create_group(const std::string& name);
  /// True when a link `name` exists (every intermediate group included).
  bool exists(const std::string& name) const;
  /// True when `name` is a dataset (false for groups).
  bool is_dataset(const std::string& name) const;
  /// Names of the direct children of group `name`, sorted.
  std::vector<std::string> children(const std::string& group) const;

  /// Writes dataset `name` (shape {} = scalar) from `data`.
  void write(const std::string& name, Type type, const void* data, const std::vector<int64_t>& shape);
  /// Type and shape of dataset `name`.
  DatasetInfo info(const std::string& name) const;
  /// Reads dataset `name` into `out`, which must hold exactly `numel` elements of `type`.
  void read(const std::string& name, Type type, void* out, int64_t numel) const;

  void set_attr(const std::string& object, const std::string& key, int64_t value);
  void set_attr(const std::string& object, const std::string& key, double value);
  void set_attr(const std::string& object, const std::string& key, const std::string& value);
  bool has_attr(const std::string& object, const std::string& key) const;
  std::vector<std::string> attr_names(const std::string& object) const;
  int64_t attr_int(const std::string& object, const std::string& key) const;
  double attr_double(const std::string& object, const std::string& key) const;
  std::string attr_string(const std::string& object, const std::string& key) const;

 private:
  File(std::string path, int64_t id) : path_(std::move(path)), id_(id) {}
  std::string path_;
  int64_t id_ = -1;  // hid_t, kept as int64_t so this header needs no hdf5.h
};

}  // namespace finecast::trainer::h5
