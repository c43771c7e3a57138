// SPDX-License-Identifier: BSD-3-Clause
// libFuzzer target: finecast-host's run file (host/model/run_config.hpp parse_host_run_config).
// It may only throw ConfigError; an accepted run file keeps every size key within its bound
// (run_file::limits) and its dates exist in the proleptic Gregorian calendar.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "common/error.hpp"
#include "coupling/io/cf_time.hpp"
#include "host/model/run_config.hpp"
#include "host/model/run_file.hpp"

namespace fc = finecast::coupling;

namespace {

[[noreturn]] void fail(const std::string& what) {
  std::fprintf(stderr, "accepted run file breaks a bound: %s\n", what.c_str());
  std::abort();
}

void check_date(const std::string& key, const std::string& text) {
  if (text.empty()) return;
  fc::DateTime t;
  if (!fc::parse_datetime(text, t) || !fc::date_error(t, "proleptic_gregorian").empty())
    fail(key + " = " + text + " is no date");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    const finecast::host::HostRunConfig c = finecast::host::parse_host_run_config(text, "fuzz.yaml");
    namespace lim = finecast::host::run_file::limits;
    if (c.nproma < 1 || c.nproma > lim::kNproma) fail("nproma " + std::to_string(c.nproma));
    if (c.nlev < 1 || c.nlev > lim::kLevels) fail("nlev " + std::to_string(c.nlev));
    if (c.steps < 1 || c.steps > lim::kSteps) fail("steps " + std::to_string(c.steps));
    if (!(c.dt > 0 && c.dt <= lim::kDt)) fail("dt " + std::to_string(c.dt));
    if (!(c.step_seconds >= 0 && c.step_seconds <= lim::kStepSeconds))
      fail("step_seconds " + std::to_string(c.step_seconds));
    check_date("start", c.start);
    check_date("experiment_start", c.experiment_start);
    check_date("experiment_stop", c.experiment_stop);
    for (const auto& p : c.plugins)
      if (p.library.empty()) fail("a plugin without a library");
  } catch (const finecast::ConfigError&) {
  }
  return 0;
}
