// SPDX-License-Identifier: BSD-3-Clause
// The ComIn life cycle of finecast: comin_main (the primary constructor, one of the two
// symbols the plugin exports; finecast_external_trainer is the other), the secondary constructor, the coupling entry
// point and the destructor. Each callback is a thin shell around a guard; the work is in setup.cpp and
// coupling_step.cpp.
#include "comin.h"
#include "common/log.hpp"
#include "plugin/comin_plugin/coupling_step.hpp"
#include "plugin/comin_plugin/external.hpp"
#include "plugin/comin_plugin/guard.hpp"
#include "plugin/comin_plugin/host_api.hpp"
#include "plugin/comin_plugin/plugin_state.hpp"
#include "plugin/comin_plugin/setup.hpp"

namespace fp = finecast::plugin;

namespace {

void secondary_constructor_callback() { fp::guard_startup("EP_SECONDARY_CONSTRUCTOR", fp::secondary_constructor); }

void coupling_callback() {
  fp::guard("coupling step", [] {
    fp::PluginState& s = fp::plugin_state();
    const int ep = comin_current_get_ep();
    // Entry points inside the host's loop over domains run once per domain: couple on ours only.
    const int domain = comin_current_get_domain_id();
    const bool ours = domain == COMIN_DOMAIN_OUTSIDE_LOOP || domain == s.config.coupling.domain;
    if (ep == s.coupling_ep && ours) {
      const std::string datetime = fp::fortran_string(comin_current_get_datetime);
      fp::announce(s, fp::HostEvent::kStep, datetime);
      fp::coupling_step(s, datetime);
    }
    if (ep == EP_ATM_CHECKPOINT_AFTER && s.config.checkpoint.at_host_restart) {
      const std::string datetime = fp::fortran_string(comin_current_get_datetime);
      fp::announce(s, fp::HostEvent::kRestart, datetime);
      fp::host_restart(s, datetime);
    }
  });
}

// Everything of finecast is released here, in a stated order (PluginState::release), before the
// host finalises MPI; nothing is left for static destructors.
void destructor_callback() {
  fp::guard("EP_DESTRUCTOR", [] {
    if (!fp::has_plugin_state()) return;
    fp::announce(fp::plugin_state(), fp::HostEvent::kFinish, "");
    fp::finish_run(fp::plugin_state());
    fp::destroy_plugin_state();
    finecast::log::debug("finecast released its state");
  });
}

}  // namespace

/// The primary constructor ComIn calls once per rank after loading the plugin.
extern "C" __attribute__((visibility("default"))) void comin_main(void) {
  fp::guard_startup("comin_main", [] {
    // Every host rank reads the same config: its errors are agreed on over the host's
    // communicator and reported once, with the ranks they happened on.
    t_comin_entry_point ep{};
    const std::string failure = fp::failure_of([&] { ep = fp::primary_constructor(); });
    fp::agree_or_stop(MPI_Comm_f2c(comin_parallel_get_host_mpi_comm()), failure, "comin_main");
    comin_callback_register(EP_SECONDARY_CONSTRUCTOR, secondary_constructor_callback);
    comin_callback_register(ep, coupling_callback);
    // The host's restart: one callback per entry point and plugin, the same when it couples there.
    if (fp::plugin_state().config.checkpoint.at_host_restart && ep != EP_ATM_CHECKPOINT_AFTER)
      comin_callback_register(EP_ATM_CHECKPOINT_AFTER, coupling_callback);
    comin_callback_register(EP_DESTRUCTOR, destructor_callback);
  });
}
