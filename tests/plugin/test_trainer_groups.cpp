// SPDX-License-Identifier: BSD-3-Clause
// Several trainer ranks (train.ranks) in finecast-host on 4 MPI ranks: each receives only its
// patches, they train data-parallel, and the result is that of one trainer rank holding every
// patch (to rounding); checkpoints written by any number of trainer ranks resume with any other.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <sstream>
#include <string>

#include "tests/plugin/replay_test_util.hpp"

namespace ftr = finecast::testing_replay;

namespace {

std::string group_plugin_config(int ranks, bool async, const std::string& extra = "") {
  return "fields: [ts]\nseed: 3\ndevice: cpu\n"
         "grid: {type: icon, file: " +
         ftr::kIconGrid +
         ", coarse_level: 1}\n"
         "buffer: {capacity: 4}\n"
         "model: {hidden: 32, depth: 2, time_embedding: 16, diffusion_steps: 10}\n"
         "train: {async: " +
         std::string(async ? "true" : "false") +
         ", every: 4, min_steps: 4, epochs: 1, batch_size: 64, warmup_steps: 2, threads: 1, ranks: " +
         std::to_string(ranks) +
         "}\n"
         "sample: {every: 4, members: 2, steps: 2, output: out.nc, write_back: ts_finecast}\n"
         "checkpoint: {dir: ckpt, keep: 2, resume: auto}\n" +
         extra;
}

ftr::CommandResult run(const std::string& dir, int ranks, bool async, int offset, int steps,
                       const std::string& extra = "") {
  ftr::write_text(dir + "/plugin.yaml", group_plugin_config(ranks, async, extra));
  ftr::write_text(dir + "/host.yaml", ftr::chunk_host_file(offset, steps));
  return ftr::run_command("cd '" + dir + "' && mpiexec -n 4 --oversubscribe " + ftr::binary("finecast-host") +
                          " host.yaml");
}

/// Runs a Python snippet (Debian's python with numpy and h5py); "key=value" lines as a map,
/// the whole output under "".
std::map<std::string, std::string> python_facts(const std::string& script) {
  // A script of this process's own: ctest runs this executable's tests as parallel processes.
  ftr::ScratchDir dir("trainer_groups_facts");
  const std::string path = dir.file("facts.py");
  ftr::write_text(path, script);
  const ftr::CommandResult r = ftr::run_command("/usr/bin/python3 " + path);
  std::map<std::string, std::string> facts{{"", r.output}, {"rc", std::to_string(r.rc)}};
  std::istringstream lines(r.output);
  for (std::string line; std::getline(lines, line);)
    if (const size_t eq = line.find('='); eq != std::string::npos) facts[line.substr(0, eq)] = line.substr(eq + 1);
  return facts;
}

const char* kPythonHelpers = R"(
import glob, h5py, numpy as np
def weights(path):
    with h5py.File(path, "r") as f:
        return np.concatenate([f["model"][k][()].ravel() for k in sorted(f["model"])])
def buffer(ckpt_dir, step):
    # Every part of the snapshot, its patches put in place: [steps][patches][...].
    parts = sorted(glob.glob(f"{ckpt_dir}/buffer_{step:08d}*.h5"))
    out = {}
    for p in parts:
        with h5py.File(p, "r") as f:
            first = int(f.attrs.get("first_patch", 0)); total = int(f.attrs.get("patches_total", f["valid"].shape[1]))
            for name in ("context", "fine", "valid"):
                d = f[name][()]
                if name not in out:
                    out[name] = np.zeros((d.shape[0], total) + d.shape[2:], d.dtype)
                out[name][:, first:first + d.shape[1]] = d
    return out, len(parts)
def relative(a, b):
    return float(np.abs(a - b).max() / np.abs(b).max())
)";

}  // namespace

