// SPDX-License-Identifier: BSD-3-Clause
// HDF5 C API wrapper for checkpoints; turns every failed call into a CheckpointError.
#include "trainer/h5.hpp"

#include <hdf5.h>

#include <algorithm>
#include <cstring>

#include "trainer/checkpoint.hpp"

namespace finecast::trainer::h5 {

static_assert(sizeof(hid_t) == sizeof(int64_t), "hid_t is expected to be 64-bit (HDF5 >= 1.10)");

namespace {

/// Silences HDF5's automatic error printing for one call and collects its error stack.
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

[[noreturn]] void fail(const std::string& path, const std::string& what) {
  throw CheckpointError(path + ": " + what + " (HDF5: " + hdf5_cause() + ")");
}

/// Closes an HDF5 handle of any kind when it goes out of scope.
struct Handle {
  hid_t id;
  explicit Handle(hid_t i) : id(i) {}
  ~Handle() {
    if (id >= 0) {
      switch (H5Iget_type(id)) {
        case H5I_GROUP: H5Gclose(id); break;
        case H5I_DATASET: H5Dclose(id); break;
        case H5I_DATASPACE: H5Sclose(id); break;
        case H5I_DATATYPE: H5Tclose(id); break;
        case H5I_ATTR: H5Aclose(id); break;
        case H5I_GENPROP_LST: H5Pclose(id); break;
        default: break;
      }
    }
  }
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;
  operator hid_t() const { return id; }
};

hid_t file_type(Type t) {
  switch (t) {
    case Type::kFloat32: return H5T_IEEE_F32LE;
    case Type::kFloat64: return H5T_IEEE_F64LE;
    case Type::kInt64: return H5T_STD_I64LE;
    case Type::kUInt8: return H5T_STD_U8LE;
  }
  return H5T_STD_U8LE;
}

hid_t mem_type(Type t) {
  switch (t) {
    case Type::kFloat32: return H5T_NATIVE_FLOAT;
    case Type::kFloat64: return H5T_NATIVE_DOUBLE;
    case Type::kInt64: return H5T_NATIVE_INT64;
    case Type::kUInt8: return H5T_NATIVE_UINT8;
  }
  return H5T_NATIVE_UINT8;
}

std::string obj_name(const std::string& object) { return object.empty() ? "/" : object; }

}  // namespace

size_t type_size(Type t) {
  switch (t) {
    case Type::kFloat32: return 4;
    case Type::kFloat64: return 8;
    case Type::kInt64: return 8;
    case Type::kUInt8: return 1;
  }
  return 1;
}

const char* type_name(Type t) {
  switch (t) {
    case Type::kFloat32: return "float32";
    case Type::kFloat64: return "float64";
    case Type::kInt64: return "int64";
    case Type::kUInt8: return "uint8";
  }
  return "?";
}

int64_t DatasetInfo::numel() const {
  int64_t n = 1;
  for (auto d : shape) n *= d;
  return n;
}

File File::create(const std::string& path) {
  ErrorScope scope;
  Handle fapl(H5Pcreate(H5P_FILE_ACCESS));
  // v1.8+ object headers carry metadata checksums, so a damaged header is detected on open.
  if (fapl < 0 || H5Pset_libver_bounds(fapl, H5F_LIBVER_V18, H5F_LIBVER_LATEST) < 0)
    fail(path, "cannot set up file access properties");
  const hid_t id = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
  if (id < 0) fail(path, "cannot create the file");
  return File(path, id);
}

File File::open_read(const std::string& path) {
  ErrorScope scope;
  const htri_t is_h5 = H5Fis_hdf5(path.c_str());
  if (is_h5 < 0) fail(path, "cannot open the file");
  if (is_h5 == 0)
    throw CheckpointError(path + ": not an HDF5 file (no HDF5 signature; the file is corrupt or not a checkpoint)");
  const hid_t id = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  if (id < 0) fail(path, "cannot open the HDF5 file (truncated or corrupt)");
  return File(path, id);
}

File::File(File&& o) noexcept : path_(std::move(o.path_)), id_(o.id_) { o.id_ = -1; }

File& File::operator=(File&& o) noexcept {
  if (this != &o) {
    if (id_ >= 0) {
      ErrorScope scope;
      H5Fclose(id_);
    }
    path_ = std::move(o.path_);
    id_ = o.id_;
    o.id_ = -1;
  }
  return *this;
}

File::~File() {
  if (id_ >= 0) {
    ErrorScope scope;
    H5Fclose(id_);
  }
}

void File::flush() {
  ErrorScope scope;
  if (H5Fflush(id_, H5F_SCOPE_GLOBAL) < 0) fail(path_, "cannot flush");
}

void File::close() {
  ErrorScope scope;
  const hid_t id = id_;
  id_ = -1;
  if (id >= 0 && H5Fclose(id) < 0) fail(path_, "cannot close");
}

void File::create_group(const std::string& name) {
  ErrorScope scope;
  Handle lcpl(H5Pcreate(H5P_LINK_CREATE));
  H5Pset_create_intermediate_group(lcpl, 1);
  Handle g(H5Gcreate2(id_, name.c_str(), lcpl, H5P_DEFAULT, H5P_DEFAULT));
  if (g < 0) fail(path_, "cannot create group " + name);
}

bool File::exists(const std::string& name) const {
  ErrorScope scope;
  // H5Lexists fails when an intermediate is missing, so walk the path one link at a time.
  std::string prefix;
  size_t start = name[0] == '/' ? 1 : 0;
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
  if (H5Oget_info_by_name(id_, name.c_str(), &info, H5P_DEFAULT) < 0) fail(path_, "missing object " + name);
  return info.type == H5O_TYPE_DATASET;
}

std::vector<std::string> File::children(const std::string& group) const {
  ErrorScope scope;
  Handle g(H5Gopen2(id_, obj_name(group).c_str(), H5P_DEFAULT));
  if (g < 0) fail(path_, "missing group " + obj_name(group));
  H5G_info_t info;
  if (H5Gget_info(g, &info) < 0) fail(path_, "cannot list group " + obj_name(group));
  std::vector<std::string> out;
  for (hsize_t i = 0; i < info.nlinks; ++i) {
    const ssize_t len = H5Lget_name_by_idx(g, ".", H5_INDEX_NAME, H5_ITER_INC, i, nullptr, 0, H5P_DEFAULT);
    if (len < 0) fail(path_, "cannot list group " + obj_name(group));
    std::string s(static_cast<size_t>(len), '\0');
    H5Lget_name_by_idx(g, ".", H5_INDEX_NAME, H5_ITER_INC, i, s.data(), s.size() + 1, H5P_DEFAULT);
    out.push_back(s);
  }
  std::sort(out.begin(), out.end());
  return out;
}

void File::write(const std::string& name, Type type, const void* data, const std::vector<int64_t>& shape) {
  ErrorScope scope;
  std::vector<hsize_t> dims(shape.begin(), shape.end());
  bool empty = false;
  for (auto d : dims) empty = empty || d == 0;
  Handle space(dims.empty() ? H5Screate(H5S_SCALAR)
                            : H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr));
  if (space < 0) fail(path_, "cannot create the dataspace of " + name);
  Handle dcpl(H5Pcreate(H5P_DATASET_CREATE));
  if (!dims.empty() && !empty) {
    // One chunk per dataset (checkpoint tensors are small) so Fletcher-32 covers every byte.
    if (H5Pset_chunk(dcpl, static_cast<int>(dims.size()), dims.data()) < 0 || H5Pset_fletcher32(dcpl) < 0)
      fail(path_, "cannot set the checksum filter of " + name);
  }
  Handle lcpl(H5Pcreate(H5P_LINK_CREATE));
  H5Pset_create_intermediate_group(lcpl, 1);
  Handle ds(H5Dcreate2(id_, name.c_str(), file_type(type), space, lcpl, dcpl, H5P_DEFAULT));
  if (ds < 0) fail(path_, "cannot create dataset " + name);
  if (!empty && H5Dwrite(ds, mem_type(type), H5S_ALL, H5S_ALL, H5P_DEFAULT, data) < 0)
    fail(path_, "cannot write dataset " + name);
}

