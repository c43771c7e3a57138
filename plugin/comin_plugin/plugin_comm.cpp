// SPDX-License-Identifier: BSD-3-Clause
#include "plugin/comin_plugin/plugin_comm.hpp"

#include "coupling/error.hpp"
#include "coupling/mpi/broadcast.hpp"

namespace finecast::plugin {

PluginComm join_plugin_comm(MPI_Comm base, bool external) {
  PluginComm pc;
  CHECK_MPI(MPI_Comm_dup(base, &pc.comm));
  // MPI errors on finecast's communicator come back as codes, which CHECK_MPI turns into
  // finecast errors (MpiError) instead of MPI's default abort.
  CHECK_MPI(MPI_Comm_set_errhandler(pc.comm, MPI_ERRORS_RETURN));
  CHECK_MPI(MPI_Comm_rank(pc.comm, &pc.rank));
  CHECK_MPI(MPI_Comm_size(pc.comm, &pc.size));
  int mine = external ? 1 : 0;
  std::vector<int> flags(static_cast<size_t>(pc.size));
  CHECK_MPI(MPI_Allgather(&mine, 1, MPI_INT, flags.data(), 1, MPI_INT, pc.comm));
  pc.host_root = -1;
  for (int r = 0; r < pc.size; ++r) {
    if (flags[static_cast<size_t>(r)])
      pc.external_ranks.push_back(r);
    else if (pc.host_root < 0)
      pc.host_root = r;
  }
  if (pc.host_root < 0)
    throw ConfigError(
        "finecast-trainer: no host rank joined the plugin's communicator (does the host's plugin list give "
        "finecast this comm name?)");
  if (!pc.external_ranks.empty()) {
    const bool member = external || pc.rank == pc.host_root;
    CHECK_MPI(
        MPI_Comm_split(pc.comm, member ? 0 : MPI_UNDEFINED, pc.rank == pc.host_root ? 0 : 1 + pc.rank, &pc.events));
  }
  return pc;
}

void share_host_facts(const PluginComm& pc, HostFacts& facts) {
  if (pc.events == MPI_COMM_NULL) return;
  std::string n_global = std::to_string(facts.n_global), n_dom = std::to_string(facts.n_dom);
  for (std::string* text :
       {&facts.options, &facts.config, &facts.working_dir, &n_global, &n_dom, &facts.target.units,
        &facts.target.long_name, &facts.target.standard_name, &facts.exp_start, &facts.run_start, &facts.command})
    coupling::broadcast_string(*text, 0, pc.events);
  facts.n_global = std::stoll(n_global);
  facts.n_dom = std::stoi(n_dom);
}

}  // namespace finecast::plugin