// The same run with 1, 2 and 4 trainer ranks: the same checkpointed weights to rounding, the
// same buffer, and each run writes its output and write-back. Asynchronously (the trainers sum
// gradients on their training threads while the host steps on) the sessions start when the
// previous ones have ended, so only the run itself is compared.
TEST(TrainerGroups, DataParallelTrainingMatchesOneTrainerRank) {
  ftr::ScratchDir dir("trainer_groups");
  struct Case {
    int ranks;
    bool async;
  };
  std::string paths;
  for (const Case c : {Case{1, false}, Case{2, false}, Case{4, false}, Case{2, true}}) {
    const std::string d = dir.file("r" + std::to_string(c.ranks) + (c.async ? "a" : "s"));
    ftr::run_command("mkdir -p '" + d + "'");
    const ftr::CommandResult r = run(d, c.ranks, c.async, 0, 8);
    ASSERT_EQ(r.rc, 0) << r.output;
    if (c.async) {
      EXPECT_NE(r.output.find("samples on 2 trainer ranks"), std::string::npos) << r.output;
      EXPECT_NE(r.output.find("Checkpoint written"), std::string::npos) << r.output;
      continue;
    }
    EXPECT_NE(r.output.find("Training session 2 at 1979-01-01T04:00:00: 4 steps in buffer = 1280 samples" +
                            std::string(c.ranks > 1 ? " on " + std::to_string(c.ranks) + " trainer ranks" : "")),
              std::string::npos)
        << r.output;
    EXPECT_NE(r.output.find("Sampled 2 member(s) at 1979-01-01T04:00:00"), std::string::npos) << r.output;
    paths += "'" + d + "', ";
  }
  const auto facts = python_facts(std::string(kPythonHelpers) + "dirs = [" + paths + "]\n" + R"(
one = weights(dirs[0] + "/ckpt/ckpt_00000040.h5")
for d in dirs[1:]:
    print(d.rsplit("/", 1)[1] + "=%.3g" % relative(weights(d + "/ckpt/ckpt_00000040.h5"), one))
for d in dirs:
    b, n = buffer(d + "/ckpt", 40)
    print(d.rsplit("/", 1)[1] + ".parts=%d" % n)
    print(d.rsplit("/", 1)[1] + ".buffer_equal=%d" % int(all(np.array_equal(b[k], buffer(dirs[0] + "/ckpt", 40)[0][k]) for k in b)))
)");
  ASSERT_EQ(facts.at("rc"), "0") << facts.at("");
  for (const char* run : {"r2s", "r4s"}) {
    ASSERT_TRUE(facts.count(run)) << facts.at("");
    EXPECT_LT(std::stod(facts.at(run)), 1e-4) << run << "\n" << facts.at("");
    EXPECT_EQ(facts.at(std::string(run) + ".buffer_equal"), "1") << run;
  }
  EXPECT_EQ(facts.at("r4s.parts"), "4");
  EXPECT_EQ(facts.at("r1s.parts"), "1");
}

// A chain of two chunks, the first with 4 trainer ranks and the second resumed with 2 (and the
// reverse, 1 then 4), holds the same buffer as a chain on one trainer rank and trains the same
// weights to rounding.
TEST(TrainerGroups, CheckpointsResumeWithAnyNumberOfTrainerRanks) {
  ftr::ScratchDir dir("trainer_groups_resume");
  std::string paths;
  for (const auto& [first, second] : {std::pair<int, int>{1, 1}, {4, 2}, {1, 4}}) {
    const std::string d = dir.file("c" + std::to_string(first) + std::to_string(second));
    ftr::run_command("mkdir -p '" + d + "'");
    const ftr::CommandResult a = run(d, first, false, 0, 4);
    ASSERT_EQ(a.rc, 0) << a.output;
    const ftr::CommandResult b = run(d, second, false, 4, 4);
    ASSERT_EQ(b.rc, 0) << b.output;
    EXPECT_NE(b.output.find("Resumed the rolling buffer from"), std::string::npos) << b.output;
    if (first > 1) {
      EXPECT_NE(b.output.find("(" + std::to_string(first) + " parts): 4 steps"), std::string::npos) << b.output;
    }
    paths += "'" + d + "', ";
  }
  const auto facts = python_facts(std::string(kPythonHelpers) + "dirs = [" + paths + "]\n" + R"(
one = weights(dirs[0] + "/ckpt/ckpt_00000040.h5")
ref, _ = buffer(dirs[0] + "/ckpt", 40)
for d in dirs[1:]:
    name = d.rsplit("/", 1)[1]
    print(name + "=%.3g" % relative(weights(d + "/ckpt/ckpt_00000040.h5"), one))
    b, n = buffer(d + "/ckpt", 40)
    print(name + ".buffer_equal=%d" % int(all(np.array_equal(b[k], ref[k]) for k in ref)))
)");
  ASSERT_EQ(facts.at("rc"), "0") << facts.at("");
  for (const char* chain : {"c42", "c14"}) {
    ASSERT_TRUE(facts.count(chain)) << facts.at("");
    EXPECT_LT(std::stod(facts.at(chain)), 1e-4) << chain << "\n" << facts.at("");
    EXPECT_EQ(facts.at(std::string(chain) + ".buffer_equal"), "1") << chain;
  }
}

