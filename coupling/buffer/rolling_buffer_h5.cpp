// SPDX-License-Identifier: BSD-3-Clause
// HDF5 snapshot of the rolling buffer, so a restarted run resumes with its samples.
#include <hdf5.h>

#include <cstring>
#include <functional>

#include "coupling/buffer/rolling_buffer.hpp"
#include "coupling/error.hpp"
#include "coupling/io/atomic_file.hpp"

namespace finecast::coupling {
namespace {

constexpr const char* kFormat = "finecast rolling buffer";
constexpr int kFormatVersion = 1;

// HDF5 prints an error stack for every failed call by default; a corrupt snapshot is reported by
// one IoError instead, and the previous printing behaviour is restored for other users of HDF5.
class QuietHdf5 {
 public:
  QuietHdf5() {
    H5Eget_auto2(H5E_DEFAULT, &func_, &data_);
    H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
  }
  ~QuietHdf5() { H5Eset_auto2(H5E_DEFAULT, func_, data_); }

 private:
  H5E_auto2_t func_ = nullptr;
  void* data_ = nullptr;
};

// Closes an HDF5 handle with the right function when it goes out of scope.
class Handle {
 public:
  Handle(hid_t id, herr_t (*close)(hid_t)) : id_(id), close_(close) {}
  ~Handle() {
    if (id_ >= 0) close_(id_);
  }
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;
  hid_t get() const { return id_; }
  bool ok() const { return id_ >= 0; }
  /// Closes now, reporting failure (the destructor cannot).
  void close(const std::string& what) {
    const hid_t id = id_;
    id_ = -1;
    if (id >= 0 && close_(id) < 0) throw IoError(what + ": closing failed (disk full?)");
  }

