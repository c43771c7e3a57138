// SPDX-License-Identifier: BSD-3-Clause
// finecast-bench plugin: the host's time per step without the plugin, with the plugin training
// synchronously, and with it training on a background thread, on the demo setup; with
// --python-reference also the reference Python ComIn plugin (bench/python_reference_plugin.py,
// loaded by bench/python_adapter.c) doing the same work in the same host, synchronously and on
// a Python thread.
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "bench/registry.hpp"
#include "common/cli.hpp"

namespace {

/// Sessions every kEvery steps once the buffer holds kEvery steps, samplings every kSampleEvery
/// steps: the demo's schedule, given to both plugins explicitly.
constexpr int kEvery = 48;
constexpr int kSampleEvery = 50;

/// One session's anatomy from finecast's log (plugin/comin_plugin/training_session.cpp,
/// anatomy_line): the seconds of the whole session, what it blocked the host, its epochs, and the
/// parts outside them.
struct SessionParts {
  double total = 0, host_blocked = 0, epochs = 0, outside = 0;
  double cpu_outside = 0;  ///< the training thread's CPU seconds outside the epochs (trainer's part)
  std::vector<std::pair<std::string, double>> parts;  ///< snapshot, thread start, cleaning, ..., other
  double ratio() const { return epochs > 0 ? outside / epochs : 0; }
};

struct Case {
  std::string name;
  std::string args;  ///< extra finecast-host arguments
  std::string run_file;
  bool python = false;
  // What the host's summary line says:
  double s_per_step = 0;
  double plugin_s_per_step = 0;
  double loop_s_per_step = 0;  ///< the time loop alone, without the final wait in EP_DESTRUCTOR
  double steps_s = 0;          ///< the time steps alone (the loop without the secondary constructors), summed
  // From --step-times (the slowest rank per step):
  double ordinary_step_plugin_s = 0;  ///< median plugin time of steps without session or sampling
  double session_blocked_s = 0;       ///< mean over session steps of their plugin time above that
  double sampling_step_s = 0;         ///< mean over sampling steps, likewise
  // From the plugins' own logs or report:
  int sessions = 0, samplings = 0;  ///< those that ran (an asynchronous session due while one runs does not)
  double train_samples_per_s = 0;
  double trainer_peak_mib = 0;
  double gpu_peak_mib = 0;  ///< with a CUDA device: the most GPU memory all processes held at once
  // finecast's session anatomy (its log's "Session N anatomy" lines), per session in order:
  std::vector<SessionParts> session_parts{};
  double sampling_draw_s = 0, sampling_output_s = 0, sampling_rest_s = 0;  ///< mean per sampling (its log)
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

/// With a CUDA device: polls `nvidia-smi` twice a second while a case runs and keeps the most
/// memory its compute processes held together (the CUDA contexts included), for either plugin.
class GpuMemoryPoll {
 public:
  explicit GpuMemoryPoll(bool on) {
    if (!on) return;
    thread_ = std::thread([this] {
      while (!stop_) {
        std::string out;
        FILE* pipe =
            popen("nvidia-smi --query-compute-apps=used_memory --format=csv,noheader,nounits 2>/dev/null", "r");
        if (pipe) {
          char buf[256];
          double sum = 0;
          while (fgets(buf, sizeof buf, pipe)) sum += std::atof(buf);
          pclose(pipe);
          if (sum > peak_) peak_ = sum;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(500));
      }
    });
  }
  ~GpuMemoryPoll() { finish(); }
  GpuMemoryPoll(const GpuMemoryPoll&) = delete;
  GpuMemoryPoll& operator=(const GpuMemoryPoll&) = delete;
  /// Stops polling; the peak in MiB (0 without a GPU or nvidia-smi).
  double finish() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
    return peak_;
  }

 private:
  std::thread thread_;
  std::atomic<bool> stop_{false};
  std::atomic<double> peak_{0};
};

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}