// LibTorch lives in the trainer module, which only trainer ranks load: with 2 trainer ranks
// spread over 4 (ranks 0 and 2), ranks 1 and 3 never map it, and the run still trains and samples.
TEST(TrainerGroups, OnlyTrainerRanksLoadLibTorch) {
  ftr::ScratchDir dir("trainer_groups_libtorch");
  const ftr::CommandResult r = run(dir.path(), 2, true, 0, 8, "log: {all_ranks: true}\n");
  ASSERT_EQ(r.rc, 0) << r.output;
  EXPECT_NE(r.output.find("Sampled 2 member(s)"), std::string::npos) << r.output;
  for (int rank = 0; rank < 4; ++rank) {
    const std::string line = "[finecast r" + std::to_string(rank) + "] Peak resident memory ";
    const size_t at = r.output.find(line);
    ASSERT_NE(at, std::string::npos) << line << "\n" << r.output;
    const std::string rest = r.output.substr(at, r.output.find('\n', at) - at);
    const bool trainer = rank == 0 || rank == 2;
    EXPECT_NE(rest.find(trainer ? "LibTorch loaded (trainer rank)" : "LibTorch not loaded"), std::string::npos) << rest;
  }
}

// The conditioning that reaches beyond a patch - two rings of coarse neighbours, a static
// covariate normalised over the whole field, the interpolated residual base - is the same with 4
// trainer ranks as with one: every trainer sees the other trainers' coarse values and the group's
// normalisation (to the rounding of a sum in another order).
TEST(TrainerGroups, ContextBeyondThePatchIsTheSameOnFourTrainerRanks) {
  ftr::ScratchDir dir("trainer_groups_context");
  const std::string extra = "patch: {context_rings: 2, static: [topography_c, fr_land], residual: interp}\n";
  std::string paths;
  for (int ranks : {1, 4}) {
    const std::string d = dir.file("r" + std::to_string(ranks));
    ftr::run_command("mkdir -p '" + d + "'");
    const ftr::CommandResult r = run(d, ranks, false, 0, 4, extra);
    ASSERT_EQ(r.rc, 0) << r.output;
    EXPECT_NE(r.output.find("2 static covariate(s)"), std::string::npos) << r.output;
    paths += "'" + d + "', ";
  }
  const auto facts = python_facts(std::string(kPythonHelpers) + "dirs = [" + paths + "]\n" + R"(
ckpt = sorted(glob.glob(dirs[0] + "/ckpt/ckpt_*.h5"))[-1].rsplit("/", 1)[1]
step = int(ckpt[5:13])
one, _ = buffer(dirs[0] + "/ckpt", step)
four, n = buffer(dirs[1] + "/ckpt", step)
print("parts=%d" % n)
print("context=%.3g" % relative(four["context"], one["context"]))
print("fine=%.3g" % relative(four["fine"], one["fine"]))
print("valid_equal=%d" % int(np.array_equal(four["valid"], one["valid"])))
print("weights=%.3g" % relative(weights(dirs[1] + "/ckpt/" + ckpt), weights(dirs[0] + "/ckpt/" + ckpt)))
)");
  ASSERT_EQ(facts.at("rc"), "0") << facts.at("");
  EXPECT_EQ(facts.at("parts"), "4") << facts.at("");
  EXPECT_LT(std::stod(facts.at("context")), 1e-5) << facts.at("");
  EXPECT_LT(std::stod(facts.at("fine")), 1e-5) << facts.at("");
  EXPECT_EQ(facts.at("valid_equal"), "1") << facts.at("");
  EXPECT_LT(std::stod(facts.at("weights")), 1e-4) << facts.at("");
}

