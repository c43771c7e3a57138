// SPDX-License-Identifier: BSD-3-Clause
// HDF5 C API wrapper; every failed call raises the file's error with HDF5's own cause.
#include "common/h5.hpp"

#include <fcntl.h>
#include <hdf5.h>
#include <sys/mman.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>

namespace finecast::h5 {

static_assert(sizeof(hid_t) == sizeof(int64_t), "hid_t is expected to be 64-bit (HDF5 >= 1.10)");

/// Turns a failed HDF5 call (negative status or id) into this file's error naming `what`.
#define CHECK_H5(call, what)                 \
  do {                                       \
    if ((call) < 0) this->fail_hdf5((what)); \
  } while (0)

namespace {

/// Silences HDF5's automatic error printing for one call and clears its error stack, so the
/// stack holds only the failure at hand; the previous printing is restored for other users.
class ErrorScope {
 public:
  ErrorScope() {
    H5Eget_auto2(H5E_DEFAULT, &old_func_, &old_data_);
    H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
    H5Eclear2(H5E_DEFAULT);
  }
  ~ErrorScope() { H5Eset_auto2(H5E_DEFAULT, old_func_, old_data_); }
  ErrorScope(const ErrorScope&) = delete;
  ErrorScope& operator=(const ErrorScope&) = delete;

 private:
  H5E_auto2_t old_func_ = nullptr;
  void* old_data_ = nullptr;
};

herr_t collect(unsigned n, const H5E_error2_t* err, void* data) {
  auto* out = static_cast<std::string*>(data);
  // The innermost entries carry the real cause (e.g. "truncated file", "checksum error").
  if (n < 3 && err->desc && *err->desc) {
    if (!out->empty()) *out += "; ";
    *out += err->desc;
  }
  return 0;
}

std::string hdf5_cause() {
  std::string s;
  H5Ewalk2(H5E_DEFAULT, H5E_WALK_UPWARD, collect, &s);
  H5Eclear2(H5E_DEFAULT);
  return s.empty() ? std::string("unknown HDF5 error") : s;
}

std::string describe(const Reporting& r, const std::string& path) {
  return r.subject.empty() ? path : r.subject + " " + path;
}

[[noreturn]] void fail_file(const Reporting& r, const std::string& path, const std::string& what, bool with_cause) {
  throw_error(r.code, describe(r, path) + ": " + what + (with_cause ? " (HDF5: " + hdf5_cause() + ")" : std::string()));
}

/// Closes an HDF5 handle of any kind when it goes out of scope.
struct Handle {
  hid_t id;
  explicit Handle(hid_t i) : id(i) {}
  ~Handle() {
    if (id >= 0) {
      switch (H5Iget_type(id)) {
        case H5I_GROUP:
          H5Gclose(id);
          break;
        case H5I_DATASET:
          H5Dclose(id);
          break;
        case H5I_DATASPACE:
          H5Sclose(id);
          break;
        case H5I_DATATYPE:
          H5Tclose(id);
          break;
        case H5I_ATTR:
          H5Aclose(id);
          break;
        case H5I_GENPROP_LST:
          H5Pclose(id);
          break;
        default:
          break;
      }
    }
  }
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;
  operator hid_t() const { return id; }
  hid_t release() {
    const hid_t i = id;
    id = -1;
    return i;
  }
};

hid_t file_type(Type t) {
  switch (t) {
    case Type::kFloat32:
      return H5T_IEEE_F32LE;
    case Type::kFloat64:
      return H5T_IEEE_F64LE;
    case Type::kInt64:
      return H5T_STD_I64LE;
    case Type::kUInt8:
      return H5T_STD_U8LE;
  }
  return H5T_STD_U8LE;
}

hid_t mem_type(Type t) {
  switch (t) {
    case Type::kFloat32:
      return H5T_NATIVE_FLOAT;
    case Type::kFloat64:
      return H5T_NATIVE_DOUBLE;
    case Type::kInt64:
      return H5T_NATIVE_INT64;
    case Type::kUInt8:
      return H5T_NATIVE_UINT8;
  }
  return H5T_NATIVE_UINT8;
}

std::string obj_name(const std::string& object) { return object.empty() ? "/" : object; }

std::string attr_name(const std::string& object, const std::string& key) { return obj_name(object) + "@" + key; }

/// A fixed-length, NUL-padded UTF-8 string type of `size` bytes (h5dump prints it; h5py
/// returns bytes).
hid_t string_type(size_t size) {
  const hid_t type = H5Tcopy(H5T_C_S1);
  if (type < 0) return type;
  if (H5Tset_size(type, std::max<size_t>(1, size)) < 0 || H5Tset_strpad(type, H5T_STR_NULLPAD) < 0 ||
      H5Tset_cset(type, H5T_CSET_UTF8) < 0) {
    H5Tclose(type);
    return -1;
  }
  return type;
}

}  // namespace

size_t type_size(Type t) {
  switch (t) {
    case Type::kFloat32:
      return 4;
    case Type::kFloat64:
      return 8;
    case Type::kInt64:
      return 8;
    case Type::kUInt8:
      return 1;
  }
  return 1;
}

const char* type_name(Type t) {
  switch (t) {
    case Type::kFloat32:
      return "float32";
    case Type::kFloat64:
      return "float64";
    case Type::kInt64:
      return "int64";
    case Type::kUInt8:
      return "uint8";
  }
  return "?";
}

int64_t DatasetInfo::numel() const {
  int64_t n = 1;
  for (auto d : shape) n *= d;
  return n;
}

File File::create(const std::string& path, Reporting reporting) {
  ErrorScope scope;
  Handle fapl(H5Pcreate(H5P_FILE_ACCESS));
  // v1.8+ object headers carry metadata checksums, so a damaged header is detected on open.
  if (fapl < 0 || H5Pset_libver_bounds(fapl, H5F_LIBVER_V18, H5F_LIBVER_LATEST) < 0)
    fail_file(reporting, path, "cannot set up file access properties", true);
  const hid_t id = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
  if (id < 0) fail_file(reporting, path, "cannot create the file", true);
  return File(path, id, std::move(reporting), -1, true);
}

File File::open_read(const std::string& path, Reporting reporting) {
  ErrorScope scope;
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) fail_file(reporting, path, "does not exist or cannot be read", false);
  const htri_t is_h5 = H5Fis_hdf5(path.c_str());
  if (is_h5 < 0) fail_file(reporting, path, "cannot open the file", true);
  if (is_h5 == 0) fail_file(reporting, path, "not an HDF5 file (no HDF5 signature; truncated or corrupt?)", false);
  const hid_t id = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  if (id < 0) fail_file(reporting, path, "cannot open the HDF5 file (truncated or corrupt)", true);
  return File(path, id, std::move(reporting), static_cast<int64_t>(st.st_size));
}

