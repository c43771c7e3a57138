// SPDX-License-Identifier: BSD-3-Clause
// The real plugin .so in the real host program under mpiexec: loading, rank independence,
// start-up errors, on_error, and the NetCDF output (conservative samples).
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <algorithm>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "coupling/buffer/rolling_buffer.hpp"
#include "coupling/grid/icon_grid.hpp"
#include "coupling/grid/icon_hierarchy.hpp"
#include "coupling/io/field_reader.hpp"
#include "tests/plugin/replay_test_util.hpp"
#include "tests/plugin/yaml_merge.hpp"

namespace fs = std::filesystem;
namespace ftr = finecast::testing_replay;

namespace {

const std::string kBin = std::string(FINECAST_BINARY_DIR) + "/bin/";
const std::string kPlugin = std::string(FINECAST_BINARY_DIR) + "/lib/libfinecast_comin.so";

struct Result {
  int exit_code = -1;
  std::string output;
};

Result run(const std::string& command) {
  Result r;
  FILE* pipe = popen((command + " 2>&1").c_str(), "r");
  if (!pipe) return r;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, pipe)) > 0) r.output.append(buf, n);
  const int status = pclose(pipe);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

/// A fresh directory for one test under the build tree.
fs::path workdir(const std::string& name) {
  const fs::path dir = fs::path(FINECAST_BINARY_DIR) / "test-out" / "plugin" / name;
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

void write_file(const fs::path& path, const std::string& text) { std::ofstream(path) << text; }

/// A small but complete plugin config: R2B4 -> R2B0, tiny model, synchronous training; `extra`
/// changes or adds keys.
std::string tiny_icon_plugin_config(const std::string& extra = "") {
  return finecast::testing_config::merged_yaml(
      "fields: [ts]\nseed: 3\ndevice: cpu\n"
      "grid: {type: icon, file: " +
          ftr::kIconGrid +
          ", coarse_level: 0}\n"
          "buffer: {capacity: 4}\n"
          "model: {hidden: 32, depth: 2, time_embedding: 16, diffusion_steps: 10}\n"
          "train: {async: false, every: 4, min_steps: 4, epochs: 1, batch_size: 64, warmup_steps: 2, threads: 1}\n"
          "sample: {every: 0, members: 2, steps: 2, output: out.nc}\n"
          "checkpoint: {dir: ckpt, keep: 2}\n",
      extra);
}

/// A host run file of `steps` steps loading the plugin with `options`.
std::string host_run_file(int steps, const std::string& options, const std::string& library = kPlugin) {
  return "grid: " + ftr::kIconGrid +
         "\norography: /usr/share/ferret-vis/data/etopo20.cdf\norography_variable: ROSE\n"
         "start: 1979-01-01T00:00:00\ndt: 1800\nsteps: " +
         std::to_string(steps) +
         "\noutput_every: 1\nnproma: 24\ndecomposition: lat_bands\nprogress_every: 0\n"
         "plugins:\n  - name: finecast\n    library: " +
         library + "\n    options: \"" + options + "\"\n    comm: \"\"\n";
}

Result run_host(const fs::path& dir, int ranks, const std::string& env = "") {
  return run("cd " + dir.string() + " && " + env + " mpiexec -n " + std::to_string(ranks) + " --oversubscribe " + kBin +
             "finecast-host host.yaml");
}

/// A 2-step run on 1 rank with the plugin option `option` stops at start-up with `message`.
void expect_refused_at_start_up(const fs::path& dir, const std::string& option, const std::string& message) {
  write_file(dir / "host.yaml", host_run_file(2, "plugin.yaml " + option));
  const Result r = run_host(dir, 1);
  EXPECT_NE(r.exit_code, 0) << option << "\n" << r.output;
  EXPECT_NE(r.output.find(message), std::string::npos) << option << "\n" << r.output;
  EXPECT_EQ(r.output.find("finished 2 steps"), std::string::npos) << option << "\n" << r.output;
}

}  // namespace

