// SPDX-License-Identifier: BSD-3-Clause
// Helpers of the finecast-replay / finecast-downscale tests: scratch folders, running the
// programs, a tiny replay of the real monthly temperature file.
#pragma once

#include <gtest/gtest.h>
#include <dirent.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <string>

#include "tests/coupling/io_test_util.hpp"

namespace finecast::testing_replay {

// The real data files (tests/coupling/io_test_util.hpp names each path once), as strings.
inline const std::string kTas = testing_io::kTasFile;
/// The real R2B4 ICON grid (20,480 cells) and the 20-minute relief on it the host reads.
inline const std::string kIconGrid = testing_io::kIconFile;
inline const std::string kEtopo20 = testing_io::kEtopo20File;
/// The recorder plugin (host/): records a run in the files of ComIn's replay tool.
inline const std::string kRecorder = std::string(FINECAST_BINARY_DIR) + "/lib/libfinecast_recorder.so";

inline bool exists(const std::string& path) { return access(path.c_str(), F_OK) == 0; }

/// The newest "<prefix><step>.h5" of a checkpoint directory ("" when none).
inline std::string newest_h5(const std::string& dir, const std::string& prefix) {
  std::string newest;
  if (DIR* d = opendir(dir.c_str())) {
    while (const dirent* e = readdir(d)) {
      const std::string name = e->d_name;
      if (name.rfind(prefix, 0) == 0 && name.size() > prefix.size() + 3 &&
          name.compare(name.size() - 3, 3, ".h5") == 0 && name > newest)
        newest = name;
    }
    closedir(d);
  }
  return newest.empty() ? "" : dir + "/" + newest;
}

/// The newest buffer snapshot "buffer_<step>.h5" of a checkpoint directory ("" when none): the
/// one written with the newest checkpoint.
inline std::string newest_buffer_snapshot(const std::string& dir) { return newest_h5(dir, "buffer_"); }

/// The newest checkpoint "ckpt_<step>.h5" of a checkpoint directory ("" when none).
inline std::string newest_checkpoint(const std::string& dir) { return newest_h5(dir, "ckpt_"); }

inline std::string binary(const std::string& name) { return std::string(FINECAST_BINARY_DIR) + "/bin/" + name; }
inline std::string plugin_library() { return std::string(FINECAST_BINARY_DIR) + "/lib/libfinecast_comin.so"; }

/// A finecast-host run file of `steps` steps of 30 min on R2B4 starting `offset` steps after
/// 1979-01-01T00:00 (a chunk of a restart chain: a restart run when `offset` > 0), loading the
/// plugin with plugin.yaml;
/// `plugin_extra`: more keys of finecast's plugin list entry, `more_plugins` further entries.
inline std::string chunk_host_file(int offset, int steps, const std::string& plugin_extra = "",
                                   const std::string& more_plugins = "") {
  const int minutes = offset * 30;
  char start[32];
  std::snprintf(start, sizeof start, "1979-01-01T%02d:%02d:00", minutes / 60, minutes % 60);
  return "grid: " + kIconGrid + "\norography: " + kEtopo20 +
         "\norography_variable: ROSE\n"
         "experiment_start: 1979-01-01T00:00:00\nstart: " +
         start + "\ndt: 1800\nsteps: " + std::to_string(steps) +
         "\nnproma: 24\nnlev: 2\nprogress_every: 0\nrestart_run: " + (offset > 0 ? "true" : "false") +
         "\nplugins:\n  - {name: finecast, library: " + plugin_library() + ", options: plugin.yaml" + plugin_extra +
         "}\n" + more_plugins;
}

/// A fresh folder under the test temp dir, removed at the end of the test.
class ScratchDir {
 public:
  explicit ScratchDir(const std::string& tag = "replay") {
    std::string tmpl = ::testing::TempDir() + "finecast_" + tag + "_XXXXXX";
    if (!mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp failed for " + tmpl);
    path_ = tmpl;
  }
  ~ScratchDir() {
    if (!std::getenv("FINECAST_KEEP_TEST_FILES")) std::system(("rm -rf '" + path_ + "'").c_str());
  }
  std::string file(const std::string& name) const { return path_ + "/" + name; }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

/// The whole content of a file ("" when it cannot be read).
inline std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

inline void write_text(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::trunc);
  out << text;
  if (!out) throw std::runtime_error("cannot write " + path);
}

/// Exit status and combined stdout + stderr of a shell command.
struct CommandResult {
  int rc = -1;
  std::string output;
};

inline CommandResult run_command(const std::string& command) {
  // mpiexec refuses root without these; ctest sets them, a developer's shell may not.
  setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 0);
  setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 0);
  CommandResult r;
  FILE* pipe = popen((command + " 2>&1").c_str(), "r");
  if (!pipe) throw std::runtime_error("popen failed for " + command);
  std::array<char, 4096> buf{};
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), pipe)) > 0) r.output.append(buf.data(), n);
  const int status = pclose(pipe);
  r.rc = WIFEXITED(status) ? WEXITSTATUS(status) : 128;
  return r;
}

/// `command` on `ranks` MPI ranks (one OpenMP thread each), started in `dir`.
inline CommandResult mpirun(const std::string& dir, int ranks, const std::string& command) {
  return run_command("cd '" + dir + "' && OMP_NUM_THREADS=1 mpiexec -n " + std::to_string(ranks) + " --oversubscribe " +
                     command);
}

/// A tiny, deterministic finecast plugin config for the tas file: 8 x 8 blocks (288 patches of
/// 64 cells, context 8), synchronous training on one thread, 2 members sampled at the end.
inline std::string tiny_plugin_config(const std::string& dir) {
  return "fields: [tas]\n"
         "device: cpu\n"
         "seed: 7\n"
         "grid: {type: latlon, file: " +
         kTas +
         ", block: 8}\n"
         "buffer: {capacity: 4}\n"
         "model: {hidden: 32, depth: 2, time_embedding: 16, diffusion_steps: 20}\n"
         "train: {async: false, every: 2, min_steps: 4, epochs: 1, batch_size: 64, threads: 1, "
         "warmup_steps: 5}\n"
         "sample: {every: 0, members: 2, steps: 4, output: " +
         dir +
         "/out.nc}\n"
         "checkpoint: {dir: " +
         dir + "/checkpoints, every: 0}\n";
}

/// A replay run file for the tas file: steps 0..5, the given decomposition, the plugin above.
inline std::string tiny_run_file(const std::string& plugin_config, const std::string& decomposition) {
  return "input: {files: [" + kTas +
         "], variables: [tas]}\n"
         "grid: {type: latlon}\n"
         "time: {start: 0, stop: 5}\n"
         "nproma: 7\n"
         "decomposition: " +
         decomposition +
         "\n"
         "seed: 3\n"
         "plugins:\n"
         "  - {name: finecast, library: " +
         plugin_library() + ", options: " + plugin_config + "}\n";
}

/// Writes the tiny plugin config and run file into `dir` and replays them on `ranks` ranks.
inline CommandResult run_tiny_replay(const std::string& dir, int ranks, const std::string& decomposition,
                                     const std::string& extra_args = "") {
  write_text(dir + "/plugin.yaml", tiny_plugin_config(dir));
  write_text(dir + "/run.yaml", tiny_run_file(dir + "/plugin.yaml", decomposition));
  return run_command("mpiexec -n " + std::to_string(ranks) + " --oversubscribe " + binary("finecast-replay") +
                     " --config " + dir + "/run.yaml --progress lines " + extra_args);
}

}  // namespace finecast::testing_replay
