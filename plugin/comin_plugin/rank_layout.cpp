// SPDX-License-Identifier: BSD-3-Clause
#include "plugin/comin_plugin/rank_layout.hpp"

#include <sched.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "common/log.hpp"
#include "coupling/error.hpp"
#include "plugin/comin_plugin/free_cpus.hpp"
#include "plugin/comin_plugin/placement.hpp"

namespace finecast::plugin {
namespace {

/// A rank's placement as it travels (fixed size, plain bytes).
struct Record {
  char node[MPI_MAX_PROCESSOR_NAME + 1];
  char visible[256];
  char device[128];
  int trainer;
  int external;
};

void copy_text(char* out, size_t size, const std::string& text) {
  std::memset(out, 0, size);
  std::memcpy(out, text.data(), std::min(size - 1, text.size()));
}

/// The CPUs any thread of this process may run on: with OMP_PROC_BIND the host's OpenMP runtime
/// binds each of its threads, the calling one included, to one place of the rank's CPUs, so the
/// calling thread's own affinity may name one core of several.
cpu_set_t cpus_of_this_process() {
  cpu_set_t all;
  CPU_ZERO(&all);
  if (sched_getaffinity(0, sizeof all, &all) != 0) CPU_ZERO(&all);
  std::error_code ec;
  for (const auto& task : std::filesystem::directory_iterator("/proc/self/task", ec)) {
    cpu_set_t one;
    CPU_ZERO(&one);
    const pid_t tid = static_cast<pid_t>(std::strtol(task.path().filename().c_str(), nullptr, 10));
    if (tid > 0 && sched_getaffinity(tid, sizeof one, &one) == 0) CPU_OR(&all, &all, &one);
  }
  return all;
}

}  // namespace

NodeLayout node_layout(MPI_Comm comm, bool async_trainer) {
  MPI_Comm node;
  CHECK_MPI(MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node));
  int local = 1, me = 0;
  MPI_Comm_size(node, &local);
  MPI_Comm_rank(node, &me);
  // Each rank's CPUs and flag as plain bytes (the ranks of a node run the same C library).
  struct Entry {
    cpu_set_t cpus;
    int async_trainer;
  };
  const Entry mine{cpus_of_this_process(), async_trainer ? 1 : 0};
  std::vector<Entry> all(static_cast<size_t>(local));
  CHECK_MPI(MPI_Allgather(&mine, sizeof mine, MPI_BYTE, all.data(), sizeof mine, MPI_BYTE, node));
  MPI_Comm_free(&node);
  std::vector<NodeRank> ranks;
  for (const Entry& e : all) ranks.push_back({cpus_in(e.cpus), e.async_trainer != 0});
  return NodeLayout{local, async_trainer ? free_cpu_share(ranks, cpus_a_thread_may_use(), me) : std::vector<int>{}};
}

/// This node's cores (at least 1).
int node_cores() { return static_cast<int>(std::max(1u, std::thread::hardware_concurrency())); }

/// The trainer ranks: the first at coupling.trainer_rank, the others spread evenly over the
/// communicator (across nodes) or packed after it; with train.placement external the
/// finecast-trainer processes. The configuration errors of the layout name the keys.
void choose_trainers(const Config& cfg, const PluginComm& pc, CouplingState& c) {
  const int n_external = static_cast<int>(pc.external_ranks.size());
  const std::string comm = schema::name_of(cfg.coupling.communicator) + " communicator";
  if (cfg.train.placement == Placement::kExternal) {
    if (n_external == 0)
      throw ConfigError(cfg.source +
                        ": train.placement external, but no finecast-trainer process joined the plugin's "
                        "communicator; start them in the host's job with the comm name of the host's plugin list, "
                        "e.g. mpiexec -n 4 finecast-host run.yaml : -n " +
                        std::to_string(cfg.train.ranks) + " finecast-trainer --comm finecast");
    if (n_external != cfg.train.ranks)
      throw ConfigError(cfg.source + ": train.ranks is " + std::to_string(cfg.train.ranks) + " but " +
                        std::to_string(n_external) +
                        " finecast-trainer process(es) joined the plugin's communicator (train.placement external: "
                        "every finecast-trainer process is a trainer rank)");
    c.trainer_ranks = pc.external_ranks;
  } else {
    if (n_external > 0)
      throw ConfigError(cfg.source + ": " + std::to_string(n_external) +
                        " finecast-trainer process(es) joined the plugin's communicator, but train.placement is " +
                        schema::name_of(cfg.train.placement) + "; set train.placement: external");
    if (cfg.coupling.trainer_rank >= c.size)
      throw ConfigError(cfg.source + ": coupling.trainer_rank is " + std::to_string(cfg.coupling.trainer_rank) +
                        " but the " + comm + " has " + std::to_string(c.size) + " ranks");
    if (cfg.train.ranks > c.size)
      throw ConfigError(cfg.source + ": train.ranks is " + std::to_string(cfg.train.ranks) + " but the " + comm +
                        " has " + std::to_string(c.size) + " ranks");
    for (int k = 0; k < cfg.train.ranks; ++k) {
      const int offset =
          cfg.train.placement == Placement::kPacked ? k : static_cast<int>(int64_t{k} * c.size / cfg.train.ranks);
      c.trainer_ranks.push_back((cfg.coupling.trainer_rank + offset) % c.size);
    }
  }
  const auto me = std::find(c.trainer_ranks.begin(), c.trainer_ranks.end(), c.rank);
  c.trainer_index = me == c.trainer_ranks.end() ? -1 : static_cast<int>(me - c.trainer_ranks.begin());
  c.is_trainer = c.trainer_index >= 0;
  c.is_lead = c.trainer_index == 0;
}

/// Collective over the plugin's communicator, after the trainers built their models: every rank
/// sends its placement to the lead trainer, which logs placement_report.
void report_placement(const PluginState& s) {
  const CouplingState& c = *s.coupling;
  Record mine{};
  char node[MPI_MAX_PROCESSOR_NAME + 1] = {0};
  int length = 0;
  CHECK_MPI(MPI_Get_processor_name(node, &length));
  copy_text(mine.node, sizeof mine.node, std::string(node, static_cast<size_t>(length)));
  const char* visible = std::getenv("CUDA_VISIBLE_DEVICES");
  copy_text(mine.visible, sizeof mine.visible, visible != nullptr ? visible : "*");
  copy_text(mine.device, sizeof mine.device, s.trainer ? s.trainer->model->device_identity() : "");
  mine.trainer = c.trainer_index;
  mine.external = c.external ? 1 : 0;
  const int lead = c.trainer_ranks.front();
  std::vector<Record> all(static_cast<size_t>(c.rank == lead ? c.size : 0));
  const int bytes = static_cast<int>(sizeof mine);
  CHECK_MPI(MPI_Gather(&mine, bytes, MPI_BYTE, all.data(), bytes, MPI_BYTE, lead, c.comm));
  if (c.rank != lead) return;
  std::vector<RankPlacement> ranks;
  for (const Record& r : all) ranks.push_back({r.node, r.visible, r.device, r.trainer, r.external != 0});
  const PlacementReport report = placement_report(ranks, s.config.train.device_memory_fraction);
  for (const std::string& line : report.info) log::info(line);
  for (const std::string& line : report.warnings) log::warning(line);
}

}  // namespace finecast::plugin