// As ComIn loads it: RTLD_NOW, then comin_plugin_init found through the plugin's own libcomin
// dependency, then comin_main.
TEST(PluginLibrary, LoadsWithDlopenLikeComIn) {
  void* lib = dlopen(kPlugin.c_str(), RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(lib, nullptr) << dlerror();
  EXPECT_NE(dlsym(lib, "comin_plugin_init"), nullptr) << "the plugin must link libcomin.so.0";
  EXPECT_NE(dlsym(lib, "comin_main"), nullptr);
  dlclose(lib);
}

// The plugin links libcomin by SONAME and defines two dynamic symbols, comin_main for ComIn and
// finecast_external_trainer for finecast-trainer (train.placement: external): nothing of its C++
// code can clash with a host's or another plugin's symbols.
TEST(PluginLibrary, ExportsCominMainAndTheExternalTrainerEntryOnly) {
  const Result needed = run("readelf -d " + kPlugin);
  ASSERT_EQ(needed.exit_code, 0) << needed.output;
  EXPECT_NE(needed.output.find("Shared library: [libcomin.so.0]"), std::string::npos) << needed.output;
  const Result syms = run("readelf --dyn-syms -W " + kPlugin);
  ASSERT_EQ(syms.exit_code, 0) << syms.output;
  std::vector<std::string> defined;
  std::istringstream lines(syms.output);
  std::string line;
  while (std::getline(lines, line)) {
    std::istringstream fields(line);
    std::vector<std::string> f;
    for (std::string w; fields >> w;) f.push_back(w);
    // Num: Value Size Type Bind Vis Ndx Name
    if (f.size() >= 8 && f[0].back() == ':' && f[0] != "Num:" && f[6] != "UND") defined.push_back(f[3] + " " + f[7]);
  }
  std::sort(defined.begin(), defined.end());
  EXPECT_EQ(defined, (std::vector<std::string>{"FUNC comin_main", "FUNC finecast_external_trainer"})) << syms.output;
}

// The same run on 1, 2 and 4 ranks must buffer the same samples and train the same weights.
TEST(PluginRuns, BufferAndWeightsDoNotDependOnTheNumberOfRanks) {
  std::map<int, fs::path> dirs;
  for (int ranks : {1, 2, 4}) {
    const fs::path dir = workdir("ranks" + std::to_string(ranks));
    write_file(dir / "plugin.yaml", tiny_icon_plugin_config("patch: {orography: topography_c}\n"));
    write_file(dir / "host.yaml", host_run_file(8, "plugin.yaml"));
    const Result r = run_host(dir, ranks);
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_NE(r.output.find("Training session 2 at 1979-01-01T04:00:00: 4 steps in buffer = 320 samples"),
              std::string::npos)
        << r.output;
    EXPECT_NE(r.output.find("Epoch 1/1: avg loss = "), std::string::npos);
    EXPECT_NE(r.output.find("Using device: CPU"), std::string::npos);
    EXPECT_TRUE(fs::exists(dir / "ckpt" / "buffer_00000010.h5"));  // written with ckpt_00000010.h5
    dirs[ranks] = dir;
  }
  // The orography joins the context (its last value) at every buffered step, although the
  // plugin gathers it only once: it is static.
  const auto buffer = finecast::coupling::RollingBuffer::load_h5((dirs[1] / "ckpt/buffer_00000010.h5").string());
  ASSERT_EQ(buffer.context_size(), 8);
  std::vector<float> context, fine, weights;
  buffer.snapshot(context, fine, weights);
  const int64_t n = buffer.patches_per_step();
  ASSERT_EQ(static_cast<int64_t>(context.size()), 4 * n * 8);
  double highest = 0;
  for (int64_t c = 0; c < n; ++c) {
    for (int step = 1; step < 4; ++step)
      EXPECT_EQ(context[(step * n + c) * 8 + 7], context[c * 8 + 7]) << "patch " << c;
    highest = std::max(highest, static_cast<double>(context[c * 8 + 7]));
  }
  EXPECT_GT(highest, 1000.0) << "no mountains in the coarse orography";
  for (int ranks : {2, 4}) {
    const Result buf = run("h5diff -d 0 " + (dirs[1] / "ckpt/buffer_00000010.h5").string() + " " +
                           (dirs[ranks] / "ckpt/buffer_00000010.h5").string());
    EXPECT_EQ(buf.exit_code, 0) << "buffer differs between 1 and " << ranks << " ranks:\n" << buf.output;
    const std::string ck = "ckpt/ckpt_00000010.h5";  // 2 sessions x 320 samples / batch 64
    ASSERT_TRUE(fs::exists(dirs[1] / ck)) << "expected checkpoint " << ck;
    const Result w = run("h5diff -d 0 " + (dirs[1] / ck).string() + " " + (dirs[ranks] / ck).string());
    EXPECT_EQ(w.exit_code, 0) << "weights differ between 1 and " << ranks << " ranks:\n" << w.output;
  }
}

TEST(PluginRuns, MissingConfigStopsAtStartUpNamingTheFile) {
  const fs::path dir = workdir("missing_config");
  write_file(dir / "host.yaml", host_run_file(3, "no_such_config.yaml"));
  const Result r = run_host(dir, 2);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find("no_such_config.yaml: cannot open the config file"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("Training session"), std::string::npos);
}

TEST(PluginRuns, UnknownFieldStopsAtStartUpListingTheHostVariables) {
  const fs::path dir = workdir("unknown_field");
  write_file(dir / "plugin.yaml", tiny_icon_plugin_config());
  write_file(dir / "host.yaml", host_run_file(3, "plugin.yaml fields=[tsurf]"));
  const Result r = run_host(dir, 2);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find("fields: the host has no variable \"tsurf\" on domain 1 (its variables there: ts, ps, temp, "
                          "pres, topography_c, fr_land)"),
            std::string::npos)
      << r.output;
}

// coupling.device_fields and finecast-host's device_fields where there is no device: each stops
// at start-up naming its key and the reason (auto falls back to host access: every other run).
TEST(PluginRuns, DeviceFieldsWithoutADeviceStopNamingTheKey) {
  const fs::path dir = workdir("device_fields");
  write_file(dir / "plugin.yaml", tiny_icon_plugin_config());
  write_file(dir / "host.yaml", host_run_file(3, "plugin.yaml coupling.device_fields=on"));
  const Result r = run_host(dir, 2);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find("plugin.yaml: coupling.device_fields: on, but the host has no device (ComIn's has_device is "
                          "false)"),
            std::string::npos)
      << r.output;

  write_file(dir / "host.yaml", host_run_file(3, "plugin.yaml") + "device_fields: true\n");
  const Result h = run_host(dir, 2);
  if (h.output.find("device fields: GPU") != std::string::npos) GTEST_SKIP() << "a CUDA finecast-host on a GPU";
  EXPECT_NE(h.exit_code, 0);
  EXPECT_NE(h.output.find("device_fields: true needs a finecast-host built with CUDA"), std::string::npos) << h.output;
}

