// SPDX-License-Identifier: BSD-3-Clause
// The very same libfinecast_comin.so in finecast-host and under the real ComIn 0.3 (its replay
// tool comin_replay, built from its sources: tests/comin/CMakeLists.txt), on 1, 2 and 4 ranks:
// finecast-host records a run with finecast's recorder plugin while it runs finecast, ComIn's
// simple_c example and finecast's probe plugin (compiled against ComIn's own comin.h); comin_replay
// plays the recording back with ComIn's comin_var_replay_plugin and the same plugins. Everything
// each plugin observes and writes must be equal. Skipped unless configured with
// -DFINECAST_COMIN_SOURCE (scripts/test.sh does so when ../shared/third_party/comin-0.3.0 exists).
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <array>
#include <map>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "tests/plugin/replay_test_util.hpp"

namespace ftr = finecast::testing_replay;

#ifndef FINECAST_COMIN_BUILD_DIR

TEST(RealComin, NeedsComInSources) {
  GTEST_SKIP() << "the real-ComIn tests are off: configure with -DFINECAST_COMIN_SOURCE=<ComIn 0.3 sources> "
                  "(scripts/test.sh does when ../shared/third_party/comin-0.3.0 exists)";
}

#else

namespace {

using ftr::mpirun;

const std::string kComin = FINECAST_COMIN_BUILD_DIR;
const std::string kReplay = kComin + "/replay_tool/comin_replay";
const std::string kVarReplay = kComin + "/replay_tool/libcomin_var_replay_plugin.so";
const std::string kRunRecorder = kComin + "/replay_tool/libcomin_run_recorder_plugin.so";
const std::string kVarRecorder = kComin + "/replay_tool/libcomin_var_recorder_plugin.so";
const std::string kSimpleC = kComin + "/plugins/simple_c/libsimple_c_plugin.so";
const std::string kProbe = kComin + "/probe/libcomin_probe_plugin.so";
const std::string kCompare = std::string(FINECAST_SOURCE_DIR) + "/tests/comin/compare_netcdf.py";
const std::string kRecordedVars = "ts,ps,temp,pres,topography_c,fr_land";
const std::string kProbeOptions = "vars=ts,temp:5,topography_c out=probe_out";

/// finecast with write-back into its own variable, sampling and checkpoints: every output path
/// of the plugin is exercised.
std::string recorded_plugin_config() {
  return "fields: [ts]\nseed: 3\ndevice: cpu\n"
         "grid: {type: icon, file: " +
         ftr::kIconGrid +
         ", coarse_level: 0}\n"
         "patch: {orography: topography_c}\n"
         "buffer: {capacity: 4}\n"
         "model: {hidden: 32, depth: 2, time_embedding: 16, diffusion_steps: 10}\n"
         "train: {async: false, every: 4, min_steps: 4, epochs: 1, batch_size: 64, warmup_steps: 2, threads: 1}\n"
         "sample: {every: 4, members: 2, steps: 2, output: out.nc, write_back: ts_finecast}\n"
         "checkpoint: {dir: ckpt, keep: 2}\n";
}

std::string recorded_host_run_file(const std::string& plugins) {
  return "grid: " + ftr::kIconGrid +
         "\norography: /usr/share/ferret-vis/data/etopo20.cdf\norography_variable: ROSE\n"
         "start: 1979-01-01T00:00:00\ndt: 1800\nsteps: 8\nnproma: 24\nnlev: 5\nprogress_every: 0\n"
         "plugins:\n" +
         plugins;
}

std::string host_plugin(const std::string& name, const std::string& library, const std::string& options) {
  return "  - {name: " + name + ", library: " + library + ", options: \"" + options + "\"}\n";
}

/// comin_replay's namelist: the recording, then each plugin (name, library, options); `comms`
/// gives some of them a communicator name (ComIn's `comm`).
std::string replay_namelist(const std::string& recording, const std::vector<std::array<std::string, 3> >& plugins,
                            const std::map<std::string, std::string>& comms = {}) {
  std::string nml = "&replay_tool_nml\n  replay_data_path = \"" + recording + "\"\n  msg_level = 0\n/\n&comin_nml\n";
  for (size_t i = 0; i < plugins.size(); ++i) {
    const std::string p = "  plugin_list(" + std::to_string(i + 1) + ")%";
    nml += p + "name = \"" + plugins[i][0] + "\"\n" + p + "plugin_library = \"" + plugins[i][1] + "\"\n" + p +
           "options = \"" + plugins[i][2] + "\"\n";
    if (const auto it = comms.find(plugins[i][0]); it != comms.end()) nml += p + "comm = \"" + it->second + "\"\n";
  }
  return nml + "/\n";
}

/// The messages a plugin printed through comin_print_info ("INFO(name): message"), in order.
std::vector<std::string> messages_of(const std::string& output, const std::string& plugin) {
  std::vector<std::string> lines;
  std::istringstream in(output);
  const std::string tag = "INFO(" + plugin + "): ";
  for (std::string line; std::getline(in, line);) {
    const size_t at = line.find(tag);
    if (at != std::string::npos) lines.push_back(line.substr(at + tag.size()));
  }
  return lines;
}

/// simple_c's observable lines as a sorted multiset, each metadata key with its value line. Its
/// variable list depends on the host (comin_replay has only the requested variables and its
/// tracer container), and ComIn iterates metadata in hash order, finecast in key order.
std::vector<std::string> simple_c_observations(const std::string& output) {
  std::vector<std::string> lines;
  for (const std::string& m : messages_of(output, "simple_c")) {
    if (m.rfind("found variable:", 0) == 0) continue;
    if (m.rfind(" value:", 0) == 0 && !lines.empty())
      lines.back() += m;
    else
      lines.push_back(m);
  }
  std::sort(lines.begin(), lines.end());
  return lines;
}

struct FileId {
  ino_t inode = 0;
  off_t size = 0;
  time_t mtime = 0;
  bool operator==(const FileId& o) const { return inode == o.inode && size == o.size && mtime == o.mtime; }
};

FileId file_id(const std::string& path) {
  struct stat st {};
  stat(path.c_str(), &st);
  return {st.st_ino, st.st_size, st.st_mtime};
}

/// host/ (with rec/) and replay/ in `dir`, each with finecast's plugin.yaml.
std::pair<std::string, std::string> host_and_replay_dirs(const ftr::ScratchDir& dir) {
  const std::string host_dir = dir.file("host"), replay_dir = dir.file("replay");
  EXPECT_EQ(ftr::run_command("mkdir -p '" + host_dir + "/rec' '" + replay_dir + "'").rc, 0);
  ftr::write_text(host_dir + "/plugin.yaml", recorded_plugin_config());
  ftr::write_text(replay_dir + "/plugin.yaml", recorded_plugin_config());
  return {host_dir, replay_dir};
}

/// finecast's output (but its history) and the checkpoint and buffer of step 10 are the same in
/// both run directories, bitwise.
void expect_same_finecast_outputs(const std::string& a, const std::string& b) {
  const ftr::CommandResult out = ftr::run_command("/usr/bin/python3 " + kCompare + " " + a + "/out.nc " + b +
                                                  "/out.nc --ignore history finecast_checkpoint");
  EXPECT_EQ(out.rc, 0) << out.output;
  // The checkpoint's metadata also holds the config each run resolved (its text and hash, which
  // name each run's own directory): every other attribute, and all data, agree bitwise.
  for (const std::string file : {"ckpt_00000010.h5", "buffer_00000010.h5"}) {
    const ftr::CommandResult diff = ftr::run_command("h5diff --exclude-attribute /metadata '" + a + "/ckpt/" + file +
                                                     "' '" + b + "/ckpt/" + file + "'");
    EXPECT_EQ(diff.rc, 0) << file << ": " << diff.output;
  }
  const ftr::CommandResult meta = ftr::run_command(
      "/usr/bin/python3 -c \"import h5py, sys\n"
      "a, b = [dict(h5py.File(d + '/ckpt/ckpt_00000010.h5', 'r')['metadata'].attrs) for d in sys.argv[1:]]\n"
      "bad = sorted(k for k in set(a) | set(b) if not k.startswith('config_') and a.get(k) != b.get(k))\n"
      "sys.exit('differ: ' + ', '.join(bad) if bad else 0)\" '" +
      a + "' '" + b + "'");
  EXPECT_EQ(meta.rc, 0) << meta.output;
}

/// What finecast's recorder wrote in host/rec/ (run_<rank>.nc, run_vars_<rank>.nc) is what
/// ComIn's own recorders wrote in replay/ (comin_run_<rank>.nc, vars_<rank>.nc) when they
/// re-recorded its replay: comin_replay adds its own device strings, everything finecast recorded
/// comes back.
void expect_same_recordings(const std::string& host_dir, const std::string& replay_dir, int ranks) {
  for (int rank = 0; rank < ranks; ++rank) {
    const std::string r = std::to_string(rank);
    const ftr::CommandResult run =
        ftr::run_command("/usr/bin/python3 " + kCompare + " " + host_dir + "/rec/run_" + r + ".nc " + replay_dir +
                         "/comin_run_" + r + ".nc --subset --ignore device_name device_vendor device_driver");
    EXPECT_EQ(run.rc, 0) << run.output;
    const ftr::CommandResult vars = ftr::run_command("/usr/bin/python3 " + kCompare + " " + host_dir +
                                                     "/rec/run_vars_" + r + ".nc " + replay_dir + "/vars_" + r + ".nc");
    EXPECT_EQ(vars.rc, 0) << vars.output;
  }
}

}  // namespace