File::File(File&& o) noexcept
    : path_(std::move(o.path_)),
      id_(o.id_),
      reporting_(std::move(o.reporting_)),
      size_(o.size_),
      writable_(o.writable_),
      broken_(o.broken_) {
  o.id_ = -1;
}

File& File::operator=(File&& o) noexcept {
  if (this != &o) {
    release();
    path_ = std::move(o.path_);
    id_ = o.id_;
    reporting_ = std::move(o.reporting_);
    size_ = o.size_;
    writable_ = o.writable_;
    broken_ = o.broken_;
    o.id_ = -1;
  }
  return *this;
}

File::~File() { release(); }

void File::release() noexcept {
  if (id_ < 0) return;
  ErrorScope scope;
  // A file being written that nobody closed was abandoned (an exception on its way out): a
  // flush could fail on a full disk and leave HDF5 with a half-closed file, so it is discarded.
  if (writable_) {
    discard();
  } else {
    H5Fclose(id_);
    id_ = -1;
  }
}

void File::fail(const std::string& what) const { fail_file(reporting_, path_, what, false); }

void File::fail_hdf5(const std::string& what) const {
  if (writable_) broken_ = true;
  fail_file(reporting_, path_, what, true);
}

std::string File::reserve_for_flush() {
  // What a flush writes: the metadata cache's entries (at most its current size) at addresses
  // up to the end of the allocated space (raw data is written at once: no chunk cache). Every
  // block of the file up to there, holes included, plus a margin, is allocated now without
  // changing the file's size; a full disk or quota says so here, before HDF5 writes anything.
  int* fd = nullptr;
  haddr_t eoa = 0;
  size_t max_size = 0, min_clean = 0, cur_size = 0;
  int entries = 0;
  if (H5Fget_vfd_handle(id_, H5P_DEFAULT, reinterpret_cast<void**>(&fd)) < 0 || fd == nullptr ||
      H5Fget_eoa(id_, &eoa) < 0 || H5Fget_mdc_size(id_, &max_size, &min_clean, &cur_size, &entries) < 0)
    return "";  // (no reservation: the close reports what happens)
  const off_t want = static_cast<off_t>(eoa + cur_size) + (off_t{1} << 16);
  if (fallocate(*fd, FALLOC_FL_KEEP_SIZE, 0, want) == 0) return "";
  // A file system without fallocate (some network ones): the close goes on unprotected.
  if (errno != ENOSPC && errno != EDQUOT) return "";
  return std::strerror(errno);
}

