// SPDX-License-Identifier: BSD-3-Clause
// A minimal parser of the classic NetCDF header (format spec: "NetCDF Classic Format Spec.").
#include "coupling/io/nc_classic_size.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <cstdint>
#include <fstream>
#include <stdexcept>
#include <vector>

namespace finecast::coupling {
namespace {

// A header that declares more bytes (a name, an attribute's values, a list's entries) than the
// file holds, or what no classic file holds (strings): damaged or forged. The NetCDF library
// allocates what the header declares before it reads it (a few bytes of a damaged file made it
// ask for gigabytes) and divides by a string's size of zero, so this is checked before the
// library opens the file.
class Overclaim : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Big-endian reader over the header; throws Overclaim for declarations longer than the file.
class HeaderReader {
 public:
  HeaderReader(std::ifstream& in, int version, uint64_t file_size) : in_(in), version_(version), size_(file_size) {}
  uint64_t u32() { return be(4); }
  uint64_t u64() { return be(8); }
  uint64_t non_neg() { return version_ == 5 ? u64() : u32(); }
  uint64_t offset() { return version_ == 1 ? u32() : u64(); }
  void skip(uint64_t n, const char* what) {
    if (n > remaining())
      throw Overclaim(std::string("its header declares ") + what + " of " + std::to_string(n) + " bytes at byte " +
                      std::to_string(position()) + ", but the file has " + std::to_string(size_) + " bytes");
    in_.seekg(static_cast<std::streamoff>(n), std::ios::cur);
    if (!in_) throw std::runtime_error("header ends early");
  }
  // `n` entries of at least 4 bytes each must fit in the rest of the file.
  uint64_t count(uint64_t n, const char* what) {
    if (n > remaining() / 4)
      throw Overclaim(std::string("its header declares ") + std::to_string(n) + " " + what + " at byte " +
                      std::to_string(position()) + ", more than the " + std::to_string(size_) + "-byte file can hold");
    return n;
  }
  void skip_name() { skip(pad4(non_neg()), "a name"); }
  static uint64_t pad4(uint64_t n) { return n > UINT64_MAX - 3 ? UINT64_MAX : (n + 3) / 4 * 4; }
  uint64_t position() {
    const auto p = in_.tellg();
    return p < 0 ? size_ : static_cast<uint64_t>(p);
  }
  uint64_t remaining() { return size_ - std::min(size_, position()); }

