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
    f.fail(std::string("dataset '") + name + "' has shape (" + dims_text(info.shape) + "), expected (" +
           dims_text(dims) + ") from the file's attributes");
  out.resize(static_cast<size_t>(info.numel()));
  f.read(name, type, out.data(), info.numel());
}

int64_t read_attr(const h5::File& f, const char* key) {
  if (!f.has_attr("/", key)) f.fail(std::string("attribute '") + key + "' is missing");
  return f.attr_int("/", key);
}

}  // namespace

void RollingBuffer::save_h5(const std::string& path, int64_t first_patch, int64_t patches_total) const {
  AtomicFile out(path);
  {
    h5::File f = h5::File::create(out.tmp_path(), {ErrorCode::kIo, kSubject});
    const int64_t S = steps_, N = n_;
    auto slot = [&](int64_t i) { return static_cast<size_t>(slot_of(static_cast<int>(i))); };
    f.write_rows("context", h5::Type::kFloat32, {S, N, C_},
                 [&](int64_t i) { return context_.data() + slot(i) * n_ * C_; });
    f.write_rows("fine", h5::Type::kFloat32, {S, N, P_}, [&](int64_t i) { return fine_.data() + slot(i) * n_ * P_; });
    f.write_rows("valid", h5::Type::kUInt8, {S, N}, [&](int64_t i) { return valid_.data() + slot(i) * n_; });
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
    f.set_attr("/", "first_patch", first_patch);
    f.set_attr("/", "patches_total", patches_total >= 0 ? patches_total : n_);
    f.close();
  }
  out.commit();
}

RollingBuffer RollingBuffer::load_h5(const std::string& path) { return load_h5(path, -1, -1, -1, -1); }

RollingBuffer RollingBuffer::load_h5(const std::string& path, int capacity_steps, int64_t patches_per_step, int C,
                                     int P) {
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
    f.fail("inconsistent attributes (capacity " + std::to_string(saved_cap) + ", steps " + std::to_string(steps) +
           ", patches " + std::to_string(n) + ", C " + std::to_string(c) + ", P " + std::to_string(p) + ")");
  auto expect = [&](const char* what, int64_t want, int64_t got) {
    if (want >= 0 && want != got)
      f.fail(std::string("holds ") + what + " = " + std::to_string(got) + " but this run uses " + std::to_string(want) +
             " (delete the snapshot or restore the configuration)");
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
    buf.push(datetimes[static_cast<size_t>(i)], context.data() + i * ctx_step, fine.data() + i * fine_step,
             valid.data() + i * n);
  buf.pushed_total_ = read_attr(f, "pushed_total");
  buf.rejected_total_ = read_attr(f, "rejected_total");
  return buf;
}

RollingBuffer RollingBuffer::load_h5_range(const std::vector<std::string>& parts, int capacity_steps, int64_t first,
                                           int64_t count, int C, int P, int64_t patches_total) {
  if (parts.empty()) throw IoError("rolling buffer snapshot: no part files given");
  std::vector<std::string> datetimes;
  int64_t steps = -1, pushed = 0, rejected = 0;
  // The range's samples, step-major: [steps][count][C] etc., filled part by part.
  std::vector<float> context, fine, weights(static_cast<size_t>(count * P));
  std::vector<uint8_t> valid;
  std::vector<uint8_t> covered(static_cast<size_t>(count), 0);
  for (const std::string& path : parts) {
    const h5::File f = h5::File::open_read(path, {ErrorCode::kIo, kSubject});
    // Another grid first: its shapes differ too, and would read as damage.
    if (patches_total >= 0 && f.has_attr("/", "patches_total") && f.attr_int("/", "patches_total") != patches_total)
      throw GridError(std::string(kSubject) + " " + path + ": written on a grid of " +
                      std::to_string(f.attr_int("/", "patches_total")) + " patches, this run's grid has " +
                      std::to_string(patches_total));
    const RollingBuffer part = load_h5(path, -1, -1, C, P);
    const int64_t p0 = f.has_attr("/", "first_patch") ? f.attr_int("/", "first_patch") : 0;
    const int64_t pn = part.n_;
    if (steps < 0) {
      steps = part.steps_;
      for (int i = 0; i < part.steps_; ++i) datetimes.push_back(part.datetime(i));
      context.assign(static_cast<size_t>(steps * count * C), 0.0f);
      fine.assign(static_cast<size_t>(steps * count * P), 0.0f);
      valid.assign(static_cast<size_t>(steps * count), 0);
      pushed = part.pushed_total_;
      rejected = part.rejected_total_;
    } else if (part.steps_ != steps || (steps > 0 && part.datetime(part.steps_ - 1) != datetimes.back())) {
      throw IoError("rolling buffer snapshot " + path + ": holds " + std::to_string(part.steps_) + " steps ending at " +
                    (part.steps_ > 0 ? part.datetime(part.steps_ - 1) : std::string("-")) + ", but " + parts.front() +
                    " holds " + std::to_string(steps) + " ending at " +
                    (steps > 0 ? datetimes.back() : std::string("-")) + ": the parts are not of one snapshot");
    }
    const int64_t lo = std::max(first, p0), hi = std::min(first + count, p0 + pn);
    for (int64_t p = lo; p < hi; ++p) {
      const int64_t src = p - p0, dst = p - first;
      covered[static_cast<size_t>(dst)] = 1;
      std::copy(part.weights_.begin() + src * P, part.weights_.begin() + (src + 1) * P, weights.begin() + dst * P);
      for (int64_t i = 0; i < steps; ++i) {
        const size_t s = static_cast<size_t>(part.slot_of(static_cast<int>(i)));
        std::copy(part.context_.begin() + (s * pn + src) * C, part.context_.begin() + (s * pn + src + 1) * C,
                  context.begin() + (i * count + dst) * C);
        std::copy(part.fine_.begin() + (s * pn + src) * P, part.fine_.begin() + (s * pn + src + 1) * P,
                  fine.begin() + (i * count + dst) * P);
        valid[static_cast<size_t>(i * count + dst)] = part.valid_[s * pn + src];
      }
    }
  }
  if (const auto gap = std::find(covered.begin(), covered.end(), 0); gap != covered.end())
    throw IoError("rolling buffer snapshot " + parts.front() + " (" + std::to_string(parts.size()) +
                  " part(s)): patch " + std::to_string(first + (gap - covered.begin())) +
                  " is in none of the parts; the snapshot is incomplete");
  RollingBuffer buf(capacity_steps, count, C, P, std::move(weights));
  for (int64_t i = std::max<int64_t>(0, steps - capacity_steps); i < steps; ++i)
    buf.push(datetimes[static_cast<size_t>(i)], context.data() + i * count * C, fine.data() + i * count * P,
             valid.data() + i * count);
  buf.pushed_total_ = pushed;
  buf.rejected_total_ = rejected;
  return buf;
}

}  // namespace finecast::coupling
