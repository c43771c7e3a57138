// SPDX-License-Identifier: BSD-3-Clause
// The CPUs of a node that no rank of the host may run on, and each asynchronous trainer's share
// of them. An MPI launcher that binds every rank to its cores (Open MPI binds each rank to a core
// for up to 2 ranks, srun --cpu-bind likewise) confines a training thread started by a rank to that
// rank's cores: the trainer and the host's time steps then share one core while the node's other
// cores idle (docs/performance.md, "What a session and the training thread cost the host").
#pragma once

#include <sched.h>

#include <string>
#include <vector>

namespace finecast::plugin {

/// One rank of a node: the CPUs it may run on, and whether it trains asynchronously.
struct NodeRank {
  std::vector<int> cpus;
  bool async_trainer = false;
};

/// This rank's (`me`, an index into `ranks`) share of the CPUs in `usable` (ascending) that no
/// rank in `ranks` may run on: those free CPUs split into contiguous, near-equal parts among the
/// asynchronous trainers in their order, or all of them for each trainer when there are fewer
/// free CPUs than trainers. Empty when `me` trains no asynchronous session or no CPU is free
/// (ranks that are not bound may each run anywhere).
std::vector<int> free_cpu_share(const std::vector<NodeRank>& ranks, const std::vector<int>& usable, int me);

/// The CPUs a thread of this process may be moved to: those of its cpuset (a batch job's share
/// of the node), which a launcher's binding hides from sched_getaffinity. A short-lived thread
/// asks for every CPU and reads back what the kernel granted; the calling thread is not moved.
std::vector<int> cpus_a_thread_may_use();

/// The CPUs in `set`, ascending.
std::vector<int> cpus_in(const cpu_set_t& set);
/// The set of `cpus` (those below CPU_SETSIZE).
cpu_set_t cpu_set_of(const std::vector<int>& cpus);

/// The CPUs as Linux lists them ("0", "2-5", "0,2,4-7"); `cpus` ascending.
std::string cpu_list_text(const std::vector<int>& cpus);

}  // namespace finecast::plugin