class RealComin : public ::testing::TestWithParam<int> {};

// The tentpole: one plugin file, two hosts, equal outputs, checkpoints and observations.
TEST_P(RealComin, TheSamePluginFileGivesTheSameResultsInFinecastHostAndComInReplay) {
  const int ranks = GetParam();
  const std::string plugin = ftr::plugin_library();
  const FileId before = file_id(plugin);
  ftr::ScratchDir dir("real_comin");
  const auto [host_dir, replay_dir] = host_and_replay_dirs(dir);

  ftr::write_text(
      host_dir + "/host.yaml",
      recorded_host_run_file(host_plugin("recorder", ftr::kRecorder, "rec/run_ vars=" + kRecordedVars) +
                             host_plugin("probe", kProbe, kProbeOptions) + host_plugin("simple_c", kSimpleC, "") +
                             host_plugin("finecast", plugin, "plugin.yaml")));
  const ftr::CommandResult host = mpirun(host_dir, ranks, ftr::binary("finecast-host") + " host.yaml");
  ASSERT_EQ(host.rc, 0) << host.output;

  ftr::write_text(
      replay_dir + "/replay.nml",
      replay_namelist(host_dir + "/rec/run_", {{"comin_var_replay_plugin", kVarReplay, host_dir + "/rec/run_vars_"},
                                               {"probe", kProbe, kProbeOptions},
                                               {"simple_c", kSimpleC, ""},
                                               {"finecast", plugin, "plugin.yaml"}}));
  const ftr::CommandResult replay = mpirun(replay_dir, ranks, kReplay + " replay.nml");
  ASSERT_EQ(replay.rc, 0) << replay.output;
  EXPECT_TRUE(file_id(plugin) == before) << "the plugin file changed between the two runs";

  // What the probe (ComIn's header, ComIn's libcomin in the replay) and simple_c observed.
  const auto probe_host = messages_of(host.output, "probe"), probe_replay = messages_of(replay.output, "probe");
  EXPECT_EQ(probe_host, probe_replay);
  // 2 lines in comin_main, 2 + 3 variables + 1 output in the secondary constructor, 5 per step, 1 at the end.
  EXPECT_EQ(probe_host.size(), 2u + 6u + 8u * 5u + 1u) << host.output;
  EXPECT_NE(
      std::find(probe_host.begin(), probe_host.end(), "probe out probe_out long_name=probe zaxis_id=1 block_dim=1"),
      probe_host.end());
  EXPECT_EQ(simple_c_observations(host.output), simple_c_observations(replay.output));
  EXPECT_FALSE(simple_c_observations(host.output).empty());

  // finecast: the same training, samples, write-back, output file and checkpoints, bitwise.
  for (const char* line : {"Training session 2 at 1979-01-01T04:00:00: 4 steps in buffer = 320 samples",
                           "Sampled 2 member(s) at 1979-01-01T04:00:00"}) {
    EXPECT_NE(host.output.find(line), std::string::npos) << host.output;
    EXPECT_NE(replay.output.find(line), std::string::npos) << replay.output;
  }
  expect_same_finecast_outputs(host_dir, replay_dir);
}