 private:
  hid_t id_;
  herr_t (*close_)(hid_t);
};

// FNV-1a over the payload: HDF5 contiguous datasets carry no checksum, and a flipped byte must
// not be trained on silently.
struct Fnv1a {
  uint64_t h = 1469598103934665603ull;
  void add(const void* p, size_t n) {
    const auto* b = static_cast<const unsigned char*>(p);
    for (size_t i = 0; i < n; ++i) h = (h ^ b[i]) * 1099511628211ull;
  }
};

void check(herr_t rc, const std::string& path, const std::string& what) {
  if (rc < 0) throw IoError("rolling buffer snapshot " + path + ": " + what + " failed");
}

void write_attr_i64(hid_t loc, const char* name, int64_t value, const std::string& path) {
  Handle space(H5Screate(H5S_SCALAR), H5Sclose);
  Handle attr(H5Acreate2(loc, name, H5T_STD_I64LE, space.get(), H5P_DEFAULT, H5P_DEFAULT),
              H5Aclose);
  if (!attr.ok())
    throw IoError("rolling buffer snapshot " + path + ": cannot create attribute " + name);
  check(H5Awrite(attr.get(), H5T_NATIVE_INT64, &value), path,
        std::string("writing attribute ") + name);
}

void write_attr_u64(hid_t loc, const char* name, uint64_t value, const std::string& path) {
  Handle space(H5Screate(H5S_SCALAR), H5Sclose);
  Handle attr(H5Acreate2(loc, name, H5T_STD_U64LE, space.get(), H5P_DEFAULT, H5P_DEFAULT),
              H5Aclose);
  if (!attr.ok())
    throw IoError("rolling buffer snapshot " + path + ": cannot create attribute " + name);
  check(H5Awrite(attr.get(), H5T_NATIVE_UINT64, &value), path,
        std::string("writing attribute ") + name);
}

void write_attr_str(hid_t loc, const char* name, const std::string& value,
                    const std::string& path) {
  Handle type(H5Tcopy(H5T_C_S1), H5Tclose);
  H5Tset_size(type.get(), value.size() + 1);
  Handle space(H5Screate(H5S_SCALAR), H5Sclose);
  Handle attr(H5Acreate2(loc, name, type.get(), space.get(), H5P_DEFAULT, H5P_DEFAULT), H5Aclose);
  if (!attr.ok())
    throw IoError("rolling buffer snapshot " + path + ": cannot create attribute " + name);
  check(H5Awrite(attr.get(), type.get(), value.c_str()), path,
        std::string("writing attribute ") + name);
}

int64_t read_attr_i64(hid_t loc, const char* name, const std::string& path) {
  Handle attr(H5Aopen(loc, name, H5P_DEFAULT), H5Aclose);
  if (!attr.ok())
    throw IoError("rolling buffer snapshot " + path + ": attribute '" + name + "' is missing");
  int64_t v = 0;
  check(H5Aread(attr.get(), H5T_NATIVE_INT64, &v), path, std::string("reading attribute ") + name);
  return v;
}

uint64_t read_attr_u64(hid_t loc, const char* name, const std::string& path) {
  Handle attr(H5Aopen(loc, name, H5P_DEFAULT), H5Aclose);
  if (!attr.ok())
    throw IoError("rolling buffer snapshot " + path + ": attribute '" + name + "' is missing");
  uint64_t v = 0;
  check(H5Aread(attr.get(), H5T_NATIVE_UINT64, &v), path, std::string("reading attribute ") + name);
  return v;
}

std::string read_attr_str(hid_t loc, const char* name, const std::string& path) {
  Handle attr(H5Aopen(loc, name, H5P_DEFAULT), H5Aclose);
  if (!attr.ok())
    throw IoError("rolling buffer snapshot " + path + ": attribute '" + name + "' is missing");
  Handle type(H5Aget_type(attr.get()), H5Tclose);
  if (H5Tget_class(type.get()) != H5T_STRING || H5Tis_variable_str(type.get()) > 0)
    throw IoError("rolling buffer snapshot " + path + ": attribute '" + name +
                  "' is not a fixed-length string");
  std::string v(H5Tget_size(type.get()), '\0');
  check(H5Aread(attr.get(), type.get(), v.data()), path, std::string("reading attribute ") + name);
  v.resize(std::strlen(v.c_str()));
  return v;
}

// Creates a dataset of the given dims; writes the rows [rows][row_len] produced by `row(i)`.
void write_rows(hid_t file, const char* name, hid_t file_type, hid_t mem_type,
                std::vector<hsize_t> dims, const std::function<const void*(hsize_t)>& row,
                const std::string& path) {
  Handle space(H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr), H5Sclose);
  Handle ds(H5Dcreate2(file, name, file_type, space.get(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT),
            H5Dclose);
  if (!ds.ok())
    throw IoError("rolling buffer snapshot " + path + ": cannot create dataset " + name);
  if (dims[0] == 0) return;
  std::vector<hsize_t> start(dims.size(), 0), count = dims;
  count[0] = 1;
  Handle mem(H5Screate_simple(static_cast<int>(count.size()), count.data(), nullptr), H5Sclose);
  for (hsize_t i = 0; i < dims[0]; ++i) {
    start[0] = i;
    check(H5Sselect_hyperslab(space.get(), H5S_SELECT_SET, start.data(), nullptr, count.data(),
                              nullptr),
          path, std::string("selecting a row of ") + name);
    check(H5Dwrite(ds.get(), mem_type, mem.get(), space.get(), H5P_DEFAULT, row(i)), path,
          std::string("writing dataset ") + name);
  }
}

// Opens a dataset and checks its dims; reads it whole into `out`.
template <typename T>
void read_all(hid_t file, const char* name, hid_t mem_type, const std::vector<hsize_t>& dims,
              std::vector<T>& out, const std::string& path) {
  Handle ds(H5Dopen2(file, name, H5P_DEFAULT), H5Dclose);
  if (!ds.ok())
    throw IoError("rolling buffer snapshot " + path + ": dataset '" + name + "' is missing");
  Handle space(H5Dget_space(ds.get()), H5Sclose);
  const int rank = H5Sget_simple_extent_ndims(space.get());
  std::vector<hsize_t> got(rank > 0 ? static_cast<size_t>(rank) : 0);
  if (rank > 0) H5Sget_simple_extent_dims(space.get(), got.data(), nullptr);
  if (got != dims) {
    std::string want, have;
    for (auto d : dims) want += (want.empty() ? "" : " x ") + std::to_string(d);
    for (auto d : got) have += (have.empty() ? "" : " x ") + std::to_string(d);
    throw IoError("rolling buffer snapshot " + path + ": dataset '" + name + "' has shape (" +
                  have + "), expected (" + want + ") from the file's attributes");
  }
  size_t n = 1;
  for (auto d : dims) n *= d;
  out.resize(n);
  if (n > 0)
    check(H5Dread(ds.get(), mem_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, out.data()), path,
          std::string("reading dataset ") + name + " (file truncated or corrupt?)");
}

}  // namespace

void RollingBuffer::save_h5(const std::string& path) const {
  AtomicFile out(path);
  {
    QuietHdf5 quiet;
    Handle file(H5Fcreate(out.tmp_path().c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT),
                H5Fclose);
    if (!file.ok()) throw IoError("cannot create rolling buffer snapshot " + out.tmp_path());
    const hid_t f = file.get();
    const hsize_t S = static_cast<hsize_t>(steps_), N = static_cast<hsize_t>(n_);
    Fnv1a sum;
    write_rows(
        f, "context", H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, {S, N, static_cast<hsize_t>(C_)},
        [&](hsize_t i) {
          const float* p =
              context_.data() + static_cast<size_t>(slot_of(static_cast<int>(i))) * n_ * C_;
          sum.add(p, sizeof(float) * n_ * C_);
          return static_cast<const void*>(p);
        },
        path);
    write_rows(
        f, "fine", H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, {S, N, static_cast<hsize_t>(P_)},
        [&](hsize_t i) {
          const float* p =
              fine_.data() + static_cast<size_t>(slot_of(static_cast<int>(i))) * n_ * P_;
          sum.add(p, sizeof(float) * n_ * P_);
          return static_cast<const void*>(p);
        },
        path);
    write_rows(
        f, "valid", H5T_STD_U8LE, H5T_NATIVE_UINT8, {S, N},
        [&](hsize_t i) {
          const uint8_t* p = valid_.data() + static_cast<size_t>(slot_of(static_cast<int>(i))) * n_;
          sum.add(p, static_cast<size_t>(n_));
          return static_cast<const void*>(p);
        },
        path);
    write_rows(
        f, "weights", H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, {N, static_cast<hsize_t>(P_)},
        [&](hsize_t i) {
          const float* p = weights_.data() + static_cast<size_t>(i) * P_;
          sum.add(p, sizeof(float) * P_);
          return static_cast<const void*>(p);
        },
        path);
    size_t len = 1;
    for (int i = 0; i < steps_; ++i) len = std::max(len, datetime(i).size() + 1);
    std::vector<char> dt(len * static_cast<size_t>(std::max(steps_, 1)), '\0');
    for (int i = 0; i < steps_; ++i) {
      std::memcpy(dt.data() + i * len, datetime(i).data(), datetime(i).size());
      sum.add(datetime(i).data(), datetime(i).size());
    }
    Handle st(H5Tcopy(H5T_C_S1), H5Tclose);
    H5Tset_size(st.get(), len);
    write_rows(
        f, "datetime", st.get(), st.get(), {S},
        [&](hsize_t i) { return static_cast<const void*>(dt.data() + i * len); }, path);

    write_attr_str(f, "format", kFormat, path);
    write_attr_i64(f, "format_version", kFormatVersion, path);
    write_attr_i64(f, "capacity_steps", capacity_, path);
    write_attr_i64(f, "patches_per_step", n_, path);
    write_attr_i64(f, "context_size", C_, path);
    write_attr_i64(f, "patch_size", P_, path);
    write_attr_i64(f, "steps", steps_, path);
    write_attr_i64(f, "pushed_total", pushed_total_, path);
    write_attr_i64(f, "rejected_total", rejected_total_, path);
    write_attr_u64(f, "checksum_fnv1a", sum.h, path);
    file.close("rolling buffer snapshot " + out.tmp_path());
  }
  out.commit();
}

RollingBuffer RollingBuffer::load_h5(const std::string& path) {
  return load_h5(path, -1, -1, -1, -1);
}

RollingBuffer RollingBuffer::load_h5(const std::string& path, int capacity_steps,
                                     int64_t patches_per_step, int C, int P) {
  QuietHdf5 quiet;
  if (H5Fis_hdf5(path.c_str()) <= 0) {
    FILE* probe = std::fopen(path.c_str(), "rb");
    if (!probe)
      throw IoError("rolling buffer snapshot " + path + " does not exist or cannot be read");
    std::fclose(probe);
    throw IoError("rolling buffer snapshot " + path +
                  " is not an HDF5 file (truncated or corrupt?)");
  }
  Handle file(H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), H5Fclose);
  if (!file.ok())
    throw IoError("cannot open rolling buffer snapshot " + path + " (truncated or corrupt?)");
  const hid_t f = file.get();
  if (read_attr_str(f, "format", path) != kFormat)
    throw IoError("rolling buffer snapshot " + path + ": attribute 'format' is not \"" + kFormat +
                  "\"");
  const int64_t version = read_attr_i64(f, "format_version", path);
  if (version != kFormatVersion)
    throw IoError("rolling buffer snapshot " + path + " has format version " +
                  std::to_string(version) + ", this finecast reads version " +
                  std::to_string(kFormatVersion));
  const int64_t saved_cap = read_attr_i64(f, "capacity_steps", path);
  const int64_t n = read_attr_i64(f, "patches_per_step", path);
  const int64_t c = read_attr_i64(f, "context_size", path);
  const int64_t p = read_attr_i64(f, "patch_size", path);
  const int64_t steps = read_attr_i64(f, "steps", path);
  if (saved_cap < 1 || n < 1 || c < 1 || p < 1 || steps < 0 || steps > saved_cap)
    throw IoError("rolling buffer snapshot " + path + " has inconsistent attributes (capacity " +
                  std::to_string(saved_cap) + ", steps " + std::to_string(steps) + ", patches " +
                  std::to_string(n) + ", C " + std::to_string(c) + ", P " + std::to_string(p) +
                  ")");
  auto expect = [&](const char* what, int64_t want, int64_t got) {
    if (want >= 0 && want != got)
      throw IoError("rolling buffer snapshot " + path + " holds " + what + " = " +
                    std::to_string(got) + " but this run uses " + std::to_string(want) +
                    " (delete the snapshot or restore the configuration)");
  };
  expect("patches per step", patches_per_step, n);
  expect("context size C", C, c);
  expect("patch size P", P, p);