// On a GPU host (a CUDA finecast-host with device_fields: true, on a GPU; skipped elsewhere, as
// on CI): reading the fields through their device pointers buffers exactly what host access
// buffers, ComIn copies nothing for the plugin, and the plugin says what it copies.
TEST(PluginRuns, DeviceFieldsBufferWhatHostAccessBuffers) {
  std::map<std::string, fs::path> dirs;
  for (const std::string mode : {"off", "on"}) {
    const fs::path dir = workdir("device_fields_" + mode);
    write_file(dir / "plugin.yaml", tiny_icon_plugin_config("patch: {orography: topography_c}\n"));
    write_file(dir / "host.yaml",
               host_run_file(8, "plugin.yaml coupling.device_fields=" + mode) + "device_fields: true\nnlev: 3\n");
    const Result r = run_host(dir, 2);
    if (r.output.find("device_fields: true needs a finecast-host built with CUDA") != std::string::npos ||
        r.output.find("sees no GPU") != std::string::npos)
      GTEST_SKIP() << "needs a CUDA finecast-host on a GPU";
    ASSERT_EQ(r.exit_code, 0) << r.output;
    const bool device = mode == "on";
    EXPECT_EQ(
        r.output.find("coupling.device_fields: reading 2 field(s) from the host's device copies") != std::string::npos,
        device)
        << r.output;
    EXPECT_EQ(r.output.find("ComIn device sync for the plugins: 0 whole-field copies") != std::string::npos, device)
        << r.output;
    dirs[mode] = dir / "ckpt" / "buffer_00000010.h5";
  }
  std::vector<float> context[2], fine[2], weights[2];
  const std::string modes[2] = {"off", "on"};
  for (int k = 0; k < 2; ++k)
    finecast::coupling::RollingBuffer::load_h5(dirs[modes[k]].string()).snapshot(context[k], fine[k], weights[k]);
  EXPECT_FALSE(context[0].empty());
  EXPECT_EQ(context[0], context[1]);
  EXPECT_EQ(fine[0], fine[1]);
}

namespace {

/// The lines of `output` that contain "ERROR" (finecast's ERROR lines, a ComIn host's fatal one),
/// but Open MPI's own runtime's (ORTE_ERROR_LOG, PMIX_ERROR: noise of mpiexec while it aborts).
std::vector<std::string> error_lines(const std::string& output) {
  std::vector<std::string> lines;
  std::istringstream in(output);
  for (std::string line; std::getline(in, line);)
    if (line.find("ERROR") != std::string::npos && line.find("ORTE_ERROR_LOG") == std::string::npos &&
        line.find("PMIX_ERROR") == std::string::npos)
      lines.push_back(line);
  return lines;
}

std::string joined(const std::vector<std::string>& lines) {
  std::string text;
  for (const auto& l : lines) text += l + "\n";
  return text;
}

}  // namespace

// One error, once: a wrong field name is found by every rank in the secondary constructor; the
// ranks agree on it and one line names it with the ranks, then the host's stop (its own line):
// at most 2 error lines on 4 ranks, not 2 per rank.
TEST(PluginRuns, AnErrorOnEveryRankIsPrintedOnceWithTheRanks) {
  const fs::path dir = workdir("error_once");
  write_file(dir / "plugin.yaml", tiny_icon_plugin_config());
  write_file(dir / "host.yaml", host_run_file(3, "plugin.yaml fields=[tsurf]"));
  const Result r = run_host(dir, 4);
  EXPECT_NE(r.exit_code, 0);
  const std::vector<std::string> errors = error_lines(r.output);
  EXPECT_LE(errors.size(), 2u) << r.output;
  ASSERT_FALSE(errors.empty()) << r.output;
  EXPECT_NE(errors.front().find("[finecast r0] ERROR: EP_SECONDARY_CONSTRUCTOR failed on ranks 0-3: plugin.yaml: "
                                "fields: the host has no variable \"tsurf\""),
            std::string::npos)
      << joined(errors);
  // A config error in comin_main (every rank reads the same file) is reported once too.
  write_file(dir / "host.yaml", host_run_file(3, "plugin.yaml train.batchsize=3"));
  const Result config = run_host(dir, 4);
  EXPECT_NE(config.exit_code, 0);
  EXPECT_LE(error_lines(config.output).size(), 2u) << config.output;
  EXPECT_NE(config.output.find("ERROR: comin_main failed on ranks 0-3: "), std::string::npos) << config.output;
  EXPECT_NE(config.output.find("unknown key train.batchsize"), std::string::npos) << config.output;
}

// An error on one rank only (the trainer's grid file) is reported by that rank, once, and the run
// stops without waiting for the others.
TEST(PluginRuns, AnErrorOnTheTrainerAloneIsPrintedOnceAndDoesNotHang) {
  const fs::path dir = workdir("error_trainer");
  write_file(dir / "plugin.yaml", tiny_icon_plugin_config());
  write_file(dir / "host.yaml", host_run_file(3, "plugin.yaml grid.file=no_such_grid.nc"));
  const Result r = run_host(dir, 3, "timeout -k 5 60");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.exit_code, 124) << "the run hung:\n" << r.output;
  const std::vector<std::string> errors = error_lines(r.output);
  EXPECT_LE(errors.size(), 2u) << r.output;
  ASSERT_FALSE(errors.empty()) << r.output;
  EXPECT_NE(errors.front().find("ERROR: EP_SECONDARY_CONSTRUCTOR failed on rank 0: "), std::string::npos)
      << joined(errors);
  EXPECT_NE(errors.front().find("no_such_grid.nc"), std::string::npos) << joined(errors);
}