INSTANTIATE_TEST_SUITE_P(Ranks, RealComin, ::testing::Values(1, 2, 4), [](const ::testing::TestParamInfo<int>& info) {
  return "on" + std::to_string(info.param) + "ranks";
});

// train.placement external under the real ComIn: comin_replay makes the plugin's communicator
// with ComIn's own handshake (`comm = "finecast"` in its namelist), a finecast-trainer process
// joins it with finecast's, and the run gives what finecast-host gives with the trainer inside
// the host: the same output and checkpoints, bitwise.
TEST(RealCominExternal, AFinecastTrainerJoinsComInsHandshake) {
  ftr::ScratchDir dir("real_comin_external");
  const auto [host_dir, replay_dir] = host_and_replay_dirs(dir);
  ftr::write_text(host_dir + "/host.yaml",
                  recorded_host_run_file(host_plugin("recorder", ftr::kRecorder, "rec/run_ vars=" + kRecordedVars) +
                                         host_plugin("finecast", ftr::plugin_library(), "plugin.yaml")));
  const ftr::CommandResult host = mpirun(host_dir, 2, ftr::binary("finecast-host") + " host.yaml");
  ASSERT_EQ(host.rc, 0) << host.output;

  ftr::write_text(replay_dir + "/replay.nml",
                  replay_namelist(host_dir + "/rec/run_",
                                  {{"comin_var_replay_plugin", kVarReplay, host_dir + "/rec/run_vars_"},
                                   {"finecast", ftr::plugin_library(),
                                    "plugin.yaml coupling.communicator=plugin train.placement=external"}},
                                  {{"finecast", "finecast"}}));
  const ftr::CommandResult replay =
      mpirun(replay_dir, 2, kReplay + " replay.nml : -n 1 " + ftr::binary("finecast-trainer") + " --comm finecast");
  ASSERT_EQ(replay.rc, 0) << replay.output;
  EXPECT_NE(replay.output.find("trainer rank 2 (finecast-trainer processes)"), std::string::npos) << replay.output;
  EXPECT_NE(replay.output.find("Sampled 2 member(s) at 1979-01-01T04:00:00"), std::string::npos) << replay.output;
  expect_same_finecast_outputs(host_dir, replay_dir);
}

