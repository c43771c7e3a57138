// SPDX-License-Identifier: BSD-3-Clause
// The reference Python plugin of the in-situ benchmark (bench/python_reference_plugin.py, loaded
// by bench/python_adapter.c; finecast-bench plugin --python-reference) in finecast-host on 2
// ranks of the real R2B4 grid, training in its callback and on a Python thread, and under the
// real ComIn's comin_replay: what it writes back into its host variable must have each R2B0
// parent's area-weighted mean of ts and structure inside the parent
// (tests/comin/check_python_reference.py, from recorder files). Wrong cell orders in the gather
// or scatter, or a wrong MPI datatype, break that.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>

#include "tests/plugin/replay_test_util.hpp"

namespace ftr = finecast::testing_replay;

#ifndef FINECAST_PYTHON_ADAPTER

TEST(PythonReference, NeedsPythonHeaders) {
  GTEST_SKIP() << "bench/python_adapter.c was not built: Debian's python3-dev is missing (scripts/setup.sh "
                  "installs it), or this is a sanitizer build (bench/CMakeLists.txt says why)";
}

#else

namespace {

const std::string kCheck = std::string(FINECAST_SOURCE_DIR) + "/tests/comin/check_python_reference.py";

/// The Python plugin's options: sessions and samplings at steps 4 and 8 of an 8-step run.
std::string python_options(const std::string& extra) {
  return std::string(FINECAST_SOURCE_DIR) +
         "/bench/python_reference_plugin.py --capacity 4 --every 4 --epochs 1 --batch 64 --sample-every 4 "
         "--members 2 --sampler ddim --sample-steps 2 --threads 1 --report pyref.json" +
         extra;
}

std::string run_file(const std::string& plugins, double step_seconds) {
  return "grid: " + ftr::kIconGrid +
         "\norography: /usr/share/ferret-vis/data/etopo20.cdf\norography_variable: ROSE\n"
         "start: 1979-01-01T00:00:00\ndt: 1800\nsteps: 8\nnproma: 24\nprogress_every: 0\nstep_seconds: " +
         std::to_string(step_seconds) + "\nplugins:\n" + plugins;
}

/// Every run of these tests uses 2 ranks.
ftr::CommandResult mpirun(const std::string& dir, const std::string& command) { return ftr::mpirun(dir, 2, command); }

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

}  // namespace

TEST(PythonReference, WritesBackConservativeSamplesInFinecastHostInItsCallbackAndOnAThread) {
  ftr::ScratchDir dir("python_reference");
  for (const bool async : {false, true}) {
    const std::string d = dir.file(async ? "async" : "sync");
    ASSERT_EQ(ftr::run_command("mkdir -p '" + d + "'").rc, 0);
    // On a thread the session of step 4 must finish before step 8 samples: the steps take 0.5 s.
    ftr::write_text(d + "/host.yaml", run_file("  - {name: pyref, library: " + std::string(FINECAST_PYTHON_ADAPTER) +
                                                   ", options: \"" + python_options(async ? " --async" : "") +
                                                   "\"}\n  - {name: recorder, library: " + ftr::kRecorder +
                                                   ", options: \"rec_ vars=ts,ts_pyref\"}\n",
                                               async ? 0.5 : 0.0));
    const ftr::CommandResult host = mpirun(d, ftr::binary("finecast-host") + " host.yaml --step-times times.csv");
    ASSERT_EQ(host.rc, 0) << host.output;
    const std::string report = read_file(d + "/pyref.json");
    EXPECT_NE(report.find(async ? "\"asynchronous\": true" : "\"asynchronous\": false"), std::string::npos) << report;
    const ftr::CommandResult check = ftr::run_command("/usr/bin/python3 " + kCheck + " " + d + "/rec_ " + d +
                                                      "/rec_vars_ 2 " + (async ? "8" : "4 8"));
    EXPECT_EQ(check.rc, 0) << check.output << "\n" << host.output;
    // --step-times: one line per step after the header, numbered 1..8; the plugin ran in every
    // step and took part of it (a step holds its callbacks).
    const std::string times = read_file(d + "/times.csv");
    EXPECT_EQ(times.rfind("step,plugin_seconds,step_seconds\n", 0), 0u) << times;
    EXPECT_EQ(std::count(times.begin(), times.end(), '\n'), 9) << times;
    std::istringstream rows(times.substr(times.find('\n') + 1));
    int step = 0, expected = 0;
    double plugin = 0, wall = 0;
    char comma = 0;
    while (rows >> step >> comma >> plugin >> comma >> wall) {
      EXPECT_EQ(step, ++expected) << times;
      EXPECT_GT(plugin, 0.0) << "step " << step << "\n" << times;
      EXPECT_LE(plugin, wall) << "step " << step << "\n" << times;
    }
    EXPECT_EQ(expected, 8) << times;
  }
}

