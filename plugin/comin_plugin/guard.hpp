// SPDX-License-Identifier: BSD-3-Clause
// The C boundary: every ComIn callback runs through a guard, which stops every exception there.
// A fatal error is reported once: where all ranks reach the same point (the constructors), they
// agree on it and one rank prints it with the ranks it happened on.
#pragma once

#include <mpi.h>

#include <functional>
#include <string>

namespace finecast::plugin {

/// The message of the exception being handled (finecast's, LibTorch's, yaml-cpp's,
/// std::bad_alloc, or anything else). Call inside a catch block only.
std::string describe_current_exception();

/// Runs `fn` and returns "" or, when it throws, the exception's message: local work whose
/// failure is agreed on afterwards (agree_or_stop).
std::string failure_of(const std::function<void()>& fn);

/// Logs `why` on this rank (one ERROR line) and stops the whole run through comin_plugin_finish
/// (the host aborts every rank). Throws RunStopped when the host's finish handler returns.
[[noreturn]] void stop_the_run(const std::string& why);

/// Collective over `comm`: every rank calls it at the same point, after local work only (no
/// collective between a failure and this call, so no rank can wait elsewhere), with its failure
/// ("" = none). Returns when no rank failed. Otherwise the run stops with one report: rank 0 of
/// `comm` logs one ERROR line, "`where` failed on ranks 0-3: text" (each distinct text with its
/// ranks), and stops the run through comin_plugin_finish; the other ranks print nothing and wait
/// for that stop. Throws RunStopped on every rank when the host's finish handler returns.
void agree_or_stop(MPI_Comm comm, const std::string& failure, const std::string& where);

/// How stop_the_run ends the run: comin_plugin_finish by default; a finecast-trainer process,
/// which has no ComIn host, aborts the MPI job instead (plugin/comin_plugin/external.hpp).
void set_run_stopper(void (*stopper)(const std::string& why));
/// Thrown by stop_the_run when comin_plugin_finish returned; the guards let it end quietly.
struct RunStopped {};

/// Runs a callback's work. The work handles the failures it can survive itself (see
/// coupling_step.hpp); an exception that escapes means a collective or the plugin's own state
/// is broken, so it stops the run whatever on_error says: a rank that went on could leave the
/// others waiting in a collective. Never throws.
void guard(const char* where, const std::function<void()>& fn) noexcept;

/// Start-up (comin_main, the secondary constructor): errors always stop the run through
/// comin_plugin_finish, before the first time step, whatever on_error says.
void guard_startup(const char* where, const std::function<void()>& fn) noexcept;

}  // namespace finecast::plugin
