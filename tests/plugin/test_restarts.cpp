// SPDX-License-Identifier: BSD-3-Clause
// Restart chains, as ICON runs them: a run in chunks, each a new process that resumes from the
// checkpoint of the one before (checkpoint.resume: auto), each shorter than train.min_steps.
// The chain must buffer exactly what one long run buffers, train once the buffer is full, and
// continue one output file.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "common/checkpoint_files.hpp"
#include "coupling/buffer/rolling_buffer.hpp"
#include "plugin/comin_plugin/run_counters.hpp"
#include "trainer/checkpoint.hpp"
#include "tests/plugin/replay_test_util.hpp"

namespace ftr = finecast::testing_replay;
namespace fp = finecast::plugin;

namespace {

std::string chain_plugin_config(const std::string& patch = "{orography: topography_c}") {
  return "fields: [ts]\nseed: 5\ndevice: cpu\n"
         "grid: {type: icon, file: " +
         ftr::kIconGrid +
         ", coarse_level: 0}\n"
         "patch: " +
         patch +
         "\n"
         "buffer: {capacity: 6}\n"
         "model: {hidden: 16, depth: 1, time_embedding: 8, diffusion_steps: 5}\n"
         "train: {async: false, every: 3, min_steps: 6, epochs: 1, batch_size: 96, warmup_steps: 1, threads: 1}\n"
         "sample: {every: 3, members: 2, steps: 2, output: out.nc}\n"
         "checkpoint: {dir: ckpt, keep: 2, resume: auto}\n";
}

ftr::CommandResult run_chunk(const std::string& dir, int offset, int steps) {
  ftr::write_text(dir + "/host.yaml", ftr::chunk_host_file(offset, steps));
  return ftr::run_command("cd '" + dir + "' && mpiexec -n 2 --oversubscribe " + ftr::binary("finecast-host") +
                          " host.yaml");
}

struct BufferContent {
  std::vector<float> context, fine, weights;
  std::vector<std::string> datetimes;
};

BufferContent read_buffer(const std::string& path) {
  const auto b = finecast::coupling::RollingBuffer::load_h5(path);
  BufferContent c;
  b.snapshot(c.context, c.fine, c.weights);
  for (int i = 0; i < b.steps(); ++i) c.datetimes.push_back(b.datetime(i));
  return c;
}

}  // namespace

