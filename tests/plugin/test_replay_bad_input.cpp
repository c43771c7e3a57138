// SPDX-License-Identifier: BSD-3-Clause
// finecast-replay on inputs an operator may hand it by mistake: a file without time steps (once
// a SIGSEGV on every rank while the error message was built), implausible values (once read
// as data; now missing, and counted in the log), and an output that is the input itself.
#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/error.hpp"
#include "host/replay/replay_input.hpp"
#include "host/replay/run_config.hpp"
#include "tests/plugin/replay_test_util.hpp"

namespace fr = finecast::host::replay;
using namespace finecast::testing_replay;

namespace {

/// Writes `cdl` (netCDF's text form) as a NetCDF file with ncgen; returns the file's path.
std::string ncgen(const ScratchDir& dir, const std::string& name, const std::string& cdl) {
  write_text(dir.file(name + ".cdl"), cdl);
  const CommandResult r = run_command("ncgen -o " + dir.file(name + ".nc") + " " + dir.file(name + ".cdl"));
  if (r.rc != 0) throw std::runtime_error("ncgen failed: " + r.output);
  return dir.file(name + ".nc");
}

/// What a test varies in tas_cdl's file.
struct TasFile {
  std::string attributes = "    tas:_FillValue = 1.e+20f ;\n";  ///< of tas besides its units
  std::string times;                                            ///< "" = 0, 1, 2, ...
  std::string lat = "-30, -10, 10, 30";
  std::string units = "K";  ///< "" = none
  std::string time_attributes = "    time:units = \"days since 2000-01-01\" ;\n";
};

/// tas(time, lat, lon) on a 4 x 4 grid with `steps` records of `values` (16 per record).
std::string tas_cdl(int steps, const std::string& values, const TasFile& f = {}) {
  std::string times = f.times;
  for (int i = 0; i < steps && f.times.empty(); ++i) times += (i ? ", " : "") + std::to_string(i);
  const std::string data = steps > 0 ? "  time = " + times + " ;\n  tas = " + values + " ;\n" : "";
  return "netcdf tas {\ndimensions:\n  time = UNLIMITED ;\n  lat = 4 ;\n  lon = 4 ;\nvariables:\n"
         "  double time(time) ;\n" +
         f.time_attributes +
         "  double lat(lat) ;\n    lat:units = \"degrees_north\" ;\n"
         "  double lon(lon) ;\n    lon:units = \"degrees_east\" ;\n"
         "  float tas(time, lat, lon) ;\n" +
         (f.units.empty() ? std::string() : "    tas:units = \"" + f.units + "\" ;\n") + f.attributes +
         "data:\n  lat = " + f.lat + " ;\n  lon = 0, 90, 180, 270 ;\n" + data + "}\n";
}

/// `steps` records of 280 K, with `bad` at index `at` of step `step`.
std::string values_with(int steps, int step, int at, const std::string& bad) {
  std::string values;
  for (int t = 0; t < steps; ++t)
    for (int i = 0; i < 16; ++i)
      values += std::string(values.empty() ? "" : ", ") + (t == step && i == at ? bad : "280");
  return values;
}

/// finecast-replay on one rank, without plugins, under a time limit.
CommandResult replay(const ScratchDir& dir, const std::string& run_file) {
  write_text(dir.file("run.yaml"), run_file);
  return run_command("timeout -k 5 60 mpiexec -n 1 " + binary("finecast-replay") + " --config " + dir.file("run.yaml") +
                     " --progress none");
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
  EXPECT_NE(r.output.find(input + ", variable 'tas', step 0: 2 value(s) outside the valid or plausible range "
                                  "(beyond _FillValue 1e+20, plausible range [-100, 400] (units K, finecast's "
                                  "plausibility table)) treated as missing, e.g. index 3: 3e+38"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("3 value(s) of 'tas' outside its valid range (beyond _FillValue 1e+20, plausible range "
                          "[-100, 400] (units K, finecast's plausibility table)) treated as missing in 2 replay "
                          "steps"),
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

// An input whose 4 steps carry one time: replay logged 4 samplings and its plugin kept 1 record.
// Refused when the file is opened, naming the file, the time variable and the step; also when
// the files given one after another overlap in time.
TEST(ReplayBadInput, RepeatedTimesAreRefusedWhenTheFileIsOpened) {
  ScratchDir dir("replay_times");
  TasFile same;
  same.times = "0, 0, 0, 0";
  const std::string input = ncgen(dir, "same", tas_cdl(4, values_with(4, -1, 0, ""), same));
  const fr::ReplayRunConfig c = fr::parse_replay_run_config(run_file(input), dir.file("run.yaml"));
  try {
    fr::ReplayInput in(c);
    ADD_FAILURE() << "no error for repeated times";
  } catch (const finecast::IoError& e) {
    EXPECT_NE(std::string(e.what()).find(input + ", time variable 'time': step 1 at 2000-01-01T00:00:00 (value 0) "
                                                 "repeats the time of step 0"),
              std::string::npos)
        << e.what();
  }
  const CommandResult r = replay(dir, run_file(input));
  EXPECT_EQ(r.rc, 1) << r.output;
  EXPECT_NE(r.output.find("repeats the time of step 0"), std::string::npos) << r.output;

  // Two files whose times overlap (the second starts where the first started).
  const std::string a = ncgen(dir, "a", tas_cdl(2, values_with(2, -1, 0, "")));
  const std::string b = ncgen(dir, "b", tas_cdl(2, values_with(2, -1, 0, "")));
  const fr::ReplayRunConfig two = fr::parse_replay_run_config(
      "input: {files: [" + a + ", " + b + "], variables: [tas]}\ngrid: {type: latlon}\n", dir.file("run.yaml"));
  try {
    fr::ReplayInput in(two);
    ADD_FAILURE() << "no error for overlapping files";
  } catch (const finecast::IoError& e) {
    EXPECT_NE(std::string(e.what()).find(b + ": its first step, 2000-01-01T00:00:00, is not after the last step of " +
                                         a + ", 2000-01-02T00:00:00"),
              std::string::npos)
        << e.what();
  }
  // A time.start date that no calendar day is.
  const fr::ReplayRunConfig feb30 = fr::parse_replay_run_config(
      "input: {files: [" + a + "], variables: [tas]}\ngrid: {type: latlon}\ntime: {start: 2000-02-30}\n",
      dir.file("run.yaml"));
  EXPECT_THROW(fr::ReplayInput{feb30}, finecast::ConfigError);
}

// One value of 1e30 in a file without _FillValue or valid_range: replay's samples reached
// 3.5e28 K. Now missing (NaN, so the patch is not trained on), logged with its step, index and
// value, and counted at the end; input.variables[].plausible overrides the table.
TEST(ReplayBadInput, AnOutlierWithoutFillValueIsMissingReportedAndCounted) {
  ScratchDir dir("replay_outlier");
  TasFile plain;
  plain.attributes = "    tas:standard_name = \"air_temperature\" ;\n";
  const std::string input = ncgen(dir, "outlier", tas_cdl(3, values_with(3, 1, 5, "1e30"), plain));
  const CommandResult r = replay(dir, run_file(input));
  ASSERT_EQ(r.rc, 0) << r.output;
  EXPECT_NE(r.output.find(input + ", variable 'tas', step 1: 1 value(s) outside the valid or plausible range "
                                  "(plausible range [150, 350] (air_temperature in K, finecast's plausibility "
                                  "table)) treated as missing, e.g. index 5: 1e+30"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("1 value(s) of 'tas' outside its valid range (plausible range [150, 350]"), std::string::npos)
      << r.output;

  fr::ReplayInput in(fr::parse_replay_run_config(run_file(input), dir.file("run.yaml")));
  std::vector<float> v(16);
  EXPECT_EQ(in.read(1, 0, v.data()), 1);
  EXPECT_TRUE(std::isnan(v[5]));
  EXPECT_EQ(v[4], 280.0f);
  fr::ReplayInput off(fr::parse_replay_run_config(
      "input: {files: [" + input + "], variables: [{var: tas, plausible: none}]}\ngrid: {type: latlon}\n",
      dir.file("run.yaml")));
  EXPECT_EQ(off.read(1, 0, v.data()), 0);
  EXPECT_EQ(v[5], 1e30f);
  EXPECT_THROW(fr::parse_replay_run_config("input: {files: [" + input + "], variables: [{var: tas, plausible: 5}]}\n",
                                           dir.file("run.yaml")),
               finecast::ConfigError);
  fr::ReplayInput again(fr::parse_replay_run_config(run_file(input), dir.file("run.yaml")));
  EXPECT_EQ(again.read(1, 0, v.data()), 1) << "a run file's overrides do not outlive it";
}

// Latitude 200 was accepted and written to the output.
TEST(ReplayBadInput, LatitudesOutsideMinus90To90AreRefused) {
  ScratchDir dir("replay_lat");
  TasFile far;
  far.lat = "-30, -10, 10, 200";
  const std::string input = ncgen(dir, "lat200", tas_cdl(1, values_with(1, -1, 0, ""), far));
  const CommandResult r = replay(dir, run_file(input));
  EXPECT_EQ(r.rc, 1) << r.output;
  EXPECT_NE(r.output.find(input + "', variable 'tas': latitude coordinate 'lat' is 200.000000 at index 3, expected "
                                  "degrees in [-90, 90]"),
            std::string::npos)
      << r.output;
}

// sample.output names the replayed CDF-5 input, through a symbolic link and a relative path:
// refused at start-up, naming the key and both paths, before any file is touched (no checkpoint
// directory is made), and the input is unchanged byte for byte. Once the plugin's output
// replaced the input and the replay went on reading the plugin's half-written samples.
TEST(ReplayBadInput, AnOutputThatIsTheInputIsRefusedAndTheInputIsUnchanged) {
  ScratchDir dir("replay_output_is_input");
  const std::string input = dir.file("tas5.nc");
  const CommandResult copy = run_command("nccopy -k cdf5 " + kTas + " " + input);
  ASSERT_EQ(copy.rc, 0) << copy.output;
  ASSERT_EQ(symlink("tas5.nc", dir.file("link.nc").c_str()), 0);
  const std::string before = read_bytes(input);
  write_text(dir.file("plugin.yaml"), tiny_plugin_config(dir.path()));
  std::string run = tiny_run_file(dir.file("plugin.yaml"), "lat_bands");
  run.replace(run.find(kTas), kTas.size(), input);
  write_text(dir.file("run.yaml"), run);
  const CommandResult r =
      run_command("cd '" + dir.path() + "' && timeout -k 5 120 mpiexec -n 2 --oversubscribe " +
                  binary("finecast-replay") + " --config run.yaml --progress none --set sample.output=link.nc");
  EXPECT_NE(r.rc, 0) << r.output;
  EXPECT_NE(r.output.find("sample.output: link.nc is the input file " + input +
                          " (the same file), which the host reads; name another output file"),
            std::string::npos)
      << r.output;
  EXPECT_TRUE(read_bytes(input) == before) << "the input was changed";
  EXPECT_FALSE(exists(dir.file("checkpoints"))) << r.output;
}

// A 360_day file whose time unit's reference date is February 30: a valid date of its calendar.
// Replay took the step length in the proleptic Gregorian calendar and refused the file, blaming
// the run file; the file's own calendar applies, and a message about the file names the file.
TEST(ReplayBadInput, AReferenceDateOfTheFilesOwnCalendarIsAccepted) {
  ScratchDir dir("replay_360");
  TasFile f;
  f.time_attributes = "    time:units = \"days since 2000-02-30\" ;\n    time:calendar = \"360_day\" ;\n";
  const std::string input = ncgen(dir, "tas360", tas_cdl(3, values_with(3, -1, 0, ""), f));
  const fr::ReplayInput in(fr::parse_replay_run_config(run_file(input), dir.file("run.yaml")));
  EXPECT_EQ(in.datetime(1), "2000-03-01T00:00:00");
  EXPECT_EQ(in.step_seconds(), 86400.0);
  const CommandResult r = replay(dir, run_file(input));
  EXPECT_EQ(r.rc, 0) << r.output;
  EXPECT_EQ(r.output.find("proleptic_gregorian"), std::string::npos) << r.output;
}

// A constant field of 1e-40 without units (no plausibility range applies): float32 cannot
// resolve it, and the plugin trained on it without a word (its samples were 1e28 times the
// field). The plugin names the field at the run's first step; a constant field of ordinary
// values is named too.
TEST(ReplayBadInput, ATinyOrConstantFieldIsNamedInAWarning) {
  ScratchDir dir("replay_tiny");
  TasFile f;
  f.units = "";
  f.attributes = "";
  for (const auto& [value, warning] :
       {std::pair<std::string, std::string>{"1e-40", ": every value is below 1e-30 in magnitude (the largest is "},
        {"280", " is constant (280 on every coarse cell): there is nothing to downscale"}}) {
    SCOPED_TRACE(value);
    std::string values;
    for (int i = 0; i < 32; ++i) values += std::string(i ? ", " : "") + value;
    const std::string input = ncgen(dir, "tiny", tas_cdl(2, values, f));
    write_text(dir.file("plugin.yaml"), "fields: [tas]\ndevice: cpu\ngrid: {type: latlon, file: " + input +
                                            ", block: 2}\nbuffer: {capacity: 4}\n"
                                            "model: {hidden: 8, depth: 1, time_embedding: 8, diffusion_steps: 4}\n"
                                            "train: {every: 10, min_steps: 4, threads: 1}\n"
                                            "sample: {every: 0, members: 2, steps: 2, output: " +
                                            dir.file("out.nc") + "}\ncheckpoint: {dir: " + dir.file("ckpt") + "}\n");
    const CommandResult r =
        replay(dir, run_file(input) + "plugins:\n  - {name: finecast, library: " + plugin_library() +
                        ", options: " + dir.file("plugin.yaml") + "}\n");
    EXPECT_EQ(r.rc, 0) << r.output;
    EXPECT_NE(r.output.find("WARNING: Host field tas at 2000-01-01T00:00:00" + warning), std::string::npos) << r.output;
  }
}
