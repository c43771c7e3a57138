// SPDX-License-Identifier: BSD-3-Clause
#include "plugin/comin_plugin/external.hpp"

#include <cstring>
#include <filesystem>

#include "common/log.hpp"
#include "coupling/error.hpp"
#include "coupling/mpi/broadcast.hpp"
#include "plugin/comin_plugin/coupling_step.hpp"
#include "plugin/comin_plugin/guard.hpp"
#include "plugin/comin_plugin/plugin_state.hpp"
#include "plugin/comin_plugin/setup.hpp"

namespace finecast::plugin {
namespace {

/// One event on the wire: fixed size, so that one MPI_Bcast carries it.
struct EventMessage {
  int32_t kind = 0;
  char datetime[64] = {};
};

/// A finecast-trainer has no ComIn host to stop the run: it aborts the MPI job, which ends the
/// host's ranks too (they would otherwise wait for it in the next step's collectives).
void abort_the_job(const std::string&) { MPI_Abort(MPI_COMM_WORLD, 1); }

/// `path` from `base` when it is relative ("" and checkpoint.resume's words, auto and the like,
/// stay as they are).
std::string from_dir(const std::string& base, const std::string& path) {
  const bool keyword = path.rfind("auto", 0) == 0 && path.find('/') == std::string::npos;
  if (path.empty() || keyword || path.front() == '/' || base.empty()) return path;
  return (std::filesystem::path(base) / path).lexically_normal().string();
}

/// "a, b and c".
std::string listed(const std::vector<std::string>& keys) {
  std::string out;
  for (size_t i = 0; i < keys.size(); ++i) out += (i == 0 ? "" : i + 1 == keys.size() ? " and " : ", ") + keys[i];
  return out;
}

/// The host's events until EP_DESTRUCTOR, each handled as the host's ranks handle it.
void follow_the_host(PluginState& s) {
  for (;;) {
    EventMessage e;
    CHECK_MPI(MPI_Bcast(&e, sizeof e, MPI_BYTE, 0, s.coupling->events));
    const std::string datetime(e.datetime, strnlen(e.datetime, sizeof e.datetime));
    switch (static_cast<HostEvent>(e.kind)) {
      case HostEvent::kStep:
        guard("coupling step", [&] { coupling_step(s, datetime); });
        break;
      case HostEvent::kRestart:
        guard("coupling step", [&] { host_restart(s, datetime); });
        break;
      case HostEvent::kFinish:
        guard("EP_DESTRUCTOR", [&] { finish_run(s); });
        return;
      default:
        throw InternalError("finecast-trainer: unknown event " + std::to_string(e.kind) + " from the host");
    }
  }
}

}  // namespace

Config host_config(const HostFacts& facts) {
  std::vector<std::string> words = split_options(facts.options);
  const std::string path = words.empty() ? std::string("the host's config") : words.front();
  if (!words.empty()) words.erase(words.begin());
  // Parsed from the text the host's ranks run with: a trainer cannot take another value of any
  // key (a differing sample.every or write_back once left the host's ranks waiting in a
  // collective the trainer never joined).
  Config cfg = parse_config(facts.config, path);
  const std::string hash = config_hash(facts.config);
  // The trainer's own copy, when it has one, is ignored; where it differs, it says so.
  std::error_code ec;
  if (std::filesystem::is_regular_file(path, ec)) {
    std::string why;
    try {
      const std::vector<std::string> keys = config_differences(load_config(path, words), cfg);
      if (!keys.empty()) why = "differs from the host's in " + listed(keys);
    } catch (const std::exception& e) {
      why = "does not load (" + std::string(e.what()) + ")";
    }
    if (!why.empty())
      log::warning(
          "finecast-trainer: its own copy of the config, " + std::filesystem::absolute(path, ec).string() + ", " + why +
          "; it is ignored: finecast-trainer runs with the config the host's first rank sent (hash " + hash + ")");
  }
  const std::string& dir = facts.working_dir;
  cfg.grid.file = from_dir(dir, cfg.grid.file);
  cfg.sample.output = from_dir(dir, cfg.sample.output);
  cfg.checkpoint.dir = from_dir(dir, cfg.checkpoint.dir);
  cfg.checkpoint.resume = from_dir(dir, cfg.checkpoint.resume);
  log::info("finecast-trainer: runs with the host's config " + path + " (hash " + hash +
            "); relative paths from the host's working directory " + dir);
  return cfg;
}

void announce(const PluginState& s, HostEvent event, const std::string& datetime) {
  if (!s.coupling || !s.coupling->announces) return;
  EventMessage e;
  e.kind = static_cast<int32_t>(event);
  if (datetime.size() >= sizeof e.datetime)
    throw InternalError("the host's model time \"" + datetime + "\" is too long for finecast-trainer's events");
  std::memcpy(e.datetime, datetime.data(), datetime.size());
  CHECK_MPI(MPI_Bcast(&e, sizeof e, MPI_BYTE, 0, s.coupling->events));
}

int run_external_trainer(MPI_Comm plugin_comm) {
  set_run_stopper(abort_the_job);
  bool ok = true;
  guard_startup("finecast-trainer start-up", [&] {
    PluginComm pc = join_plugin_comm(plugin_comm, true);
    log::configure(pc.rank, log::Level::kInfo, false);
    HostFacts facts;
    share_host_facts(pc, facts);
    PluginState& s = create_plugin_state(host_config(facts));
    s.host_rank = -1;
    s.options = facts.options;
    s.config_text = facts.config;
    s.coupling_ep = entry_point_id(s.config.coupling.entry_point);
    setup_coupling(s, std::move(pc), facts, failure_of([&] { check_mpi_thread_level(s.config, true); }));
  });
  if (!has_plugin_state() || !plugin_state().coupling) return 1;  // (the job was aborted)
  PluginState& s = plugin_state();
  try {
    follow_the_host(s);
  } catch (...) {
    log::error("finecast-trainer: " + describe_current_exception());
    ok = false;
    abort_the_job("");
  }
  destroy_plugin_state();
  return ok ? 0 : 1;
}

}  // namespace finecast::plugin

/// The entry of finecast-trainer (plugin/external/main.cpp), which dlopens this library: the
/// Fortran handle of the plugin communicator it joined in the handshake.
extern "C" __attribute__((visibility("default"))) int finecast_external_trainer(int plugin_comm) {
  return finecast::plugin::run_external_trainer(MPI_Comm_f2c(plugin_comm));
}