// A trainer module that cannot be loaded stops the run at start-up with the path and the
// loader's reason, on the trainer rank; the host's other ranks never needed it.
TEST(TrainerGroups, AMissingTrainerModuleIsAStartUpErrorNamingIt) {
  ftr::ScratchDir dir("trainer_groups_module");
  ftr::write_text(dir.file("plugin.yaml"), group_plugin_config(1, false));
  ftr::write_text(dir.file("host.yaml"), ftr::chunk_host_file(0, 2));
  const ftr::CommandResult r =
      ftr::run_command("cd '" + dir.path() +
                       "' && FINECAST_TRAINER_MODULE=/nonexistent/libfinecast_trainer_module.so "
                       "mpiexec -n 2 --oversubscribe " +
                       ftr::binary("finecast-host") + " host.yaml");
  EXPECT_NE(r.rc, 0) << r.output;
  EXPECT_NE(r.output.find("cannot load finecast's trainer module /nonexistent/libfinecast_trainer_module.so"),
            std::string::npos)
      << r.output;
}

// train.placement external: the trainer group as finecast-trainer processes in finecast-host's
// MPI job (MPMD), joined to the plugin's comm through ComIn's handshake. With the same number of
// trainers as inside the host it gives the same buffer, weights, output and write-back, bitwise;
// the host's ranks never load LibTorch.
TEST(ExternalTrainers, GiveWhatTheSameTrainersInsideTheHostGive) {
  ftr::ScratchDir dir("external_trainers");
  const std::string inside = dir.file("inside"), outside = dir.file("external");
  const std::string recorder = "  - {name: recorder, library: " + std::string(FINECAST_BINARY_DIR) +
                               "/lib/libfinecast_recorder.so, options: \"rec/run_ vars=ts_finecast\"}\n";
  const std::string both = "coupling: {communicator: plugin}\nlog: {all_ranks: true}\n";
  ftr::run_command("mkdir -p '" + inside + "/rec' '" + outside + "/rec'");
  std::string config = group_plugin_config(2, false, both);
  ftr::write_text(inside + "/plugin.yaml", config);
  config.replace(config.find("ranks: 2}"), 9, "ranks: 2, placement: external}");
  ftr::write_text(outside + "/plugin.yaml", config);
  for (const std::string& d : {inside, outside})
    ftr::write_text(d + "/host.yaml", ftr::chunk_host_file(0, 8, ", comm: finecast", recorder));
  const std::string host = ftr::binary("finecast-host") + " host.yaml";
  const ftr::CommandResult a = ftr::run_command("cd '" + inside + "' && mpiexec -n 2 --oversubscribe " + host);
  ASSERT_EQ(a.rc, 0) << a.output;
  const ftr::CommandResult b = ftr::run_command("cd '" + outside + "' && mpiexec -n 2 --oversubscribe " + host +
                                                " : -n 2 " + ftr::binary("finecast-trainer") + " --comm finecast");
  ASSERT_EQ(b.rc, 0) << b.output;
  EXPECT_NE(b.output.find("trainer ranks 2,3 (finecast-trainer processes)"), std::string::npos) << b.output;
  EXPECT_NE(b.output.find("Sampled 2 member(s) at 1979-01-01T04:00:00"), std::string::npos) << b.output;
  for (int rank = 0; rank < 4; ++rank) {
    const std::string line = "[finecast r" + std::to_string(rank) + "] Peak resident memory ";
    const size_t at = b.output.find(line);
    ASSERT_NE(at, std::string::npos) << line << "\n" << b.output;
    const std::string rest = b.output.substr(at, b.output.find('\n', at) - at);
    EXPECT_NE(rest.find(rank >= 2 ? "LibTorch loaded (trainer rank)" : "LibTorch not loaded"), std::string::npos)
        << rest;
  }
  // The checkpoints' metadata holds the config each run resolved (its text and hash), which
  // differs in train.placement; every other attribute, and all data, agree.
  for (const std::string file : {"ckpt/ckpt_00000040.h5", "ckpt/buffer_00000040.h5", "ckpt/buffer_00000040.p1.h5"}) {
    const ftr::CommandResult diff = ftr::run_command("h5diff --exclude-path /metadata '" + inside + "/" + file + "' '" +
                                                     outside + "/" + file + "'");
    EXPECT_EQ(diff.rc, 0) << file << ": " << diff.output;
  }
  const auto metadata = python_facts(
      "import h5py\n"
      "a, b = [h5py.File(d + '/ckpt/ckpt_00000040.h5', 'r')['metadata'].attrs for d in ('" +
      inside + "', '" + outside +
      "')]\n"
      "print('differ=' + ','.join(sorted(k for k in set(a) | set(b) if k not in ('config_hash', "
      "'config_resolved') and a.get(k) != b.get(k))))\n"
      "print('placement=%d' % (b'placement: external' in b['config_resolved'].encode() if "
      "isinstance(b['config_resolved'], str) else b'placement: external' in b['config_resolved']))\n");
  ASSERT_EQ(metadata.at("rc"), "0") << metadata.at("");
  EXPECT_EQ(metadata.at("differ"), "") << metadata.at("");
  EXPECT_EQ(metadata.at("placement"), "1") << metadata.at("");
  const std::string compare =
      "/usr/bin/python3 " + std::string(FINECAST_SOURCE_DIR) + "/tests/comin/compare_netcdf.py ";
  for (const std::string file : {"out.nc", "rec/run_vars_0.nc", "rec/run_vars_1.nc"}) {
    const ftr::CommandResult diff = ftr::run_command(compare + "'" + inside + "/" + file + "' '" + outside + "/" +
                                                     file + "' --ignore history finecast_checkpoint");
    EXPECT_EQ(diff.rc, 0) << file << ": " << diff.output;
  }
  // The write-back that was compared holds the ensemble means (a field in kelvin on the rank's
  // owned cells; its halo cells stay 0) after the first sampling, not the zeros it starts with.
  const auto facts = python_facts(
      "import netCDF4, numpy as np\n"
      "v = netCDF4.Dataset('" +
      outside +
      "/rec/run_vars_0.nc')['domain_1/ts_finecast'][:].filled(np.nan)\n"
      "print('first=%g' % np.nanmax(np.abs(v[0])))\n"
      "last = v[-1][np.isfinite(v[-1])]\nprint('kelvin=%g' % np.mean(last > 150))\n");
  ASSERT_EQ(facts.at("rc"), "0") << facts.at("");
  EXPECT_EQ(std::stod(facts.at("first")), 0.0) << facts.at("");
  EXPECT_GT(std::stod(facts.at("kelvin")), 0.95) << facts.at("");
}