// train.async: true under the real comin_replay, which initialises MPI with MPI_Init
// (MPI_THREAD_SINGLE, as ICON's GPU builds do): the one trainer rank makes no MPI call on its
// training thread, so it trains asynchronously there, and the run trains and samples.
TEST(RealCominAsync, TrainsAndSamplesUnderComInReplaysMpiInit) {
  ftr::ScratchDir dir("real_comin_async");
  const auto [host_dir, replay_dir] = host_and_replay_dirs(dir);
  ftr::write_text(host_dir + "/host.yaml",
                  recorded_host_run_file(host_plugin("recorder", ftr::kRecorder, "rec/run_ vars=" + kRecordedVars)));
  const ftr::CommandResult host = mpirun(host_dir, 2, ftr::binary("finecast-host") + " host.yaml");
  ASSERT_EQ(host.rc, 0) << host.output;
  ftr::write_text(
      replay_dir + "/replay.nml",
      replay_namelist(host_dir + "/rec/run_",
                      {{"comin_var_replay_plugin", kVarReplay, host_dir + "/rec/run_vars_"},
                       {"finecast", ftr::plugin_library(), "plugin.yaml train.async=true train.epochs=3"}}));
  const ftr::CommandResult replay = mpirun(replay_dir, 2, kReplay + " replay.nml");
  ASSERT_EQ(replay.rc, 0) << replay.output;
  for (const char* line : {"(asynchronous training)", "Epoch 3/3: avg loss = ", "Sampled 2 member(s) at "})
    EXPECT_NE(replay.output.find(line), std::string::npos) << line << "\n" << replay.output;
  struct stat st {};
  EXPECT_EQ(stat((replay_dir + "/out.nc").c_str(), &st), 0) << "no samples written";
  EXPECT_GT(st.st_size, 0);
}