/// finecast-host --step-times: the plugins' seconds per step (index 0 = step 1); `steps_s` gets
/// the sum of the steps' wall times (the time steps alone, without the constructors).
std::vector<double> read_plugin_step_seconds(const std::string& path, double& steps_s) {
  std::ifstream in(path);
  std::vector<double> out;
  std::string line;
  std::getline(in, line);  // header
  steps_s = 0;
  while (std::getline(in, line)) {
    std::stringstream ss(line);
    std::string step, plugin, wall;
    std::getline(ss, step, ',');
    std::getline(ss, plugin, ',');
    std::getline(ss, wall, ',');
    out.push_back(std::stod(plugin));
    steps_s += std::stod(wall);
  }
  return out;
}

/// Splits the per-step plugin times into ordinary, session and sampling steps. A step that both
/// trains and samples counts as a session step. A sampling step counts only where the plugin
/// sampled: more than 10x an ordinary step's time (before the first model exists it does not).
void step_statistics(const std::vector<double>& plugin_s, bool sessions_due, Case& c) {
  std::vector<double> ordinary;
  std::vector<int> session_steps, sampling_steps;
  for (size_t i = 0; i < plugin_s.size(); ++i) {
    const int step = static_cast<int>(i) + 1;
    if (sessions_due && step % kEvery == 0)
      session_steps.push_back(step);
    else if (step % kSampleEvery == 0)
      sampling_steps.push_back(step);
    else
      ordinary.push_back(plugin_s[i]);
  }
  c.ordinary_step_plugin_s = median(ordinary);
  auto mean_above = [&](const std::vector<int>& steps) {
    double sum = 0;
    for (int s : steps) sum += plugin_s[s - 1] - c.ordinary_step_plugin_s;
    return steps.empty() ? 0.0 : sum / static_cast<double>(steps.size());
  };
  c.session_blocked_s = mean_above(session_steps);
  std::vector<int> sampled;
  for (int s : sampling_steps)
    if (plugin_s[s - 1] > 10 * c.ordinary_step_plugin_s) sampled.push_back(s);
  c.sampling_step_s = mean_above(sampled);
}

/// finecast's log: the mean of its epochs' samples/s, and the trainer rank's peak memory.
void finecast_log_statistics(const std::string& output, Case& c) {
  const std::regex epoch(R"(Epoch \d+/\d+: avg loss = \S+ \(\d+ batches, [0-9.]+ s, ([0-9.]+) samples/s\))");
  double sum = 0;
  int n = 0;
  for (auto it = std::sregex_iterator(output.begin(), output.end(), epoch); it != std::sregex_iterator(); ++it) {
    sum += std::stod((*it)[1]);
    ++n;
  }
  c.train_samples_per_s = n ? sum / n : 0;
  std::smatch m;
  const std::regex summary(R"(Summary: \d+ coupling steps, (\d+) training sessions, (\d+) samplings)");
  if (std::regex_search(output, m, summary)) {
    c.sessions = std::stoi(m[1]);
    c.samplings = std::stoi(m[2]);
  }
  const std::regex peak(R"(Peak resident memory (\d+) MiB; LibTorch loaded \(trainer rank\))");
  if (std::regex_search(output, m, peak)) c.trainer_peak_mib = std::stod(m[1]);
  const std::regex anatomy(
      R"(Session \d+ anatomy: ([0-9.]+) s, host blocked ([0-9.]+) s; epochs ([0-9.]+) s, outside them (-?[0-9.]+) s \([^)]*\): ([^;\n]*); the training thread's CPU outside them (-?[0-9.]+) s)");
  const std::regex part(R"(([a-z ]+) (-?[0-9.]+)(, |$))");
  for (auto it = std::sregex_iterator(output.begin(), output.end(), anatomy); it != std::sregex_iterator(); ++it) {
    SessionParts p{std::stod((*it)[1]), std::stod((*it)[2]), std::stod((*it)[3]),
                   std::stod((*it)[4]), std::stod((*it)[6]), {}};
    const std::string list = (*it)[5];
    for (auto k = std::sregex_iterator(list.begin(), list.end(), part); k != std::sregex_iterator(); ++k)
      p.parts.emplace_back((*k)[1], std::stod((*k)[2]));
    c.session_parts.push_back(std::move(p));
  }
  const std::regex sampling(
      R"(Sampling anatomy \((\d+) samplings\): [0-9.]+ s: drawing ([0-9.]+), output ([0-9.]+), write-back and the ranks' agreement (-?[0-9.]+))");
  if (std::regex_search(output, m, sampling) && std::stoi(m[1]) > 0) {
    const double n = std::stod(m[1]);
    c.sampling_draw_s = std::stod(m[2]) / n;
    c.sampling_output_s = std::stod(m[3]) / n;
    c.sampling_rest_s = std::stod(m[4]) / n;
  }
}