DatasetInfo File::info(const std::string& name) const {
  ErrorScope scope;
  Handle ds(H5Dopen2(id_, name.c_str(), H5P_DEFAULT));
  if (ds < 0) fail(path_, "missing dataset " + name);
  Handle space(H5Dget_space(ds));
  const int rank = H5Sget_simple_extent_ndims(space);
  if (rank < 0) fail(path_, "cannot read the shape of " + name);
  std::vector<hsize_t> dims(static_cast<size_t>(rank));
  H5Sget_simple_extent_dims(space, dims.data(), nullptr);
  Handle dtype(H5Dget_type(ds));
  DatasetInfo info{Type::kUInt8, std::vector<int64_t>(dims.begin(), dims.end())};
  const H5T_class_t cls = H5Tget_class(dtype);
  const size_t size = H5Tget_size(dtype);
  if (cls == H5T_FLOAT && size == 4) info.type = Type::kFloat32;
  else if (cls == H5T_FLOAT && size == 8) info.type = Type::kFloat64;
  else if (cls == H5T_INTEGER && size == 8) info.type = Type::kInt64;
  else if (cls == H5T_INTEGER && size == 1) info.type = Type::kUInt8;
  else throw CheckpointError(path_ + ": dataset " + name + " has an unsupported element type");
  return info;
}