TEST(RestartChain, FourShortChunksBufferWhatOneLongRunBuffers) {
  ftr::ScratchDir long_dir("chain_long"), chain_dir("chain");
  // With a covariate gathered at every step (the host's surface pressure), normalised as at the
  // first step of the long run in every chunk: the chunks after the first take the checkpoint's norms.
  const std::string patch = "{orography: topography_c, static: [ps], static_refresh: true}";
  ftr::write_text(long_dir.file("plugin.yaml"), chain_plugin_config(patch));
  ftr::write_text(chain_dir.file("plugin.yaml"), chain_plugin_config(patch));
  const ftr::CommandResult whole = run_chunk(long_dir.path(), 0, 12);
  ASSERT_EQ(whole.rc, 0) << whole.output;

  std::string chain_log;
  for (int chunk = 0; chunk < 4; ++chunk) {
    const ftr::CommandResult r = run_chunk(chain_dir.path(), 3 * chunk, 3);
    ASSERT_EQ(r.rc, 0) << "chunk " << chunk << ":\n" << r.output;
    chain_log += r.output;
    if (chunk == 0) {
      EXPECT_NE(r.output.find("checkpoint.resume: auto: no valid checkpoint in ckpt: a fresh start"), std::string::npos)
          << r.output;
      EXPECT_NE(r.output.find("Checkpoint at the end of the run before any training session"), std::string::npos)
          << r.output;
    } else {
      EXPECT_NE(r.output.find("Resumed the rolling buffer from ckpt/buffer_"), std::string::npos) << r.output;
      EXPECT_NE(r.output.find(std::to_string(3 * chunk) + " coupling steps so far"), std::string::npos) << r.output;
    }
  }
  // The chain trained on the same steps as the long run (the step count goes on across chunks).
  for (const char* session : {"Training session 1 at 1979-01-01T03:00:00: 6 steps in buffer",
                              "Training session 2 at 1979-01-01T04:30:00: 6 steps in buffer",
                              "Training session 3 at 1979-01-01T06:00:00: 6 steps in buffer"}) {
    EXPECT_NE(whole.output.find(session), std::string::npos) << whole.output;
    EXPECT_NE(chain_log.find(session), std::string::npos) << chain_log;
  }

  const BufferContent a = read_buffer(ftr::newest_buffer_snapshot(long_dir.file("ckpt")));
  const BufferContent b = read_buffer(ftr::newest_buffer_snapshot(chain_dir.file("ckpt")));
  ASSERT_EQ(a.datetimes.size(), 6u);
  EXPECT_EQ(a.datetimes, b.datetimes);
  EXPECT_EQ(a.datetimes.back(), "1979-01-01T06:00:00");
  // The orography and the covariate included: the static fields are gathered in every chunk.
  EXPECT_EQ(a.context, b.context);
  EXPECT_EQ(a.fine, b.fine);

  // The same weights: the chain restores the optimizer, EMA, normalisation and RNG state.
  const ftr::CommandResult weights = ftr::run_command("h5diff -d 0 '" + long_dir.file("ckpt/ckpt_00000015.h5") + "' '" +
                                                      chain_dir.file("ckpt/ckpt_00000015.h5") + "' /model");
  EXPECT_EQ(weights.rc, 0) << weights.output;
  // The run's counters are typed attributes of /run (int64; the flag 0 or 1), not text in /metadata.
  const std::string last = chain_dir.file("ckpt/ckpt_00000015.h5");
  const auto run = finecast::trainer::read_checkpoint_group(last, fp::kRunGroup);
  ASSERT_TRUE(run.has_value());
  EXPECT_EQ(std::get<int64_t>(run->at("coupling_steps")), 12);
  EXPECT_EQ(std::get<int64_t>(run->at("sessions")), 3);
  EXPECT_TRUE(std::holds_alternative<int64_t>(run->at("training_due")));
  EXPECT_EQ(finecast::trainer::read_checkpoint_metadata(last).count("coupling_steps"), 0u);

  // One output file, continued by every chunk that sampled, in time order, with the long run's
  // samples (the sampling seeds go on across chunks too).
  const ftr::CommandResult dump = ftr::run_command("ncdump -t -v time " + chain_dir.file("out.nc"));
  ASSERT_EQ(dump.rc, 0) << dump.output;
  EXPECT_NE(chain_log.find("Appending to out.nc"), std::string::npos) << chain_log;
  EXPECT_NE(dump.output.find("\"1979-01-01 03\", \"1979-01-01 04:30\", \"1979-01-01 06\""), std::string::npos)
      << dump.output;
  const ftr::CommandResult out = ftr::run_command("/usr/bin/python3 " + std::string(FINECAST_SOURCE_DIR) +
                                                  "/tests/comin/compare_netcdf.py " + long_dir.file("out.nc") + " " +
                                                  chain_dir.file("out.nc") + " --ignore history finecast_checkpoint");
  EXPECT_EQ(out.rc, 0) << out.output;
}