// train.async under a host that initialised MPI with MPI_THREAD_SINGLE (ICON's GPU builds and
// comin_replay call MPI_Init): one trainer rank makes no MPI call on its training thread, so it
// trains asynchronously there. The epoch lines come with samples/s and the session's ETA, the
// lead trainer says where it runs, and the host's progress lines give the run's ETA.
TEST(PluginRuns, AsyncTrainingUnderAHostWithMpiThreadSingle) {
  const fs::path dir = workdir("async_single");
  write_file(dir / "plugin.yaml", tiny_icon_plugin_config("train: {async: true, epochs: 3}\nsample: {every: 4}\n"));
  write_file(dir / "host.yaml", host_run_file(12, "plugin.yaml"));
  const Result r = run("cd " + dir.string() + " && mpiexec -n 2 --oversubscribe " + kBin +
                       "finecast-host host.yaml --mpi-thread-level single --step-seconds 0.05");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  for (const char* line :
       {"MPI thread level: asked for single (--mpi-thread-level), given single", "(asynchronous training)",
        "Epoch 3/3: avg loss = ", " samples/s)", "; session ends in ~", "Sampled 2 member(s) at ", "; run ends in ~",
        "Placement: trainer 0 (rank 0, a host rank) on node ", ": device cpu; host rank(s) on its node: 0-1"})
    EXPECT_NE(r.output.find(line), std::string::npos) << line << "\n" << r.output;
  EXPECT_TRUE(fs::exists(dir / "out.nc"));
  EXPECT_TRUE(error_lines(r.output).empty()) << r.output;
}

// A trainer group inside the host sums its gradients over MPI on the training threads, which
// needs MPI_THREAD_MULTIPLE: below it the run is refused at start-up, naming the placement that
// works under any host (finecast-trainer processes initialise MPI themselves).
TEST(PluginRuns, AnInHostTrainerGroupIsRefusedUnderMpiThreadFunneled) {
  const fs::path dir = workdir("group_funneled");
  write_file(dir / "plugin.yaml", tiny_icon_plugin_config("train: {async: true, ranks: 2}\n"));
  write_file(dir / "host.yaml", host_run_file(3, "plugin.yaml"));
  const std::string host =
      "cd " + dir.string() + " && mpiexec -n 2 --oversubscribe " + kBin + "finecast-host host.yaml";
  const Result r = run(host + " --mpi-thread-level funneled");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find("train.ranks 2 with train.async: true: the trainer ranks sum their gradients over MPI on "
                          "their training threads"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("initialised with MPI_THREAD_FUNNELED; set train.placement: external"), std::string::npos)
      << r.output;
  EXPECT_LE(error_lines(r.output).size(), 2u) << r.output;
  // Synchronous training needs nothing of the thread level.
  const Result sync = run(host + " --mpi-thread-level funneled --set train.async=false");
  EXPECT_EQ(sync.exit_code, 0) << sync.output;
}

// train.device_memory_fraction is a fraction of the GPU's memory: (0, 1].
TEST(PluginRuns, DeviceMemoryFractionIsAFractionOfTheDevice) {
  const fs::path dir = workdir("device_memory_fraction");
  write_file(dir / "plugin.yaml", tiny_icon_plugin_config("train: {device_memory_fraction: 1.5}\n"));
  const Result r = run(kBin + "finecast-config " + (dir / "plugin.yaml").string());
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find("train.device_memory_fraction must be a number in (0, 1], got 1.5"), std::string::npos)
      << r.output;
  write_file(dir / "plugin.yaml", tiny_icon_plugin_config("train: {device_memory_fraction: 0.25}\n"));
  EXPECT_EQ(run(kBin + "finecast-config " + (dir / "plugin.yaml").string()).exit_code, 0);
}

// A 3-D field is coupled at one named level (ICON numbering); without one the config is wrong.
TEST(PluginRuns, ThreeDimensionalFieldsNeedALevel) {
  const fs::path dir = workdir("levels");
  write_file(dir / "plugin.yaml", tiny_icon_plugin_config());
  write_file(dir / "host.yaml", host_run_file(3, "plugin.yaml fields=[temp]"));
  Result r = run_host(dir, 2);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find("fields: host variable \"temp\" has 10 levels; name one, e.g. {name: temp, level: 10} "
                          "(1 = model top, 10 = lowest)"),
            std::string::npos)
      << r.output;
  write_file(dir / "host.yaml", host_run_file(3, "plugin.yaml fields='[{name: ts, level: 2}]'"));
  r = run_host(dir, 1);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find("host variable \"ts\" has no levels (it is 2-D), level 2 does not exist"), std::string::npos)
      << r.output;
  write_file(dir / "host.yaml", host_run_file(4, "plugin.yaml 'fields=[{name: temp, level: 10}]'"));
  r = run_host(dir, 2);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("Training session 1"), std::string::npos) << r.output;
}

// Write-back goes into finecast's own variable; naming a host field is refused before the run.
TEST(PluginRuns, WriteBackIntoAHostFieldIsRefused) {
  const fs::path dir = workdir("write_back_host_field");
  write_file(dir / "plugin.yaml", tiny_icon_plugin_config());
  for (const std::string field : {"topography_c", "ps"}) {
    write_file(dir / "host.yaml", host_run_file(3, "plugin.yaml sample.write_back=" + field));
    const Result r = run_host(dir, 2);
    EXPECT_NE(r.exit_code, 0) << field;
    EXPECT_NE(
        r.output.find("requested variable '" + field + "' (domain 1) exclusively, but it is one of the host's own"),
        std::string::npos)
        << r.output;
    EXPECT_EQ(r.output.find("Training session"), std::string::npos);
  }
}

// One instance per process: a plugin list naming the library twice stops at start-up.
TEST(PluginRuns, ASecondInstanceIsRefused) {
  const fs::path dir = workdir("two_instances");
  write_file(dir / "plugin.yaml", tiny_icon_plugin_config());
  write_file(dir / "host.yaml", host_run_file(3, "plugin.yaml") + "  - name: finecast2\n    library: " + kPlugin +
                                    "\n    options: plugin.yaml\n");
  const Result r = run_host(dir, 1);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find("finecast is listed twice in the host's plugin list (plugins 1 and 2)"), std::string::npos)
      << r.output;
}