/// The Python plugin's report (bench/python_reference_plugin.py --report).
void python_report_statistics(const std::string& path, Case& c) {
  std::ifstream in(path);
  if (!in) return;
  const nlohmann::json r = nlohmann::json::parse(in);
  double sum = 0;
  for (const auto& s : r["sessions"]) sum += s["samples_per_s"].get<double>();
  c.train_samples_per_s = r["sessions"].empty() ? 0 : sum / static_cast<double>(r["sessions"].size());
  c.trainer_peak_mib = r["rank0_peak_resident_mib"].get<double>();
  c.sessions = static_cast<int>(r["sessions"].size());
  c.samplings = static_cast<int>(r["samplings"].size());
}

/// A case's sessions as JSON: each session's seconds and parts, the first session's and the
/// largest ratio of the time outside the epochs to the epochs.
nlohmann::json anatomy_json(const Case& c) {
  nlohmann::json j = nlohmann::json::object();
  if (c.session_parts.empty()) return j;
  double worst = 0;
  for (const SessionParts& p : c.session_parts) {
    nlohmann::json s = {
        {"total_s", p.total},     {"host_blocked_s", p.host_blocked}, {"epochs_s", p.epochs},
        {"outside_s", p.outside}, {"outside_vs_epochs", p.ratio()},   {"training_thread_cpu_outside_s", p.cpu_outside}};
    for (const auto& [name, seconds] : p.parts) s["parts_s"][name] = seconds;
    j["sessions"].push_back(s);
    worst = std::max(worst, p.ratio());
  }
  j["first_outside_vs_epochs"] = c.session_parts.front().ratio();
  j["max_outside_vs_epochs"] = worst;
  return j;
}

/// finecast's sessions, one line each: where the time went outside the epochs.
void print_anatomy(const std::vector<Case>& cases) {
  for (const Case& c : cases) {
    if (c.session_parts.empty()) continue;
    std::printf("\nsession anatomy, %s (seconds; outside = the session less its epochs):\n", c.name.c_str());
    for (size_t i = 0; i < c.session_parts.size(); ++i) {
      const SessionParts& p = c.session_parts[i];
      std::printf("  session %zu: %.3f s, host blocked %.3f s, epochs %.3f s, outside %.3f s (%.3fx):", i + 1, p.total,
                  p.host_blocked, p.epochs, p.outside, p.ratio());
      for (const auto& [name, seconds] : p.parts) std::printf(" %s %.3f", name.c_str(), seconds);
      std::printf("; training thread CPU outside %.3f\n", p.cpu_outside);
    }
    double worst = 0;
    for (const SessionParts& p : c.session_parts) worst = std::max(worst, p.ratio());
    std::printf("  outside the epochs / the epochs: first session %.3fx, largest %.3fx (issue 44's bar: 0.1x)\n",
                c.session_parts.front().ratio(), worst);
    if (c.sampling_draw_s > 0)
      std::printf("  per sampling: drawing %.3f s, output %.3f s, write-back and agreement %.3f s\n", c.sampling_draw_s,
                  c.sampling_output_s, c.sampling_rest_s);
  }
}

/// The run file's keys up to its plugin list, followed by `plugins`.
std::string with_plugins(const std::string& run_file, const std::string& plugins) {
  std::ifstream in(run_file);
  std::string text, line;
  while (std::getline(in, line) && line.rfind("plugins:", 0) != 0 && line.rfind("comin_namelist:", 0) != 0)
    text += line + "\n";
  return text + "plugins:\n" + plugins;
}