void File::discard() noexcept {
  if (id_ < 0) return;
  ErrorScope scope;
  const hid_t id = id_;
  id_ = -1;
  // HDF5's descriptor is pointed at an anonymous in-memory copy of the file (memfd): whatever
  // the close still writes goes to memory and succeeds, so every ID of the file is released and
  // nothing is left for HDF5's clean-up at exit. The file on disk keeps what it held.
  int* fd = nullptr;
  if (H5Fget_vfd_handle(id, H5P_DEFAULT, reinterpret_cast<void**>(&fd)) >= 0 && fd != nullptr) {
    const int copy = memfd_create("finecast-discarded-hdf5", MFD_CLOEXEC);
    struct stat st {};
    if (copy >= 0 && fstat(*fd, &st) == 0) {
      off_t offset = 0;
      while (offset < st.st_size) {
        const ssize_t n = sendfile(copy, *fd, &offset, static_cast<size_t>(st.st_size - offset));
        if (n <= 0) break;
      }
      if (dup2(copy, *fd) < 0) {
        // (the close below may then fail again; nothing better is possible)
      }
    }
    if (copy >= 0) ::close(copy);
  }
  H5Fclose(id);
}

void File::flush() {
  ErrorScope scope;
  if (writable_) {
    if (broken_) fail("not flushed: an earlier write to the file failed");
    if (const std::string why = reserve_for_flush(); !why.empty()) {
      discard();
      fail("cannot flush (" + why + "); the file is discarded");
    }
  }
  CHECK_H5(H5Fflush(id_, H5F_SCOPE_GLOBAL), "cannot flush");
}

void File::close() {
  if (id_ < 0) return;
  ErrorScope scope;
  if (writable_) {
    if (broken_) {
      discard();
      fail("not closed normally: an earlier write to the file failed; the file is discarded");
    }
    if (const std::string why = reserve_for_flush(); !why.empty()) {
      discard();
      fail("cannot write the file's metadata (" + why + "); the file is discarded");
    }
  }
  const hid_t id = id_;
  id_ = -1;
  // Closing writes the remaining metadata, into the space reserved above.
  if (id >= 0) CHECK_H5(H5Fclose(id), "cannot close (disk full?)");
  // The reservation's blocks past the end of the file are given back.
  struct stat st {};
  if (writable_ && ::stat(path_.c_str(), &st) == 0) {
    if (::truncate(path_.c_str(), st.st_size) != 0) {
      // (only unused space stays allocated)
    }
  }
}

void File::create_group(const std::string& name) {
  ErrorScope scope;
  Handle lcpl(H5Pcreate(H5P_LINK_CREATE));
  H5Pset_create_intermediate_group(lcpl, 1);
  Handle g(H5Gcreate2(id_, name.c_str(), lcpl, H5P_DEFAULT, H5P_DEFAULT));
  CHECK_H5(g, "cannot create group " + name);
}

bool File::exists(const std::string& name) const {
  ErrorScope scope;
  // H5Lexists fails when an intermediate is missing, so walk the path one link at a time.
  std::string prefix;
  size_t start = !name.empty() && name[0] == '/' ? 1 : 0;
  while (start <= name.size()) {
    size_t end = name.find('/', start);
    if (end == std::string::npos) end = name.size();
    prefix = name.substr(0, end);
    if (!prefix.empty() && prefix != "/") {
      const htri_t e = H5Lexists(id_, prefix.c_str(), H5P_DEFAULT);
      if (e <= 0) return false;
    }
    start = end + 1;
  }
  return true;
}

bool File::is_dataset(const std::string& name) const {
  ErrorScope scope;
  H5O_info_t info;
  CHECK_H5(H5Oget_info_by_name(id_, name.c_str(), &info, H5P_DEFAULT), "missing object " + name);
  return info.type == H5O_TYPE_DATASET;
}

