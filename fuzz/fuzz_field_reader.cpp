// SPDX-License-Identifier: BSD-3-Clause
// libFuzzer target: the NetCDF field reader (coupling/io/field_reader.hpp), on the input written
// to a file: open variable "tas", read every time step (at most 64), its dates and its grid. It
// may only throw IoError (finecast's error for bad files); what it reads is finite or missing.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "common/error.hpp"
#include "coupling/io/field_reader.hpp"
#include "fuzz/fuzz_util.hpp"

namespace fc = finecast::coupling;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static finecast::fuzz::InputFile file(".nc");
  if (!file.write(data, size)) return 0;
  for (const char* var : {"tas", "ts"}) {
    try {
      fc::FieldReader r(file.path(), var);
      // The reader holds one step in memory; a header may claim any size, so the harness reads
      // only steps that a real replay could hold (the reader's own limit is what is fuzzed).
      if (r.n_values() > (int64_t{1} << 24)) return 0;
      std::vector<float> out(static_cast<size_t>(r.n_values()));
      r.set_max_abs(1e6);
      for (int64_t t = 0; t < std::min<int64_t>(r.n_times(), 64); ++t) {
        (void)r.time_string(t);
        r.read(t, out.data());
        for (float v : out)
          if (std::isinf(v)) {
            std::fprintf(stderr, "read() returned an infinite value\n");
            std::abort();
          }
      }
      (void)r.valid_range_text();
      (void)r.output_grid();
    } catch (const finecast::IoError&) {
    }
  }
  return 0;
}
