// SPDX-License-Identifier: BSD-3-Clause
#include "plugin/comin_plugin/plugin_state.hpp"

#include "coupling/error.hpp"
#include "common/log.hpp"

namespace finecast::plugin {
namespace {

// The one state of this process. A raw owner, so that nothing of finecast is destroyed by a
// static destructor after the host has finalised MPI: EP_DESTRUCTOR destroys it.
PluginState* g_state = nullptr;

}  // namespace

CouplingState::~CouplingState() {
  redist.reset();  // frees its duplicate of the communicator first
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized) return;
  for (MPI_Comm* c : {&training, &trainers, &events, &comm})
    if (*c != MPI_COMM_NULL) MPI_Comm_free(c);
}

TrainerState::~TrainerState() { session.wait(); }

RunSettings::RunSettings(Config c) : config(std::move(c)) {
  faults.point = config.testing.fault;
  faults.step = config.testing.fault_step;
  faults.rank = config.testing.fault_rank;
}

PluginState::PluginState(Config c) : RunSettings(std::move(c)) {}

PluginState::~PluginState() { release(); }

void RunPhase::transition(Phase to, const std::string& why) {
  const Phase from = phase_.current();
  if (from == to) return;
  phase_.move_to(to);
  if (why.empty()) return;
  if (to == Phase::kFailed || to == Phase::kStopped)
    log::warning(why);
  else
    log::info(why);
}

void PluginState::release() {
  // The trainer first: its output is published and a running session (which uses the model) is
  // joined (finish_run has already waited for it); then the model, buffer and patch map are freed.
  if (trainer) {
    if (trainer->output) trainer->output->publish();
    trainer.reset();
  }
  coupling.reset();
}

PluginState& plugin_state() {
  if (g_state == nullptr) throw InternalError("finecast: no plugin state (comin_main has not run, or the run ended)");
  return *g_state;
}

bool has_plugin_state() { return g_state != nullptr; }

PluginState& create_plugin_state(Config config) {
  if (g_state != nullptr) throw InternalError("finecast: the plugin state exists already");
  g_state = new PluginState(std::move(config));
  return *g_state;
}

void destroy_plugin_state() {
  delete g_state;
  g_state = nullptr;
}

}  // namespace finecast::plugin