std::vector<std::string> File::children(const std::string& group) const {
  ErrorScope scope;
  Handle g(H5Gopen2(id_, obj_name(group).c_str(), H5P_DEFAULT));
  CHECK_H5(g, "missing group " + obj_name(group));
  H5G_info_t info;
  CHECK_H5(H5Gget_info(g, &info), "cannot list group " + obj_name(group));
  std::vector<std::string> out;
  for (hsize_t i = 0; i < info.nlinks; ++i) {
    const ssize_t len = H5Lget_name_by_idx(g, ".", H5_INDEX_NAME, H5_ITER_INC, i, nullptr, 0, H5P_DEFAULT);
    CHECK_H5(len, "cannot list group " + obj_name(group));
    std::string s(static_cast<size_t>(len), '\0');
    H5Lget_name_by_idx(g, ".", H5_INDEX_NAME, H5_ITER_INC, i, s.data(), s.size() + 1, H5P_DEFAULT);
    out.push_back(s);
  }
  std::sort(out.begin(), out.end());
  return out;
}

namespace {

/// Creation properties of a dataset of `dims` stored in chunks of `chunk`: Fletcher-32 on
/// every chunk. Empty datasets (a zero dimension) hold no data and stay contiguous.
hid_t checksummed_layout(const std::vector<hsize_t>& dims, const std::vector<hsize_t>& chunk) {
  const hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
  if (dcpl < 0) return dcpl;
  const bool empty = std::find(dims.begin(), dims.end(), hsize_t(0)) != dims.end();
  if (!dims.empty() && !empty) {
    if (H5Pset_chunk(dcpl, static_cast<int>(chunk.size()), chunk.data()) < 0 || H5Pset_fletcher32(dcpl) < 0) {
      H5Pclose(dcpl);
      return -1;
    }
  }
  return dcpl;
}

/// Access properties of a dataset being written: no chunk cache, so every chunk (always written
/// whole) goes to the file in H5Dwrite and a full disk fails there, not in a later close.
hid_t uncached_access() {
  const hid_t dapl = H5Pcreate(H5P_DATASET_ACCESS);
  if (dapl >= 0 && H5Pset_chunk_cache(dapl, 0, 0, 1.0) < 0) {
    H5Pclose(dapl);
    return -1;
  }
  return dapl;
}

hid_t simple_space(const std::vector<hsize_t>& dims) {
  return dims.empty() ? H5Screate(H5S_SCALAR) : H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr);
}

}  // namespace

void File::write(const std::string& name, Type type, const void* data, const std::vector<int64_t>& shape) {
  ErrorScope scope;
  const std::vector<hsize_t> dims(shape.begin(), shape.end());
  Handle space(simple_space(dims));
  CHECK_H5(space, "cannot create the dataspace of " + name);
  // One chunk per dataset (checkpoint tensors are small) so Fletcher-32 covers every byte.
  Handle dcpl(checksummed_layout(dims, dims));
  CHECK_H5(dcpl, "cannot set the checksum filter of " + name);
  Handle lcpl(H5Pcreate(H5P_LINK_CREATE));
  H5Pset_create_intermediate_group(lcpl, 1);
  Handle dapl(uncached_access());
  CHECK_H5(dapl, "cannot set up the access properties of " + name);
  Handle ds(H5Dcreate2(id_, name.c_str(), file_type(type), space, lcpl, dcpl, dapl));
  CHECK_H5(ds, "cannot create dataset " + name);
  const bool empty = std::find(dims.begin(), dims.end(), hsize_t(0)) != dims.end();
  if (!empty)
    CHECK_H5(H5Dwrite(ds, mem_type(type), H5S_ALL, H5S_ALL, H5P_DEFAULT, data), "cannot write dataset " + name);
  CHECK_H5(H5Dclose(ds.release()), "cannot write dataset " + name);
}

void File::write_rows(const std::string& name, Type type, const std::vector<int64_t>& shape,
                      const std::function<const void*(int64_t)>& row) {
  if (shape.empty()) fail("dataset " + name + ": write_rows needs at least one dimension");
  ErrorScope scope;
  const std::vector<hsize_t> dims(shape.begin(), shape.end());
  std::vector<hsize_t> count = dims;
  count[0] = 1;
  Handle space(simple_space(dims));
  CHECK_H5(space, "cannot create the dataspace of " + name);
  Handle dcpl(checksummed_layout(dims, count));
  CHECK_H5(dcpl, "cannot set the checksum filter of " + name);
  Handle lcpl(H5Pcreate(H5P_LINK_CREATE));
  H5Pset_create_intermediate_group(lcpl, 1);
  Handle dapl(uncached_access());
  CHECK_H5(dapl, "cannot set up the access properties of " + name);
  Handle ds(H5Dcreate2(id_, name.c_str(), file_type(type), space, lcpl, dcpl, dapl));
  CHECK_H5(ds, "cannot create dataset " + name);
  if (std::find(dims.begin(), dims.end(), hsize_t(0)) != dims.end()) return;
  Handle mem(simple_space(count));
  CHECK_H5(mem, "cannot create the row dataspace of " + name);
  std::vector<hsize_t> start(dims.size(), 0);
  for (hsize_t i = 0; i < dims[0]; ++i) {
    start[0] = i;
    CHECK_H5(H5Sselect_hyperslab(space, H5S_SELECT_SET, start.data(), nullptr, count.data(), nullptr),
             "cannot select row " + std::to_string(i) + " of " + name);
    CHECK_H5(H5Dwrite(ds, mem_type(type), mem, space, H5P_DEFAULT, row(static_cast<int64_t>(i))),
             "cannot write dataset " + name);
  }
  CHECK_H5(H5Dclose(ds.release()), "cannot write dataset " + name);
}

