// SPDX-License-Identifier: BSD-3-Clause
// finecast-replay on inputs an operator may hand it by mistake: a file without time steps (once
// a SIGSEGV on every rank while the error message was built) and implausible values (once read
// as data; now missing, and counted in the log).
#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/error.hpp"
#include "host/replay/replay_input.hpp"
#include "host/replay/run_config.hpp"
#include "tests/plugin/replay_test_util.hpp"

namespace fr = finecast::coupling::replay;
using namespace finecast::testing_replay;

namespace {

/// Writes `cdl` (netCDF's text form) as a NetCDF file with ncgen; returns the file's path.
std::string ncgen(const ScratchDir& dir, const std::string& name, const std::string& cdl) {
  write_text(dir.file(name + ".cdl"), cdl);
  const CommandResult r = run_command("ncgen -o " + dir.file(name + ".nc") + " " + dir.file(name + ".cdl"));
  if (r.rc != 0) throw std::runtime_error("ncgen failed: " + r.output);
  return dir.file(name + ".nc");
}

/// tas(time, lat, lon) on a 4 x 4 grid with `steps` records of `values` (16 per record).
std::string tas_cdl(int steps, const std::string& values) {
  std::string times;
  for (int i = 0; i < steps; ++i) times += (i ? ", " : "") + std::to_string(i);
  const std::string data = steps > 0 ? "  time = " + times + " ;\n  tas = " + values + " ;\n" : "";
  return "netcdf tas {\ndimensions:\n  time = UNLIMITED ;\n  lat = 4 ;\n  lon = 4 ;\nvariables:\n"
         "  double time(time) ;\n    time:units = \"days since 2000-01-01\" ;\n"
         "  double lat(lat) ;\n    lat:units = \"degrees_north\" ;\n"
         "  double lon(lon) ;\n    lon:units = \"degrees_east\" ;\n"
         "  float tas(time, lat, lon) ;\n    tas:units = \"K\" ;\n    tas:_FillValue = 1.e+20f ;\n"
         "data:\n  lat = -30, -10, 10, 30 ;\n  lon = 0, 90, 180, 270 ;\n" +
         data + "}\n";
}

std::string run_file(const std::string& input) {
  return "input: {files: [" + input + "], variables: [tas]}\ngrid: {type: latlon}\n";
}

}  // namespace

TEST(ReplayBadInput, NoTimeStepsIsAClearErrorOnEveryRank) {
  ScratchDir dir("replay_empty");
  const std::string input = ncgen(dir, "empty", tas_cdl(0, ""));
  // The library: an IoError naming the run file and the input.
  const fr::ReplayRunConfig c = fr::parse_replay_run_config(run_file(input), dir.file("run.yaml"));
  try {
    fr::ReplayInput in(c);
    ADD_FAILURE() << "no error for an input without time steps";
  } catch (const finecast::IoError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("the input has no time steps"), std::string::npos) << what;
    EXPECT_NE(what.find(input), std::string::npos) << what;
  }
  // The program, on 2 ranks: exit status 1 with that message, not a signal.
  write_text(dir.file("run.yaml"), run_file(input));
  const CommandResult r = run_command("timeout -k 5 60 mpiexec -n 2 --oversubscribe " + binary("finecast-replay") +
                                      " --config " + dir.file("run.yaml"));
  EXPECT_NE(r.rc, 0) << r.output;
  EXPECT_NE(r.rc, 124) << "hung:\n" << r.output;
  EXPECT_EQ(r.output.find("Segmentation fault"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("signal"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("the input has no time steps"), std::string::npos) << r.output;
}

TEST(ReplayBadInput, ImplausibleValuesAreMissingAndCountedInTheLog) {
  ScratchDir dir("replay_implausible");
  std::string values;
  for (int t = 0; t < 2; ++t)
    for (int i = 0; i < 16; ++i) {
      // Step 0 holds two values beyond the _FillValue (3e38), step 1 one (2e20).
      const bool bad = (t == 0 && (i == 3 || i == 9)) || (t == 1 && i == 5);
      values += std::string(values.empty() ? "" : ", ") + (bad ? (t == 0 ? "3e38" : "2e20") : "280");
    }
  const std::string input = ncgen(dir, "implausible", tas_cdl(2, values));
  write_text(dir.file("run.yaml"), run_file(input));
  const CommandResult r = run_command("timeout -k 5 60 mpiexec -n 1 " + binary("finecast-replay") + " --config " +
                                      dir.file("run.yaml") + " --progress none");
  ASSERT_EQ(r.rc, 0) << r.output;
  EXPECT_NE(r.output.find("input: 2 value(s) of 'tas' at 2000-01-01T00:00:00 outside its valid range (beyond "
                          "_FillValue 1e+20) treated as missing"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("3 value(s) of 'tas' outside its valid range (beyond _FillValue 1e+20) treated as "
                          "missing in 2 replay steps"),
            std::string::npos)
      << r.output;

  // Directly: the values themselves are missing (NaN), the others are read.
  const fr::ReplayRunConfig c = fr::parse_replay_run_config(run_file(input), dir.file("run.yaml"));
  fr::ReplayInput in(c);
  std::vector<float> v(16);
  EXPECT_EQ(in.read(0, 0, v.data()), 2);
  EXPECT_TRUE(std::isnan(v[3]) && std::isnan(v[9]));
  EXPECT_EQ(v[0], 280.0f);
  EXPECT_EQ(in.read(1, 0, v.data()), 1);
  EXPECT_EQ(in.out_of_range(0), 3);

  // input.variables[].max_abs: a bound of the run file's own (here below the 280 K values).
  fr::ReplayRunConfig bounded = fr::parse_replay_run_config(
      "input: {files: [" + input + "], variables: [{var: tas, max_abs: 250}]}\ngrid: {type: latlon}\n",
      dir.file("run.yaml"));
  fr::ReplayInput capped(bounded);
  EXPECT_EQ(capped.read(0, 0, v.data()), 16);
  EXPECT_NE(capped.valid_range_text(0).find("|value| > 250"), std::string::npos) << capped.valid_range_text(0);
}
