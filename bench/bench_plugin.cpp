// SPDX-License-Identifier: BSD-3-Clause
// finecast-bench plugin: the host's time per step without the plugin, with the plugin training
// synchronously, and with it training on a background thread, on the demo setup.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <filesystem>
#include <regex>
#include <string>
#include <vector>

#include "bench/registry.hpp"
#include "common/cli.hpp"

namespace {

struct Case {
  std::string name;
  std::string args;  ///< extra finecast-host arguments
  double s_per_step = 0;
  double plugin_s_per_step = 0;
  double loop_s_per_step = 0;  ///< the time loop alone, without the final wait in EP_DESTRUCTOR
};

/// Runs a command, returns its output (stdout + stderr) and exit code.
int run(const std::string& command, std::string& output) {
  output.clear();
  FILE* pipe = popen((command + " 2>&1").c_str(), "r");
  if (!pipe) return -1;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, pipe)) > 0) output.append(buf, n);
  return pclose(pipe);
}

int bench_plugin(int argc, char** argv) {
  CLI::App app{
      "finecast-bench plugin: host time per step on the demo setup (finecast-host on the real R2B4 grid\n"
      "with configs/demo.yaml), (1) without the plugin, (2) with the plugin and train.async: false,\n"
      "(3) with train.async: true. Launches `mpiexec -n RANKS build/bin/finecast-host` itself (do not\n"
      "run it under mpiexec). Run from the repository root."};
  std::string run_file = "configs/demo_host.yaml";
  std::string bin_dir;
  int ranks = 4, steps = 120;
  double step_seconds = 0;
  bool json = false;
  finecast::cli::add_config(app, run_file, "host run file (default configs/demo_host.yaml; --run FILE too)", false,
                            "--run");
  app.add_option("--ranks", ranks, "MPI ranks (default 4)");
  app.add_option("--steps", steps, "host steps per case (default 120: training sessions at steps 48 and 96)");
  app.add_option("--step-seconds", step_seconds,
                 "minimum wall time per host step (default 0: the toy model's own speed)");
  app.add_option("--bin-dir", bin_dir, "directory of finecast-host (default: this program's directory)");
  app.add_flag("--json", json, "print one JSON object");
  finecast::cli::add_version(app, "finecast-bench plugin");
  CLI11_PARSE(app, argc, argv);
  if (bin_dir.empty()) bin_dir = std::filesystem::path(finecast::cli::executable_path()).parent_path().string();
  const std::string out_dir = std::filesystem::temp_directory_path().string() + "/finecast-bench-plugin";
  std::filesystem::remove_all(out_dir);

  // The reference model of the setup to beat (the MLP, 30 epochs a session), whatever model the
  // demo itself uses, so that the measured overhead compares with the reference plugin's.
  const std::string common = " --set sample.output=" + out_dir + "/out.nc --set checkpoint.dir=" + out_dir +
                             "/ckpt --set model.arch=mlp --set train.epochs=30";
  std::vector<Case> cases = {{"no plugin", " --no-plugins"},
                             {"plugin, train.async: false", common + " --set train.async=false"},
                             {"plugin, train.async: true", common + " --set train.async=true"}};
  const std::regex finished(
      R"(finished \d+ steps on \d+ rank\(s\): ([0-9.]+) s/step \(fields [0-9.]+ s/step, plugin callbacks ([0-9.]+) s/step.*time loop alone ([0-9.]+) s/step)");
  for (auto& c : cases) {
    const std::string cmd = "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 mpiexec -n " +
                            std::to_string(ranks) + " --oversubscribe " + bin_dir + "/finecast-host " + run_file +
                            " --steps " + std::to_string(steps) + " --step-seconds " + std::to_string(step_seconds) +
                            c.args;
    if (!json) std::fprintf(stderr, "[bench plugin] %s: %s\n", c.name.c_str(), cmd.c_str());
    std::string output;
    const int rc = run(cmd, output);
    std::smatch m;
    if (rc != 0 || !std::regex_search(output, m, finished)) {
      std::fprintf(stderr, "finecast-bench plugin: case \"%s\" failed (exit %d):\n%s\n", c.name.c_str(), rc,
                   output.c_str());
      return 1;
    }
    c.s_per_step = std::stod(m[1]);
    c.plugin_s_per_step = std::stod(m[2]);
    c.loop_s_per_step = std::stod(m[3]);
  }
  const double base = cases[0].s_per_step;
  if (json) {
    std::printf(
        "{\"ranks\": %d, \"steps\": %d, \"step_seconds\": %g, \"no_plugin_s_per_step\": %.6f, "
        "\"sync_s_per_step\": %.6f, \"async_s_per_step\": %.6f, \"sync_loop_s_per_step\": %.6f, "
        "\"async_loop_s_per_step\": %.6f, \"sync_overhead\": %.3f, \"async_overhead\": %.3f}\n",
        ranks, steps, step_seconds, base, cases[1].s_per_step, cases[2].s_per_step, cases[1].loop_s_per_step,
        cases[2].loop_s_per_step, cases[1].s_per_step / base, cases[2].s_per_step / base);
    return 0;
  }
  std::printf("host time per step, %d ranks, %d steps, demo setup (%s)\n", ranks, steps, run_file.c_str());
  std::printf(
      "(s/step: whole run incl. the final EP_DESTRUCTOR, which waits for a session in flight;\n"
      " loop: the time loop alone, what the model feels while it steps)\n");
  std::printf("%-30s %10s %10s %10s %10s\n", "case", "s/step", "in plugin", "loop", "loop vs none");
  for (const auto& c : cases)
    std::printf("%-30s %10.4f %10.4f %10.4f %9.2fx\n", c.name.c_str(), c.s_per_step, c.plugin_s_per_step,
                c.loop_s_per_step, c.loop_s_per_step / cases[0].loop_s_per_step);
  return 0;
}

const finecast::bench::Register reg("plugin",
                                    {"host time per step: no plugin vs plugin (sync / async training)", bench_plugin});

}  // namespace