// sample.calibration prequential goes on across a restart: the sums of the samplings before it
// are in the checkpoint. Samplings every 2 steps, sessions every 3 (synchronous): the sampling at
// step 8 is scored before the restart at 9, and the resumed chunk's samplings at 10 and 12 are
// drawn with the inflation it gave, as in the run without a restart (equal outputs; no sampling
// at the end of a chunk, which the run without a restart would not have).
TEST(RestartChain, APrequentialCalibrationGoesOnAcrossARestart) {
  ftr::ScratchDir long_dir("calib_long"), chain_dir("calib_chain");
  std::string config = chain_plugin_config();
  const std::string from = "sample: {every: 3,";
  ASSERT_NE(config.find(from), std::string::npos);
  config.replace(config.find(from), from.size(), "sample: {every: 2, at_end: false, calibration: prequential,");
  ftr::write_text(long_dir.file("plugin.yaml"), config);
  ftr::write_text(chain_dir.file("plugin.yaml"), config);
  const ftr::CommandResult whole = run_chunk(long_dir.path(), 0, 12);
  ASSERT_EQ(whole.rc, 0) << whole.output;
  const ftr::CommandResult first = run_chunk(chain_dir.path(), 0, 9);
  ASSERT_EQ(first.rc, 0) << first.output;
  EXPECT_NE(first.output.find("Calibration (sample.calibration prequential): at 1979-01-01T04:00:00"),
            std::string::npos)
      << first.output;
  const ftr::CommandResult second = run_chunk(chain_dir.path(), 9, 3);
  ASSERT_EQ(second.rc, 0) << second.output;
  const ftr::CommandResult out = ftr::run_command("/usr/bin/python3 " + std::string(FINECAST_SOURCE_DIR) +
                                                  "/tests/comin/compare_netcdf.py " + long_dir.file("out.nc") + " " +
                                                  chain_dir.file("out.nc") + " --ignore history finecast_checkpoint");
  EXPECT_EQ(out.rc, 0) << out.output;
  const auto run =
      finecast::trainer::read_checkpoint_group(ftr::newest_checkpoint(chain_dir.file("ckpt")), fp::kRunGroup);
  ASSERT_TRUE(run.has_value());
  EXPECT_GT(std::get<double>(run->at("calibration_s2")), 0.0);
}

// A run resumes a model only with the conditioning it was trained on: a checkpoint of a ts run
// resumed by a config that couples ps is refused, naming both fields and both units (the model's
// shapes alone would have let it through: one field each, the same context).
TEST(RestartChain, ResumeWithOtherFieldsIsRefusedNamingBoth) {
  ftr::ScratchDir dir("chain_other_field");
  ftr::write_text(dir.file("plugin.yaml"), chain_plugin_config());
  const ftr::CommandResult first = run_chunk(dir.path(), 0, 1);
  ASSERT_EQ(first.rc, 0) << first.output;
  std::string ps = chain_plugin_config();
  ps.replace(ps.find("fields: [ts]"), 12, "fields: [ps]");
  ftr::write_text(dir.file("plugin.yaml"), ps);
  const ftr::CommandResult second = run_chunk(dir.path(), 1, 1);
  EXPECT_NE(second.rc, 0) << second.output;
  EXPECT_NE(second.output.find("was trained with another conditioning (fields: the checkpoint has ts, plugin.yaml "
                               "has ps; target: the checkpoint has ts, plugin.yaml has ps; target_units: the "
                               "checkpoint has K, plugin.yaml has Pa)"),
            std::string::npos)
      << second.output;
}

// A checkpoint of another grid (R2B4 patches of R2B0 cells, 256 values, resumed by a run with
// patches of R2B1 cells, 64 values): the run stops naming the grid's difference. Its buffer
// snapshot, whose shapes differ too, was reported as damaged ("delete the snapshot"), and the
// real reason came only once the snapshot was gone.
TEST(RestartChain, ACheckpointOfAnotherGridIsRefusedForThatNotAsADamagedSnapshot) {
  ftr::ScratchDir dir("chain_other_grid");
  ftr::write_text(dir.file("plugin.yaml"), chain_plugin_config());
  const ftr::CommandResult first = run_chunk(dir.path(), 0, 1);
  ASSERT_EQ(first.rc, 0) << first.output;
  std::string level1 = chain_plugin_config();
  level1.replace(level1.find("coarse_level: 0"), 15, "coarse_level: 1");
  ftr::write_text(dir.file("plugin.yaml"), level1);
  const ftr::CommandResult second = run_chunk(dir.path(), 1, 1);
  EXPECT_NE(second.rc, 0) << second.output;
  EXPECT_NE(second.output.find("was trained with another conditioning (patch.size: the checkpoint has 256, "
                               "plugin.yaml has 64)"),
            std::string::npos)
      << second.output;
  EXPECT_EQ(second.output.find("damaged"), std::string::npos) << second.output;
}