void File::write_strings(const std::string& name, const std::vector<std::string>& values) {
  ErrorScope scope;
  size_t len = 1;
  for (const auto& v : values) len = std::max(len, v.size());
  std::vector<char> packed(len * values.size(), '\0');
  for (size_t i = 0; i < values.size(); ++i) std::memcpy(packed.data() + i * len, values[i].data(), values[i].size());
  const std::vector<hsize_t> dims = {values.size()};
  Handle type(string_type(len));
  CHECK_H5(type, "cannot create the string type of " + name);
  Handle space(simple_space(dims));
  CHECK_H5(space, "cannot create the dataspace of " + name);
  Handle dcpl(checksummed_layout(dims, dims));
  CHECK_H5(dcpl, "cannot set the checksum filter of " + name);
  Handle lcpl(H5Pcreate(H5P_LINK_CREATE));
  H5Pset_create_intermediate_group(lcpl, 1);
  Handle dapl(uncached_access());
  CHECK_H5(dapl, "cannot set up the access properties of " + name);
  Handle ds(H5Dcreate2(id_, name.c_str(), type, space, lcpl, dcpl, dapl));
  CHECK_H5(ds, "cannot create dataset " + name);
  if (!values.empty())
    CHECK_H5(H5Dwrite(ds, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, packed.data()), "cannot write dataset " + name);
  CHECK_H5(H5Dclose(ds.release()), "cannot write dataset " + name);
}

DatasetInfo File::info(const std::string& name) const {
  ErrorScope scope;
  Handle ds(H5Dopen2(id_, name.c_str(), H5P_DEFAULT));
  CHECK_H5(ds, "missing dataset " + name);
  Handle space(H5Dget_space(ds));
  const int rank = H5Sget_simple_extent_ndims(space);
  CHECK_H5(rank, "cannot read the shape of " + name);
  std::vector<hsize_t> dims(static_cast<size_t>(rank));
  H5Sget_simple_extent_dims(space, dims.data(), nullptr);
  Handle dtype(H5Dget_type(ds));
  DatasetInfo info{Type::kUInt8, std::vector<int64_t>(dims.begin(), dims.end())};
  const H5T_class_t cls = H5Tget_class(dtype);
  const size_t size = H5Tget_size(dtype);
  if (cls == H5T_FLOAT && size == 4)
    info.type = Type::kFloat32;
  else if (cls == H5T_FLOAT && size == 8)
    info.type = Type::kFloat64;
  else if (cls == H5T_INTEGER && size == 8)
    info.type = Type::kInt64;
  else if (cls == H5T_INTEGER && size == 1)
    info.type = Type::kUInt8;
  else
    fail("dataset " + name + " has an unsupported element type");
  // A damaged header may claim any shape: refuse one whose data cannot be in the file before a
  // caller allocates for it (and before the element count overflows).
  const uint64_t elem = type_size(info.type);
  uint64_t bytes = elem;
  for (const hsize_t d : dims) {
    if (d != 0 && bytes > static_cast<uint64_t>(INT64_MAX) / d)
      fail("dataset " + name + " claims an impossible shape (damaged file?)");
    bytes *= d;
  }
  if (dims.empty() || std::find(dims.begin(), dims.end(), hsize_t(0)) == dims.end())
    if (size_ >= 0 && bytes > static_cast<uint64_t>(size_))
      fail("dataset " + name + " claims " + std::to_string(bytes) + " bytes, more than the whole file (" +
           std::to_string(size_) + " bytes): damaged");
  return info;
}