  const hsize_t S = static_cast<hsize_t>(steps), N = static_cast<hsize_t>(n);
  std::vector<float> context, fine, weights;
  std::vector<uint8_t> valid;
  read_all(f, "context", H5T_NATIVE_FLOAT, {S, N, static_cast<hsize_t>(c)}, context, path);
  read_all(f, "fine", H5T_NATIVE_FLOAT, {S, N, static_cast<hsize_t>(p)}, fine, path);
  read_all(f, "valid", H5T_NATIVE_UINT8, {S, N}, valid, path);
  read_all(f, "weights", H5T_NATIVE_FLOAT, {N, static_cast<hsize_t>(p)}, weights, path);

  std::vector<std::string> datetimes;
  {
    Handle ds(H5Dopen2(f, "datetime", H5P_DEFAULT), H5Dclose);
    if (!ds.ok())
      throw IoError("rolling buffer snapshot " + path + ": dataset 'datetime' is missing");
    Handle type(H5Dget_type(ds.get()), H5Tclose);
    if (H5Tget_class(type.get()) != H5T_STRING || H5Tis_variable_str(type.get()) > 0)
      throw IoError("rolling buffer snapshot " + path +
                    ": dataset 'datetime' is not fixed-length strings");
    const size_t len = H5Tget_size(type.get());
    Handle space(H5Dget_space(ds.get()), H5Sclose);
    hsize_t got = 0;
    if (H5Sget_simple_extent_ndims(space.get()) != 1 ||
        (H5Sget_simple_extent_dims(space.get(), &got, nullptr), got != S))
      throw IoError("rolling buffer snapshot " + path + ": dataset 'datetime' does not hold " +
                    std::to_string(S) + " steps");
    std::vector<char> dt(len * std::max<size_t>(S, 1), '\0');
    if (S > 0)
      check(H5Dread(ds.get(), type.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, dt.data()), path,
            "reading dataset datetime");
    for (hsize_t i = 0; i < S; ++i)
      datetimes.emplace_back(dt.data() + i * len, strnlen(dt.data() + i * len, len));
  }

