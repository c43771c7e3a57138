// SPDX-License-Identifier: BSD-3-Clause
// The command-line convention every program follows (README, "Command lines"; common/cli.hpp):
// the run/config file positionally or as --config, --set before or after it, a validated
// --log-level, --time by index or date, --help and --version everywhere.
#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <iterator>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "replay_test_util.hpp"

namespace {

using namespace finecast::testing_replay;

bool contains(const std::string& text, const std::string& needle) { return text.find(needle) != std::string::npos; }

const std::vector<std::string> kPrograms = {"finecast-host", "finecast-replay", "finecast-config", "finecast-downscale",
                                            "finecast-eval", "finecast-grid",   "finecast-trainer"};

/// A minimal valid plugin config.
// finecast-bench is built unless FINECAST_BENCH is off (the ASan build of scripts/sanitize.sh).
#ifdef FINECAST_HAVE_BENCH
constexpr bool kHaveBench = true;
#else
constexpr bool kHaveBench = false;
#endif
constexpr const char* kNoBench = "finecast-bench is not built here (FINECAST_BENCH=OFF)";

const std::string kConfig = "fields: [ts]\ngrid: {file: grid.nc}\n";

TEST(Cli, EveryProgramHasHelpAndVersion) {
  for (const auto& p : kPrograms) {
    SCOPED_TRACE(p);
    CommandResult r = run_command(binary(p) + " --help");
    EXPECT_EQ(r.rc, 0) << r.output;
    EXPECT_TRUE(contains(r.output, "--version")) << r.output;
    r = run_command(binary(p) + " --version");
    EXPECT_EQ(r.rc, 0) << r.output;
    EXPECT_EQ(r.output, p + " " + FINECAST_VERSION + "\n");
  }
  if (!kHaveBench) return;
  CommandResult r = run_command(binary("finecast-bench") + " --version");
  EXPECT_EQ(r.rc, 0) << r.output;
  EXPECT_EQ(r.output, std::string("finecast-bench ") + FINECAST_VERSION + "\n");
  for (const char* sub : {"trainer", "coupling", "plugin", "scale"}) {
    r = run_command(binary("finecast-bench") + " " + sub + " --help");
    EXPECT_EQ(r.rc, 0) << sub << ": " << r.output;
    EXPECT_TRUE(contains(r.output, "--version")) << sub << ": " << r.output;
  }
}

// The MPI programs answer --help, --version and usage errors before MPI_Init when they run alone
// (coupling/program/mpi_program.cpp): with a PML that does not exist, MPI_Init would fail. Under mpiexec with
// several processes they answer after the handshake, on the first rank only.
TEST(Cli, MpiProgramsAnswerHelpAndVersionWithoutStartingMpi) {
  const std::string no_mpi = "OMPI_MCA_pml=no_such_pml ";
  for (const char* p : {"finecast-host", "finecast-replay", "finecast-trainer"}) {
    SCOPED_TRACE(p);
    CommandResult r = run_command(no_mpi + binary(p) + " --version");
    EXPECT_EQ(r.rc, 0) << r.output;
    EXPECT_EQ(r.output, std::string(p) + " " + FINECAST_VERSION + "\n");
    r = run_command(no_mpi + binary(p) + " --help");
    EXPECT_EQ(r.rc, 0) << r.output;
    EXPECT_TRUE(contains(r.output, "--mpi-thread-level")) << r.output;
    r = run_command(no_mpi + binary(p) + " --no-such-flag");
    EXPECT_NE(r.rc, 0) << r.output;
    EXPECT_TRUE(contains(r.output, "--no-such-flag")) << r.output;
    EXPECT_FALSE(contains(r.output, "no_such_pml")) << r.output;
  }
  const CommandResult r = run_command("mpiexec -n 2 --oversubscribe " + binary("finecast-trainer") + " --version");
  EXPECT_EQ(r.rc, 0) << r.output;
  EXPECT_EQ(r.output, std::string("finecast-trainer ") + FINECAST_VERSION + "\n");
}

TEST(Cli, TheConfigFileComesPositionallyOrAsConfigAndSetMayPrecedeIt) {
  ScratchDir dir("cli");
  write_text(dir.file("c.yaml"), kConfig);
  const std::string config = binary("finecast-config");
  const CommandResult positional = run_command(config + " " + dir.file("c.yaml") + " --set train.epochs=3");
  ASSERT_EQ(positional.rc, 0) << positional.output;
  EXPECT_TRUE(contains(positional.output, "epochs: 3")) << positional.output;
  // The same run with --config, -c, and with --set before the file (one value per --set).
  for (const std::string& args :
       {"--config " + dir.file("c.yaml") + " --set train.epochs=3",
        "-c " + dir.file("c.yaml") + " --set train.epochs=3", "--set train.epochs=3 " + dir.file("c.yaml"),
        "--set train.epochs=2 --set train.epochs=3 " + dir.file("c.yaml")}) {
    const CommandResult r = run_command(config + " " + args);
    EXPECT_EQ(r.rc, 0) << args << ": " << r.output;
    EXPECT_EQ(r.output, positional.output) << args;
  }
}

TEST(Cli, UsageErrorsNameTheFlagAndWhatItExpects) {
  ScratchDir dir("cli");
  write_text(dir.file("c.yaml"), kConfig);
  // No file: both spellings are named, by every program that takes one.
  for (const char* p : {"finecast-config", "finecast-host", "finecast-replay"}) {
    const CommandResult r = run_command(binary(p));
    EXPECT_NE(r.rc, 0) << p;
    EXPECT_TRUE(contains(r.output, "a run/config file (FILE or --config FILE) is required")) << p << ": " << r.output;
  }
  // The file twice.
  CommandResult r =
      run_command(binary("finecast-config") + " " + dir.file("c.yaml") + " --config " + dir.file("c.yaml"));
  EXPECT_NE(r.rc, 0) << r.output;
  // --set without '='.
  r = run_command(binary("finecast-config") + " " + dir.file("c.yaml") + " --set device");
  EXPECT_NE(r.rc, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "--set: expected KEY=VALUE (e.g. --set device=cpu), got 'device'")) << r.output;
  // --log-level is checked by every program that logs, before it does anything.
  for (const char* p : {"finecast-host", "finecast-replay", "finecast-downscale"}) {
    r = run_command(binary(p) + " --log-level verbose " + dir.file("missing.yaml") +
                    (std::string(p) == "finecast-downscale" ? " --checkpoint x --input y --var z" : ""));
    EXPECT_NE(r.rc, 0) << p;
    EXPECT_TRUE(contains(r.output, "--log-level: verbose not in {debug,info,warning,error}")) << p << ": " << r.output;
    EXPECT_FALSE(contains(r.output, "missing.yaml")) << p << ": " << r.output;
  }
  // A valid level is taken.
  r = run_command(binary("finecast-replay") + " --log-level debug " + dir.file("missing.yaml"));
  EXPECT_NE(r.rc, 0);
  EXPECT_TRUE(contains(r.output, dir.file("missing.yaml") + ": cannot open the replay run file")) << r.output;
}