void File::read(const std::string& name, Type type, void* out, int64_t numel) const {
  const DatasetInfo di = info(name);
  if (di.numel() != numel)
    fail("dataset " + name + " has " + std::to_string(di.numel()) + " elements, expected " + std::to_string(numel));
  if (numel == 0) return;
  ErrorScope scope;
  Handle ds(H5Dopen2(id_, name.c_str(), H5P_DEFAULT));
  CHECK_H5(ds, "missing dataset " + name);
  CHECK_H5(H5Dread(ds, mem_type(type), H5S_ALL, H5S_ALL, H5P_DEFAULT, out),
           "cannot read dataset " + name + " (checksum mismatch or damaged data)");
}

std::vector<std::string> File::read_strings(const std::string& name) const {
  ErrorScope scope;
  Handle ds(H5Dopen2(id_, name.c_str(), H5P_DEFAULT));
  CHECK_H5(ds, "missing dataset " + name);
  Handle type(H5Dget_type(ds));
  if (H5Tget_class(type) != H5T_STRING || H5Tis_variable_str(type) > 0)
    fail("dataset " + name + " is not fixed-length strings");
  const size_t len = H5Tget_size(type);
  Handle space(H5Dget_space(ds));
  if (H5Sget_simple_extent_ndims(space) != 1) fail("dataset " + name + " is not 1-D");
  hsize_t n = 0;
  H5Sget_simple_extent_dims(space, &n, nullptr);
  std::vector<std::string> out;
  if (n == 0) return out;
  if (size_ >= 0 && (len == 0 || n > static_cast<uint64_t>(size_) / len))
    fail("dataset " + name + " claims more strings than the whole file holds: damaged");
  std::vector<char> packed(len * n, '\0');
  CHECK_H5(H5Dread(ds, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, packed.data()),
           "cannot read dataset " + name + " (checksum mismatch or damaged data)");
  for (hsize_t i = 0; i < n; ++i) out.emplace_back(packed.data() + i * len, strnlen(packed.data() + i * len, len));
  return out;
}

void File::set_attr(const std::string& object, const std::string& key, int64_t value) {
  ErrorScope scope;
  Handle space(H5Screate(H5S_SCALAR));
  Handle a(H5Acreate_by_name(id_, obj_name(object).c_str(), key.c_str(), H5T_STD_I64LE, space, H5P_DEFAULT, H5P_DEFAULT,
                             H5P_DEFAULT));
  CHECK_H5(a, "cannot write attribute " + attr_name(object, key));
  CHECK_H5(H5Awrite(a, H5T_NATIVE_INT64, &value), "cannot write attribute " + attr_name(object, key));
}

void File::set_attr(const std::string& object, const std::string& key, double value) {
  ErrorScope scope;
  Handle space(H5Screate(H5S_SCALAR));
  Handle a(H5Acreate_by_name(id_, obj_name(object).c_str(), key.c_str(), H5T_IEEE_F64LE, space, H5P_DEFAULT,
                             H5P_DEFAULT, H5P_DEFAULT));
  CHECK_H5(a, "cannot write attribute " + attr_name(object, key));
  CHECK_H5(H5Awrite(a, H5T_NATIVE_DOUBLE, &value), "cannot write attribute " + attr_name(object, key));
}

void File::set_attr(const std::string& object, const std::string& key, const std::string& value) {
  ErrorScope scope;
  Handle type(string_type(value.size()));
  CHECK_H5(type, "cannot write attribute " + attr_name(object, key));
  Handle space(H5Screate(H5S_SCALAR));
  Handle a(H5Acreate_by_name(id_, obj_name(object).c_str(), key.c_str(), type, space, H5P_DEFAULT, H5P_DEFAULT,
                             H5P_DEFAULT));
  CHECK_H5(a, "cannot write attribute " + attr_name(object, key));
  const std::string padded = value.empty() ? std::string(1, '\0') : value;
  CHECK_H5(H5Awrite(a, type, padded.data()), "cannot write attribute " + attr_name(object, key));
}

namespace {

/// A 1-D attribute of `n` elements of `file_type`, written from `data` as `mem_type`.
void write_array_attr(hid_t file, const std::string& object, const std::string& key, hid_t file_type, hid_t mem_type,
                      const void* data, size_t n, const std::function<void(const std::string&)>& fail) {
  const hsize_t dims[1] = {n};
  Handle space(H5Screate_simple(1, dims, nullptr));
  Handle a(H5Acreate_by_name(file, obj_name(object).c_str(), key.c_str(), file_type, space, H5P_DEFAULT, H5P_DEFAULT,
                             H5P_DEFAULT));
  if (space < 0 || a < 0 || (n > 0 && H5Awrite(a, mem_type, data) < 0))
    fail("cannot write attribute " + attr_name(object, key));
}

}  // namespace

