// SPDX-License-Identifier: BSD-3-Clause
// finecast-bench scale: what the trainer group costs (issue 16). Measured on this machine: the
// patch redistribution per step, a gradient-sized MPI_Allreduce and the data-parallel training
// throughput with 1, 2 and 4 trainer ranks; fitted from the redistribution: per-message and
// per-byte cost (alpha-beta); modelled from the fit: the communication of a step at ICON R2B9
// and R2B10 on 64-4096 host ranks with 4-256 trainer ranks.
#include <mpi.h>
#include <sched.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <numeric>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "bench/machine.hpp"
#include "bench/registry.hpp"
#include "common/cli.hpp"
#include "common/leak_check.hpp"
#include "coupling/mpi/redistribution.hpp"
#include "plugin/comin_plugin/mpi_reducer.hpp"
#include "trainer/downscaler.hpp"

namespace finecast::bench {
namespace {

using Clock = std::chrono::steady_clock;
using nlohmann::json;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n == 0 ? 0.0 : n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

std::vector<int64_t> parse_list(const std::string& text) {
  std::vector<int64_t> out;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) out.push_back(std::stoll(item));
  return out;
}

/// Cores this process may run on (what `nproc` prints).
int usable_cores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0) return CPU_COUNT(&set);
  return static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN));
}

std::string load_average() {
  std::ifstream f("/proc/loadavg");
  double a = 0, b = 0, c = 0;
  f >> a >> b >> c;
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.2f %.2f %.2f", a, b, c);
  return buf;
}

double wall_now() { return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count(); }

struct Options {
  bool json = false, worker = false, no_train = false;
  std::string ranks = "1,2,4";
  std::string cells = "2048,20480,327680,1310720,5242880";
  std::string trainers = "1,2,4";
  int steps = 40;
  int patch = 256;
  int fields = 1;
  int64_t batch = 256;
  int train_steps = 48, train_patches = 160, epochs = 2, repeats = 3;
  double since = 0;  // the driver's start (wall clock), for the progress lines of the workers
  // Modelled at scale: assumptions (not measured here).
  int model_fields = 1, model_patch = 256, capacity = 48;
  double net_alpha_us = 2.0, net_gbps = 12.5, nccl_gbps = 20.0, nccl_latency_us = 20.0;
};

/// Progress lines on stderr; stdout holds the table, the JSON or the workers' RESULT lines.
class Progress {
 public:
  explicit Progress(double since) : since_(since > 0 ? since : wall_now()) {}
  void line(const std::string& what) const {
    const long long s = std::llround(wall_now() - since_);
    std::fprintf(stderr, "[bench scale %lld:%02lld] %s\n", s / 60, s % 60, what.c_str());
    std::fflush(stderr);
  }

 private:
  double since_;
};

// ---------------------------------------------------------------------------------------------
// Worker: inside mpiexec -n K.

/// The trainer ranks spread over the communicator as the plugin's train.placement: spread does.
int trainer_rank(int k, int size, int trainers) { return static_cast<int>(int64_t{k} * size / trainers); }