// Layouts that cannot work stop at start-up with the keys to change: external placement without
// finecast-trainer processes, and finecast-trainer processes the config does not expect.
TEST(ExternalTrainers, AMismatchedLayoutIsAStartUpErrorNamingTheKeys) {
  ftr::ScratchDir dir("external_trainers_layout");
  ftr::write_text(dir.file("host.yaml"), ftr::chunk_host_file(0, 2, ", comm: finecast"));
  const std::string host =
      "cd '" + dir.path() + "' && mpiexec -n 2 --oversubscribe " + ftr::binary("finecast-host") + " host.yaml";
  const std::string trainer = " : -n 1 " + ftr::binary("finecast-trainer");
  ftr::write_text(dir.file("plugin.yaml"), group_plugin_config(1, false, "coupling: {communicator: plugin}\n"));
  ftr::CommandResult r = ftr::run_command(host + " --set train.placement=external");
  EXPECT_NE(r.rc, 0) << r.output;
  EXPECT_NE(r.output.find("train.placement external, but no finecast-trainer process joined"), std::string::npos)
      << r.output;
  r = ftr::run_command(host + " --set train.placement=external --set train.ranks=2" + trainer);
  EXPECT_NE(r.rc, 0) << r.output;
  EXPECT_NE(r.output.find("train.ranks is 2 but 1 finecast-trainer process(es) joined"), std::string::npos) << r.output;
  r = ftr::run_command(host + trainer);
  EXPECT_NE(r.rc, 0) << r.output;
  EXPECT_NE(r.output.find("but train.placement is spread; set train.placement: external"), std::string::npos)
      << r.output;
  r = ftr::run_command(host + " --set train.placement=external" + trainer + " --comm other");
  EXPECT_NE(r.rc, 0) << r.output;
  EXPECT_NE(r.output.find("no host process joined the comm \"other\""), std::string::npos) << r.output;
}