int bench_plugin(int argc, char** argv) {
  CLI::App app{
      "finecast-bench plugin: host time per step on the demo setup (finecast-host on the real R2B4 grid\n"
      "with configs/demo.yaml), (1) without the plugin, (2) with the plugin and train.async: false,\n"
      "(3) with train.async: true; with --python-reference (4, 5) the reference Python ComIn plugin\n"
      "(bench/python_reference_plugin.py, loaded by bench/python_adapter.c) training in its callback\n"
      "and on a Python thread, and finecast configured as that reference design (7 context values,\n"
      "residual from the patch mean, DDPM-50). Launches\n"
      "`mpiexec -n RANKS build/bin/finecast-host` itself (do not run it under mpiexec). Run from the\n"
      "repository root."};
  std::string run_file = "configs/demo_host.yaml";
  std::string bin_dir, adapter, device = "cpu", mpiexec = "mpiexec --oversubscribe";
  int ranks = 4, steps = 120, epochs = 30, threads = 2, members = 8;
  double step_seconds = 0, step_work = 0;
  std::vector<std::string> sets;
  bool json = false, python = false;
  finecast::cli::add_config(app, run_file, "host run file (default configs/demo_host.yaml; --run FILE too)", false,
                            "--run");
  app.add_option("--ranks", ranks, "MPI ranks (default 4)");
  app.add_option("--steps", steps, "host steps per case (default 120: training sessions at steps 48 and 96)");
  app.add_option("--step-seconds", step_seconds,
                 "minimum wall time per host step (default 0: the toy model's own speed)");
  app.add_option("--step-work", step_work,
                 "CPU seconds every host rank computes per step (finecast-host --step-work: a busy loop, so a "
                 "step takes longer when another thread holds its core; default 0)");
  app.add_option("--set", sets, "KEY=VALUE: a finecast config override for every finecast case (repeatable)");
  app.add_option("--epochs", epochs, "epochs per training session (default 30)");
  app.add_option("--threads", threads, "trainer threads of both plugins (default 2)");
  app.add_option("--members", members, "ensemble members per sampling (default 8)");
  app.add_option("--device", device, "the trainers' device (default cpu)");
  app.add_flag("--python-reference", python,
               "also run the reference Python plugin; both plugins then follow the reference design");
  app.add_option("--adapter", adapter,
                 "the plugin that runs the Python script (default: BIN_DIR/../lib/libfinecast_python_adapter.so)");
  app.add_option("--mpiexec", mpiexec, "the MPI launcher and its options (default: mpiexec --oversubscribe)");
  app.add_option("--bin-dir", bin_dir, "directory of finecast-host (default: this program's directory)");
  app.add_flag("--json", json, "print one JSON object");
  finecast::cli::add_version(app, "finecast-bench plugin");
  CLI11_PARSE(app, argc, argv);
  if (bin_dir.empty()) bin_dir = std::filesystem::path(finecast::cli::executable_path()).parent_path().string();
  if (adapter.empty()) adapter = bin_dir + "/../lib/libfinecast_python_adapter.so";
  const std::string out_dir = std::filesystem::temp_directory_path().string() + "/finecast-bench-plugin";
  std::filesystem::remove_all(out_dir);
  std::filesystem::create_directories(out_dir);
  if (python && !std::filesystem::exists(adapter)) {
    std::fprintf(stderr,
                 "finecast-bench plugin: --python-reference needs the Python plugin's loader; %s does not "
                 "exist (it is built where Debian's python3-dev is installed; scripts/setup.sh installs it)\n",
                 adapter.c_str());
    return 2;
  }

  // The reference model of the setup to beat (the MLP, EPOCHS epochs a session), whatever model
  // the demo itself uses, so that the measured overhead compares with the reference plugin's.
  std::string common = " --set sample.output=" + out_dir + "/out.nc --set checkpoint.dir=" + out_dir +
                       "/ckpt --set model.arch=mlp --set train.epochs=" + std::to_string(epochs) +
                       " --set train.threads=" + std::to_string(threads) + " --set device=" + device;
  if (python)  // the reference design: edge-neighbour context, residual from the patch mean, DDPM
    common +=
        " --set 'patch.static=[]' --set \"patch.orography=''\" --set patch.residual=mean"
        " --set patch.static_features=true --set patch.context_rings=0 --set model.hidden=256"
        " --set model.depth=3 --set train.batch_size=16 --set buffer.capacity=48 --set train.every=48"
        " --set train.min_steps=48 --set sample.every=50 --set sample.sampler=ddpm --set sample.members=" +
        std::to_string(members);
  // The user's overrides last: they win.
  for (const std::string& kv : sets) common += " --set '" + kv + "'";
  std::vector<Case> cases = {{"no plugin", " --no-plugins", run_file},
                             {"plugin, train.async: false", common + " --set train.async=false", run_file},
                             {"plugin, train.async: true", common + " --set train.async=true", run_file}};
  if (python) {
    const std::string py_run = out_dir + "/python_host.yaml";
    const std::string options = std::string(FINECAST_BENCH_DIR) + "/python_reference_plugin.py" +
                                " --field ts --capacity 48 --every 48 --epochs " + std::to_string(epochs) +
                                " --batch 16 --sample-every 50 --members " + std::to_string(members) +
                                " --sampler ddpm --device " + device + " --threads " + std::to_string(threads) +
                                " --report " + out_dir + "/pyref.json";
    for (const bool async : {false, true}) {
      const std::string file = out_dir + (async ? "/python_async_host.yaml" : "/python_host.yaml");
      std::ofstream(file) << with_plugins(run_file, "  - {name: pyref, library: " + adapter + ", options: \"" +
                                                        options + (async ? " --async" : "") + "\", comm: \"\"}\n");
      cases.push_back({async ? "Python plugin, thread" : "Python plugin, in callback", "", file, true});
    }
  }
  const std::regex finished(
      R"(finished \d+ steps on \d+ rank\(s\): ([0-9.]+) s/step \(fields [0-9.]+ s/step, plugin callbacks ([0-9.]+) s/step.*time loop alone ([0-9.]+) s/step)");
  for (size_t i = 0; i < cases.size(); ++i) {
    Case& c = cases[i];
    const std::string times = out_dir + "/step_times_" + std::to_string(i) + ".csv";
    const std::string cmd = "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 " + mpiexec + " -n " +
                            std::to_string(ranks) + " " + bin_dir + "/finecast-host " + c.run_file + " --steps " +
                            std::to_string(steps) + " --step-seconds " + std::to_string(step_seconds) +
                            " --step-work " + std::to_string(step_work) + " --step-times " + times + c.args;
    if (!json) std::fprintf(stderr, "[bench plugin] %s: %s\n", c.name.c_str(), cmd.c_str());
    std::string output;
    GpuMemoryPoll gpu(device.rfind("cuda", 0) == 0);
    const int rc = run(cmd, output);
    c.gpu_peak_mib = gpu.finish();
    std::ofstream(out_dir + "/case_" + std::to_string(i) + ".log") << cmd << "\n" << output;
    std::smatch m;
    if (rc != 0 || !std::regex_search(output, m, finished)) {
      std::fprintf(stderr, "finecast-bench plugin: case \"%s\" failed (exit %d):\n%s\n", c.name.c_str(), rc,
                   output.c_str());
      return 1;
    }
    c.s_per_step = std::stod(m[1]);
    c.plugin_s_per_step = std::stod(m[2]);
    c.loop_s_per_step = std::stod(m[3]);
    step_statistics(read_plugin_step_seconds(times, c.steps_s), i > 0, c);
    if (c.python)
      python_report_statistics(out_dir + "/pyref.json", c);
    else if (i > 0)
      finecast_log_statistics(output, c);
  }
  const double base = cases[0].s_per_step;
  if (json) {
    nlohmann::json j = {{"ranks", ranks},
                        {"steps", steps},
                        {"step_seconds", step_seconds},
                        {"step_work", step_work},
                        {"epochs", epochs},
                        {"device", device},
                        {"no_plugin_s_per_step", base},
                        {"sync_s_per_step", cases[1].s_per_step},
                        {"async_s_per_step", cases[2].s_per_step},
                        {"sync_loop_s_per_step", cases[1].loop_s_per_step},
                        {"async_loop_s_per_step", cases[2].loop_s_per_step},
                        {"sync_overhead", cases[1].s_per_step / base},
                        {"async_overhead", cases[2].s_per_step / base}};
    for (const auto& c : cases)
      j["cases"].push_back({{"name", c.name},
                            {"s_per_step", c.s_per_step},
                            {"plugin_s_per_step", c.plugin_s_per_step},
                            {"loop_s_per_step", c.loop_s_per_step},
                            {"loop_vs_none", c.loop_s_per_step / cases[0].loop_s_per_step},
                            {"steps_s", c.steps_s},
                            {"steps_vs_none", c.steps_s / cases[0].steps_s},
                            {"ordinary_step_plugin_s", c.ordinary_step_plugin_s},
                            {"session_blocked_s", c.session_blocked_s},
                            {"sampling_step_s", c.sampling_step_s},
                            {"sessions", c.sessions},
                            {"samplings", c.samplings},
                            {"train_samples_per_s", c.train_samples_per_s},
                            {"trainer_peak_mib", c.trainer_peak_mib},
                            {"gpu_peak_mib", c.gpu_peak_mib},
                            {"session_anatomy", anatomy_json(c)},
                            {"sampling_draw_s", c.sampling_draw_s},
                            {"sampling_output_s", c.sampling_output_s},
                            {"sampling_rest_s", c.sampling_rest_s}});
    if (python)
      j["sync_session_blocked_vs_python"] = cases[1].session_blocked_s / std::max(1e-12, cases[3].session_blocked_s);
    std::printf("%s\n", j.dump().c_str());
    return 0;
  }
  std::printf("host time per step, %d ranks, %d steps, %s (%s)\n", ranks, steps,
              python ? "the reference design" : "demo setup", run_file.c_str());
  std::printf(
      "(s/step: whole run incl. the final EP_DESTRUCTOR, which waits for a session in flight;\n"
      " loop: the time loop alone, the plugins' secondary constructors included; steps: the time\n"
      " steps alone against the run without a plugin, what the model feels while it steps;\n"
      " per step, session, sampling:\n"
      " the slowest rank's seconds in the plugin callbacks at ordinary steps (median), and above that\n"
      " at the steps that train (every %d) and sample (every %d))\n",
      kEvery, kSampleEvery);
  const bool gpu = device.rfind("cuda", 0) == 0;
  std::printf("%-27s %7s %7s %7s %7s %8s %8s %8s %9s %5s %5s %5s%s\n", "case", "s/step", "plugin", "loop", "steps",
              "per step", "session", "sampling", "samples/s", "MiB", "sess.", "samp.", gpu ? "  GPU MiB" : "");
  for (const auto& c : cases) {
    std::printf("%-27s %7.4f %7.4f %7.4f %6.3fx %8.5f %8.3f %8.3f %9.0f %5.0f %5d %5d", c.name.c_str(), c.s_per_step,
                c.plugin_s_per_step, c.loop_s_per_step, c.steps_s / cases[0].steps_s, c.ordinary_step_plugin_s,
                c.session_blocked_s, c.sampling_step_s, c.train_samples_per_s, c.trainer_peak_mib, c.sessions,
                c.samplings);
    if (gpu) std::printf(" %8.0f", c.gpu_peak_mib);
    std::printf("\n");
  }
  std::printf(
      "(MiB: the trainer rank's peak resident memory; sess., samp.: the sessions and samplings that ran;%s\n"
      " each case's log is in %s)\n",
      gpu ? " GPU MiB: the most\n nvidia-smi saw the compute processes hold at once;" : "", out_dir.c_str());
  if (python)
    std::printf("finecast sync session / Python session (host-blocked): %.3f\n",
                cases[1].session_blocked_s / std::max(1e-12, cases[3].session_blocked_s));
  print_anatomy(cases);
  return 0;
}

const finecast::bench::Register reg("plugin", {"host time per step: no plugin vs plugin (sync / async training), "
                                               "optionally vs the reference Python plugin",
                                               bench_plugin});

}  // namespace