void File::set_attr_value(const std::string& object, const std::string& key, const schema::Value& value) {
  ErrorScope scope;
  const auto failed = [this](const std::string& what) { fail_hdf5(what); };
  if (const auto* v = std::get_if<int64_t>(&value)) return set_attr(object, key, *v);
  if (const auto* v = std::get_if<double>(&value)) return set_attr(object, key, *v);
  if (const auto* v = std::get_if<std::string>(&value)) return set_attr(object, key, *v);
  if (const auto* v = std::get_if<std::vector<int64_t>>(&value))
    return write_array_attr(id_, object, key, H5T_STD_I64LE, H5T_NATIVE_INT64, v->data(), v->size(), failed);
  if (const auto* v = std::get_if<std::vector<double>>(&value))
    return write_array_attr(id_, object, key, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, v->data(), v->size(), failed);
  const auto& strings = std::get<std::vector<std::string>>(value);
  size_t len = 1;
  for (const auto& v : strings) len = std::max(len, v.size());
  std::vector<char> packed(len * strings.size(), '\0');
  for (size_t i = 0; i < strings.size(); ++i)
    std::memcpy(packed.data() + i * len, strings[i].data(), strings[i].size());
  Handle type(string_type(len));
  CHECK_H5(type, "cannot write attribute " + attr_name(object, key));
  write_array_attr(id_, object, key, type, type, packed.data(), strings.size(), failed);
}

schema::Value File::attr_value(const std::string& object, const std::string& key) const {
  ErrorScope scope;
  const std::string name = attr_name(object, key);
  Handle a(H5Aopen_by_name(id_, obj_name(object).c_str(), key.c_str(), H5P_DEFAULT, H5P_DEFAULT));
  CHECK_H5(a, "missing attribute " + name);
  Handle space(H5Aget_space(a));
  const H5S_class_t shape = H5Sget_simple_extent_type(space);
  hsize_t n = 1;
  if (shape == H5S_SIMPLE && H5Sget_simple_extent_ndims(space) == 1)
    H5Sget_simple_extent_dims(space, &n, nullptr);
  else if (shape != H5S_SCALAR)
    fail("attribute " + name + " is neither a single value nor a 1-D array");
  const bool array = shape == H5S_SIMPLE;
  Handle type(H5Aget_type(a));
  const H5T_class_t cls = H5Tget_class(type);
  const size_t elem = cls == H5T_STRING ? H5Tget_size(type) : 8;
  // A damaged header may claim any length: refuse one that cannot be in the file.
  if (size_ >= 0 && (elem == 0 || n > static_cast<uint64_t>(size_) / elem))
    fail("attribute " + name + " claims more values than the whole file holds: damaged");
  if (cls == H5T_INTEGER) {
    std::vector<int64_t> v(n);
    if (n > 0) CHECK_H5(H5Aread(a, H5T_NATIVE_INT64, v.data()), "cannot read attribute " + name);
    return array ? schema::Value(std::move(v)) : schema::Value(v[0]);
  }
  if (cls == H5T_FLOAT) {
    std::vector<double> v(n);
    if (n > 0) CHECK_H5(H5Aread(a, H5T_NATIVE_DOUBLE, v.data()), "cannot read attribute " + name);
    return array ? schema::Value(std::move(v)) : schema::Value(v[0]);
  }
  if (cls != H5T_STRING) fail("attribute " + name + " is neither a number nor a string");
  if (!array) return attr_string(object, key);
  if (H5Tis_variable_str(type) > 0) fail("attribute " + name + " is an array of variable-length strings");
  std::vector<char> packed(elem * n, '\0');
  if (n > 0) CHECK_H5(H5Aread(a, type, packed.data()), "cannot read attribute " + name);
  std::vector<std::string> out;
  for (hsize_t i = 0; i < n; ++i) out.emplace_back(packed.data() + i * elem, strnlen(packed.data() + i * elem, elem));
  return out;
}

bool File::has_attr(const std::string& object, const std::string& key) const {
  ErrorScope scope;
  return H5Aexists_by_name(id_, obj_name(object).c_str(), key.c_str(), H5P_DEFAULT) > 0;
}