void File::read(const std::string& name, Type type, void* out, int64_t numel) const {
  const DatasetInfo di = info(name);
  if (di.numel() != numel)
    throw CheckpointError(path_ + ": dataset " + name + " has " + std::to_string(di.numel()) +
                          " elements, expected " + std::to_string(numel));
  if (numel == 0) return;
  ErrorScope scope;
  Handle ds(H5Dopen2(id_, name.c_str(), H5P_DEFAULT));
  if (ds < 0) fail(path_, "missing dataset " + name);
  if (H5Dread(ds, mem_type(type), H5S_ALL, H5S_ALL, H5P_DEFAULT, out) < 0)
    fail(path_, "cannot read dataset " + name + " (checksum mismatch or damaged data)");
}

void File::set_attr(const std::string& object, const std::string& key, int64_t value) {
  ErrorScope scope;
  Handle space(H5Screate(H5S_SCALAR));
  Handle a(H5Acreate_by_name(id_, obj_name(object).c_str(), key.c_str(), H5T_STD_I64LE, space, H5P_DEFAULT,
                             H5P_DEFAULT, H5P_DEFAULT));
  if (a < 0 || H5Awrite(a, H5T_NATIVE_INT64, &value) < 0) fail(path_, "cannot write attribute " + obj_name(object) + "@" + key);
}

void File::set_attr(const std::string& object, const std::string& key, double value) {
  ErrorScope scope;
  Handle space(H5Screate(H5S_SCALAR));
  Handle a(H5Acreate_by_name(id_, obj_name(object).c_str(), key.c_str(), H5T_IEEE_F64LE, space, H5P_DEFAULT,
                             H5P_DEFAULT, H5P_DEFAULT));
  if (a < 0 || H5Awrite(a, H5T_NATIVE_DOUBLE, &value) < 0) fail(path_, "cannot write attribute " + obj_name(object) + "@" + key);
}

void File::set_attr(const std::string& object, const std::string& key, const std::string& value) {
  ErrorScope scope;
  Handle type(H5Tcopy(H5T_C_S1));
  // Fixed-length UTF-8 strings: h5dump prints them, h5py returns them as bytes (.decode()).
  H5Tset_size(type, std::max<size_t>(1, value.size()));
  H5Tset_strpad(type, H5T_STR_NULLPAD);
  H5Tset_cset(type, H5T_CSET_UTF8);
  Handle space(H5Screate(H5S_SCALAR));
  Handle a(H5Acreate_by_name(id_, obj_name(object).c_str(), key.c_str(), type, space, H5P_DEFAULT, H5P_DEFAULT,
                             H5P_DEFAULT));
  std::string padded = value.empty() ? std::string(1, '\0') : value;
  if (a < 0 || H5Awrite(a, type, padded.data()) < 0) fail(path_, "cannot write attribute " + obj_name(object) + "@" + key);
}

