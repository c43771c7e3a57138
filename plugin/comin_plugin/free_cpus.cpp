// SPDX-License-Identifier: BSD-3-Clause
#include "plugin/comin_plugin/free_cpus.hpp"

#include <algorithm>

namespace finecast::plugin {

std::vector<int> free_cpu_share(const std::vector<NodeRank>& ranks, int node_cpus, int me) {
  if (me < 0 || me >= static_cast<int>(ranks.size()) || !ranks[static_cast<size_t>(me)].async_trainer) return {};
  std::vector<bool> taken(static_cast<size_t>(std::max(0, node_cpus)), false);
  for (const NodeRank& r : ranks)
    for (const int c : r.cpus)
      if (c >= 0 && c < node_cpus) taken[static_cast<size_t>(c)] = true;
  std::vector<int> free;
  for (int c = 0; c < node_cpus; ++c)
    if (!taken[static_cast<size_t>(c)]) free.push_back(c);
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
