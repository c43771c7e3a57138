// SPDX-License-Identifier: BSD-3-Clause
// finecast-bench trainer: training and sampling speed of the reference model, against PyTorch.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "bench/registry.hpp"
#include "common/cli.hpp"
#include "trainer/device.hpp"
#include "trainer/downscaler.hpp"

namespace {

using finecast::trainer::DataView;
using finecast::trainer::Downscaler;

constexpr int64_t kC = 7, kP = 256, kN = 3840;

std::string fmt_seconds(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f s", s);
  return buf;
}

/// Synthetic reference-sized data: fine = context[0] + context[1] * pattern + noise.
struct Data {
  std::vector<float> context, fine, coarse;
};

Data make_data() {
  Data d;
  std::mt19937 rng(1);
  std::normal_distribution<float> normal;
  d.context.resize(kN * kC);
  d.fine.resize(kN * kP);
  d.coarse.resize(kN);
  for (auto& v : d.context) v = normal(rng);
  for (int64_t i = 0; i < kN; ++i) {
    double sum = 0;
    for (int64_t j = 0; j < kP; ++j) {
      const float pattern = std::sin(6.28f * static_cast<float>(j) / (kP - 1));
      const float v = d.context[i * kC] + d.context[i * kC + 1] * pattern + 0.3f * normal(rng);
      d.fine[i * kP + j] = v;
      sum += v;
    }
    d.coarse[i] = static_cast<float>(sum / kP);
  }
  return d;
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

/// Progress lines on stderr (stdout holds the table or the JSON): on a small CPU the whole
/// measurement takes minutes, so each step says what it measures, which repeat, and the time.
class Progress {
 public:
  explicit Progress(bool quiet) : quiet_(quiet) {}
  void line(const std::string& what) const {
    if (quiet_) return;
    const long long s = std::llround(seconds_since(t0_));
    std::fprintf(stderr, "[bench trainer %lld:%02lld] %s\n", s / 60, s % 60, what.c_str());
    std::fflush(stderr);
  }

 private:
  bool quiet_;
  std::chrono::steady_clock::time_point t0_ = std::chrono::steady_clock::now();
};

/// The best time of `repeats` runs of f, each reported as "<what>: repeat i/n: S s".
template <class F>
double best_of(const Progress& progress, const std::string& what, int repeats, F&& f) {
  double best = 1e300;
  for (int i = 0; i < repeats; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    f();
    const double s = seconds_since(t0);
    best = std::min(best, s);
    progress.line(what + ": repeat " + std::to_string(i + 1) + "/" + std::to_string(repeats) + ": " +
                  fmt_seconds(s));
  }
  return best;
}

/// One device's numbers, keyed like the JSON output.
std::map<std::string, double> measure(const std::string& device, const Data& d, int repeats,
                                      const Progress& progress) {
  std::map<std::string, double> r;
  DataView view{d.context.data(), d.fine.data(), nullptr, kN};
  finecast::trainer::ModelOptions mo;
  std::unique_ptr<Downscaler> last;
  for (int64_t batch : {16, 256}) {
    finecast::trainer::TrainOptions to;
    to.batch_size = batch;
    const std::string what = "training epoch (3,840 samples), batch " + std::to_string(batch);
    progress.line(what + ": warm-up epoch");
    auto ds = std::make_unique<Downscaler>(mo, to, device);
    ds->train_epoch(view);  // warm-up: first-touch allocations, thread pool
    const double s = best_of(progress, what, repeats, [&] { ds->train_epoch(view); });
    r["train_epoch_s_b" + std::to_string(batch)] = s;
    r["train_samples_per_s_b" + std::to_string(batch)] = static_cast<double>(kN) / s;
    r["parameters"] = static_cast<double>(ds->parameter_count());
    last = std::move(ds);
  }
  last->publish();
  std::vector<float> out(80 * kP);
  for (const char* sampler : {"ddpm", "ddim"}) {
    finecast::trainer::SampleOptions so;
    so.sampler = sampler;
    so.steps = 10;
    so.members = 1;
    auto once = [&] { last->sample(d.context.data(), d.coarse.data(), nullptr, 80, so, 7, out.data()); };
    const std::string what = std::string("sampling 80 patches, ") + (so.sampler == "ddpm" ? "DDPM 50 steps" : "DDIM 10 steps");
    progress.line(what + ": warm-up");
    once();
    r[std::string("sample_") + (so.sampler == "ddpm" ? "ddpm50" : "ddim10") + "_80_s"] =
        best_of(progress, what, repeats * 3, once);
  }
  return r;
}

/// Runs bench/reference_pytorch.py with `python` and returns its numeric JSON fields.
std::map<std::string, double> run_reference(const std::string& python, const std::string& script,
                                            const std::string& device, int threads, int repeats,
                                            std::string* why_not) {
  std::map<std::string, double> r;
  if (!std::filesystem::exists(python) || !std::filesystem::exists(script)) {
    *why_not = "reference not run: " + (std::filesystem::exists(python) ? script : python) + " not found";
    return r;
  }
  const std::string cmd = python + " " + script + " --json --device " + device + " --threads " +
                          std::to_string(threads) + " --repeats " + std::to_string(repeats) + " 2>/dev/null";
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) {
    *why_not = "reference not run: cannot start " + python;
    return r;
  }
  std::string text;
  std::array<char, 4096> buf;
  size_t got;
  while ((got = fread(buf.data(), 1, buf.size(), p)) > 0) text.append(buf.data(), got);
  if (pclose(p) != 0 || text.find('{') == std::string::npos) {
    *why_not = "reference failed (is torch importable by " + python + ", and does it see " + device + "?)";
    return r;
  }
  // The reference prints one flat JSON object: pick "key": number pairs.
  size_t pos = 0;
  while ((pos = text.find('"', pos)) != std::string::npos) {
    const size_t end = text.find('"', pos + 1);
    if (end == std::string::npos) break;
    const std::string key = text.substr(pos + 1, end - pos - 1);
    size_t v = text.find_first_not_of(" :", end + 1);
    pos = end + 1;
    if (v == std::string::npos || !(std::isdigit(static_cast<unsigned char>(text[v])) || text[v] == '-')) continue;
    r[key] = std::strtod(text.c_str() + v, nullptr);
  }
  return r;
}

int run(int argc, char** argv) {
  CLI::App app{"Training samples/s (batch 16 and 256), seconds per 3,840-sample epoch and seconds to draw 80 "
               "patches x 1 member (DDPM 50 steps, DDIM 10 steps) for the reference model; compares with the "
               "same loop in PyTorch from Python when /usr/bin/python3 has torch.",
               "finecast-bench trainer"};
  bool json = false, no_reference = false, quiet = false;
  int threads = 2, repeats = 3;
  std::string device = "cpu", python = "/usr/bin/python3";
  std::string script = (std::filesystem::path(__FILE__).parent_path() / "reference_pytorch.py").string();
  app.add_flag("--json", json, "print one JSON object instead of the table");
  app.add_option("--threads", threads, "LibTorch intra-op threads (also passed to the reference)");
  app.add_option("--device", device, "cpu, cuda, cuda:N, or auto (CUDA when present)");
  app.add_option("--repeats", repeats, "timed repetitions; the best is reported");
  app.add_option("--python", python, "Python interpreter with torch for the reference loop");
  app.add_option("--reference", script, "path of bench/reference_pytorch.py");
  app.add_flag("--no-reference", no_reference, "do not run the PyTorch-from-Python reference");
  app.add_flag("-q,--quiet", quiet, "no progress lines on stderr");
  finecast::cli::add_version(app, "finecast-bench trainer");
  CLI11_PARSE(app, argc, argv);

  finecast::trainer::set_torch_threads(threads);
  const auto choice = finecast::trainer::select_device(device);
  const Progress progress(quiet);
  progress.line("finecast on " + choice.torch_device + ", " + std::to_string(threads) + " thread(s), best of " +
                std::to_string(repeats) + " repeats (sampling: " + std::to_string(3 * repeats) +
                "); then the PyTorch reference" + (no_reference ? " (skipped: --no-reference)" : ""));
  const Data data = make_data();
  const auto ours = measure(choice.torch_device, data, repeats, progress);
  std::string why_not;
  std::map<std::string, double> ref;
  // The reference runs on the same device as finecast (its own PyTorch must see it).
  if (!no_reference) {
    progress.line("PyTorch reference: " + python + " " + script + " (the same measurements; no output until it ends)");
    const auto t0 = std::chrono::steady_clock::now();
    ref = run_reference(python, script, choice.torch_device, threads, repeats, &why_not);
    progress.line("PyTorch reference: " + (why_not.empty() ? "done in " + fmt_seconds(seconds_since(t0)) : why_not));
  }

  const char* keys[] = {"train_samples_per_s_b16", "train_samples_per_s_b256", "train_epoch_s_b16", "train_epoch_s_b256",
                        "sample_ddpm50_80_s", "sample_ddim10_80_s"};
  auto ratio = [&](const std::string& k) -> double {
    if (!ref.count(k) || !ours.count(k)) return NAN;
    // Ratios are "times faster than the reference": rates divide one way, times the other.
    return k.find("per_s") != std::string::npos ? ours.at(k) / ref.at(k) : ref.at(k) / ours.at(k);
  };
  if (json) {
    std::printf("{\"device\": \"%s\", \"threads\": %d, \"parameters\": %.0f", choice.torch_device.c_str(), threads,
                ours.at("parameters"));
    for (const char* k : keys) std::printf(", \"%s\": %.6g", k, ours.at(k));
    for (const char* k : keys)
      if (ref.count(k)) std::printf(", \"reference_%s\": %.6g, \"speedup_%s\": %.4g", k, ref.at(k), k, ratio(k));
    std::printf("}\n");
    return 0;
  }
  std::printf("%s; %d threads; reference model: %.0f parameters, 3,840 samples per epoch\n\n", choice.log_line().c_str(),
              threads, ours.at("parameters"));
  std::printf("%-28s %14s %14s %10s\n", "measure", "finecast", "pytorch-py", "speed-up");
  for (const char* k : keys) {
    if (ref.count(k)) std::printf("%-28s %14.5g %14.5g %9.2fx\n", k, ours.at(k), ref.at(k), ratio(k));
    else std::printf("%-28s %14.5g %14s %10s\n", k, ours.at(k), "-", "-");
  }
  if (!why_not.empty()) std::printf("\n%s\n", why_not.c_str());
  std::printf("\nspeed-up = how many times faster finecast is (targets: b16 >= 1.5x, b256 >= 1x, sampling >= 1x)\n");
  return 0;
}

const finecast::bench::Register reg("trainer", {"training and sampling speed of the downscaler vs PyTorch from Python", run});

}  // namespace