TEST(PluginRuns, UnknownEntryPointStopsAtStartUp) {
  const fs::path dir = workdir("unknown_ep");
  write_file(dir / "plugin.yaml", tiny_icon_plugin_config("coupling: {entry_point: EP_ATM_NOT_THERE}\n"));
  write_file(dir / "host.yaml", host_run_file(3, "plugin.yaml"));
  const Result r = run_host(dir, 2);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find("plugin.yaml:10: coupling.entry_point must be one of EP_ATM_WRITE_OUTPUT_BEFORE"),
            std::string::npos)
      << r.output;
}

// LibTorch sets its thread count through OpenMP on the calling thread, which is the host's:
// the plugin trains (synchronously on the host's thread, or on a thread of its own) and samples
// with train.threads threads (auto: from the cores per rank) and leaves the host rank's OpenMP
// settings as they were on every rank: each callback puts them back (guard.cpp). finecast-host
// checks the count after every callback and would warn. The host's count comes from
// OMP_NUM_THREADS, or without it from the cores (ranks not bound to one core), which LibTorch's
// first use of its thread pool replaced by its own default: the secondary constructor changed
// rank 0's count from 2 to 1, which inside ICON nothing would restore.
TEST(PluginRuns, HostOpenMpThreadCountIsLeftAsItWas) {
  struct Case {
    std::string env;  ///< the host's OpenMP threads
    std::string train;
  };
  const std::string from_the_cores = "env -u OMP_NUM_THREADS OMPI_MCA_hwloc_base_binding_policy=none";
  for (const Case& c :
       {Case{"OMP_NUM_THREADS=8", "train: {threads: 3}\n"}, Case{from_the_cores, "train: {threads: auto}\n"},
        Case{from_the_cores, "train: {threads: auto, async: true}\n"}}) {
    const fs::path dir = workdir("omp_threads");
    write_file(dir / "plugin.yaml",
               tiny_icon_plugin_config("sample: {every: 4, members: 2, steps: 2, output: out.nc}\n" + c.train));
    write_file(dir / "host.yaml", host_run_file(8, "plugin.yaml"));
    const Result r = run_host(dir, 2, c.env);
    ASSERT_EQ(r.exit_code, 0) << c.train << r.output;
    if (c.env != from_the_cores) {
      EXPECT_NE(r.output.find("8 OpenMP thread(s)"), std::string::npos) << r.output;
    }
    EXPECT_NE(r.output.find("Training session 1 "), std::string::npos) << c.train << r.output;
    EXPECT_NE(r.output.find("Sampled 2 member(s)"), std::string::npos) << c.train << r.output;
    EXPECT_EQ(r.output.find("changed this rank's OpenMP thread count"), std::string::npos) << c.train << r.output;
  }
}