  Fnv1a sum;
  const size_t ctx_step = static_cast<size_t>(n * c), fine_step = static_cast<size_t>(n * p);
  for (hsize_t i = 0; i < S; ++i) sum.add(context.data() + i * ctx_step, sizeof(float) * ctx_step);
  for (hsize_t i = 0; i < S; ++i) sum.add(fine.data() + i * fine_step, sizeof(float) * fine_step);
  sum.add(valid.data(), valid.size());
  sum.add(weights.data(), sizeof(float) * weights.size());
  for (const auto& d : datetimes) sum.add(d.data(), d.size());
  if (sum.h != read_attr_u64(f, "checksum_fnv1a", path))
    throw IoError("rolling buffer snapshot " + path +
                  " is corrupt: its checksum does not match its data");

  const int cap = capacity_steps > 0 ? capacity_steps : static_cast<int>(saved_cap);
  RollingBuffer buf(cap, n, static_cast<int>(c), static_cast<int>(p), std::move(weights));
  // Keep the newest steps when the configured capacity shrank.
  const int64_t first = std::max<int64_t>(0, steps - cap);
  for (int64_t i = first; i < steps; ++i)
    buf.push(datetimes[static_cast<size_t>(i)], context.data() + i * ctx_step,
             fine.data() + i * fine_step, valid.data() + i * n);
  buf.pushed_total_ = read_attr_i64(f, "pushed_total", path);
  buf.rejected_total_ = read_attr_i64(f, "rejected_total", path);
  return buf;
}

}  // namespace finecast::coupling