std::vector<std::string> File::attr_names(const std::string& object) const {
  ErrorScope scope;
  H5O_info_t info;
  CHECK_H5(H5Oget_info_by_name(id_, obj_name(object).c_str(), &info, H5P_DEFAULT),
           "missing object " + obj_name(object));
  std::vector<std::string> out;
  for (hsize_t i = 0; i < info.num_attrs; ++i) {
    const ssize_t len =
        H5Aget_name_by_idx(id_, obj_name(object).c_str(), H5_INDEX_NAME, H5_ITER_INC, i, nullptr, 0, H5P_DEFAULT);
    CHECK_H5(len, "cannot list the attributes of " + obj_name(object));
    std::string s(static_cast<size_t>(len), '\0');
    H5Aget_name_by_idx(id_, obj_name(object).c_str(), H5_INDEX_NAME, H5_ITER_INC, i, s.data(), s.size() + 1,
                       H5P_DEFAULT);
    out.push_back(s);
  }
  std::sort(out.begin(), out.end());
  return out;
}

void File::check_single_value(int64_t attribute, const std::string& object, const std::string& key) const {
  Handle space(H5Aget_space(attribute));
  const hssize_t n = H5Sget_simple_extent_npoints(space);
  CHECK_H5(n, "cannot read the shape of attribute " + attr_name(object, key));
  if (n != 1) fail("attribute " + attr_name(object, key) + " holds " + std::to_string(n) + " values, expected one");
}

int64_t File::attr_int(const std::string& object, const std::string& key) const {
  ErrorScope scope;
  Handle a(H5Aopen_by_name(id_, obj_name(object).c_str(), key.c_str(), H5P_DEFAULT, H5P_DEFAULT));
  CHECK_H5(a, "missing attribute " + attr_name(object, key));
  check_single_value(a, object, key);
  Handle type(H5Aget_type(a));
  if (H5Tget_class(type) != H5T_INTEGER) fail("attribute " + attr_name(object, key) + " is not an integer");
  int64_t v = 0;
  CHECK_H5(H5Aread(a, H5T_NATIVE_INT64, &v), "cannot read attribute " + attr_name(object, key));
  return v;
}

double File::attr_double(const std::string& object, const std::string& key) const {
  ErrorScope scope;
  Handle a(H5Aopen_by_name(id_, obj_name(object).c_str(), key.c_str(), H5P_DEFAULT, H5P_DEFAULT));
  CHECK_H5(a, "missing attribute " + attr_name(object, key));
  check_single_value(a, object, key);
  Handle type(H5Aget_type(a));
  const H5T_class_t cls = H5Tget_class(type);
  if (cls != H5T_FLOAT && cls != H5T_INTEGER) fail("attribute " + attr_name(object, key) + " is not a number");
  double v = 0;
  CHECK_H5(H5Aread(a, H5T_NATIVE_DOUBLE, &v), "cannot read attribute " + attr_name(object, key));
  return v;
}

bool File::attr_is_string(const std::string& object, const std::string& key) const {
  ErrorScope scope;
  Handle a(H5Aopen_by_name(id_, obj_name(object).c_str(), key.c_str(), H5P_DEFAULT, H5P_DEFAULT));
  CHECK_H5(a, "missing attribute " + attr_name(object, key));
  Handle type(H5Aget_type(a));
  return H5Tget_class(type) == H5T_STRING;
}

std::string File::attr_string(const std::string& object, const std::string& key) const {
  ErrorScope scope;
  Handle a(H5Aopen_by_name(id_, obj_name(object).c_str(), key.c_str(), H5P_DEFAULT, H5P_DEFAULT));
  CHECK_H5(a, "missing attribute " + attr_name(object, key));
  check_single_value(a, object, key);
  Handle type(H5Aget_type(a));
  if (H5Tget_class(type) != H5T_STRING) fail("attribute " + attr_name(object, key) + " is not a string");
  if (H5Tis_variable_str(type) > 0) {
    char* s = nullptr;
    Handle mt(H5Tcopy(H5T_C_S1));
    H5Tset_size(mt, H5T_VARIABLE);
    CHECK_H5(H5Aread(a, mt, &s), "cannot read attribute " + attr_name(object, key));
    std::string out = s ? s : "";
    H5free_memory(s);
    return out;
  }
  const size_t len = H5Tget_size(type);
  if (size_ >= 0 && len > static_cast<uint64_t>(size_))
    fail("attribute " + attr_name(object, key) + " claims " + std::to_string(len) +
         " bytes, more than the whole file: damaged");
  std::string s(len, '\0');
  CHECK_H5(H5Aread(a, type, s.data()), "cannot read attribute " + attr_name(object, key));
  s.resize(std::strlen(s.c_str()));
  return s;
}

}  // namespace finecast::h5