// finecast's recorder writes what ComIn's own run and variable recorders write: ComIn's recorders
// re-record the replay of a finecast-host recording, and the files agree.
TEST(RealCominRecorder, WritesWhatComInsRecordersWrite) {
  ftr::ScratchDir dir("real_comin_recorder");
  const std::string host_dir = dir.file("host"), replay_dir = dir.file("replay");
  ASSERT_EQ(ftr::run_command("mkdir -p '" + host_dir + "/rec' '" + replay_dir + "'").rc, 0);
  ftr::write_text(host_dir + "/host.yaml",
                  recorded_host_run_file(host_plugin("recorder", ftr::kRecorder, "rec/run_ vars=" + kRecordedVars)));
  ASSERT_EQ(mpirun(host_dir, 2, ftr::binary("finecast-host") + " host.yaml").rc, 0);
  ftr::write_text(
      replay_dir + "/replay.nml",
      replay_namelist(host_dir + "/rec/run_", {{"comin_var_replay_plugin", kVarReplay, host_dir + "/rec/run_vars_"},
                                               {"comin_run_recorder_plugin", kRunRecorder, "comin_run_"},
                                               {"comin_var_recorder_plugin", kVarRecorder, kRecordedVars}}));
  const ftr::CommandResult replay = mpirun(replay_dir, 2, kReplay + " replay.nml");
  ASSERT_EQ(replay.rc, 0) << replay.output;
  expect_same_recordings(host_dir, replay_dir, 2);
}

