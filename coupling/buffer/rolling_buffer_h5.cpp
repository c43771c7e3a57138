// SPDX-License-Identifier: BSD-3-Clause
// HDF5 snapshot of the rolling buffer, so a restarted run resumes with its samples.
//
// Layout (format "finecast rolling buffer", version 2): datasets context [steps][n][C],
// fine [steps][n][P], valid [steps][n] (one chunk per step), weights [n][P], datetime [steps]
// (fixed-length strings), oldest step first; attributes format, format_version,
// capacity_steps, patches_per_step, context_size, patch_size, steps, pushed_total,
// rejected_total. Every chunk carries HDF5's Fletcher-32 checksum (common/h5.hpp); version 1
// carried one hand-written checksum attribute instead and is refused.
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "common/atomic_file.hpp"
#include "common/error.hpp"
#include "common/h5.hpp"
#include "coupling/buffer/rolling_buffer.hpp"

namespace finecast::coupling {
namespace {

constexpr const char* kFormat = "finecast rolling buffer";
constexpr int64_t kFormatVersion = 2;
constexpr const char* kSubject = "rolling buffer snapshot";

std::string dims_text(const std::vector<int64_t>& dims) {
  std::string s;
  for (auto d : dims) s += (s.empty() ? "" : " x ") + std::to_string(d);
  return s;
}

/// Reads dataset `name` whole into `out` after checking that its shape is `dims`.
template <typename T>
void read_all(const h5::File& f, const char* name, h5::Type type, const std::vector<int64_t>& dims,
              std::vector<T>& out) {
  if (!f.exists(name)) f.fail(std::string("dataset '") + name + "' is missing");
  const h5::DatasetInfo info = f.info(name);
  if (info.shape != dims)
    f.fail(std::string("dataset '") + name + "' has shape (" + dims_text(info.shape) +
           "), expected (" + dims_text(dims) + ") from the file's attributes");
  out.resize(static_cast<size_t>(info.numel()));
  f.read(name, type, out.data(), info.numel());
}

int64_t read_attr(const h5::File& f, const char* key) {
  if (!f.has_attr("/", key)) f.fail(std::string("attribute '") + key + "' is missing");
  return f.attr_int("/", key);
}

}  // namespace

void RollingBuffer::save_h5(const std::string& path) const {
  AtomicFile out(path);
  {
    h5::File f = h5::File::create(out.tmp_path(), {ErrorCode::kIo, kSubject});
    const int64_t S = steps_, N = n_;
    auto slot = [&](int64_t i) { return static_cast<size_t>(slot_of(static_cast<int>(i))); };
    f.write_rows("context", h5::Type::kFloat32, {S, N, C_},
                 [&](int64_t i) { return context_.data() + slot(i) * n_ * C_; });
    f.write_rows("fine", h5::Type::kFloat32, {S, N, P_},
                 [&](int64_t i) { return fine_.data() + slot(i) * n_ * P_; });
    f.write_rows("valid", h5::Type::kUInt8, {S, N},
                 [&](int64_t i) { return valid_.data() + slot(i) * n_; });
    f.write("weights", h5::Type::kFloat32, weights_.data(), {N, P_});
    std::vector<std::string> datetimes;
    for (int i = 0; i < steps_; ++i) datetimes.push_back(datetime(i));
    f.write_strings("datetime", datetimes);

    f.set_attr("/", "format", std::string(kFormat));
    f.set_attr("/", "format_version", kFormatVersion);
    f.set_attr("/", "capacity_steps", static_cast<int64_t>(capacity_));
    f.set_attr("/", "patches_per_step", n_);
    f.set_attr("/", "context_size", static_cast<int64_t>(C_));
    f.set_attr("/", "patch_size", static_cast<int64_t>(P_));
    f.set_attr("/", "steps", static_cast<int64_t>(steps_));
    f.set_attr("/", "pushed_total", pushed_total_);
    f.set_attr("/", "rejected_total", rejected_total_);
    f.close();
  }
  out.commit();
}

RollingBuffer RollingBuffer::load_h5(const std::string& path) {
  return load_h5(path, -1, -1, -1, -1);
}

RollingBuffer RollingBuffer::load_h5(const std::string& path, int capacity_steps,
                                     int64_t patches_per_step, int C, int P) {
  const h5::File f = h5::File::open_read(path, {ErrorCode::kIo, kSubject});
  if (!f.has_attr("/", "format") || f.attr_string("/", "format") != kFormat)
    f.fail(std::string("attribute 'format' is not \"") + kFormat + "\"");
  const int64_t version = read_attr(f, "format_version");
  if (version != kFormatVersion)
    f.fail("has format version " + std::to_string(version) + ", this finecast reads version " +
           std::to_string(kFormatVersion) + " (delete the snapshot to start with an empty buffer)");
  const int64_t saved_cap = read_attr(f, "capacity_steps");
  const int64_t n = read_attr(f, "patches_per_step");
  const int64_t c = read_attr(f, "context_size");
  const int64_t p = read_attr(f, "patch_size");
  const int64_t steps = read_attr(f, "steps");
  if (saved_cap < 1 || n < 1 || c < 1 || p < 1 || steps < 0 || steps > saved_cap)
    f.fail("inconsistent attributes (capacity " + std::to_string(saved_cap) + ", steps " +
           std::to_string(steps) + ", patches " + std::to_string(n) + ", C " + std::to_string(c) +
           ", P " + std::to_string(p) + ")");
  auto expect = [&](const char* what, int64_t want, int64_t got) {
    if (want >= 0 && want != got)
      f.fail(std::string("holds ") + what + " = " + std::to_string(got) + " but this run uses " +
             std::to_string(want) + " (delete the snapshot or restore the configuration)");
  };
  expect("patches per step", patches_per_step, n);
  expect("context size C", C, c);
  expect("patch size P", P, p);

  std::vector<float> context, fine, weights;
  std::vector<uint8_t> valid;
  read_all(f, "context", h5::Type::kFloat32, {steps, n, c}, context);
  read_all(f, "fine", h5::Type::kFloat32, {steps, n, p}, fine);
  read_all(f, "valid", h5::Type::kUInt8, {steps, n}, valid);
  read_all(f, "weights", h5::Type::kFloat32, {n, p}, weights);
  if (!f.exists("datetime")) f.fail("dataset 'datetime' is missing");
  const std::vector<std::string> datetimes = f.read_strings("datetime");
  if (static_cast<int64_t>(datetimes.size()) != steps)
    f.fail("dataset 'datetime' does not hold " + std::to_string(steps) + " steps");

  const int cap = capacity_steps > 0 ? capacity_steps : static_cast<int>(saved_cap);
  RollingBuffer buf(cap, n, static_cast<int>(c), static_cast<int>(p), std::move(weights));
  // Keep the newest steps when the configured capacity shrank.
  const size_t ctx_step = static_cast<size_t>(n * c), fine_step = static_cast<size_t>(n * p);
  for (int64_t i = std::max<int64_t>(0, steps - cap); i < steps; ++i)
    buf.push(datetimes[static_cast<size_t>(i)], context.data() + i * ctx_step,
             fine.data() + i * fine_step, valid.data() + i * n);
  buf.pushed_total_ = read_attr(f, "pushed_total");
  buf.rejected_total_ = read_attr(f, "rejected_total");
  return buf;
}

}  // namespace finecast::coupling
