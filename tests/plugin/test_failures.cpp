// SPDX-License-Identifier: BSD-3-Clause
// A failure on one rank, at every point of a coupling step, never hangs or crashes the host:
// under on_error: disable every rank stops together and the run finishes with exit status 0,
// keeping what was written; under on_error: abort every rank stops promptly. The failures are
// injected through the config (testing.fault), and real I/O failures through a file-size limit
// (a full disk, as far as the writers can tell). Every run has a time limit, so a hang fails.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "tests/plugin/replay_test_util.hpp"

namespace ftr = finecast::testing_replay;

namespace {

/// Training from step 4, a checkpoint every 4 steps, sampling every 2 with write-back into
/// finecast's own variable: every failure point is reached within 10 steps.
std::string fault_plugin_config(const std::string& extra, bool async = false, bool write_back = true) {
  return "fields: [ts]\nseed: 3\ndevice: cpu\n"
         "grid: {type: icon, file: " +
         ftr::kIconGrid +
         ", coarse_level: 0}\n"
         "buffer: {capacity: 4}\n"
         "model: {hidden: 16, depth: 1, time_embedding: 8, diffusion_steps: 5}\n"
         "train: {async: " +
         (async ? "true" : "false") +
         ", every: 4, min_steps: 4, epochs: 1, batch_size: 80, warmup_steps: 1, threads: 1}\n"
         "sample: {every: 2, members: 2, steps: 2, output: out.nc" +
         (write_back ? ", write_back: ts_finecast" : "") + "}\ncheckpoint: {dir: ckpt, every: 4, keep: 2}\n" + extra;
}

/// `step_seconds` gives an asynchronous session time to finish within a few steps, as a real
/// model's step would: the failure then happens well before the end of the run.
std::string fault_host_run_file(int steps, double step_seconds = 0) {
  return "grid: " + ftr::kIconGrid +
         "\norography: /usr/share/ferret-vis/data/etopo20.cdf\norography_variable: ROSE\n"
         "start: 1979-01-01T00:00:00\ndt: 1800\nsteps: " +
         std::to_string(steps) +
         "\nnproma: 24\nnlev: 2\nprogress_every: 0\nstep_seconds: " + std::to_string(step_seconds) +
         "\n"
         "plugins:\n  - {name: finecast, library: " +
         ftr::plugin_library() + ", options: plugin.yaml}\n";
}

/// finecast-host on `ranks` ranks in `dir`, killed after `limit` seconds (exit status 124 then).
ftr::CommandResult run_host(const std::string& dir, int ranks, int limit = 90, const std::string& prefix = "") {
  return ftr::run_command("cd '" + dir + "' && " + prefix + " timeout -k 5 " + std::to_string(limit) + " mpiexec -n " +
                          std::to_string(ranks) + " --oversubscribe " + ftr::binary("finecast-host") + " host.yaml");
}

struct FaultCase {
  std::string fault;  ///< testing.fault
  int rank;           ///< testing.fault_rank (-1 = the trainer)
  bool async;         ///< train.async
  bool write_back;    ///< sample.write_back set
  /// Samples were written before the failure: no, yes, or where the log says a sampling ran
  /// (an asynchronous session ends when the machine's load lets it: a sampling may come first).
  enum class Output { kNone, kWritten, kIfSampled } output;
};

std::string name_of(const FaultCase& c) {
  return c.fault + (c.rank >= 0 ? "_on_rank" + std::to_string(c.rank) : "_on_trainer") +
         (c.async ? "_async" : "_sync") + (c.write_back ? "_write_back" : "");
}

class FailureUnderDisable : public ::testing::TestWithParam<FaultCase> {};

TEST_P(FailureUnderDisable, EveryRankStopsTogetherAndTheHostFinishes) {
  const FaultCase& c = GetParam();
  ftr::ScratchDir dir("failure");
  const std::string extra =
      "on_error: disable\ntesting: {fault: " + c.fault + ", fault_rank: " + std::to_string(c.rank) + "}\n";
  ftr::write_text(dir.file("plugin.yaml"), fault_plugin_config(extra, c.async, c.write_back));
  ftr::write_text(dir.file("host.yaml"), fault_host_run_file(12, c.async ? 0.1 : 0));
  const ftr::CommandResult r = run_host(dir.path(), 3);
  ASSERT_NE(r.rc, 124) << "the run hung:\n" << r.output;
  EXPECT_EQ(r.rc, 0) << r.output;
  EXPECT_NE(r.output.find(c.fault + " failed at coupling step"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("fault injected by testing.fault"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("finecast stopped at"), std::string::npos) << r.output;  // the next step's agreement
  EXPECT_NE(r.output.find("finished 12 steps on 3 rank(s)"), std::string::npos) << r.output;
  // Nothing sampled is discarded: the output keeps the records written before the failure.
  const bool sampled = r.output.find("] Sampled ") != std::string::npos;
  const bool output_expected =
      c.output == FaultCase::Output::kWritten || (c.output == FaultCase::Output::kIfSampled && sampled);
  EXPECT_EQ(ftr::exists(dir.file("out.nc")), output_expected) << r.output;
  if (output_expected) {
    const ftr::CommandResult dump = ftr::run_command("ncdump -h " + dir.file("out.nc"));
    EXPECT_EQ(dump.rc, 0) << dump.output;
  }
}

// Failures: before the gather (on a non-trainer rank), in the trainer's session, at its
// checkpoint, sampling, output, and in the write-back on a non-trainer rank; synchronous and
// asynchronous training; sampling with and without write-back.
constexpr FaultCase::Output kNone = FaultCase::Output::kNone, kWritten = FaultCase::Output::kWritten,
                            kIfSampled = FaultCase::Output::kIfSampled;
INSTANTIATE_TEST_SUITE_P(
    Points, FailureUnderDisable,
    ::testing::Values(FaultCase{"gather", 1, false, true, kNone}, FaultCase{"gather", 0, true, true, kNone},
                      FaultCase{"training", -1, false, true, kNone}, FaultCase{"training", -1, true, true, kNone},
                      FaultCase{"checkpoint", -1, false, true, kWritten},
                      FaultCase{"checkpoint", -1, true, true, kIfSampled},
                      FaultCase{"sampling", -1, false, true, kNone}, FaultCase{"sampling", -1, true, false, kNone},
                      FaultCase{"output", -1, false, true, kNone}, FaultCase{"output", -1, true, false, kNone},
                      FaultCase{"write_back", 2, false, true, kWritten},
                      FaultCase{"write_back", 1, true, true, kWritten}),
    [](const ::testing::TestParamInfo<FaultCase>& info) { return name_of(info.param); });

class FailureUnderAbort : public ::testing::TestWithParam<std::string> {};

TEST_P(FailureUnderAbort, EveryRankStopsPromptly) {
  ftr::ScratchDir dir("failure_abort");
  ftr::write_text(dir.file("plugin.yaml"),
                  fault_plugin_config("on_error: abort\ntesting: {fault: " + GetParam() +
                                      ", fault_rank: " + (GetParam() == "gather" ? "2" : "-1") + "}\n"));
  ftr::write_text(dir.file("host.yaml"), fault_host_run_file(12));
  const ftr::CommandResult r = run_host(dir.path(), 3, 60);
  ASSERT_NE(r.rc, 124) << "the run hung:\n" << r.output;
  EXPECT_NE(r.rc, 0) << r.output;
  EXPECT_NE(r.output.find("fault injected by testing.fault"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("finished 12 steps"), std::string::npos) << r.output;
}

INSTANTIATE_TEST_SUITE_P(Points, FailureUnderAbort,
                         ::testing::Values("gather", "training", "checkpoint", "sampling", "output"));

// A full disk, as the writers see it: tests/plugin/enospc_shim.c (preloaded) makes every write
// to the chosen files fail with ENOSPC once a number of bytes is written. Under on_error: disable
// the run ends normally (no crash at exit from a half-closed HDF5 file) and keeps what it wrote.
ftr::CommandResult run_with_full_disk(const std::string& dir, const std::string& files, long long after) {
  const std::string shim = std::string(FINECAST_BINARY_DIR) + "/lib/libfinecast_test_enospc.so";
  return run_host(dir, 2, 90,
                  "FINECAST_TEST_ENOSPC='" + files + "' FINECAST_TEST_ENOSPC_AFTER=" + std::to_string(after) +
                      " LD_PRELOAD=" + shim + " ");
}

TEST(FullDisk, AFailedCheckpointEndsTheRunNormallyAndTheOutputIsPublished) {
  ftr::ScratchDir dir("full_disk_checkpoint");
  ftr::write_text(dir.file("plugin.yaml"), fault_plugin_config("on_error: disable\n"));
  ftr::write_text(dir.file("host.yaml"), fault_host_run_file(12));
  const ftr::CommandResult r = run_with_full_disk(dir.path(), "/ckpt/", 0);
  ASSERT_NE(r.rc, 124) << "the run hung:\n" << r.output;
  EXPECT_EQ(r.rc, 0) << r.output;
  EXPECT_NE(r.output.find("checkpoint at 1979-01-01T"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("finished 12 steps on 2 rank(s)"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("Output written: out.nc"), std::string::npos) << r.output;
  const ftr::CommandResult dump = ftr::run_command("ncdump -h " + dir.file("out.nc"));
  EXPECT_EQ(dump.rc, 0) << dump.output;
}

TEST(FullDisk, AFailedOutputKeepsTheRecordsWrittenBefore) {
  ftr::ScratchDir dir("full_disk_output");
  ftr::write_text(dir.file("plugin.yaml"), fault_plugin_config("on_error: disable\n"));
  ftr::write_text(dir.file("host.yaml"), fault_host_run_file(12));
  // The coordinates with their corners and one record (2 members, their mean, the coarse and
  // the host field on 20,480 cells) fit, the second record does not: in NetCDF-4 (the default)
  // the writer's check of the room for a whole record (410 kB uncompressed plus 256 KiB) fails
  // before any of it is written; the shim refuses that posix_fallocate as a full disk does.
  const ftr::CommandResult r = run_with_full_disk(dir.path(), "out.nc", 1950000);
  ASSERT_NE(r.rc, 124) << "the run hung:\n" << r.output;
  EXPECT_EQ(r.rc, 0) << r.output;
  // One prefix (the step's stage and time; it was doubled), and no source file or expression.
  const size_t error = r.output.find("ERROR: output at 1979-01-01T");
  ASSERT_NE(error, std::string::npos) << r.output;
  const std::string line = r.output.substr(error, r.output.find('\n', error) - error);
  EXPECT_EQ(line.find("output at", 20), std::string::npos) << line;
  EXPECT_EQ(line.find(".cpp"), std::string::npos) << line;
  const ftr::CommandResult dump = ftr::run_command("ncdump -v time " + dir.file("out.nc"));
  ASSERT_EQ(dump.rc, 0) << dump.output;
  EXPECT_NE(dump.output.find("time = UNLIMITED ; // (1 currently)"), std::string::npos) << dump.output;
}

/// A tmpfs of `kib` KiB mounted at `path` (created) while it lives; mounted() is false where the
/// tests may not mount (root with mount permission is needed), with why().
class SmallTmpfs {
 public:
  SmallTmpfs(const std::string& path, int kib) : path_(path) {
    ftr::run_command("mkdir -p '" + path + "'");
    const ftr::CommandResult r =
        ftr::run_command("mount -t tmpfs -o size=" + std::to_string(kib) + "k finecast_test '" + path + "'");
    mounted_ = r.rc == 0;
    why_ = "cannot mount a small tmpfs here (needs root with mount permission): " + r.output;
  }
  ~SmallTmpfs() {
    if (mounted_) ftr::run_command("umount -l '" + path_ + "'");
  }
  SmallTmpfs(const SmallTmpfs&) = delete;
  SmallTmpfs& operator=(const SmallTmpfs&) = delete;
  bool mounted() const { return mounted_; }
  const std::string& why() const { return why_; }

 private:
  std::string path_, why_;
  bool mounted_ = false;
};

// A full disk on a real file system: a small tmpfs mounted at the checkpoint directory holds the
// first checkpoint (and its buffer snapshot) but not the second. HDF5 1.10 cannot close a file
// whose flush failed: the ID stayed open on freed memory and HDF5's clean-up at exit crashed the
// process (exit 139) after the run had finished its steps. Now the file is discarded without a
// flush to the disk: the run ends with exit 0, no temporary file is left, and the previous
// checkpoint reads back whole. (The write() shim above never reached this state: with a limit of
// 0 bytes H5Fcreate itself fails, and with a larger one a failed large write leaves room under
// the limit for the small metadata writes of the close, which a real full disk refuses.)
// Mounting needs root with mount permission; elsewhere the test is skipped, saying why.
TEST(FullDisk, ACheckpointThatDoesNotFitOnARealSmallFileSystemKeepsThePreviousOne) {
  ftr::ScratchDir dir("full_disk_tmpfs");
  const std::string ckpt = dir.file("ckpt");
  // Sized from the files this config writes: a buffer snapshot of 428 kB, a checkpoint of 212 kB.
  // The first pair (640 kB) fits, the second snapshot too, its checkpoint does not.
  const SmallTmpfs disk(ckpt, 1200);
  if (!disk.mounted()) GTEST_SKIP() << disk.why();
  ftr::write_text(dir.file("plugin.yaml"), fault_plugin_config("on_error: disable\n"));
  ftr::write_text(dir.file("host.yaml"), fault_host_run_file(12));
  const ftr::CommandResult r = run_host(dir.path(), 2);
  ASSERT_NE(r.rc, 124) << "the run hung:\n" << r.output;
  EXPECT_EQ(r.rc, 0) << r.output;
  EXPECT_NE(r.output.find("checkpoint at 1979-01-01T"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("No space left on device"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("finished 12 steps on 2 rank(s)"), std::string::npos) << r.output;
  const ftr::CommandResult files = ftr::run_command("ls '" + ckpt + "'");
  EXPECT_EQ(files.output.find(".tmp"), std::string::npos) << files.output;
  EXPECT_NE(files.output.find("ckpt_"), std::string::npos) << files.output;
  // Every checkpoint and snapshot left reads back whole (HDF5 checks each chunk's Fletcher-32).
  const ftr::CommandResult read = ftr::run_command(
      "/usr/bin/python3 -c \"import glob, h5py\n"
      "names = sorted(glob.glob('" +
      ckpt +
      "/*.h5'))\n"
      "assert names, 'no checkpoint left'\n"
      "for n in names:\n"
      "    with h5py.File(n, 'r') as f:\n"
      "        f.visititems(lambda k, v: v[()] if isinstance(v, h5py.Dataset) else None)\n"
      "print('read', len(names))\"");
  EXPECT_EQ(read.rc, 0) << files.output << read.output;
}

// A sampler that blows up (here a TorchScript denoiser that is finite while it trains and NaN
// under no_grad, as a sampler's numerical blow-up looks): every member value is masked, the
// records say how many (ts_masked) and hold them as missing, one WARNING names the count, and the
// host's variable is never written with them: finecast's recorder, listed after finecast, sees
// ts_finecast finite at every step but in the padding of the last nproma block (which
// finecast-host fills with NaN: the same few values at every step, before any sampling too).
// Once records were 100% NaN, rc 0, without a word, and the host variable NaN on every owned cell.
TEST(NonFiniteSamples, AreMaskedCountedAndNeverWrittenBack) {
  if (std::system("/usr/bin/python3 -c 'import torch' > /dev/null 2>&1") != 0)
    GTEST_SKIP() << "/usr/bin/python3 with torch (python3-torch) is not installed";
  ftr::ScratchDir dir("nan_under_no_grad");
  ftr::write_text(dir.file("make_denoiser.py"),
                  "import torch\n"
                  "class Denoiser(torch.nn.Module):\n"
                  "    def __init__(self):\n"
                  "        super().__init__()\n"
                  "        self.layer0 = torch.nn.Linear(1, 1)\n"
                  "    def forward(self, x_t: torch.Tensor, t: torch.Tensor, context: torch.Tensor) -> torch.Tensor:\n"
                  "        y = self.layer0(x_t.unsqueeze(-1)).squeeze(-1) + 0.0 * context.sum(1, keepdim=True)\n"
                  "        if not torch.is_grad_enabled():\n"
                  "            y = y * float('nan')\n"
                  "        return y\n"
                  "torch.jit.script(Denoiser()).save('denoiser.pt')\n");
  ASSERT_EQ(ftr::run_command("cd '" + dir.path() + "' && /usr/bin/python3 make_denoiser.py").rc, 0);
  // model: the user's module instead of the built-in network (the last model key wins).
  std::string config = fault_plugin_config("on_error: disable\n");
  config.replace(config.find("model: {"), 8, "model: {arch: torchscript, file: denoiser.pt, ");
  ftr::write_text(dir.file("plugin.yaml"), config);
  std::string host = fault_host_run_file(12);
  host += "  - {name: recorder, library: " + std::string(FINECAST_BINARY_DIR) +
          "/lib/libfinecast_recorder.so, options: \"rec_ vars=ts_finecast\"}\n";
  ftr::write_text(dir.file("host.yaml"), host);
  const ftr::CommandResult r = run_host(dir.path(), 2);
  ASSERT_NE(r.rc, 124) << "the run hung:\n" << r.output;
  ASSERT_EQ(r.rc, 0) << r.output;
  EXPECT_NE(r.output.find("sampled values are non-finite or implausible for ts (written as missing; not written back: "
                          "ts_finecast keeps its last value)"),
            std::string::npos)
      << r.output;
  const ftr::CommandResult check = ftr::run_command(
      "cd '" + dir.path() +
      "' && /usr/bin/python3 -c \"import netCDF4, numpy as np\n"
      "out = netCDF4.Dataset('out.nc')\n"
      "masked = out['ts_masked'][:]\n"
      "assert len(masked) > 0 and (masked == 2 * 20480).all(), masked\n"
      "assert np.ma.getmaskarray(out['ts'][:]).all(), 'a member value was written'\n"
      "for rank in (0, 1):\n"
      "    v = np.ma.filled(netCDF4.Dataset('rec_vars_%d.nc' % rank)['domain_1']['ts_finecast'][:], np.nan)\n"
      "    bad = [int((~np.isfinite(v[e])).sum()) for e in range(v.shape[0])]\n"
      "    assert bad == [bad[0]] * len(bad) and bad[0] < 24, 'rank %d: non-finite values per step: %s' % (rank, bad)\n"
      "print('records', len(masked))\"");
  EXPECT_EQ(check.rc, 0) << check.output << r.output;
}

// A full disk at the NetCDF-4 output on a real file system, at several sizes, so that the first
// failure falls on the file's creation, its coordinates, its first or a later record: the run
// ends with exit 0 (once: the first record's flush failed and HDF5's clean-up crashed the process
// at exit, exit 139), every rank finishes its steps, and an output left behind reads back with
// the records the log reported. Synchronous and asynchronous training, with and without
// write-back. Mounting needs root with mount permission; elsewhere the test is skipped.
struct DiskCase {
  int kib;
  bool async;
  bool write_back;
};

class FullDiskAtTheOutput : public ::testing::TestWithParam<DiskCase> {};

TEST_P(FullDiskAtTheOutput, EndsTheRunNormallyAndKeepsAReadableFile) {
  const DiskCase& c = GetParam();
  ftr::ScratchDir dir("full_disk_output_tmpfs");
  const std::string out = dir.file("out");
  const SmallTmpfs disk(out, c.kib);
  if (!disk.mounted()) GTEST_SKIP() << disk.why();
  std::string config = fault_plugin_config("on_error: disable\n", c.async, c.write_back);
  const std::string from = "output: out.nc", to = "output: out/out.nc";
  config.replace(config.find(from), from.size(), to);
  ftr::write_text(dir.file("plugin.yaml"), config);
  ftr::write_text(dir.file("host.yaml"), fault_host_run_file(12, c.async ? 0.1 : 0));
  const ftr::CommandResult r = run_host(dir.path(), 2);
  ASSERT_NE(r.rc, 124) << "the run hung:\n" << r.output;
  EXPECT_EQ(r.rc, 0) << r.output;
  EXPECT_NE(r.output.find("finished 12 steps on 2 rank(s)"), std::string::npos) << r.output;
  // Synchronous runs sample on schedule and always fill the disk; an asynchronous session ends
  // when the machine's load lets it, so under load fewer records may not fill the largest disk:
  // then the output must be there whole.
  if (r.output.find("no room for") == std::string::npos) {
    EXPECT_TRUE(c.async) << "the disk never filled:\n" << r.output;
    EXPECT_TRUE(ftr::exists(out + "/out.nc")) << r.output;
  }
  if (ftr::exists(out + "/out.nc")) {
    const ftr::CommandResult dump = ftr::run_command("ncdump -h '" + out + "/out.nc'");
    EXPECT_EQ(dump.rc, 0) << r.output << dump.output;
  }
}

INSTANTIATE_TEST_SUITE_P(Sizes, FullDiskAtTheOutput,
                         // (256 KiB: the file's grid does not fit; 1650: the first record; 1800: the
                         // second; 2000: the third, as this config's files are laid out)
                         ::testing::Values(DiskCase{256, false, true}, DiskCase{1650, true, false},
                                           DiskCase{1800, false, false}, DiskCase{2000, true, true}),
                         [](const ::testing::TestParamInfo<DiskCase>& info) {
                           return std::to_string(info.param.kib) + "KiB" + (info.param.async ? "_async" : "_sync") +
                                  (info.param.write_back ? "_write_back" : "");
                         });

}  // namespace