/// Synthetic ICON-like layout of `cells` fine cells in patches of P: host rank r owns the
/// contiguous range [N r/K, N (r+1)/K) (compact regions of the global numbering); patch
/// p is the P consecutive ids from p*P, in a canonical order that is a fixed permutation of them
/// (as icon_patch_map's order differs from the ids); trainer t holds patches
/// [n_coarse t/T, n_coarse (t+1)/T), as the plugin splits them.
void redistribution(const Options& o, int64_t cells, int trainers, const Progress& progress) {
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const int64_t P = o.patch, n_coarse = cells / P;
  const int steps = std::max(5, static_cast<int>(std::min<int64_t>(o.steps, o.steps * int64_t{1000000} / cells)));
  if (rank == 0)
    progress.line("redistribution: " + std::to_string(cells) + " cells, " + std::to_string(size) + " host rank(s), " +
                  std::to_string(trainers) + " trainer(s), " + std::to_string(steps) + " steps");
  const auto t_setup = Clock::now();
  const int64_t lo = cells * rank / size, hi = cells * (rank + 1) / size;
  std::vector<int64_t> owned(static_cast<size_t>(hi - lo));
  std::iota(owned.begin(), owned.end(), lo);
  int64_t stride = 37;
  while (std::gcd(stride, P) != 1) ++stride;
  std::vector<int64_t> slot_cells;
  for (int t = 0; t < trainers; ++t) {
    if (trainer_rank(t, size, trainers) != rank) continue;
    for (int64_t p = n_coarse * t / trainers; p < n_coarse * (t + 1) / trainers; ++p)
      for (int64_t j = 0; j < P; ++j) slot_cells.push_back(p * P + (j * stride) % P);
  }
  coupling::Redistribution redist(MPI_COMM_WORLD, owned, slot_cells, cells);
  const double setup_s = seconds_since(t_setup);

  const int F = o.fields;
  std::vector<float> local(static_cast<size_t>(F) * owned.size()), back(owned.size());
  for (int f = 0; f < F; ++f)
    for (size_t i = 0; i < owned.size(); ++i)
      local[f * owned.size() + i] = static_cast<float>(std::sin(1e-3 * static_cast<double>(owned[i]) + f));
  std::vector<float> slots(static_cast<size_t>(F * redist.n_slots()));
  const int warmup = 3;
  std::vector<double> fwd, rev;
  for (int s = 0; s < warmup + steps; ++s) {
    MPI_Barrier(MPI_COMM_WORLD);
    auto t0 = Clock::now();
    redist.forward(F, local.data(), slots.empty() ? nullptr : slots.data());
    double mine[2] = {seconds_since(t0), 0}, all[2] = {0, 0};
    MPI_Barrier(MPI_COMM_WORLD);
    t0 = Clock::now();
    redist.reverse(slots.empty() ? nullptr : slots.data(), back.data());
    mine[1] = seconds_since(t0);
    // A step's exchange ends when the slowest rank is done.
    MPI_Allreduce(mine, all, 2, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    if (s >= warmup) fwd.push_back(all[0] * 1e3), rev.push_back(all[1] * 1e3);
  }
  // Every value came back to its owner.
  int64_t wrong = 0;
  for (size_t i = 0; i < owned.size(); ++i)
    if (owned[i] < n_coarse * P && back[i] != local[i]) ++wrong;
  MPI_Allreduce(MPI_IN_PLACE, &wrong, 1, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
  if (wrong != 0) throw std::runtime_error("redistribution round trip changed " + std::to_string(wrong) + " values");

  // The busiest rank's messages (to and from other ranks) and bytes per exchange: all it packs
  // and unpacks (its own share included) and those that cross to or from other ranks.
  const int64_t values = redist.values_sent() + redist.values_received();
  int64_t own = 0;  // values this rank sends to itself (its cells in its own slots)
  for (int64_t g : slot_cells) own += g >= lo && g < hi;
  const int64_t remote = values - 2 * own;
  int64_t mine[5] = {redist.messages_sent() + redist.messages_received(), values * 4 * F, values * 4, remote * 4 * F,
                     remote * 4},
          most[5];
  MPI_Allreduce(mine, most, 5, MPI_INT64_T, MPI_MAX, MPI_COMM_WORLD);
  if (rank == 0) {
    std::printf("RESULT redist %lld %d %d %d %.6f %.6f %lld %lld %lld %lld %lld %.4f %d\n",
                static_cast<long long>(cells), size, trainers, F, median(fwd), median(rev),
                static_cast<long long>(most[0]), static_cast<long long>(most[1]), static_cast<long long>(most[2]),
                static_cast<long long>(most[3]), static_cast<long long>(most[4]), setup_s, steps);
    std::fflush(stdout);
  }
}

/// MPI_Allreduce (sum, in place) of `n` floats: median over the steps, slowest rank.
double allreduce_ms(int64_t n, int steps) {
  std::vector<float> v(static_cast<size_t>(std::max<int64_t>(n, 1)), 1.0f);
  std::vector<double> t;
  for (int s = 0; s < 3 + steps; ++s) {
    MPI_Barrier(MPI_COMM_WORLD);
    const auto t0 = Clock::now();
    MPI_Allreduce(MPI_IN_PLACE, v.data(), static_cast<int>(n), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    double mine = seconds_since(t0) * 1e3, most = 0;
    MPI_Allreduce(&mine, &most, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    if (s >= 3) t.push_back(most);
  }
  return median(t);
}

/// The trainer's Reducer (the plugin's MpiReducer) with the time spent in its sums.
class TimedReducer : public trainer::Reducer {
 public:
  explicit TimedReducer(MPI_Comm comm) : inner_(comm) {}
  int rank() const override { return inner_.rank(); }
  int size() const override { return inner_.size(); }
  void sum(double* v, int64_t n) override {
    timed([&] { inner_.sum(v, n); }, n * 8);
  }
  void sum(float* v, int64_t n) override {
    timed([&] { inner_.sum(v, n); }, n * 4);
  }
  void max(double* v, int64_t n) override {
    timed([&] { inner_.max(v, n); }, n * 8);
  }
  double seconds = 0;
  int64_t calls = 0, bytes = 0;

 private:
  template <class F>
  void timed(F&& f, int64_t b) {
    const auto t0 = Clock::now();
    f();
    seconds += seconds_since(t0);
    ++calls;
    bytes += b;
  }
  plugin::MpiReducer inner_;
};

/// Data-parallel training: every rank of the world is a trainer (a Downscaler on the CPU, one
/// LibTorch thread) holding its share of each step's patches; the same global batch whatever
/// the rank count. Samples/s of the group = global rows x epochs / the slowest rank's epochs.
void training(const Options& o, const Progress& progress) {
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  trainer::set_torch_threads(1);
  constexpr int64_t C = 7, P = 256;
  const int64_t per_step = o.train_patches, n = int64_t{o.train_steps} * per_step;
  // The group's data, the same on every rank (fixed seed); each keeps its patches of each step.
  std::mt19937 rng(1);
  std::normal_distribution<float> normal;
  std::vector<float> context, fine;
  std::vector<int64_t> time, global;
  for (int64_t row = 0; row < n; ++row) {
    float c[C];
    for (auto& v : c) v = normal(rng);
    float f[P];
    for (int64_t j = 0; j < P; ++j)
      f[j] = c[0] + c[1] * std::sin(6.28f * static_cast<float>(j) / (P - 1)) + 0.3f * normal(rng);
    const int64_t patch = row % per_step;
    if (patch * size / per_step != rank) continue;
    context.insert(context.end(), c, c + C);
    fine.insert(fine.end(), f, f + P);
    time.push_back(row / per_step);
    global.push_back(row);
  }
  trainer::DataView view{context.data(), fine.data(), nullptr, static_cast<int64_t>(time.size())};
  view.time = time.data();
  view.global_row = global.data();
  view.global_rows = n;

  trainer::ModelOptions mo;  // the reference model: C=7, P=256, MLP 3x256
  mo.context_size = C;
  mo.patch_size = P;
  trainer::TrainOptions to;
  to.batch_size = o.batch;
  to.threads = 1;
  to.validation = 0;
  trainer::Downscaler ds(mo, to, "cpu");
  MPI_Comm comm = MPI_COMM_NULL;
  std::shared_ptr<TimedReducer> reducer;
  if (size > 1) {
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    reducer = std::make_shared<TimedReducer>(comm);
    ds.set_reducer(reducer);
  }
  const int64_t params = ds.parameter_count();
  if (size > 1) {
    if (rank == 0)
      progress.line("MPI_Allreduce of the gradient (" + std::to_string(params) + " floats) and of 1 float");
    const double grad_ms = allreduce_ms(params, 20), small_ms = allreduce_ms(1, 50);
    if (rank == 0)
      std::printf("RESULT allreduce %d %lld %.6f %.6f\n", size, static_cast<long long>(params * 4), grad_ms, small_ms);
  }
  if (rank == 0)
    progress.line("training: " + std::to_string(size) + " trainer rank(s), " + std::to_string(n) +
                  " rows, global batch " + std::to_string(o.batch) + ": warm-up session");
  ds.train_session(view, 1);
  double best = 0, best_epoch_s = 0, best_reduce_s = 0, best_compute_s = 0;
  int64_t calls = 0;
  for (int r = 0; r < o.repeats; ++r) {
    if (reducer) reducer->seconds = 0, reducer->calls = 0;
    MPI_Barrier(MPI_COMM_WORLD);
    const auto st = ds.train_session(view, o.epochs);
    // Slowest rank: its epochs, its time in the sums, its epochs without the sums.
    double mine[3] = {0, reducer ? reducer->seconds : 0, 0}, most[3];
    for (const auto& e : st.epochs) mine[0] += e.seconds;
    mine[2] = mine[0] - mine[1];
    MPI_Allreduce(mine, most, 3, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    const double rate = static_cast<double>(n) * o.epochs / most[0];
    if (rank == 0)
      progress.line("training: " + std::to_string(size) + " rank(s): repeat " + std::to_string(r + 1) + "/" +
                    std::to_string(o.repeats) + ": " + std::to_string(static_cast<long long>(rate)) + " samples/s");
    if (rate > best) {
      best = rate, best_epoch_s = most[0] / o.epochs, best_reduce_s = most[1] / o.epochs;
      best_compute_s = most[2] / o.epochs;
      calls = reducer ? reducer->calls / o.epochs : 0;
    }
  }
  if (rank == 0) {
    std::printf("RESULT train %d %lld %lld %.3f %.6f %.6f %lld %lld %.6f\n", size, static_cast<long long>(o.batch),
                static_cast<long long>(n), best, best_epoch_s, best_reduce_s, static_cast<long long>(calls),
                static_cast<long long>(params), best_compute_s);
    std::fflush(stdout);
  }
  reducer.reset();
  if (comm != MPI_COMM_NULL) MPI_Comm_free(&comm);
}

int worker(const Options& o) {
  int provided = 0;
  {
    const IgnoreLeaksHere open_mpi_init;  // ASan builds: Open MPI's own leaks (leak_check.hpp)
    MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided);
  }
  int size = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const Progress progress(o.since);
  int rc = 0;
  try {
    for (int64_t cells : parse_list(o.cells))
      for (int64_t t : parse_list(o.trainers))
        if (t <= size) redistribution(o, cells, static_cast<int>(t), progress);
    if (!o.no_train) training(o, progress);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "finecast-bench scale (worker): %s\n", e.what());
    MPI_Abort(MPI_COMM_WORLD, 1);
    rc = 1;
  }
  leak_check_before_mpi_finalize();
  MPI_Finalize();
  return rc;
}

// ---------------------------------------------------------------------------------------------
// Driver: launches the workers, fits, models, reports.

struct RedistRow {
  int64_t cells = 0;
  int ranks = 0, trainers = 0, fields = 0, steps = 0;
  double forward_ms = 0, reverse_ms = 0, setup_s = 0;
  int64_t messages = 0, bytes_forward = 0, bytes_reverse = 0, remote_forward = 0, remote_reverse = 0;
};
struct AllreduceRow {
  int ranks = 0;
  int64_t bytes = 0;
  double ms = 0, small_ms = 0;
};
struct TrainRow {
  int ranks = 0;
  int64_t batch = 0, rows = 0, reduce_calls = 0, params = 0;
  double samples_per_s = 0, epoch_s = 0, reduce_s = 0, compute_s = 0;
};

/// t = alpha * m + beta * r + gamma * b: m messages to and from other ranks, r bytes that cross
/// to or from them, b bytes packed and unpacked (all of them, the own share included).
struct Fit {
  double alpha = 0, beta = 0, gamma = 0;  // s per message, s per remote byte, s per byte
  double max_rel_error = 0;
  int points = 0;
  bool used_oversubscribed = false;
  double time(double m, double r, double b) const { return alpha * m + beta * r + gamma * b; }
};

struct Point {
  double m, r, b, t;
};

/// The terms of `allowed` (bit 0 alpha, 1 beta, 2 gamma) fitted to what `base` leaves of each
/// time: least squares of the relative error (weights 1/t^2), no intercept, every coefficient
/// >= 0 (the best unconstrained fit over the subsets of the allowed terms whose coefficients are
/// all >= 0). Returns base with those terms set.
Fit fit_terms(const std::vector<Point>& pts, int allowed, const Fit& base) {
  Fit best = base;
  double best_err = 1e300;
  for (int mask = 1; mask < 8; ++mask) {
    if ((mask & allowed) != mask) continue;
    std::vector<int> terms;
    for (int k = 0; k < 3; ++k)
      if (mask & (1 << k)) terms.push_back(k);
    const size_t n = terms.size();
    auto x = [&](const Point& p, int k) { return k == 0 ? p.m : k == 1 ? p.r : p.b; };
    // Normal equations A c = y, solved by Gauss-Jordan elimination with partial pivoting.
    std::vector<std::vector<double>> a(n, std::vector<double>(n + 1, 0.0));
    for (const auto& p : pts) {
      const double w = 1.0 / (p.t * p.t), rest = p.t - base.time(p.m, p.r, p.b);
      for (size_t i = 0; i < n; ++i) {
        for (size_t j = 0; j < n; ++j) a[i][j] += w * x(p, terms[i]) * x(p, terms[j]);
        a[i][n] += w * x(p, terms[i]) * rest;
      }
    }
    bool singular = false;
    for (size_t c = 0; c < n && !singular; ++c) {
      size_t piv = c;
      for (size_t r = c + 1; r < n; ++r)
        if (std::abs(a[r][c]) > std::abs(a[piv][c])) piv = r;
      std::swap(a[c], a[piv]);
      if (std::abs(a[c][c]) < 1e-300) {
        singular = true;
        break;
      }
      for (size_t r = 0; r < n; ++r) {
        if (r == c) continue;
        const double f = a[r][c] / a[c][c];
        for (size_t k = c; k <= n; ++k) a[r][k] -= f * a[c][k];
      }
    }
    if (singular) continue;
    Fit f = base;
    bool negative = false;
    for (size_t i = 0; i < n; ++i) {
      const double c = a[i][n] / a[i][i];
      negative |= c < 0;
      (terms[i] == 0 ? f.alpha : terms[i] == 1 ? f.beta : f.gamma) = c;
    }
    if (negative) continue;
    double err = 0;
    for (const auto& p : pts) err += std::pow((f.time(p.m, p.r, p.b) - p.t) / p.t, 2);
    if (err < best_err) best_err = err, best = f;
  }
  return best;
}

double max_relative_error(const Fit& f, const std::vector<Point>& pts) {
  double e = 0;
  for (const auto& p : pts) e = std::max(e, std::abs(f.time(p.m, p.r, p.b) - p.t) / p.t);
  return e;
}

/// A ring all-reduce of `bytes` over `ranks`: 2 (k-1) messages, 2 (k-1)/k of the data sent and
/// as much received, each byte also reduced or copied locally.
double ring_allreduce(const Fit& f, double ranks, double bytes) {
  return 2.0 * (ranks - 1) * f.alpha + 2.0 * (ranks - 1) / ranks * bytes * (f.beta + f.gamma);
}

json model(const Options& o, const Fit& fit, int64_t params) {
  const double alpha = fit.alpha, beta = fit.beta, gamma = fit.gamma;
  const double net_alpha = o.net_alpha_us * 1e-6, net_beta = 1.0 / (o.net_gbps * 1e9);
  const double F = o.model_fields, P = o.model_patch;
  const double C = F * 4 + 3;  // per field the patch mean and 3 neighbours; 3 static features
  const double G = 4.0 * static_cast<double>(params);
  json rows = json::array();
  const std::vector<std::pair<std::string, int64_t>> grids = {{"R2B9", 20971520}, {"R2B10", 83886080}};
  for (const auto& [grid, N] : grids)
    for (int H : {64, 512, 4096})
      for (int T : {4, 16, 64, 256}) {
        if (T > H) continue;
        const double n = static_cast<double>(N), n_coarse = std::floor(n / P);
        // The busiest rank is a trainer, which is also a host rank (train.placement: spread puts
        // trainer t on host rank t H/T, whose cells lie in its own patches): it receives the cells
        // of its patches from the ceil(H/T) - 1 other host ranks of its range (one more where the
        // ranges do not align) and sends across one boundary at most.
        const double m = std::ceil(static_cast<double>(H) / T) + 1;
        const double own = n / H, values = n / H + n / T, remote = values - 2 * own;
        const double fwd = alpha * m + beta * 4 * F * remote + gamma * 4 * F * values;
        const double rev = alpha * m + beta * 4 * remote + gamma * 4 * values;
        // The coarse means of every patch to every trainer (MPI_Allgatherv, as a ring), and the
        // step's agreement (MPI_Allreduce of 4 ints over the host ranks, recursive doubling).
        const double gather = (T - 1) * alpha + (T - 1.0) / T * 4.0 * F * n_coarse * (beta + gamma);
        const double agree = 2.0 * std::ceil(std::log2(H)) * alpha;
        const double ring = ring_allreduce(fit, T, G);
        const double net_fwd = net_alpha * m + net_beta * 4 * F * remote + gamma * 4 * F * values;
        const double net_rev = net_alpha * m + net_beta * 4 * remote + gamma * 4 * values;
        const double net_ring = 2.0 * (T - 1) * net_alpha + 2.0 * (T - 1.0) / T * G * (net_beta + gamma);
        const double nccl =
            2.0 * (T - 1.0) / T * G / (o.nccl_gbps * 1e9) + 2.0 * std::log2(T) * o.nccl_latency_us * 1e-6;
        const double patches_per_trainer = std::ceil(n_coarse / T);
        json r;
        r["grid"] = grid;
        r["cells"] = N;
        r["host_ranks"] = H;
        r["trainers"] = T;
        r["fields"] = o.model_fields;
        r["forward_bytes_per_step"] = static_cast<int64_t>(4 * o.model_fields) * N;
        r["reverse_bytes_per_step"] = int64_t{4} * N;
        r["host_rank_sends_bytes"] = 4.0 * F * n / H;
        r["trainer_receives_bytes"] = 4.0 * F * n / T;
        r["trainer_remote_bytes"] = 4.0 * F * remote;
        r["busiest_rank_messages"] = m;
        r["forward_ms"] = fwd * 1e3;
        r["reverse_ms"] = rev * 1e3;
        r["coarse_allgather_ms"] = gather * 1e3;
        r["agreement_ms"] = agree * 1e3;
        r["step_comm_ms"] = (fwd + rev + gather + agree) * 1e3;
        r["gradient_bytes"] = G;
        r["allreduce_mpi_ms"] = ring * 1e3;
        r["net_forward_ms"] = net_fwd * 1e3;
        r["net_reverse_ms"] = net_rev * 1e3;
        r["net_allreduce_ms"] = net_ring * 1e3;
        r["nccl_allreduce_ms"] = nccl * 1e3;
        // Memory of a trainer rank: the whole grid's patch map (fine_of_patch int64 and
        // fine_weight double per fine cell; neighbours and centres per patch), the grid file's
        // arrays while the map is built (about 60 bytes per cell), its buffer shard, its slots.
        r["patch_map_mb"] = (16.0 * n + 40.0 * n_coarse) / 1e6;
        r["grid_read_mb"] = 60.0 * n / 1e6;
        r["buffer_mb"] = (o.capacity * patches_per_trainer * (C + P) * 4.0 + patches_per_trainer * P * 4.0) / 1e6;
        r["slot_values_mb"] = 4.0 * F * patches_per_trainer * P / 1e6;
        rows.push_back(r);
      }
  return rows;
}

int driver(const Options& o) {
  const Progress progress(0);
  const double since = wall_now();
  const int cores = usable_cores();
  const std::string load_before = load_average();
  if (geteuid() == 0) {
    // Open MPI refuses to start as root unless told; a benchmark in a container is often root.
    setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 0);
    setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 0);
  }
  setenv("OMP_NUM_THREADS", "1", 0);  // one thread per rank, BLAS included
  const char* mpiexec = std::getenv("MPIEXEC") ? std::getenv("MPIEXEC") : "mpiexec";
  const std::string self = finecast::cli::executable_path();
  std::vector<RedistRow> redist;
  std::vector<AllreduceRow> reduce;
  std::vector<TrainRow> train;
  for (int64_t k : parse_list(o.ranks)) {
    char since_text[64];
    std::snprintf(since_text, sizeof since_text, "%.3f", since);
    const std::string cmd = std::string(mpiexec) + " -n " + std::to_string(k) + " --oversubscribe '" + self +
                            "' scale --worker --since " + since_text + " --cells " + o.cells + " --trainers " +
                            o.trainers + " --steps " + std::to_string(o.steps) + " --patch " + std::to_string(o.patch) +
                            " --fields " + std::to_string(o.fields) + " --batch " + std::to_string(o.batch) +
                            " --train-steps " + std::to_string(o.train_steps) + " --train-patches " +
                            std::to_string(o.train_patches) + " --epochs " + std::to_string(o.epochs) + " --repeats " +
                            std::to_string(o.repeats) + (o.no_train ? " --no-train" : "");
    progress.line("launching " + std::to_string(k) + " rank(s)" +
                  (k > cores ? " (oversubscribed: " + std::to_string(cores) + " cores)" : ""));
    FILE* p = popen(cmd.c_str(), "r");
    if (!p) throw std::runtime_error("cannot run " + cmd);
    char line[1024];
    while (std::fgets(line, sizeof line, p)) {
      long long a = 0, b = 0, c = 0, d = 0, e = 0;
      RedistRow r;
      AllreduceRow ar;
      TrainRow tr;
      long long f = 0, g = 0;
      if (std::sscanf(line, "RESULT redist %lld %d %d %d %lf %lf %lld %lld %lld %lld %lld %lf %d", &a, &r.ranks,
                      &r.trainers, &r.fields, &r.forward_ms, &r.reverse_ms, &b, &c, &d, &f, &g, &r.setup_s,
                      &r.steps) == 13) {
        r.cells = a, r.messages = b, r.bytes_forward = c, r.bytes_reverse = d, r.remote_forward = f,
        r.remote_reverse = g;
        redist.push_back(r);
      } else if (std::sscanf(line, "RESULT allreduce %d %lld %lf %lf", &ar.ranks, &a, &ar.ms, &ar.small_ms) == 4) {
        ar.bytes = a;
        reduce.push_back(ar);
      } else if (std::sscanf(line, "RESULT train %d %lld %lld %lf %lf %lf %lld %lld %lf", &tr.ranks, &a, &b,
                             &tr.samples_per_s, &tr.epoch_s, &tr.reduce_s, &c, &e, &tr.compute_s) == 9) {
        tr.batch = a, tr.rows = b, tr.reduce_calls = c, tr.params = e;
        train.push_back(tr);
      } else {
        std::fputs(line, stderr);  // anything else a rank printed
      }
    }
    const int rc = pclose(p);
    if (rc != 0) throw std::runtime_error("`" + cmd + "` failed (status " + std::to_string(rc) + ")");
  }
  if (redist.empty()) throw std::runtime_error("no redistribution was measured");

  // The fit, in two regimes, over the forward and reverse exchanges of the runs that had a core
  // per rank (an oversubscribed run measures the scheduler; all runs where no other had a
  // message): the per-message cost alpha from the smallest grid, where a message carries a few
  // kilobytes (all three terms fitted there, its per-byte costs are those of data in cache);
  // then, alpha kept, the per-byte costs beta and gamma from the largest grid, where a rank moves
  // megabytes out of cache as at R2B9.
  const int64_t largest = std::max_element(redist.begin(), redist.end(), [](const auto& a, const auto& b) {
                            return a.cells < b.cells;
                          })->cells;
  const int64_t smallest = std::min_element(redist.begin(), redist.end(), [](const auto& a, const auto& b) {
                             return a.cells < b.cells;
                           })->cells;
  auto points = [&](int64_t cells, bool all) {
    std::vector<Point> pts;
    for (const auto& r : redist)
      if ((cells < 0 || r.cells == cells) && (all || r.ranks <= cores)) {
        const double m = static_cast<double>(r.messages);
        pts.push_back(
            {m, static_cast<double>(r.remote_forward), static_cast<double>(r.bytes_forward), r.forward_ms * 1e-3});
        pts.push_back(
            {m, static_cast<double>(r.remote_reverse), static_cast<double>(r.bytes_reverse), r.reverse_ms * 1e-3});
      }
    return pts;
  };
  auto has = [](const std::vector<Point>& pts, bool messages) {
    return std::any_of(pts.begin(), pts.end(), [&](const Point& p) { return messages ? p.m > 0 : p.r > 0; });
  };
  std::vector<Point> big = points(largest, false), small = points(smallest, false);
  const bool used_all = !has(big, false) || !has(small, true);
  if (used_all) big = points(largest, true), small = points(smallest, true);
  const Fit in_cache = fit_terms(small, 7, Fit{});
  Fit start;
  start.alpha = in_cache.alpha;
  Fit fit = fit_terms(big, 6, start);
  fit.used_oversubscribed = used_all;
  fit.points = static_cast<int>(big.size() + small.size());
  fit.max_rel_error = max_relative_error(fit, big);
  const double all_runs_error = max_relative_error(fit, points(-1, false));
  const int64_t params = train.empty() ? 281344 : train.front().params;

  json out;
  out["machine"] = {{"cpu", cpu_model()},
                    {"cores", cores},
                    {"load_average_before", load_before},
                    {"load_average_after", load_average()}};
  out["measured"] =
      "redistribution, allreduce and training on this machine (MPI ranks on its cores, shared "
      "memory)";
  out["modelled"] =
      "model: the step cost at R2B9/R2B10 from the fitted alpha/beta/gamma of this machine "
      "(intra-node shared memory), and from assumed network and NCCL parameters (assumptions); "
      "none of the model was measured";
  json jr = json::array();
  for (const auto& r : redist) {
    const double m = static_cast<double>(r.messages);
    jr.push_back({{"cells", r.cells},
                  {"host_ranks", r.ranks},
                  {"trainers", r.trainers},
                  {"fields", r.fields},
                  {"steps", r.steps},
                  {"oversubscribed", r.ranks > cores},
                  {"forward_ms", r.forward_ms},
                  {"reverse_ms", r.reverse_ms},
                  {"busiest_rank_messages", r.messages},
                  {"busiest_rank_bytes_forward", r.bytes_forward},
                  {"busiest_rank_bytes_reverse", r.bytes_reverse},
                  {"busiest_rank_remote_bytes_forward", r.remote_forward},
                  {"busiest_rank_remote_bytes_reverse", r.remote_reverse},
                  {"fit_forward_ms",
                   fit.time(m, static_cast<double>(r.remote_forward), static_cast<double>(r.bytes_forward)) * 1e3},
                  {"fit_reverse_ms",
                   fit.time(m, static_cast<double>(r.remote_reverse), static_cast<double>(r.bytes_reverse)) * 1e3},
                  {"setup_s", r.setup_s}});
  }
  out["redistribution"] = jr;
  out["fit"] = {{"alpha_us", fit.alpha * 1e6},
                {"beta_ns_per_byte", fit.beta * 1e9},
                {"gamma_ns_per_byte", fit.gamma * 1e9},
                // null where timing noise left no per-byte cost to fit (both clamped at 0, as under
                // heavy load): a bandwidth the run did not measure is not reported as a number.
                {"remote_gbytes_per_s",
                 fit.beta + fit.gamma > 0 ? nlohmann::json(1e-9 / (fit.beta + fit.gamma)) : nlohmann::json(nullptr)},
                {"points", fit.points},
                {"max_relative_error_largest_grid", fit.max_rel_error},
                {"max_relative_error_all_runs", all_runs_error},
                {"per_byte_from_cells", largest},
                {"per_message_from_cells", smallest},
                {"smallest_grid_beta_ns_per_byte", in_cache.beta * 1e9},
                {"smallest_grid_gamma_ns_per_byte", in_cache.gamma * 1e9},
                {"oversubscribed_runs_included", fit.used_oversubscribed},
                {"method",
                 "t = alpha*m + beta*r + gamma*b per exchange (median step, slowest rank): m = the busiest "
                 "rank's messages to and from other ranks, r = its bytes to and from other ranks, b = all "
                 "bytes it packs and unpacks (own share included). alpha: least squares of the relative "
                 "error (alpha, beta, gamma) over the forward and reverse exchanges of the smallest grid "
                 "(kilobytes per message); beta and gamma: the same over the largest grid with that alpha "
                 "(at the default sizes 5,242,880 cells: megabytes per rank, out of cache, the regime of "
                 "R2B9); no intercept, coefficients >= 0; runs with more ranks than cores left out"}};
  json ja = json::array();
  for (const auto& a : reduce)
    ja.push_back({{"ranks", a.ranks},
                  {"bytes", a.bytes},
                  {"measured_ms", a.ms},
                  {"measured_1float_ms", a.small_ms},
                  {"fit_ring_ms", ring_allreduce(fit, a.ranks, static_cast<double>(a.bytes)) * 1e3},
                  {"oversubscribed", a.ranks > cores}});
  out["allreduce"] = ja;
  json jt = json::array();
  const double base = train.empty() ? 0 : train.front().samples_per_s;
  for (const auto& t : train)
    jt.push_back({{"ranks", t.ranks},
                  {"global_batch", t.batch},
                  {"rows", t.rows},
                  {"samples_per_s", t.samples_per_s},
                  {"speedup", base > 0 ? t.samples_per_s / base : 0.0},
                  {"epoch_s", t.epoch_s},
                  {"allreduce_s_per_epoch", t.reduce_s},
                  {"compute_s_per_epoch", t.compute_s},
                  {"reducer_calls_per_epoch", t.reduce_calls},
                  {"parameters", t.params},
                  {"torch_threads_per_rank", 1},
                  {"oversubscribed", t.ranks > cores}});
  out["training"] = jt;
  out["model"] = {{"assumptions",
                   {{"fields", o.model_fields},
                    {"patch_size", o.model_patch},
                    {"buffer_capacity_steps", o.capacity},
                    {"gradient_parameters", params},
                    {"layout",
                     "host ranks own compact contiguous ranges of the hierarchically numbered cells, trainers "
                     "hold contiguous patch ranges and are host ranks too (train.placement: spread)"},
                    {"net_alpha_us", o.net_alpha_us},
                    {"net_gbytes_per_s_per_rank", o.net_gbps},
                    {"nccl_bus_gbytes_per_s", o.nccl_gbps},
                    {"nccl_latency_us_per_hop", o.nccl_latency_us},
                    {"not_measured",
                     "the net_* columns use the assumed network alpha/bandwidth and nccl_allreduce_ms the "
                     "assumed NCCL bus bandwidth: no network and no GPU were measured"}}},
                  {"rows", model(o, fit, params)}};
  out["elapsed_s"] = wall_now() - since;

  if (o.json) {
    std::printf("%s\n", out.dump().c_str());
    return 0;
  }
  std::printf("finecast scale-out (issue 16) on %s, %d cores (load %s -> %s)\n\n", cpu_model().c_str(), cores,
              load_before.c_str(), load_average().c_str());
  std::printf(
      "MEASURED: redistribution per step (forward %d field(s), reverse 1 field; median, slowest "
      "rank)\n",
      o.fields);
  std::printf("%9s %6s %8s %11s %11s %5s %12s %12s %11s %11s\n", "cells", "ranks", "trainers", "forward ms",
              "reverse ms", "msgs", "bytes fwd", "remote fwd", "fit fwd ms", "fit rev ms");
  for (const auto& r : jr)
    std::printf("%9lld %6d %8d %11.3f %11.3f %5lld %12lld %12lld %11.3f %11.3f%s\n", r["cells"].get<long long>(),
                r["host_ranks"].get<int>(), r["trainers"].get<int>(), r["forward_ms"].get<double>(),
                r["reverse_ms"].get<double>(), r["busiest_rank_messages"].get<long long>(),
                r["busiest_rank_bytes_forward"].get<long long>(),
                r["busiest_rank_remote_bytes_forward"].get<long long>(), r["fit_forward_ms"].get<double>(),
                r["fit_reverse_ms"].get<double>(), r["oversubscribed"].get<bool>() ? "  (oversubscribed)" : "");
  std::printf(
      "  msgs, bytes: the busiest rank's messages to/from other ranks and bytes it packs and "
      "unpacks (remote: those to/from other ranks)\n");
  std::string remote_bandwidth = "not measured: the per-byte costs fitted to 0 under this load";
  if (fit.beta + fit.gamma > 0) {
    char text[32];
    std::snprintf(text, sizeof text, "%.2f GB/s", 1e-9 / (fit.beta + fit.gamma));
    remote_bandwidth = text;
  }
  std::printf(
      "\nFITTED: alpha %.2f us per message, beta %.3f ns per remote byte, gamma %.3f ns per byte "
      "packed (a remote byte: %s); %d points; max relative error %.0f%% on the largest "
      "grid, %.0f%% over all runs with a core per rank (smaller grids run in cache, faster per "
      "byte)%s\n",
      fit.alpha * 1e6, fit.beta * 1e9, fit.gamma * 1e9, remote_bandwidth.c_str(), fit.points, 100 * fit.max_rel_error,
      100 * all_runs_error,
      fit.used_oversubscribed ? " (oversubscribed runs included: no other run had a message)" : "");
  std::printf("  %s\n", out["fit"]["method"].get<std::string>().c_str());
  if (!ja.empty()) {
    std::printf(
        "\nMEASURED: MPI_Allreduce of the gradient (median, slowest rank) vs the ring model from "
        "the fit\n");
    std::printf("%6s %10s %12s %12s %14s\n", "ranks", "bytes", "measured ms", "ring fit ms", "1 float ms");
    for (const auto& a : ja)
      std::printf("%6d %10lld %12.3f %12.3f %14.4f%s\n", a["ranks"].get<int>(), a["bytes"].get<long long>(),
                  a["measured_ms"].get<double>(), a["fit_ring_ms"].get<double>(), a["measured_1float_ms"].get<double>(),
                  a["oversubscribed"].get<bool>() ? "  (oversubscribed)" : "");
  }
  if (!jt.empty()) {
    std::printf(
        "\nMEASURED: data-parallel training, global batch %lld, %lld rows, CPU, 1 LibTorch thread "
        "per rank\n",
        static_cast<long long>(o.batch), static_cast<long long>(train.front().rows));
    std::printf("%6s %12s %8s %10s %16s %14s\n", "ranks", "samples/s", "speedup", "epoch s", "in sums s/ep",
                "compute s/ep");
    for (const auto& t : jt)
      std::printf("%6d %12.0f %7.2fx %10.4f %16.4f %14.4f%s\n", t["ranks"].get<int>(), t["samples_per_s"].get<double>(),
                  t["speedup"].get<double>(), t["epoch_s"].get<double>(), t["allreduce_s_per_epoch"].get<double>(),
                  t["compute_s_per_epoch"].get<double>(),
                  t["oversubscribed"].get<bool>() ? "  (oversubscribed: more ranks than cores)" : "");
    std::printf(
        "  in sums: the slowest rank's time in the gradient/loss sums (waiting for the others "
        "included); compute: the slowest rank's epoch without them\n");
  }
  std::printf(
      "\nMODELLED (not measured): communication at scale, %d field(s), patches of %d, gradient "
      "%lld bytes\n",
      o.model_fields, o.model_patch, static_cast<long long>(4 * params));
  std::printf(
      "  fit = this machine's alpha/beta/gamma; net = assumed %.1f us, %.1f GB/s per rank; nccl = "
      "assumed %.0f GB/s bus, %.0f us per hop\n",
      o.net_alpha_us, o.net_gbps, o.nccl_gbps, o.nccl_latency_us);
  std::printf("%-6s %5s %4s %11s %9s %9s %9s %10s %9s %9s %9s %9s %9s\n", "grid", "hosts", "T", "fwd MB/step", "fwd ms",
              "rev ms", "step ms", "allred ms", "net fwd", "net ared", "nccl ms", "map MB", "buf MB");
  for (const auto& r : out["model"]["rows"])
    std::printf("%-6s %5d %4d %11.1f %9.3f %9.3f %9.3f %10.3f %9.3f %9.3f %9.3f %9.0f %9.0f\n",
                r["grid"].get<std::string>().c_str(), r["host_ranks"].get<int>(), r["trainers"].get<int>(),
                r["forward_bytes_per_step"].get<double>() / 1e6, r["forward_ms"].get<double>(),
                r["reverse_ms"].get<double>(), r["step_comm_ms"].get<double>(), r["allreduce_mpi_ms"].get<double>(),
                r["net_forward_ms"].get<double>(), r["net_allreduce_ms"].get<double>(),
                r["nccl_allreduce_ms"].get<double>(), r["patch_map_mb"].get<double>(), r["buffer_mb"].get<double>());
  std::printf(
      "  step ms = forward + reverse + coarse-mean allgather + agreement, per coupling step; "
      "allred ms = the gradient sum per optimizer step (ring); map MB = the whole grid's patch map "
      "on every trainer; buf MB = one trainer's buffer shard (%d steps)\n",
      o.capacity);
  return 0;
}

int run(int argc, char** argv) {
  Options o;
  CLI::App app{
      "What the trainer group of issue 16 costs, measured on this machine and modelled at "
      "scale.\n\nMEASURED (on this machine's cores, MPI over shared memory): (a) the patch "
      "redistribution (coupling::Redistribution forward of --fields fields and reverse of one, the "
      "plugin's per-step exchanges) for --cells grid sizes with --ranks host ranks and --trainers "
      "trainer ranks (synthetic ICON-like layout: contiguous host ranges, patches of --patch "
      "consecutive cells, trainers spread); median step, slowest rank; (b) the data-parallel "
      "training throughput (samples/s) of a group of 1, 2, 4 trainer ranks, each a Downscaler with "
      "the plugin's MpiReducer on the CPU with one LibTorch thread, on the same global batch, and "
      "an MPI_Allreduce of the gradient alone. Runs with more ranks than cores are marked "
      "oversubscribed.\n\nFITTED: per-message cost alpha, per-byte cost beta of the bytes that "
      "cross between ranks and gamma of every byte packed and unpacked, from the redistribution: "
      "alpha from the smallest grid, beta and gamma from the largest (least squares of the "
      "relative error over the runs with a core per rank).\n\n(c) MODELLED (nothing of it "
      "measured): the communication of a coupling step (redistribution, coarse-mean allgather, "
      "agreement) and of an optimizer step (gradient all-reduce) at ICON R2B9 (20,971,520 cells) "
      "and R2B10 (83,886,080) on 64, 512 and 4096 host ranks with 4-256 trainers, from the fitted "
      "alpha/beta/gamma and from assumed network and NCCL parameters; and a trainer's "
      "memory.\n\nIt re-launches itself as `mpiexec -n K --oversubscribe finecast-bench scale "
      "--worker` for each K in --ranks (MPIEXEC overrides the launcher; as root it sets "
      "OMPI_ALLOW_RUN_AS_ROOT). Progress on stderr; the table, or with --json one JSON object, on "
      "stdout.",
      "finecast-bench scale"};
  app.add_flag("--json", o.json, "print one JSON object (machine, redistribution, fit, allreduce, training, model)");
  app.add_option("--ranks", o.ranks, "host rank counts to launch, comma-separated")->default_str("1,2,4");
  app.add_option("--cells", o.cells, "grid sizes of the redistribution, comma-separated")
      ->default_str("2048,20480,327680,1310720,5242880");
  app.add_option("--trainers", o.trainers, "trainer counts of the redistribution (<= ranks)")->default_str("1,2,4");
  // A positive count with its default shown.
  auto count = [&](const char* name, auto& value, const char* help) {
    app.add_option(name, value, help)->check(finecast::cli::positive())->default_str(std::to_string(value));
  };
  count("--steps", o.steps, "measured steps per redistribution (fewer above 1M cells)");
  count("--patch", o.patch, "fine cells per patch in the measurement");
  count("--fields", o.fields, "fields per forward exchange");
  count("--batch", o.batch, "global batch of the training");
  count("--train-steps", o.train_steps, "time steps of the training data");
  count("--train-patches", o.train_patches, "patches per time step of the training data");
  count("--epochs", o.epochs, "epochs per timed training session");
  count("--repeats", o.repeats, "timed training sessions (best kept)");
  app.add_flag("--no-train", o.no_train, "skip the training and allreduce measurements");
  count("--model-fields", o.model_fields, "model: fields per step");
  count("--model-patch", o.model_patch, "model: fine cells per patch");
  count("--capacity", o.capacity, "model: buffer capacity in steps");
  app.add_option("--net-alpha-us", o.net_alpha_us, "model (assumed): network latency per message")->default_str("2");
  app.add_option("--net-gbps", o.net_gbps, "model (assumed): network GB/s per rank")->default_str("12.5");
  app.add_option("--nccl-gbps", o.nccl_gbps, "model (assumed): NCCL all-reduce bus GB/s")->default_str("20");
  app.add_option("--nccl-latency-us", o.nccl_latency_us, "model (assumed): NCCL latency per tree hop")
      ->default_str("20");
  app.add_flag("--worker", o.worker, "internal: measure inside mpiexec and print RESULT lines");
  app.add_option("--since", o.since, "internal: the driver's start time")->group("");
  finecast::cli::add_version(app, "finecast-bench scale");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  try {
    return o.worker ? worker(o) : driver(o);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "finecast-bench scale: %s\n", e.what());
    return 1;
  }
}

const Register reg("scale", {"trainer group: redistribution, all-reduce, data-parallel training "
                             "(1/2/4 ranks); model at R2B9/10",
                             run});

}  // namespace
}  // namespace finecast::bench
