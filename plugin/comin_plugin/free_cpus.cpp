// SPDX-License-Identifier: BSD-3-Clause
#include "plugin/comin_plugin/free_cpus.hpp"

#include <algorithm>
#include <cstring>
#include <thread>

namespace finecast::plugin {

std::vector<int> free_cpu_share(const std::vector<NodeRank>& ranks, const std::vector<int>& usable, int me) {
  if (me < 0 || me >= static_cast<int>(ranks.size()) || !ranks[static_cast<size_t>(me)].async_trainer) return {};
  std::vector<int> free;
  for (const int c : usable) {
    bool taken = false;
    for (const NodeRank& r : ranks) taken = taken || std::find(r.cpus.begin(), r.cpus.end(), c) != r.cpus.end();
    if (!taken) free.push_back(c);
  }
  int trainers = 0, mine = 0;
  for (int i = 0; i < static_cast<int>(ranks.size()); ++i) {
    if (!ranks[static_cast<size_t>(i)].async_trainer) continue;
    if (i == me) mine = trainers;
    ++trainers;
  }
  const auto n = static_cast<int64_t>(free.size());
  if (n < trainers) return free;
  const auto begin = n * mine / trainers, end = n * (mine + 1) / trainers;
  return {free.begin() + begin, free.begin() + end};
}

std::vector<int> cpus_a_thread_may_use() {
  std::vector<int> cpus;
  std::thread probe([&cpus] {
    cpu_set_t set;
    std::memset(&set, 0xff, sizeof set);  // every CPU: the kernel keeps those of the cpuset
    if (sched_setaffinity(0, sizeof set, &set) == 0 && sched_getaffinity(0, sizeof set, &set) == 0) cpus = cpus_in(set);
  });
  probe.join();
  return cpus;
}

std::vector<int> cpus_in(const cpu_set_t& set) {
  std::vector<int> cpus;
  for (int c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &set)) cpus.push_back(c);
  return cpus;
}

cpu_set_t cpu_set_of(const std::vector<int>& cpus) {
  cpu_set_t set;
  CPU_ZERO(&set);
  for (const int c : cpus)
    if (c >= 0 && c < CPU_SETSIZE) CPU_SET(c, &set);
  return set;
}

std::string cpu_list_text(const std::vector<int>& cpus) {
  std::string text;
  for (size_t i = 0; i < cpus.size();) {
    size_t j = i;
    while (j + 1 < cpus.size() && cpus[j + 1] == cpus[j] + 1) ++j;
    if (!text.empty()) text += ",";
    text += std::to_string(cpus[i]);
    if (j > i) text += "-" + std::to_string(cpus[j]);
    i = j + 1;
  }
  return text;
}

}  // namespace finecast::plugin