// Fortran plugins use ComIn's Fortran module interface, which finecast-host does not offer: it
// refuses them at load with the reason, instead of crashing.
TEST(RealCominRecorder, FinecastHostRefusesFortranPluginsWithTheReason) {
  ftr::ScratchDir dir("real_comin_fortran");
  ftr::write_text(dir.file("host.yaml"),
                  recorded_host_run_file(host_plugin("comin_var_recorder_plugin", kVarRecorder, "ts")));
  const ftr::CommandResult r = mpirun(dir.path(), 1, ftr::binary("finecast-host") + " host.yaml");
  EXPECT_NE(r.rc, 0);
  EXPECT_NE(r.output.find("This is a Fortran plugin"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("comin_replay"), std::string::npos) << r.output;
}

/// A run recorded by finecast-host on `ranks` ranks, replayed by comin_replay on as many with
/// finecast coupling a field the recording does not hold (tsurf).
void replay_with_an_unknown_field(const ftr::ScratchDir& dir, int ranks, ftr::CommandResult& r) {
  const std::string host_dir = dir.file("host"), replay_dir = dir.file("replay");
  ASSERT_EQ(ftr::run_command("mkdir -p '" + host_dir + "/rec' '" + replay_dir + "'").rc, 0);
  ftr::write_text(host_dir + "/host.yaml",
                  recorded_host_run_file(host_plugin("recorder", ftr::kRecorder, "rec/run_ vars=ts,topography_c")));
  ASSERT_EQ(mpirun(host_dir, ranks, ftr::binary("finecast-host") + " host.yaml").rc, 0);
  ftr::write_text(replay_dir + "/plugin.yaml", recorded_plugin_config());
  ftr::write_text(
      replay_dir + "/replay.nml",
      replay_namelist(host_dir + "/rec/run_", {{"comin_var_replay_plugin", kVarReplay, host_dir + "/rec/run_vars_"},
                                               {"finecast", ftr::plugin_library(), "plugin.yaml fields=[tsurf]"}}));
  r = mpirun(replay_dir, ranks, kReplay + " replay.nml");
}

// Under ComIn an unknown field gets finecast's message (the host's variables listed), not
// ComIn's abort inside comin_var_get.
TEST(RealCominRecorder, AnUnknownFieldIsNamedByFinecastUnderComIn) {
  ftr::ScratchDir dir("real_comin_unknown");
  ftr::CommandResult r;
  ASSERT_NO_FATAL_FAILURE(replay_with_an_unknown_field(dir, 1, r));
  EXPECT_NE(r.rc, 0);
  // comin_replay has the requested variables (and its tracer container) only.
  EXPECT_NE(r.output.find("fields: the host has no variable \"tsurf\" on domain 1 (its variables there: container, ts, "
                          "topography_c, ts_finecast)"),
            std::string::npos)
      << r.output;
}

// One error, once, under the real ComIn too: a wrong field name on 4 ranks is one line of
// finecast's with the ranks (comin_replay's own stop prints its text on rank 0 only).
TEST(RealCominRecorder, AWrongFieldNameOnFourRanksIsPrintedOnce) {
  ftr::ScratchDir dir("real_comin_error_once");
  ftr::CommandResult r;
  ASSERT_NO_FATAL_FAILURE(replay_with_an_unknown_field(dir, 4, r));
  EXPECT_NE(r.rc, 0);
  std::istringstream in(r.output);
  int errors = 0;
  for (std::string line; std::getline(in, line);)  // (Open MPI's runtime's own lines aside)
    errors += line.find("ERROR") != std::string::npos && line.find("ORTE_ERROR_LOG") == std::string::npos &&
              line.find("PMIX_ERROR") == std::string::npos;
  EXPECT_LE(errors, 2) << r.output;
  EXPECT_NE(r.output.find("ERROR: EP_SECONDARY_CONSTRUCTOR failed on ranks 0-3: plugin.yaml: fields: the host has no "
                          "variable \"tsurf\""),
            std::string::npos)
      << r.output;
}

#ifdef FINECAST_COMIN_02_BUILD_DIR
// ---- ComIn 0.2.0, the ComIn of ICON 2024.x (tests/comin/CMakeLists.txt builds it) ----
// Its comin_replay reads the recording whose prefix is its one argument and its plugin list from
// master.nml in the working directory, and accepts only recordings of ComIn 0.2 (finecast's
// recorder writes them with format=0.2: the Fortran positions of a variable's dimensions instead
// of 0.3's dim_semantics).
namespace {

const std::string kComin02 = FINECAST_COMIN_02_BUILD_DIR;
const std::string kReplay02 = kComin02 + "/replay_tool/comin_replay";
const std::string kVarReplay02 = kComin02 + "/replay_tool/libcomin_var_replay_plugin.so";
const std::string kRunRecorder02 = kComin02 + "/replay_tool/libcomin_run_recorder_plugin.so";
const std::string kVarRecorder02 = kComin02 + "/replay_tool/libcomin_var_recorder_plugin.so";
const std::string kSimpleC02 = kComin02 + "/plugins/simple_c/libsimple_c_plugin.so";

/// master.nml for ComIn 0.2's comin_replay: the plugin list only.
std::string master_namelist(const std::vector<std::array<std::string, 3> >& plugins) {
  std::string nml = replay_namelist("", plugins);
  return nml.substr(nml.find("&comin_nml"));
}

/// finecast-host on `ranks` ranks in host/ recording in ComIn 0.2's format (and running the
/// `extra` plugins), then ComIn 0.2's comin_replay in replay/ with the recording's replay plugin
/// first and `plugins` after it. Returns the replay's result; `host` gets finecast-host's.
ftr::CommandResult replay_under_comin_02(const std::string& host_dir, const std::string& replay_dir, int ranks,
                                         const std::string& extra,
                                         const std::vector<std::array<std::string, 3> >& plugins,
                                         ftr::CommandResult& host) {
  ftr::write_text(
      host_dir + "/host.yaml",
      recorded_host_run_file(host_plugin("recorder", ftr::kRecorder, "rec/run_ vars=" + kRecordedVars + " format=0.2") +
                             extra));
  host = mpirun(host_dir, ranks, ftr::binary("finecast-host") + " host.yaml");
  if (host.rc != 0) return host;
  std::vector<std::array<std::string, 3> > list = {
      {"comin_var_replay_plugin", kVarReplay02, host_dir + "/rec/run_vars_"}};
  list.insert(list.end(), plugins.begin(), plugins.end());
  ftr::write_text(replay_dir + "/master.nml", master_namelist(list));
  return mpirun(replay_dir, ranks, kReplay02 + " " + host_dir + "/rec/run_");
}

}  // namespace

// The bar of ICON 2024.x: ComIn dlopens a plugin with RTLD_NOW, so every ComIn function the
// plugin links must be in that ComIn's libcomin.so.0. The plugin loads against both real ones
// (LD_LIBRARY_PATH wins over the plugin's RUNPATH, as it does in an ICON job), and the library
// it bound to is the real one.
TEST(RealComin02, ThePluginLoadsWithRtldNowAgainstComIn02And03) {
  for (const std::string& dir : {kComin02, kComin}) {
    const ftr::CommandResult r = ftr::run_command(
        "LD_LIBRARY_PATH='" + dir +
        "' /usr/bin/python3 -c \"import ctypes, os, sys\n"
        "ctypes.CDLL(sys.argv[1], mode=os.RTLD_NOW)\n"
        "maps = open('/proc/self/maps').read()\n"
        "libs = sorted({l.split()[-1] for l in maps.splitlines() if l.endswith('libcomin.so.0')})\n"
        "print(libs)\n"
        "sys.exit(0 if libs == [os.path.realpath(sys.argv[2] + '/libcomin.so.0')] else 'bound to ' + str(libs))\" '" +
        ftr::plugin_library() + "' '" + dir + "'");
    EXPECT_EQ(r.rc, 0) << dir << ": " << r.output;
  }
}

// Synchronous training under ComIn 0.2's comin_replay on 2 ranks gives what finecast-host gives
// on the same data, bitwise (output, checkpoint, buffer snapshot); the start-up line names
// ComIn 0.2.0, whose variable layout comes from comin_var_get_pos. ComIn 0.2's simple_c runs in
// finecast-host beside it (finecast's libcomin keeps 0.2's comin_var_get_pos).
TEST(RealComin02, TheSamePluginFileGivesTheSameResultsInFinecastHostAndComIn02Replay) {
  ftr::ScratchDir dir("real_comin_02");
  const auto [host_dir, replay_dir] = host_and_replay_dirs(dir);
  ftr::CommandResult host;
  const ftr::CommandResult replay = replay_under_comin_02(
      host_dir, replay_dir, 2,
      host_plugin("simple_c", kSimpleC02, "") + host_plugin("finecast", ftr::plugin_library(), "plugin.yaml"),
      {{"finecast", ftr::plugin_library(), "plugin.yaml"}}, host);
  ASSERT_EQ(host.rc, 0) << host.output;
  ASSERT_EQ(replay.rc, 0) << replay.output;
  // simple_c of ComIn 0.2 (stderr lines of its own) ran through a whole run in finecast-host.
  for (const char* line : {"simple_c_constructor called!", "simple_c_diagfct called!", "simple_c_destructor called!"})
    EXPECT_NE(host.output.find(line), std::string::npos) << line << "\n" << host.output;
  EXPECT_NE(replay.output.find("Host: ComIn 0.2.0 ("), std::string::npos) << replay.output;
  EXPECT_NE(replay.output.find("variable layout from comin_var_get_pos (ComIn 0.2)"), std::string::npos)
      << replay.output;
  EXPECT_NE(host.output.find("Host: ComIn 0.3.0 ("), std::string::npos) << host.output;
  for (const char* line : {"Training session 2 at 1979-01-01T04:00:00: 4 steps in buffer = 320 samples",
                           "Sampled 2 member(s) at 1979-01-01T04:00:00"})
    EXPECT_NE(replay.output.find(line), std::string::npos) << replay.output;
  expect_same_finecast_outputs(host_dir, replay_dir);
}

// Asynchronous training under ComIn 0.2's comin_replay (MPI_Init, as ICON's GPU builds) on 2
// ranks: it trains, samples and writes records.
TEST(RealComin02, TrainsAsynchronouslyAndWritesRecords) {
  ftr::ScratchDir dir("real_comin_02_async");
  const auto [host_dir, replay_dir] = host_and_replay_dirs(dir);
  ftr::CommandResult host;
  const ftr::CommandResult replay =
      replay_under_comin_02(host_dir, replay_dir, 2, "",
                            {{"finecast", ftr::plugin_library(), "plugin.yaml train.async=true train.epochs=3"}}, host);
  ASSERT_EQ(host.rc, 0) << host.output;
  ASSERT_EQ(replay.rc, 0) << replay.output;
  for (const char* line : {"(asynchronous training)", "Epoch 3/3: avg loss = ", "Sampled 2 member(s) at "})
    EXPECT_NE(replay.output.find(line), std::string::npos) << line << "\n" << replay.output;
  const ftr::CommandResult records = ftr::run_command(
      "/usr/bin/python3 -c \"import netCDF4, sys\nn = len(netCDF4.Dataset(sys.argv[1])['time'])\n"
      "print(n, 'records')\nsys.exit(0 if n >= 1 else 'no records')\" '" +
      replay_dir + "/out.nc'");
  EXPECT_EQ(records.rc, 0) << records.output;
}

// finecast's recorder with format=0.2 writes what ComIn 0.2's own run and variable recorders
// write: they re-record ComIn 0.2's replay of a finecast-host recording, and the files agree.
TEST(RealComin02, TheRecorderWritesWhatComIn02sRecordersWrite) {
  ftr::ScratchDir dir("real_comin_02_recorder");
  const auto [host_dir, replay_dir] = host_and_replay_dirs(dir);
  ftr::CommandResult host;
  const ftr::CommandResult replay =
      replay_under_comin_02(host_dir, replay_dir, 2, "",
                            {{"comin_run_recorder_plugin", kRunRecorder02, "comin_run_"},
                             {"comin_var_recorder_plugin", kVarRecorder02, kRecordedVars}},
                            host);
  ASSERT_EQ(host.rc, 0) << host.output;
  ASSERT_EQ(replay.rc, 0) << replay.output;
  expect_same_recordings(host_dir, replay_dir, 2);
}
#endif  // FINECAST_COMIN_02_BUILD_DIR

#endif