// A training session that fails on one of several trainer ranks cannot be survived: the others
// wait for it in the session's gradient sums. The run stops (MPI_Abort) with the reason, instead
// of hanging, whatever on_error says.
TEST(TrainerGroups, ASessionFailingOnOneTrainerRankAbortsTheRun) {
  ftr::ScratchDir dir("trainer_groups_failure");
  const ftr::CommandResult r =
      run(dir.path(), 2, false, 0, 8, "on_error: disable\ntesting: {fault: training, fault_step: 4, fault_rank: 2}\n");
  EXPECT_NE(r.rc, 0) << r.output;
  EXPECT_NE(r.output.find("training failed at coupling step 4 on rank 2: fault injected by testing.fault"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("with train.ranks > 1 the others wait in the session's collectives, so the run is aborted"),
            std::string::npos)
      << r.output;
  EXPECT_EQ(r.output.find("Sampled 2 member(s) at 1979-01-01T04:00:00"), std::string::npos) << r.output;
}

// A failure on the finecast-trainer process ends finecast on every rank, host ranks included,
// without a hang: under on_error: disable every process stops at the next step's agreement and
// the host runs to its end; under on_error: abort the trainer ends the MPI job.
TEST(ExternalTrainers, AFailureOnTheTrainerEndsTheRunOnEveryRank) {
  ftr::ScratchDir dir("external_trainers_failure");
  std::string config = group_plugin_config(1, false,
                                           "coupling: {communicator: plugin}\nlog: {all_ranks: true}\n"
                                           "testing: {fault: training, fault_step: 4}\n");
  config.replace(config.find("ranks: 1}"), 9, "ranks: 1, placement: external}");
  ftr::write_text(dir.file("plugin.yaml"), config);
  ftr::write_text(dir.file("host.yaml"), ftr::chunk_host_file(0, 8, ", comm: finecast"));
  const std::string run = "cd '" + dir.path() + "' && timeout -k 5 120 mpiexec -n 2 --oversubscribe " +
                          ftr::binary("finecast-host") + " host.yaml --set on_error=";
  const std::string trainer = " : -n 1 " + ftr::binary("finecast-trainer");

  const ftr::CommandResult disable = ftr::run_command(run + "disable" + trainer);
  ASSERT_EQ(disable.rc, 0) << disable.output;
  EXPECT_NE(disable.output.find("training failed at coupling step 4 on rank 2: fault injected by testing.fault"),
            std::string::npos)
      << disable.output;
  for (int rank = 0; rank < 3; ++rank)
    EXPECT_NE(disable.output.find("[finecast r" + std::to_string(rank) + "] WARNING: finecast stopped at"),
              std::string::npos)
        << "rank " << rank << "\n"
        << disable.output;
  EXPECT_NE(disable.output.find("finished 8 steps on 2 rank(s)"), std::string::npos) << disable.output;

  const ftr::CommandResult abort = ftr::run_command(run + "abort" + trainer);
  EXPECT_NE(abort.rc, 0) << abort.output;
  EXPECT_NE(abort.rc, 124) << "the run hung: " << abort.output;
  EXPECT_NE(abort.output.find("fault injected by testing.fault"), std::string::npos) << abort.output;
  EXPECT_EQ(abort.output.find("finished 8 steps"), std::string::npos) << abort.output;
}

// finecast-trainer runs with the host's config: the host's first rank sends the resolved text,
// so a trainer cannot disagree. A trainer started in another directory whose own copy of the
// config samples every 3 steps without write-back (the host's: every 2, with write-back) once
// hung the run: the host's ranks waited in the write-back collective the trainer never joined.
// Now it samples at the host's steps, writes where the host's relative paths point, names the
// keys of its copy that differ, and the checkpoint records the hash of the config it ran with.
TEST(ExternalTrainers, RunWithTheHostsConfigWhateverTheirOwnCopySays) {
  ftr::ScratchDir dir("external_trainers_config");
  std::string config = group_plugin_config(1, false, "coupling: {communicator: plugin}\n");
  config.replace(config.find("ranks: 1}"), 9, "ranks: 1, placement: external}");
  config.replace(config.find("sample: {every: 4"), 17, "sample: {every: 2");
  ftr::write_text(dir.file("plugin.yaml"), config);
  std::string copy = config;
  copy.replace(copy.find("sample: {every: 2"), 17, "sample: {every: 3");
  copy.replace(copy.find(", write_back: ts_finecast"), 25, "");
  ftr::run_command("mkdir -p '" + dir.file("tr") + "'");
  ftr::write_text(dir.file("tr/plugin.yaml"), copy);
  ftr::write_text(dir.file("host.yaml"), ftr::chunk_host_file(0, 6, ", comm: finecast"));
  const ftr::CommandResult r = ftr::run_command(
      "cd '" + dir.path() + "' && timeout -k 5 60 mpiexec -n 2 --oversubscribe " + ftr::binary("finecast-host") +
      " host.yaml : -n 1 -wdir '" + dir.file("tr") + "' " + ftr::binary("finecast-trainer") + " --comm finecast");
  ASSERT_NE(r.rc, 124) << "the run hung:\n" << r.output;
  ASSERT_EQ(r.rc, 0) << r.output;
  EXPECT_NE(r.output.find("differs from the host's in sample.every and sample.write_back; it is ignored"),
            std::string::npos)
      << r.output;
  // The first session at step 4, then a sampling at every second step: 02:00 and 03:00 (every 3
  // would have sampled at 03:00 only).
  EXPECT_NE(r.output.find("Sampled 2 member(s) at 1979-01-01T02:00:00"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("Sampled 2 member(s) at 1979-01-01T03:00:00"), std::string::npos) << r.output;
  EXPECT_TRUE(std::filesystem::exists(dir.file("out.nc"))) << r.output;
  EXPECT_FALSE(std::filesystem::exists(dir.file("tr/out.nc"))) << r.output;
  const size_t at = r.output.find("runs with the host's config");
  ASSERT_NE(at, std::string::npos) << r.output;
  const size_t h = r.output.find("(hash ", at);
  ASSERT_NE(h, std::string::npos) << r.output;
  const std::string hash = r.output.substr(h + 6, 16);
  const auto facts = python_facts(std::string(kPythonHelpers) + "f = h5py.File(sorted(glob.glob('" + dir.file("ckpt") +
                                  "/ckpt_*.h5'))[-1], 'r')\n"
                                  "v = f['metadata'].attrs['config_hash']\n"
                                  "print('hash=%s' % (v.decode() if isinstance(v, bytes) else v))\n");
  ASSERT_EQ(facts.at("rc"), "0") << facts.at("");
  EXPECT_EQ(facts.at("hash"), hash) << facts.at("");
}