// A usage error in the script's options stops the whole run through ComIn (argparse's SystemExit
// would otherwise end one rank and leave the other waiting in MPI).
TEST(PythonReference, ABadOptionStopsEveryRankNamingIt) {
  ftr::ScratchDir dir("python_reference_bad");
  ftr::write_text(dir.file("host.yaml"), run_file("  - {name: pyref, library: " + std::string(FINECAST_PYTHON_ADAPTER) +
                                                      ", options: \"" + python_options(" --bogus 3") + "\"}\n",
                                                  0.0));
  const ftr::CommandResult host = mpirun(dir.file(""), "timeout 120 " + ftr::binary("finecast-host") + " host.yaml");
  EXPECT_NE(host.rc, 0) << host.output;
  EXPECT_NE(host.rc, 124) << "a rank hung until timeout killed it:\n" << host.output;
  EXPECT_NE(host.output.find("unrecognized arguments: --bogus 3"), std::string::npos) << host.output;
  EXPECT_NE(host.output.find("exited while loading"), std::string::npos) << host.output;
}

#ifdef FINECAST_COMIN_BUILD_DIR
// The same plugin binary and script under the real ComIn 0.3 (comin_replay playing a finecast-host
// recording of ts), its write-back recorded by ComIn's own variable recorder.
TEST(PythonReference, RunsUnderTheRealComInReplay) {
  const std::string comin = FINECAST_COMIN_BUILD_DIR;
  ftr::ScratchDir dir("python_reference_replay");
  const std::string host_dir = dir.file("host"), replay_dir = dir.file("replay");
  ASSERT_EQ(ftr::run_command("mkdir -p '" + host_dir + "/rec' '" + replay_dir + "'").rc, 0);
  ftr::write_text(
      host_dir + "/host.yaml",
      run_file("  - {name: recorder, library: " + ftr::kRecorder + ", options: \"rec/run_ vars=ts\"}\n", 0.0));
  ASSERT_EQ(mpirun(host_dir, ftr::binary("finecast-host") + " host.yaml").rc, 0);
  const std::string nml =
      "&replay_tool_nml\n  replay_data_path = \"" + host_dir +
      "/rec/run_\"\n  msg_level = 0\n/\n&comin_nml\n"
      "  plugin_list(1)%name = \"comin_var_replay_plugin\"\n"
      "  plugin_list(1)%plugin_library = \"" +
      comin + "/replay_tool/libcomin_var_replay_plugin.so\"\n  plugin_list(1)%options = \"" + host_dir +
      "/rec/run_vars_\"\n"
      "  plugin_list(2)%name = \"pyref\"\n  plugin_list(2)%plugin_library = \"" +
      FINECAST_PYTHON_ADAPTER + "\"\n  plugin_list(2)%options = \"" + python_options("") +
      "\"\n  plugin_list(3)%name = \"comin_var_recorder_plugin\"\n"
      "  plugin_list(3)%plugin_library = \"" +
      comin + "/replay_tool/libcomin_var_recorder_plugin.so\"\n  plugin_list(3)%options = \"ts,ts_pyref\"\n/\n";
  ftr::write_text(replay_dir + "/replay.nml", nml);
  const ftr::CommandResult replay = mpirun(replay_dir, comin + "/replay_tool/comin_replay replay.nml");
  ASSERT_EQ(replay.rc, 0) << replay.output;
  EXPECT_NE(replay.output.find("[pyref] 8 steps, 2 session(s), 2 sampling(s)"), std::string::npos) << replay.output;
  const ftr::CommandResult check =
      ftr::run_command("/usr/bin/python3 " + kCheck + " " + host_dir + "/rec/run_ " + replay_dir + "/vars_ 2 4 8");
  EXPECT_EQ(check.rc, 0) << check.output << "\n" << replay.output;
}
#endif

#endif