// A run or config file that is a device (here a link to /dev/zero, which was read without end
// until memory ran out) or a directory is refused at once, saying it is not a regular file.
TEST(Cli, AConfigOrRunFileThatIsNoRegularFileIsRefusedSayingSo) {
  ScratchDir dir("cli");
  ASSERT_EQ(symlink("/dev/zero", dir.file("zero.yaml").c_str()), 0);
  for (const char* p : {"finecast-config", "finecast-host", "finecast-replay"}) {
    const CommandResult r = run_command("timeout 20 " + binary(p) + " " + dir.file("zero.yaml"));
    EXPECT_NE(r.rc, 0) << p;
    EXPECT_NE(r.rc, 124) << p << " read /dev/zero";
    EXPECT_TRUE(contains(r.output, dir.file("zero.yaml") + ": the ")) << p << ": " << r.output;
    EXPECT_TRUE(contains(r.output, " is not a regular file (a character device)")) << p << ": " << r.output;
  }
  const CommandResult r = run_command(binary("finecast-config") + " " + dir.path());
  EXPECT_TRUE(contains(r.output, dir.path() + ": the config file is not a regular file (a directory)")) << r.output;
}

TEST(Cli, FinecastConfigListsEveryErrorInOneRun) {
  ScratchDir dir("cli");
  write_text(dir.file("bad.yaml"),
             "fields: [ts]\n"
             "grid: {file: g.nc, type: hexagons}\n"
             "train: {epochs: 0, batchsize: 4}\n");
  const CommandResult r = run_command(binary("finecast-config") + " " + dir.file("bad.yaml") + " --set device=gpu");
  EXPECT_EQ(r.rc, 1) << r.output;
  const std::string f = dir.file("bad.yaml");
  EXPECT_EQ(
      r.output,
      f + ":2: grid.type must be one of icon, latlon, got \"hexagons\"\n" + f +
          ":3: train.epochs must be an integer in [1, 10000000], got 0\n" + f +
          ":3: unknown key train.batchsize (allowed in train: async, nice, free_cores, every, min_steps, epochs, "
          "ranks, placement, gpu_ids, device_memory_fraction, hold_out, batch_size, lr, weight_decay, "
          "warmup_steps, decay_steps, min_lr_ratio, "
          "grad_clip, "
          "ema_decay, mixed_precision, max_bad_steps, accumulate, validation, validation_split, "
          "validation_every, validation_members, "
          "validation_max_samples, validation_metric, early_stop, plateau, plateau_factor, "
          "plateau_min_scale, "
          "keep_best, max_device_memory, force_autograd, threads, max_threads, cuda_graphs, noise_generator, "
          "max_seconds, max_steps, budget, noise_levels, noise_log_mean, noise_log_std, mean_fraction, mean_sigma, "
          "context_noise, crps_steps, crps_members, crps_sampler_steps, crps_lr, crps_held_out)\n"
          "--set device: device must be one of auto, cpu, cuda, cuda:N, mps, got \"gpu\"\n");
}