// ---- Which checkpoint a restarted run takes, and what a killed run leaves ----

namespace {

/// Checkpoints, samplings and sessions every 4 steps (synchronous: the same on every run).
std::string every4_config(const std::string& resume = "auto", const std::string& extra = "") {
  return "fields: [ts]\nseed: 5\ndevice: cpu\n"
         "grid: {type: icon, file: " +
         ftr::kIconGrid +
         ", coarse_level: 0}\n"
         "buffer: {capacity: 4}\n"
         "model: {hidden: 16, depth: 1, time_embedding: 8, diffusion_steps: 5}\n"
         "train: {async: false, every: 4, min_steps: 4, epochs: 1, batch_size: 80, warmup_steps: 1, threads: 1}\n"
         "sample: {every: 4, members: 2, steps: 2, output: out.nc}\n"
         "checkpoint: {dir: ckpt, every: 4, keep: 10, resume: " +
         resume + "}\n" + extra;
}

/// The model time of every checkpoint of `dir`, by file name.
std::map<std::string, std::string> checkpoint_times(const std::string& dir) {
  std::map<std::string, std::string> times;
  for (const auto& [step, path] : finecast::checkpoint_files::checkpoints_newest_first(dir))
    times[path] = finecast::trainer::read_checkpoint_metadata(path).at("datetime");
  return times;
}

/// The times of the records of every output in `dir` (out.nc and the out_<time>.nc of runs that
/// could not continue it), sorted, as ncdump -t prints them.
std::vector<std::string> output_times(const std::string& dir) {
  const ftr::CommandResult r = ftr::run_command(
      "cd '" + dir + "' && for f in out*.nc; do ncdump -t -v time \"$f\" | sed -n '/^ time =/,$p'; done");
  std::vector<std::string> times;
  for (size_t q = r.output.find('"'); q != std::string::npos; q = r.output.find('"', q + 1)) {
    const size_t end = r.output.find('"', q + 1);
    if (end == std::string::npos) break;
    times.push_back(r.output.substr(q + 1, end - q - 1));
    q = end;
  }
  std::sort(times.begin(), times.end());
  times.erase(std::unique(times.begin(), times.end()), times.end());
  return times;
}

}  // namespace