// Before the first session the trainer rank says why it is idle, and train.validation reaches
// the trainer through the config: the session holds out the most recent step and scores it.
TEST(PluginRuns, BufferProgressValidationAndCrpsFineTuningAreLogged) {
  const fs::path dir = workdir("validation");
  write_file(dir / "plugin.yaml",
             tiny_icon_plugin_config("train: {validation: 0.25, validation_members: 2, validation_max_samples: 16, "
                                     "crps_steps: 10, crps_members: 2, crps_sampler_steps: 2}\n"));
  write_file(dir / "host.yaml", host_run_file(8, "plugin.yaml"));
  const Result r = run_host(dir, 2);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  for (const char* line :
       {"Buffer 1/4 steps; first training session in 3 coupling steps", "Buffer 4/4 steps; first training session now",
        "Training session 1 ", "Validation (80 held-out samples of the 1 most recent steps): loss ",
        "] validation: 80 held-out samples at step ", "] crps fine-tuning: step 1 of 10, fair CRPS (normalised) ",
        "] crps fine-tuning: step 10 of 10, ", "] crps fine-tuning: 10 steps of "})
    EXPECT_NE(r.output.find(line), std::string::npos) << line << "\n" << r.output;
  // The trainer's validation scores and the fine-tuning's progress are information, not warnings.
  EXPECT_EQ(r.output.find("WARNING: validation"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("WARNING: crps"), std::string::npos) << r.output;
  // The fine-tuning's progress lines come without a repeated epoch line between them.
  const size_t from = r.output.find("] crps fine-tuning: step 1 of 10"),
               to = r.output.find("] crps fine-tuning: step 10 of 10", from);
  ASSERT_NE(to, std::string::npos);
  EXPECT_EQ(r.output.substr(from, to - from).find("Epoch "), std::string::npos) << r.output.substr(from, to - from);
}

// A buffer that holds train.min_steps before the first multiple of train.every says so once, with
// the wait; it once printed "Buffer 3/2 steps" at every step until the session came.
TEST(PluginRuns, AFirstSessionThatWaitsForTrainEveryIsSaidOnce) {
  const fs::path dir = workdir("buffer_wait");
  write_file(dir / "plugin.yaml", tiny_icon_plugin_config("train: {min_steps: 2, every: 4}\n"));
  write_file(dir / "host.yaml", host_run_file(5, "plugin.yaml"));
  const Result r = run_host(dir, 2);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("Buffer 2/2 steps; first training session in 2 coupling steps (the next multiple of "
                          "train.every 4)"),
            std::string::npos)
      << r.output;
  EXPECT_EQ(r.output.find("Buffer 3/2"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("Training session 1 "), std::string::npos) << r.output;
}

// The NetCDF output opens with ncdump, has the ensemble layout, and every sampled patch's
// area-weighted mean equals its coarse value (conservative mode, the default).
TEST(PluginRuns, OutputIsCfNetcdfAndConservative) {
  const fs::path dir = workdir("output");
  write_file(dir / "plugin.yaml",
             tiny_icon_plugin_config("sample: {every: 4, members: 3, steps: 2, output: out/ts.nc}\n"));
  write_file(dir / "host.yaml", host_run_file(8, "plugin.yaml"));
  const Result r = run_host(dir, 2);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const Result dump = run("ncdump -h " + (dir / "out/ts.nc").string());
  ASSERT_EQ(dump.exit_code, 0) << dump.output;
  for (const char* expected :
       {"realization = 3", "time = UNLIMITED", "ncells = 20480", "float ts(time, realization, ncells)",
        ":source = \"finecast", ":finecast_checkpoint = "})
    EXPECT_NE(dump.output.find(expected), std::string::npos) << expected << "\n" << dump.output;
  // The tools climate scientists use open it too: cdo and xarray (both installed by setup.sh).
  const Result cdo = run("cdo -s sinfon " + (dir / "out/ts.nc").string());
  EXPECT_EQ(cdo.exit_code, 0) << cdo.output;
  EXPECT_NE(cdo.output.find("points=20480"), std::string::npos) << cdo.output;
  const Result xr = run("/usr/bin/python3 -c \"import xarray as xr; ds = xr.open_dataset('" +
                        (dir / "out/ts.nc").string() + "'); print(dict(ds.sizes)['realization'], ds.ts.dims)\"");
  EXPECT_EQ(xr.exit_code, 0) << xr.output;
  EXPECT_NE(xr.output.find("3 ('time', 'realization', 'ncells')"), std::string::npos) << xr.output;

  const auto grid = finecast::coupling::read_icon_grid(ftr::kIconGrid);
  const auto map = finecast::coupling::icon_patch_map(grid, 0);
  // The member dimension is the reader's "level": one reader per member.
  finecast::coupling::FieldReader coarse((dir / "out/ts.nc").string(), "ts_coarse");
  const int64_t n_cells = map.n_fine;
  ASSERT_EQ(coarse.n_values(), n_cells);
  ASSERT_GE(coarse.n_times(), 1);
  std::vector<float> values(static_cast<size_t>(3 * n_cells)), coarse_on_fine(static_cast<size_t>(n_cells));
  coarse.read(coarse.n_times() - 1, coarse_on_fine.data());
  for (int m = 0; m < 3; ++m) {
    finecast::coupling::FieldReader member((dir / "out/ts.nc").string(), "ts", m);
    ASSERT_EQ(member.n_levels(), 3);
    member.read(member.n_times() - 1, values.data() + m * n_cells);
  }
  double spread = 0;
  for (int m = 0; m < 3; ++m) {
    for (int64_t c = 0; c < map.n_coarse; ++c) {
      double mean = 0;
      const int64_t first = map.fine_of_patch[c * map.patch_size];
      for (int k = 0; k < map.patch_size; ++k) {
        const int64_t cell = map.fine_of_patch[c * map.patch_size + k];
        mean += map.fine_weight[c * map.patch_size + k] * values[m * n_cells + cell];
        spread += std::fabs(values[m * n_cells + cell] - coarse_on_fine[cell]);
      }
      EXPECT_NEAR(mean, coarse_on_fine[first], 2e-3) << "member " << m << " patch " << c;
    }
  }
  EXPECT_GT(spread, 0.0) << "samples equal to the coarse field: nothing was downscaled";
}

TEST(PluginRuns, OutputTimesStrictlyIncreaseWhenTheLastSessionEndsAfterTheLastSampling) {
  // Asynchronous training: the session started at step 4 is done by step 8 (the host steps take
  // 1 s), step 8 starts another one and samples the step-4 weights, so the run ends with weights
  // newer than the last sampling, at the same model time. The session takes 0.3 s in the Release
  // build and 2.4 s under ASan beside another test, where 0.2 s steps left it training at step 8
  // (nothing sampled there); at nice 0 a neighbour's busy ranks do not starve it either.
  const fs::path dir = workdir("final_sampling");
  std::string cfg = tiny_icon_plugin_config("sample: {every: 4, members: 2, steps: 2, output: out.nc}\n");
  cfg.replace(cfg.find("async: false"), 12, "async: true, nice: 0");
  write_file(dir / "plugin.yaml", cfg);
  write_file(dir / "host.yaml", host_run_file(8, "plugin.yaml") + "step_seconds: 1.0\n");
  const Result r = run_host(dir, 2);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const Result times = run("/usr/bin/python3 -c \"import netCDF4; print(list(netCDF4.Dataset('" +
                           (dir / "out.nc").string() + "')['time'][:]))\"");
  ASSERT_EQ(times.exit_code, 0) << times.output;
  std::vector<double> t;
  for (size_t pos = times.output.find('['); pos != std::string::npos && pos + 1 < times.output.size();) {
    char* end = nullptr;
    const double v = std::strtod(times.output.c_str() + pos + 1, &end);
    if (end == times.output.c_str() + pos + 1) break;
    t.push_back(v);
    pos = times.output.find(',', static_cast<size_t>(end - times.output.c_str()));
  }
  ASSERT_FALSE(t.empty()) << times.output;
  for (size_t i = 1; i < t.size(); ++i) EXPECT_LT(t[i - 1], t[i]) << times.output;
  // Step 4 has no trained model yet (skipped), step 8 writes one record, which the end of the run
  // replaces with a sampling of the final weights; before the fix it added a second record with
  // step 8's time.
  EXPECT_EQ(t.size(), 1u) << times.output;
  EXPECT_NE(r.output.find("the record of the last sampling is replaced"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("2 samplings"), std::string::npos) << r.output;
}

// Asynchronous sessions longer than the run: the session started at step 1 still trains when the
// next ones fall due (steps 2 and 3), so one is owed; the run ends before it can start. That was
// silent; the log says so, and the final checkpoint records it as due.
// Both tests wait at the run's end for 2,000 epochs. At nice 0: at train.nice's default (19 on an
// oversubscribed node) the session got almost no CPU while the other host rank spun in MPI and
// ctest ran a second test, and each test took 83-150 s instead of 2-4 s.
TEST(PluginRuns, ASessionOwedWhenTheRunEndsIsLogged) {
  const fs::path dir = workdir("owed_at_end");
  write_file(dir / "plugin.yaml",
             tiny_icon_plugin_config("train: {async: true, nice: 0, every: 1, min_steps: 1, epochs: 2000}\n"));
  write_file(dir / "host.yaml", host_run_file(3, "plugin.yaml"));
  const Result r = run_host(dir, 2);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("Training session 1 at 1979-01-01T00:30:00"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("Training session 2 at"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("WARNING: A training session fell due while the one before it was still training, and "
                          "the run ended before it could start: it was not run"),
            std::string::npos)
      << r.output;
}

// Under load a session may outlast several samplings (the demo's first session once ran past
// all four): each skipped sampling says why (the session still trains, how far it is) and when
// the next is due; the end of the run says what it waits for (the host's ETA cannot know); the
// session's anatomy is logged when it ends and summed at the end.
TEST(PluginRuns, ASkippedSamplingSaysWhyAndWhenTheNextIsDue) {
  const fs::path dir = workdir("skipped_sampling");
  write_file(dir / "plugin.yaml",
             tiny_icon_plugin_config("train: {async: true, nice: 0, every: 1, min_steps: 1, epochs: 2000}\n"
                                     "sample: {every: 2}\n"));
  write_file(dir / "host.yaml", host_run_file(5, "plugin.yaml"));
  const Result r = run_host(dir, 2);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  for (const char* line :
       {"Sampling at 1979-01-01T01:00:00 (coupling step 2) skipped: no trained model yet: training session 1 still "
        "trains (epoch ",
        "; the next sampling is due at coupling step 4 (in 2 steps, ~",
        "Sampling at 1979-01-01T02:00:00 (coupling step 4) skipped: no trained model yet: training session 1 still "
        "trains (epoch ",
        "; the next sampling is due at coupling step 6 (in 2 steps, ~",
        "Waiting at the host's restart at 1979-01-01T02:30:00 for training session 1 (epoch ",
        "), then writes the checkpoint", "Session 1 anatomy: ", "Session anatomy (1 sessions): "})
    EXPECT_NE(r.output.find(line), std::string::npos) << line << "\n" << r.output;
}

// Output and checkpoint places that cannot be written stop the run at start-up (the secondary
// constructor), naming the key and the path, not at the first sampling or checkpoint hours in;
// /proc takes no files even from root (for whom access(W_OK) says yes). A missing output
// directory is created, and the log says so.
TEST(PluginRuns, UnwritableOutputAndCheckpointPlacesStopAtStartUp) {
  const fs::path dir = workdir("unwritable_paths");
  write_file(dir / "plugin.yaml", tiny_icon_plugin_config());
  const std::pair<std::string, std::string> cases[] = {
      {"checkpoint.dir=/proc", "checkpoint.dir: cannot write in the directory: "},
      {"sample.output=/proc/out.nc", "sample.output: cannot write in the directory: "},
      {"sample.output=" + dir.string(), "sample.output: " + dir.string() + " is a directory; name the NetCDF file"},
      {"checkpoint.dir=host.yaml", "checkpoint.dir: not a directory (host.yaml)"},
  };
  for (const auto& [option, message] : cases) expect_refused_at_start_up(dir, option, message);
  write_file(dir / "host.yaml", host_run_file(2, "plugin.yaml sample.output=new/sub/out.nc"));
  const Result r = run_host(dir, 1);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("sample.output: created the directory " + (dir / "new/sub").string()), std::string::npos)
      << r.output;
  EXPECT_TRUE(fs::is_directory(dir / "new/sub"));
}

// An output in checkpoint.dir, where checkpoint.keep removes the oldest checkpoints and the
// snapshot clean-up the orphaned buffers, is refused at start-up however the path is spelled: one
// named like a checkpoint (once removed by checkpoint.keep a few steps in), one through a link
// to the directory, one through "..".
TEST(PluginRuns, AnOutputInTheCheckpointDirectoryIsRefusedAtStartUp) {
  const fs::path dir = workdir("output_in_checkpoints");
  write_file(dir / "plugin.yaml", tiny_icon_plugin_config());  // checkpoint.dir: ckpt
  fs::create_directories(dir / "ckpt");
  fs::create_directory_symlink("ckpt", dir / "link");
  for (const std::string output : {"ckpt/ckpt_00000008.h5", "link/out.nc", "ckpt/../ckpt/out.nc"})
    expect_refused_at_start_up(dir, "sample.output=" + output,
                               "sample.output: " + output +
                                   " lies in checkpoint.dir ckpt, whose files checkpoint.keep and the snapshot "
                                   "clean-up remove; name another output file");
  EXPECT_TRUE(fs::is_empty(dir / "ckpt"));
}

// Two runs started together on one output (a job resubmitted while the first still runs): the
// one that comes second to the output's lock stops at start-up, naming the run that holds it, and
// never touches the file; the file is readable and holds every record the other run reported.
// Once the second's create of the same file left the first's NetCDF-4 output unreadable.
TEST(PluginRuns, TwoRunsOnOneOutputTheSecondIsRefusedAndTheFileKeepsEveryRecord) {
  const fs::path dir = workdir("two_runs_one_output");
  write_file(dir / "plugin.yaml", tiny_icon_plugin_config("sample: {every: 4}\n"));
  // 12 steps of at least 0.5 s: the first holds the lock while the second starts.
  write_file(dir / "host.yaml", host_run_file(12, "plugin.yaml") + "step_seconds: 0.5\n");
  const std::string host = "OMP_NUM_THREADS=1 mpiexec -n 1 --oversubscribe " + kBin + "finecast-host host.yaml";
  const Result both = run("cd " + dir.string() + " && { (" + host + " > a.log 2>&1; echo $? > a.rc) & (" + host +
                          " > b.log 2>&1; echo $? > b.rc) & wait; }");
  auto slurp = [&](const std::string& name) { return finecast::testing_replay::read_bytes((dir / name).string()); };
  const std::string a = slurp("a.log"), b = slurp("b.log");
  const int rc_a = std::stoi("0" + slurp("a.rc")), rc_b = std::stoi("0" + slurp("b.rc"));
  ASSERT_NE(rc_a == 0, rc_b == 0) << "exactly one run may write out.nc\n" << both.output << a << b;
  const std::string& survivor = rc_a == 0 ? a : b;
  const std::string& refused = rc_a == 0 ? b : a;
  EXPECT_NE(refused.find("sample.output: out.nc is being written by another run (pid "), std::string::npos) << refused;
  EXPECT_NE(refused.find("; lock file out.nc.lock); wait for it to end"), std::string::npos) << refused;
  std::set<std::string> reported;  // the model times of the survivor's samplings
  const std::string sampled = "Sampled 2 member(s) at ";
  for (size_t at = survivor.find(sampled); at != std::string::npos; at = survivor.find(sampled, at + 1))
    reported.insert(
        survivor.substr(at + sampled.size(), survivor.find(' ', at + sampled.size()) - at - sampled.size()));
  EXPECT_EQ(reported.size(), 3u) << survivor;  // steps 4, 8 and 12
  const size_t records = reported.size();
  const Result dump =
      run("ncdump " + (dir / "out.nc").string() + " > /dev/null && ncdump -h " + (dir / "out.nc").string());
  ASSERT_EQ(dump.exit_code, 0) << dump.output;
  EXPECT_NE(dump.output.find("time = UNLIMITED ; // (" + std::to_string(records) + " currently)"), std::string::npos)
      << dump.output;
  for (const auto& entry : fs::directory_iterator(dir))
    EXPECT_TRUE(entry.path().filename() == "out.nc" || entry.path().extension() != ".nc") << entry.path();
  EXPECT_FALSE(fs::exists(dir / "out.nc.lock")) << "the lock file is removed at the end of the run";
}

// A coupled field that is NaN in the first steps (not yet defined by the host): the session that
// falls due while every buffered patch is NaN is not run (it once trained on 0 samples, counted,
// and the untrained model was sampled and written out); the log says why and names the field.
// The first session comes when the buffer holds valid steps, and sampling starts after it.
TEST(PluginRuns, ASessionWithoutValidSamplesDoesNotCountAndNothingIsSampledBeforeARealOne) {
  const fs::path dir = workdir("zero_sample_session");
  const std::string tas = "/usr/share/ncarg/data/nug/tas_rectilinear_grid_2D.nc";
  const Result copy =
      run("/usr/bin/python3 -c \"import netCDF4, numpy as np, shutil\n"
          "shutil.copy('" +
          tas + "', '" + (dir / "tas.nc").string() +
          "')\n"
          "d = netCDF4.Dataset('" +
          (dir / "tas.nc").string() +
          "', 'a')\n"
          "d['tas'].set_auto_mask(False)\n"
          "d['tas'][0:4] = np.nan\nd.close()\"");
  ASSERT_EQ(copy.exit_code, 0) << copy.output;
  write_file(dir / "plugin.yaml",
             "fields: [tas]\ndevice: cpu\nseed: 7\ngrid: {type: latlon, file: " + tas +
                 ", block: 8}\nbuffer: {capacity: 4}\n"
                 "model: {hidden: 32, depth: 2, time_embedding: 16, diffusion_steps: 20}\n"
                 "train: {async: false, every: 2, min_steps: 4, epochs: 1, batch_size: 64, threads: 1, "
                 "warmup_steps: 5}\nsample: {every: 2, members: 2, steps: 4, output: out.nc}\n"
                 "checkpoint: {dir: ckpt, every: 0}\n");
  write_file(dir / "run.yaml",
             "input: {files: [tas.nc], variables: [tas]}\ngrid: {type: latlon}\n"
             "time: {start: 0, stop: 7}\nnproma: 7\nseed: 3\nplugins:\n"
             "  - {name: finecast, library: " +
                 kPlugin + ", options: plugin.yaml}\n");
  const Result r = run("cd " + dir.string() + " && timeout -k 5 120 mpiexec -n 2 --oversubscribe " + kBin +
                       "finecast-replay --config run.yaml --progress lines");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("Host field tas at "), std::string::npos) << r.output;
  EXPECT_NE(r.output.find(": all 18432 values are NaN/Inf (1 such coupling step(s) so far)"), std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("not run: the 4 buffered step(s) hold 0 valid samples (every patch had NaN/Inf values; "
                          "NaN/Inf host values so far: tas 73728 in 4 step(s))"),
            std::string::npos)
      << r.output;
  const size_t first_session = r.output.find("Training session 1 at ");
  ASSERT_NE(first_session, std::string::npos) << r.output;
  const size_t first_sampling = r.output.find("Sampled 2 member(s)");
  ASSERT_NE(first_sampling, std::string::npos) << r.output;
  EXPECT_GT(first_sampling, first_session) << r.output;
  EXPECT_EQ(r.output.find("First model trained"), r.output.rfind("First model trained")) << r.output;
  // Sampled at steps 6 and 8 only (the session at step 4 never ran).
  const Result dump = run("ncdump -h " + (dir / "out.nc").string());
  ASSERT_EQ(dump.exit_code, 0) << dump.output;
  EXPECT_NE(dump.output.find("time = UNLIMITED ; // (2 currently)"), std::string::npos) << dump.output;
}