 private:
  // Past the end of the file the library reads zeros (it pads its header buffer), so this
  // parser does too: what it then declares is checked like the rest.
  uint64_t be(int n) {
    unsigned char b[8] = {};
    in_.read(reinterpret_cast<char*>(b), n);
    if (!in_) {
      in_.clear();
      in_.seekg(0, std::ios::end);
    }
    uint64_t v = 0;
    for (int i = 0; i < n; ++i) v = (v << 8) | b[i];
    return v;
  }
  std::ifstream& in_;
  int version_;
  uint64_t size_;
};

// NC_STRING: no classic type, yet netCDF 4.9 accepts it in a classic header, as values of zero
// bytes, and then divides by that size (SIGFPE in NC_check_vlen for a string variable).
constexpr uint64_t kStringType = 12;

uint64_t type_size(uint64_t t) {
  switch (t) {
    case 1:
    case 2:
    case 7:
      return 1;  // byte, char, ubyte
    case 3:
    case 8:
      return 2;  // short, ushort
    case 4:
    case 5:
    case 9:
      return 4;  // int, float, uint
    case 6:
    case 10:
    case 11:
      return 8;  // double, int64, uint64
    default:
      throw std::runtime_error("unknown type");
  }
}

// The tag (NC_DIMENSION etc.) and its element count; ABSENT is a zero tag with zero count.
uint64_t list_count(HeaderReader& r, uint64_t tag, const char* what) {
  const uint64_t t = r.u32();
  const uint64_t n = r.non_neg();
  if (n == 0) return 0;  // the library accepts any tag on an empty list, so this parser does too
  if (t != tag) throw std::runtime_error("bad list tag");
  return r.count(n, what);
}

void skip_attributes(HeaderReader& r) {
  const uint64_t n = list_count(r, 0x0C, "attributes");
  for (uint64_t i = 0; i < n; ++i) {
    r.skip_name();
    const uint64_t type = r.u32();
    if (type == kStringType)
      throw Overclaim("its header declares a string attribute at byte " + std::to_string(r.position()) +
                      ", which classic NetCDF files cannot hold");
    const uint64_t count = r.non_neg();
    const uint64_t size = type_size(type);
    r.skip(size > 0 && count > UINT64_MAX / size ? UINT64_MAX : HeaderReader::pad4(count * size), "an attribute");
  }
}

/// The expected size (see the header), or -1; throws Overclaim for a header that declares more
/// than the file holds.
int64_t expected_size(const std::string& path) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) return -1;
  const auto end = in.tellg();
  if (end < 0) return -1;
  in.seekg(0);
  char magic[4];
  in.read(magic, 4);
  if (!in || magic[0] != 'C' || magic[1] != 'D' || magic[2] != 'F') return -1;
  const int version = magic[3];
  if (version != 1 && version != 2 && version != 5) return -1;
  try {
    HeaderReader r(in, version, static_cast<uint64_t>(end));
    const uint64_t numrecs = r.non_neg();
    // The whole header is read either way: every declaration the library will allocate for is
    // checked, even when no expected size can be computed (streaming, bad dimension ids).
    bool sized = !((version != 5 && numrecs == 0xFFFFFFFFull) || numrecs == ~0ull);  // streaming
    const uint64_t ndims = list_count(r, 0x0A, "dimensions");
    std::vector<uint64_t> dim_len(ndims);
    for (auto& len : dim_len) {
      r.skip_name();
      len = r.non_neg();
    }
    skip_attributes(r);
    const uint64_t nvars = list_count(r, 0x0B, "variables");
    struct Var {
      bool record;
      uint64_t begin, vsize, bytes;
    };
    std::vector<Var> vars(nvars);
    for (auto& v : vars) {
      r.skip_name();
      const uint64_t rank = r.count(r.non_neg(), "dimensions of a variable");
      v.record = false;
      uint64_t elems = 1;
      for (uint64_t d = 0; d < rank; ++d) {
        const uint64_t id = r.non_neg();
        if (id >= ndims) {  // the library refuses it only after reading every variable
          sized = false;
          continue;
        }
        if (d == 0 && dim_len[id] == 0)
          v.record = true;  // the unlimited dimension has length 0 here
        else
          elems *= dim_len[id];
      }
      skip_attributes(r);
      const uint64_t type = r.u32();
      if (type == kStringType)
        throw Overclaim("its header declares a string variable at byte " + std::to_string(r.position()) +
                        ", which classic NetCDF files cannot hold");
      v.vsize = r.non_neg();
      v.begin = r.offset();
      v.bytes = elems * type_size(type);
    }
    if (!sized) return -1;
    uint64_t recsize = 0, n_record_vars = 0;
    for (const auto& v : vars)
      if (v.record) recsize += v.vsize, ++n_record_vars;
    uint64_t need = static_cast<uint64_t>(in.tellg());
    for (const auto& v : vars) {
      if (!v.record) {
        need = std::max(need, v.begin + v.bytes);
      } else if (numrecs > 0) {
        // A single record variable is stored without padding between records.
        const uint64_t stride = n_record_vars == 1 ? v.bytes : recsize;
        need = std::max(need, v.begin + (numrecs - 1) * stride + v.bytes);
      }
    }
    return static_cast<int64_t>(std::min<uint64_t>(need, INT64_MAX));
  } catch (const Overclaim&) {
    throw;
  } catch (const std::runtime_error&) {
    // A header this parser cannot follow: let the library decide.
    return -1;
  }
}

}  // namespace

int64_t nc_classic_expected_size(const std::string& path) {
  try {
    return expected_size(path);
  } catch (const Overclaim&) {
    return -1;  // the library accepted it: let it decide
  }
}

std::string nc_classic_header_damage(const std::string& path) {
  try {
    expected_size(path);
    return "";
  } catch (const Overclaim& e) {
    return e.what();
  }
}

std::string nc_classic_truncation(const std::string& path) {
  const int64_t expected = nc_classic_expected_size(path);
  struct stat st {};
  if (expected < 0 || ::stat(path.c_str(), &st) != 0 || static_cast<int64_t>(st.st_size) >= expected) return "";
  return "its header describes " + std::to_string(expected) + " bytes but the file has " + std::to_string(st.st_size);
}

}  // namespace finecast::coupling