TEST(Cli, GridFileComesPositionallyOrAsGrid) {
  const std::string grid = "/usr/share/ncarg/data/nug/triangular_grid_ICON.nc";
  const CommandResult a = run_command(binary("finecast-grid") + " " + grid + " --coarse-level 2");
  const CommandResult b = run_command(binary("finecast-grid") + " --grid " + grid + " --coarse-level 2");
  ASSERT_EQ(a.rc, 0) << a.output;
  EXPECT_EQ(a.output, b.output);
  EXPECT_TRUE(contains(a.output, "consistent: yes")) << a.output;
}

// finecast-bench trainer measures for minutes on a small machine: stderr says what it measures,
// which repeat and the time, while stdout keeps only the result (here one JSON object).
TEST(Cli, BenchTrainerReportsProgressOnStderrOnly) {
  if (!kHaveBench) GTEST_SKIP() << kNoBench;
  ScratchDir dir("cli_bench");
  // In a subshell: run_command sends stderr to stdout after the command's own redirections.
  const CommandResult r =
      run_command("(" + binary("finecast-bench") + " trainer --json --no-reference --repeats 1 --threads 1 2> " +
                  dir.file("progress.txt") + ")");
  ASSERT_EQ(r.rc, 0) << r.output;
  EXPECT_EQ(r.output.rfind("{\"device\": \"cpu\"", 0), 0u) << r.output;
  EXPECT_EQ(r.output.find('\n'), r.output.size() - 1) << r.output;
  std::ifstream in(dir.file("progress.txt"));
  const std::string progress((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  size_t at = 0;
  for (const std::string line :
       {"[bench trainer 0:00] finecast on cpu, 1 thread(s), best of 1 repeats",
        "] training epoch (3,840 samples), batch 16: warm-up session\n",
        "] training epoch (3,840 samples), batch 16: repeat 1/1: ",
        "] training epoch (3,840 samples), batch 256: repeat 1/1: ",
        "] sampling 80 patches, DDPM 50 steps: repeat 3/3: ", "] sampling 80 patches, DDIM 10 steps: repeat 3/3: "}) {
    const size_t found = progress.find(line, at);
    EXPECT_NE(found, std::string::npos) << "'" << line << "' missing or out of order:\n" << progress;
    if (found != std::string::npos) at = found;
  }
}

// finecast-bench scale (issue 16): a short run with 1, 2 and 4 ranks; the JSON holds what was
// measured (every redistribution, all-reduce and training run asked for, with positive times) and
// the model, whose volumes are checked against numbers computed here.
TEST(Cli, BenchScaleMeasuresAndModelsTheTrainerGroup) {
  if (!kHaveBench) GTEST_SKIP() << kNoBench;
  ScratchDir dir("cli_bench_scale");
  const CommandResult r = run_command("(" + binary("finecast-bench") +
                                      " scale --json --ranks 1,2,4 --cells 20480,81920 --steps 4 --train-steps 12 "
                                      "--train-patches 80 --batch 64 --epochs 1 --repeats 1 --model-fields 2 2> " +
                                      dir.file("progress.txt") + ")");
  ASSERT_EQ(r.rc, 0) << r.output;
  ASSERT_EQ(r.output.find('\n'), r.output.size() - 1) << "one JSON line on stdout:\n" << r.output;
  const nlohmann::json j = nlohmann::json::parse(r.output);
  const int cores = j.at("machine").at("cores").get<int>();
  EXPECT_GT(cores, 0);

  // (a) Every (cells, ranks, trainers <= ranks) run, with positive times; the exchanges' sizes.
  std::set<std::tuple<int64_t, int, int>> runs;
  for (const auto& row : j.at("redistribution")) {
    const auto cells = row.at("cells").get<int64_t>();
    const int ranks = row.at("host_ranks").get<int>(), trainers = row.at("trainers").get<int>();
    SCOPED_TRACE(std::to_string(cells) + " cells, " + std::to_string(ranks) + " ranks, " + std::to_string(trainers) +
                 " trainers");
    runs.insert({cells, ranks, trainers});
    EXPECT_GT(row.at("forward_ms").get<double>(), 0.0);
    EXPECT_GT(row.at("reverse_ms").get<double>(), 0.0);
    EXPECT_EQ(row.at("oversubscribed").get<bool>(), ranks > cores);
    const auto messages = row.at("busiest_rank_messages").get<int64_t>();
    const auto bytes = row.at("busiest_rank_bytes_forward").get<int64_t>();
    if (ranks == 1) {
      EXPECT_EQ(messages, 0);
      EXPECT_EQ(bytes, 8 * cells);  // every cell sent to itself and received, 4 bytes each
    }
    // Contiguous host ranges and patch ranges: 2 ranks with 1 trainer exchange one message,
    // with 2 trainers (one per rank, the same ranges) none.
    if (ranks == 2) {
      EXPECT_EQ(messages, trainers == 1 ? 1 : 0);
    }
    // One trainer receives every cell.
    if (trainers == 1) {
      EXPECT_GE(bytes, 4 * cells);
    }
  }
  const std::set<std::tuple<int64_t, int, int>> expected = {{20480, 1, 1}, {20480, 2, 1}, {20480, 2, 2}, {20480, 4, 1},
                                                            {20480, 4, 2}, {20480, 4, 4}, {81920, 1, 1}, {81920, 2, 1},
                                                            {81920, 2, 2}, {81920, 4, 1}, {81920, 4, 2}, {81920, 4, 4}};
  EXPECT_EQ(runs, expected);
  const auto& fit = j.at("fit");
  EXPECT_GE(fit.at("alpha_us").get<double>(), 0.0);
  EXPECT_GE(fit.at("beta_ns_per_byte").get<double>(), 0.0);
  EXPECT_GE(fit.at("gamma_ns_per_byte").get<double>(), 0.0);
  // The remote bandwidth follows from beta and gamma; where load left both at 0 it is null.
  const double per_byte_ns = fit.at("beta_ns_per_byte").get<double>() + fit.at("gamma_ns_per_byte").get<double>();
  if (per_byte_ns > 0)
    EXPECT_NEAR(fit.at("remote_gbytes_per_s").get<double>(), 1.0 / per_byte_ns, 1e-9 / per_byte_ns);
  else
    EXPECT_TRUE(fit.at("remote_gbytes_per_s").is_null()) << fit.dump();
  EXPECT_EQ(fit.at("per_byte_from_cells").get<int64_t>(), 81920);
  EXPECT_EQ(fit.at("per_message_from_cells").get<int64_t>(), 20480);
  EXPECT_GE(fit.at("points").get<int>(), 4);

  // (b) Training with 1, 2 and 4 ranks on the same global batch; the groups summed gradients.
  std::map<int, nlohmann::json> train;
  for (const auto& t : j.at("training")) train[t.at("ranks").get<int>()] = t;
  ASSERT_EQ(train.size(), 3u) << j.at("training").dump();
  int64_t params = 0;
  for (int ranks : {1, 2, 4}) {
    SCOPED_TRACE(std::to_string(ranks) + " training ranks");
    const auto& t = train.at(ranks);
    EXPECT_GT(t.at("samples_per_s").get<double>(), 0.0);
    EXPECT_EQ(t.at("global_batch").get<int64_t>(), 64);
    EXPECT_EQ(t.at("rows").get<int64_t>(), 12 * 80);
    params = t.at("parameters").get<int64_t>();
    if (ranks > 1) {
      EXPECT_GT(t.at("allreduce_s_per_epoch").get<double>(), 0.0);
      // A gradient and a loss sum per optimizer step at least: 960 rows / 64 = 15 steps.
      EXPECT_GE(t.at("reducer_calls_per_epoch").get<int64_t>(), 2 * 15);
    } else {
      EXPECT_EQ(t.at("reducer_calls_per_epoch").get<int64_t>(), 0);
    }
  }
  EXPECT_GT(params, 0);
  std::set<int> reduce_ranks;
  for (const auto& a : j.at("allreduce")) {
    reduce_ranks.insert(a.at("ranks").get<int>());
    EXPECT_EQ(a.at("bytes").get<int64_t>(), 4 * params);
    EXPECT_GT(a.at("measured_ms").get<double>(), 0.0);
  }
  EXPECT_EQ(reduce_ranks, (std::set<int>{2, 4}));

  // (c) The model: R2B9 and R2B10 on 64, 512, 4096 host ranks with 4-256 trainers (<= hosts).
  const int64_t r2b9 = 20 * 4 * (int64_t{1} << 18), r2b10 = 4 * r2b9;  // 20 n^2 4^k, n = 2
  int rows = 0;
  for (const auto& m : j.at("model").at("rows")) {
    ++rows;
    const auto cells = m.at("cells").get<int64_t>();
    const int trainers = m.at("trainers").get<int>(), hosts = m.at("host_ranks").get<int>();
    EXPECT_EQ(cells, m.at("grid") == "R2B9" ? r2b9 : r2b10);
    EXPECT_LE(trainers, hosts);
    EXPECT_EQ(m.at("forward_bytes_per_step").get<int64_t>(), cells * 4 * 2);  // --model-fields 2
    EXPECT_EQ(m.at("reverse_bytes_per_step").get<int64_t>(), cells * 4);
    EXPECT_NEAR(m.at("trainer_receives_bytes").get<double>() * trainers, static_cast<double>(cells * 4 * 2), 1.0);
    EXPECT_GT(m.at("forward_ms").get<double>(), 0.0);
    EXPECT_GT(m.at("step_comm_ms").get<double>(), m.at("forward_ms").get<double>());
    EXPECT_EQ(m.at("gradient_bytes").get<double>(), 4.0 * static_cast<double>(params));
    // The whole grid's patch map on every trainer: 16 bytes per fine cell at least.
    EXPECT_GE(m.at("patch_map_mb").get<double>(), 16.0 * static_cast<double>(cells) / 1e6);
  }
  EXPECT_EQ(rows, 2 * (3 + 4 + 4));
  std::ifstream in(dir.file("progress.txt"));
  const std::string progress((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_TRUE(contains(progress, "[bench scale 0:")) << progress;
  EXPECT_TRUE(contains(progress, "] training: 4 trainer rank(s)")) << progress;
}

// Under mpiexec, Open MPI gives a rank a pseudo-terminal as stdout even when the output is
// captured; the progress mode "auto" must still print lines (no bar escapes) there, and the
// start-up stages are logged before the first step.
TEST(Cli, ReplayUnderMpiexecLogsStartUpAndPlainProgressLines) {
  ScratchDir dir("cli_replay");
  write_text(dir.file("plugin.yaml"), tiny_plugin_config(dir.path()));
  write_text(dir.file("run.yaml"), tiny_run_file(dir.file("plugin.yaml"), "round_robin"));
  const CommandResult r = run_command("mpiexec -n 1 --oversubscribe " + binary("finecast-replay") + " " +
                                      dir.file("run.yaml") + " --set train.epochs=1");
  ASSERT_EQ(r.rc, 0) << r.output;
  EXPECT_FALSE(contains(r.output, "\033[K")) << r.output;
  EXPECT_FALSE(contains(r.output, "\r")) << r.output;
  EXPECT_TRUE(contains(r.output, "replay: 6/6 steps")) << r.output;
  const std::vector<std::string> stages = {"start-up 0.",
                                           "s: reading the run file " + dir.file("run.yaml"),
                                           "s: opening the input files",
                                           "s: reading the lat-lon grid of " + kTas,
                                           "s: loading 1 plugin(s)",
                                           "s: plugin set-up (secondary constructors"};
  size_t at = 0;
  for (const auto& s : stages) {
    const size_t found = r.output.find(s, at);
    EXPECT_NE(found, std::string::npos) << "stage '" << s << "' missing or out of order:\n" << r.output;
    if (found != std::string::npos) at = found;
  }
  EXPECT_LT(at, r.output.find("replay: 1/6 steps")) << r.output;
}

}  // namespace