// Every rank runs the schedule on the resumed count of coupling steps, which only the trainer
// reads from the checkpoint: a chunk resumed at step 5 samples with write-back at step 8 (04:00)
// on every rank. Once the other ranks counted from 0, did not sample there, and the trainer waited
// for them in the write-back forever (found in the real ICON's restart: scripts/icon/run_jabw.sh).
TEST(RestartChain, EveryRankSamplesOnTheResumedCount) {
  ftr::ScratchDir dir("resumed_count");
  std::string config = every4_config("auto");
  config.replace(config.find("output: out.nc"), 14, "output: out.nc, write_back: ts_finecast");
  ftr::write_text(dir.file("plugin.yaml"), config);
  const ftr::CommandResult first = run_chunk(dir.path(), 0, 5);
  ASSERT_EQ(first.rc, 0) << first.output;
  ftr::write_text(dir.file("host.yaml"), ftr::chunk_host_file(5, 6));
  const ftr::CommandResult r =
      ftr::run_command("cd '" + dir.path() + "' && timeout -k 5 120 mpiexec -n 2 --oversubscribe " +
                       ftr::binary("finecast-host") + " host.yaml");
  ASSERT_NE(r.rc, 124) << "the resumed run hung:\n" << r.output;
  ASSERT_EQ(r.rc, 0) << r.output;
  EXPECT_NE(r.output.find("5 coupling steps so far"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("Sampled 2 member(s) at 1979-01-01T04:00:00"), std::string::npos) << r.output;
}

// ICON restarts from its restart file at 04:00 while finecast's directory also holds checkpoints
// of 06:00 (written before the job was lost): the run takes the one at 04:00 and leaves the later
// one alone.
TEST(RestartChain, AutoTakesTheCheckpointAtTheHostsRestartTime) {
  ftr::ScratchDir dir("restart_time");
  ftr::write_text(dir.file("plugin.yaml"), every4_config());
  const ftr::CommandResult first = run_chunk(dir.path(), 0, 12);
  ASSERT_EQ(first.rc, 0) << first.output;
  std::string at_restart, later;
  for (const auto& [path, datetime] : checkpoint_times(dir.file("ckpt"))) {
    if (datetime == "1979-01-01T04:00:00") at_restart = path;
    if (datetime == "1979-01-01T06:00:00") later = path;
  }
  ASSERT_FALSE(at_restart.empty() || later.empty()) << first.output;

  const ftr::CommandResult r = run_chunk(dir.path(), 8, 2);  // restart_run at 04:00
  ASSERT_EQ(r.rc, 0) << r.output;
  const std::string name = at_restart.substr(at_restart.rfind('/') + 1);
  EXPECT_NE(r.output.find("Resumed from ckpt/" + name), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("model time 1979-01-01T06:00:00, later than the host's restart time 1979-01-01T04:00:00: "
                          "left alone"),
            std::string::npos)
      << r.output;
  EXPECT_TRUE(ftr::exists(later));
  EXPECT_EQ(r.output.find("holds steps from its future"), std::string::npos) << r.output;
}

// A run killed between a step's checkpoint and its sampling (here stopped there by a fault under
// on_error: abort) is resumed where the host restarts, at its newest checkpoint: the output's
// time axis has every sampling, 02:00 to 10:00 every 2 hours. The checkpoint was once written
// before the sampling of its step, and the resumed run never made that sampling (06:00).
TEST(RestartChain, AKilledRunMissesNoSampling) {
  ftr::ScratchDir dir("kill_sampling");
  ftr::write_text(dir.file("plugin.yaml"),
                  every4_config("auto", "on_error: abort\ntesting: {fault: sampling, fault_step: 12}\n"));
  const ftr::CommandResult killed = run_chunk(dir.path(), 0, 20);
  ASSERT_NE(killed.rc, 0) << killed.output;
  std::string newest;
  for (const auto& [path, datetime] : checkpoint_times(dir.file("ckpt"))) newest = std::max(newest, datetime);
  ASSERT_EQ(newest.substr(0, 11), "1979-01-01T") << killed.output;
  const int hours = std::stoi(newest.substr(11, 2)), minutes = std::stoi(newest.substr(14, 2));

  ftr::write_text(dir.file("plugin.yaml"), every4_config());
  const int offset = (hours * 60 + minutes) / 30;
  const ftr::CommandResult resumed = run_chunk(dir.path(), offset, 20 - offset);
  ASSERT_EQ(resumed.rc, 0) << resumed.output;
  EXPECT_EQ(output_times(dir.path()), (std::vector<std::string>{"1979-01-01 02", "1979-01-01 04", "1979-01-01 06",
                                                                "1979-01-01 08", "1979-01-01 10"}))
      << killed.output << resumed.output;
  // Each chunk that wrote the file added its command to the history.
  const ftr::CommandResult history = ftr::run_command("ncdump -h " + dir.file("out.nc") + " | grep -A4 history");
  EXPECT_NE(history.output.find("host.yaml: finecast samples from 1979-01-01T02:00:00, a fresh start"),
            std::string::npos)
      << history.output;
  EXPECT_NE(history.output.find("host.yaml: finecast samples from 1979-01-01T0"),
            history.output.rfind("host.yaml: finecast samples from 1979-01-01T0"))
      << history.output;
}

// Only damaged checkpoints: `auto` stops and says why each was refused; `auto-or-fresh` starts
// fresh with a warning.
TEST(RestartChain, OnlyDamagedCheckpointsAreAnErrorUnlessAutoOrFresh) {
  ftr::ScratchDir dir("damaged_only");
  ftr::run_command("mkdir -p '" + dir.file("ckpt") + "'");
  ftr::write_text(dir.file("ckpt/ckpt_00000012.h5"), "not an HDF5 file");
  ftr::write_text(dir.file("plugin.yaml"), every4_config());
  const ftr::CommandResult refused = run_chunk(dir.path(), 4, 2);
  EXPECT_NE(refused.rc, 0) << refused.output;
  EXPECT_NE(refused.output.find("checkpoint.resume: auto: no usable checkpoint in ckpt"), std::string::npos)
      << refused.output;
  EXPECT_NE(refused.output.find("skipping invalid checkpoint: ckpt/ckpt_00000012.h5"), std::string::npos)
      << refused.output;
  EXPECT_NE(refused.output.find("auto-or-fresh starts fresh instead"), std::string::npos) << refused.output;

  ftr::write_text(dir.file("plugin.yaml"), every4_config("auto-or-fresh"));
  const ftr::CommandResult fresh = run_chunk(dir.path(), 4, 2);
  ASSERT_EQ(fresh.rc, 0) << fresh.output;
  EXPECT_NE(fresh.output.find("a fresh start (checkpoint.resume: auto-or-fresh)"), std::string::npos) << fresh.output;
  EXPECT_EQ(fresh.output.find("Resumed from"), std::string::npos) << fresh.output;
}

// A chunk that starts fresh (auto-or-fresh, every checkpoint damaged) beside the output of the
// chunks before: that file stays as it was, byte for byte, and the chunk writes
// out_<its first sampling>.nc, as a chunk does whose output cannot be continued; the two files
// hold every sampling. Once the fresh chunk created out.nc anew and the earlier records were lost.
TEST(RestartChain, AChunkThatStartsFreshKeepsTheOutputOfTheChunksBefore) {
  ftr::ScratchDir dir("fresh_keeps_output");
  ftr::write_text(dir.file("plugin.yaml"), every4_config("auto-or-fresh"));
  const ftr::CommandResult first = run_chunk(dir.path(), 0, 8);
  ASSERT_EQ(first.rc, 0) << first.output;
  const std::string before = ftr::read_bytes(dir.file("out.nc"));
  for (const auto& [step, path] : finecast::checkpoint_files::checkpoints_newest_first(dir.file("ckpt")))
    ftr::write_text(path, "not an HDF5 file");

  const ftr::CommandResult fresh = run_chunk(dir.path(), 8, 8);
  ASSERT_EQ(fresh.rc, 0) << fresh.output;
  EXPECT_NE(fresh.output.find("a fresh start (checkpoint.resume: auto-or-fresh)"), std::string::npos) << fresh.output;
  EXPECT_NE(fresh.output.find("out.nc exists and this run starts fresh: it is kept, and this run's samples go to "
                              "out_1979-01-01T06-00-00.nc"),
            std::string::npos)
      << fresh.output;
  EXPECT_TRUE(ftr::read_bytes(dir.file("out.nc")) == before) << "out.nc was changed";
  EXPECT_TRUE(ftr::exists(dir.file("out_1979-01-01T06-00-00.nc")));
  EXPECT_EQ(output_times(dir.path()),
            (std::vector<std::string>{"1979-01-01 02", "1979-01-01 04", "1979-01-01 06", "1979-01-01 08"}))
      << first.output << fresh.output;
}

// The newest buffer snapshot is damaged (a truncated file): the restart takes the older
// checkpoint-and-buffer pair instead of stopping the chain.
TEST(RestartChain, ADamagedNewestBufferFallsBackToTheOlderPair) {
  ftr::ScratchDir dir("damaged_buffer");
  ftr::write_text(dir.file("plugin.yaml"), every4_config());
  const ftr::CommandResult first = run_chunk(dir.path(), 0, 8);
  ASSERT_EQ(first.rc, 0) << first.output;
  std::string older;
  for (const auto& [path, datetime] : checkpoint_times(dir.file("ckpt")))
    if (datetime == "1979-01-01T02:00:00") older = path;
  const std::string snapshot = ftr::newest_buffer_snapshot(dir.file("ckpt"));
  std::string times;
  for (const auto& [path, datetime] : checkpoint_times(dir.file("ckpt"))) times += path + " " + datetime + "\n";
  ASSERT_FALSE(older.empty() || snapshot.empty()) << times << "snapshot " << snapshot << "\n" << first.output;
  ASSERT_EQ(truncate(snapshot.c_str(), 1000), 0);

  const ftr::CommandResult r = run_chunk(dir.path(), 8, 2);
  ASSERT_EQ(r.rc, 0) << r.output;
  EXPECT_NE(r.output.find("its buffer snapshot is damaged"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("Resumed from ckpt/" + older.substr(older.rfind('/') + 1)), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("the buffer lacks the steps between"), std::string::npos) << r.output;
}

// A restarted chunk (run_start after exp_start) whose config does not resume, beside the
// checkpoints of the chunk before, trains from scratch: said once, as a warning. The first chunk,
// which starts the experiment, is not warned about.
TEST(RestartChain, ARestartThatDoesNotResumeIsWarnedAbout) {
  ftr::ScratchDir dir("restart_no_resume");
  ftr::write_text(dir.file("plugin.yaml"), every4_config("\"\""));
  const std::string warning = "but checkpoint.resume is empty: finecast trains from scratch";
  const ftr::CommandResult first = run_chunk(dir.path(), 0, 4);
  ASSERT_EQ(first.rc, 0) << first.output;
  EXPECT_EQ(first.output.find(warning), std::string::npos) << first.output;

  const ftr::CommandResult r = run_chunk(dir.path(), 4, 2);  // restart_run at 02:00
  ASSERT_EQ(r.rc, 0) << r.output;
  const size_t at = r.output.find("the host restarts at 1979-01-01T02:00:00");
  ASSERT_NE(at, std::string::npos) << r.output;
  EXPECT_NE(r.output.find(warning), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("the host restarts at", at + 1), std::string::npos) << "once, not per rank:\n" << r.output;
  EXPECT_EQ(r.output.find("Resumed from"), std::string::npos) << r.output;
}

// The run's counters: the typed /run group read back as written; a checkpoint written before the
// group has them as text in /metadata, which is still read; a value that is not one is a
// CheckpointError naming the file, the key and what was expected.
TEST(RunCounters, TypedGroupAndTheMetadataTextOfOlderCheckpoints) {
  const fp::RunCounters written{3, 12, 4, true};
  const finecast::schema::Record record = finecast::schema::to_record(fp::run_counters_table(), written);
  EXPECT_EQ(std::get<int64_t>(record.at("coupling_steps")), 12);
  const fp::RunCounters back = fp::read_run_counters(record, {}, "new.h5");
  EXPECT_EQ(back.sessions, 3);
  EXPECT_EQ(back.coupling_steps, 12);
  EXPECT_EQ(back.samplings, 4);
  EXPECT_TRUE(back.training_due);

  const std::map<std::string, std::string> old{
      {"sessions", "2"}, {"coupling_steps", "9"}, {"samplings", "1"}, {"training_due", "1"}, {"config", "x.yaml"}};
  const fp::RunCounters legacy = fp::read_run_counters(std::nullopt, old, "old.h5");
  EXPECT_EQ(legacy.sessions, 2);
  EXPECT_EQ(legacy.coupling_steps, 9);
  EXPECT_EQ(legacy.samplings, 1);
  EXPECT_TRUE(legacy.training_due);
  EXPECT_EQ(fp::read_run_counters(std::nullopt, {}, "older.h5").coupling_steps, 0);

  auto error_of = [](const std::optional<finecast::schema::Record>& group,
                     const std::map<std::string, std::string>& meta) -> std::string {
    try {
      fp::read_run_counters(group, meta, "ckpt_00000007.h5");
    } catch (const finecast::CheckpointError& e) {
      return e.what();
    }
    return "";
  };
  const std::string text = error_of(std::nullopt, {{"coupling_steps", "12x"}});
  EXPECT_NE(text.find("ckpt_00000007.h5: /metadata coupling_steps"), std::string::npos) << text;
  EXPECT_NE(text.find("integer"), std::string::npos) << text;
  const std::string typed = error_of(finecast::schema::Record{{"sessions", std::string("three")}}, {});
  EXPECT_NE(typed.find("ckpt_00000007.h5: /run sessions"), std::string::npos) << typed;
}
