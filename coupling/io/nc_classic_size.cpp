// SPDX-License-Identifier: BSD-3-Clause
// A minimal parser of the classic NetCDF header (format spec: "NetCDF Classic Format Spec.").
#include "coupling/io/nc_classic_size.hpp"

#include <algorithm>
#include <fstream>
#include <stdexcept>
#include <vector>

namespace finecast::coupling {
namespace {

// Big-endian reader over the header; throws std::runtime_error at end of file.
class HeaderReader {
 public:
  HeaderReader(std::ifstream& in, int version) : in_(in), version_(version) {}
  uint64_t u32() { return be(4); }
  uint64_t u64() { return be(8); }
  uint64_t non_neg() { return version_ == 5 ? u64() : u32(); }
  uint64_t offset() { return version_ == 1 ? u32() : u64(); }
  void skip(uint64_t n) {
    in_.seekg(static_cast<std::streamoff>(n), std::ios::cur);
    if (!in_) throw std::runtime_error("header ends early");
  }
  void skip_name() { skip(pad4(non_neg())); }
  static uint64_t pad4(uint64_t n) { return (n + 3) / 4 * 4; }

 private:
  uint64_t be(int n) {
    unsigned char b[8];
    in_.read(reinterpret_cast<char*>(b), n);
    if (!in_) throw std::runtime_error("header ends early");
    uint64_t v = 0;
    for (int i = 0; i < n; ++i) v = (v << 8) | b[i];
    return v;
  }
  std::ifstream& in_;
  int version_;
};

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
uint64_t list_count(HeaderReader& r, uint64_t tag) {
  const uint64_t t = r.u32();
  const uint64_t n = r.non_neg();
  if (t == 0 && n == 0) return 0;
  if (t != tag) throw std::runtime_error("bad list tag");
  return n;
}

void skip_attributes(HeaderReader& r) {
  const uint64_t n = list_count(r, 0x0C);
  for (uint64_t i = 0; i < n; ++i) {
    r.skip_name();
    const uint64_t type = r.u32();
    const uint64_t count = r.non_neg();
    r.skip(HeaderReader::pad4(count * type_size(type)));
  }
}

}  // namespace

int64_t nc_classic_expected_size(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return -1;
  char magic[4];
  in.read(magic, 4);
  if (!in || magic[0] != 'C' || magic[1] != 'D' || magic[2] != 'F') return -1;
  const int version = magic[3];
  if (version != 1 && version != 2 && version != 5) return -1;
  try {
    HeaderReader r(in, version);
    const uint64_t numrecs = r.non_neg();
    if ((version != 5 && numrecs == 0xFFFFFFFFull) || numrecs == ~0ull) return -1;  // streaming
    const uint64_t ndims = list_count(r, 0x0A);
    std::vector<uint64_t> dim_len(ndims);
    for (auto& len : dim_len) {
      r.skip_name();
      len = r.non_neg();
    }
    skip_attributes(r);
    const uint64_t nvars = list_count(r, 0x0B);
    struct Var {
      bool record;
      uint64_t begin, vsize, bytes;
    };
    std::vector<Var> vars(nvars);
    for (auto& v : vars) {
      r.skip_name();
      const uint64_t rank = r.non_neg();
      v.record = false;
      uint64_t elems = 1;
      for (uint64_t d = 0; d < rank; ++d) {
        const uint64_t id = r.non_neg();
        if (id >= ndims) throw std::runtime_error("bad dimension id");
        if (d == 0 && dim_len[id] == 0)
          v.record = true;  // the unlimited dimension has length 0 here
        else
          elems *= dim_len[id];
      }
      skip_attributes(r);
      const uint64_t type = r.u32();
      v.vsize = r.non_neg();
      v.begin = r.offset();
      v.bytes = elems * type_size(type);
    }
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
    return static_cast<int64_t>(need);
  } catch (const std::runtime_error&) {
    // A header the library accepted but this parser cannot follow: let the library decide.
    return -1;
  }
}

}  // namespace finecast::coupling