bool File::has_attr(const std::string& object, const std::string& key) const {
  ErrorScope scope;
  const htri_t e = H5Aexists_by_name(id_, obj_name(object).c_str(), key.c_str(), H5P_DEFAULT);
  return e > 0;
}

std::vector<std::string> File::attr_names(const std::string& object) const {
  ErrorScope scope;
  H5O_info_t info;
  if (H5Oget_info_by_name(id_, obj_name(object).c_str(), &info, H5P_DEFAULT) < 0)
    fail(path_, "missing object " + obj_name(object));
  std::vector<std::string> out;
  for (hsize_t i = 0; i < info.num_attrs; ++i) {
    const ssize_t len = H5Aget_name_by_idx(id_, obj_name(object).c_str(), H5_INDEX_NAME, H5_ITER_INC, i, nullptr, 0,
                                           H5P_DEFAULT);
    if (len < 0) fail(path_, "cannot list the attributes of " + obj_name(object));
    std::string s(static_cast<size_t>(len), '\0');
    H5Aget_name_by_idx(id_, obj_name(object).c_str(), H5_INDEX_NAME, H5_ITER_INC, i, s.data(), s.size() + 1,
                       H5P_DEFAULT);
    out.push_back(s);
  }
  std::sort(out.begin(), out.end());
  return out;
}

namespace {

Handle open_attr(hid_t file, const std::string& path, const std::string& object, const std::string& key) {
  Handle a(H5Aopen_by_name(file, obj_name(object).c_str(), key.c_str(), H5P_DEFAULT, H5P_DEFAULT));
  if (a < 0) fail(path, "missing attribute " + obj_name(object) + "@" + key);
  const hid_t id = a.id;
  a.id = -1;
  return Handle(id);
}

}  // namespace

int64_t File::attr_int(const std::string& object, const std::string& key) const {
  ErrorScope scope;
  Handle a = open_attr(id_, path_, object, key);
  Handle type(H5Aget_type(a));
  if (H5Tget_class(type) != H5T_INTEGER)
    throw CheckpointError(path_ + ": attribute " + obj_name(object) + "@" + key + " is not an integer");
  int64_t v = 0;
  if (H5Aread(a, H5T_NATIVE_INT64, &v) < 0) fail(path_, "cannot read attribute " + obj_name(object) + "@" + key);
  return v;
}

double File::attr_double(const std::string& object, const std::string& key) const {
  ErrorScope scope;
  Handle a = open_attr(id_, path_, object, key);
  Handle type(H5Aget_type(a));
  const H5T_class_t cls = H5Tget_class(type);
  if (cls != H5T_FLOAT && cls != H5T_INTEGER)
    throw CheckpointError(path_ + ": attribute " + obj_name(object) + "@" + key + " is not a number");
  double v = 0;
  if (H5Aread(a, H5T_NATIVE_DOUBLE, &v) < 0) fail(path_, "cannot read attribute " + obj_name(object) + "@" + key);
  return v;
}

std::string File::attr_string(const std::string& object, const std::string& key) const {
  ErrorScope scope;
  Handle a = open_attr(id_, path_, object, key);
  Handle type(H5Aget_type(a));
  if (H5Tget_class(type) != H5T_STRING)
    throw CheckpointError(path_ + ": attribute " + obj_name(object) + "@" + key + " is not a string");
  if (H5Tis_variable_str(type) > 0) {
    char* s = nullptr;
    Handle mt(H5Tcopy(H5T_C_S1));
    H5Tset_size(mt, H5T_VARIABLE);
    if (H5Aread(a, mt, &s) < 0) fail(path_, "cannot read attribute " + obj_name(object) + "@" + key);
    std::string out = s ? s : "";
    H5free_memory(s);
    return out;
  }
  const size_t size = H5Tget_size(type);
  std::string s(size, '\0');
  if (H5Aread(a, type, s.data()) < 0) fail(path_, "cannot read attribute " + obj_name(object) + "@" + key);
  s.resize(std::strlen(s.c_str()));
  return s;
}

}  // namespace finecast::trainer::h5
