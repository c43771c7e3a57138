// SPDX-License-Identifier: BSD-3-Clause
#include "plugin/comin_plugin/guard.hpp"

#include <omp.h>
#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <exception>
#include <new>
#include <string>
#include <utility>
#include <vector>

#include "comin.h"
#include "common/log.hpp"
#include "coupling/error.hpp"

namespace finecast::plugin {

std::string describe_current_exception() {
  try {
    throw;
  } catch (const std::bad_alloc&) {
    return "out of memory (std::bad_alloc)";
  } catch (const std::exception& e) {
    return e.what();
  } catch (...) {
    return "unknown exception";
  }
}

std::string failure_of(const std::function<void()>& fn) {
  try {
    fn();
    return "";
  } catch (...) {
    const std::string what = describe_current_exception();
    return what.empty() ? "unknown error" : what;
  }
}

namespace {

void finish_through_comin(const std::string& why) { comin_plugin_finish("finecast", why.c_str()); }

void (*g_stopper)(const std::string&) = finish_through_comin;

/// The host's stop, after finecast logged the reason: ComIn's hosts print the text of
/// comin_plugin_finish again (finecast-host on the calling rank, comin_replay on rank 0, ICON in
/// its finish), so it says where the reason is instead of repeating it.
[[noreturn]] void stop(const std::string& summary) {
  g_stopper(summary);
  throw RunStopped{};
}

/// "where failed on ranks 0-3: text", or with several texts each with its ranks (at most three,
/// in the order of their first rank).
std::string report(const std::string& where, const std::vector<std::string>& failures, std::vector<int>& failed) {
  std::vector<std::pair<std::string, std::vector<int>>> texts;
  for (size_t r = 0; r < failures.size(); ++r) {
    if (failures[r].empty()) continue;
    failed.push_back(static_cast<int>(r));
    auto it = std::find_if(texts.begin(), texts.end(), [&](const auto& t) { return t.first == failures[r]; });
    if (it == texts.end()) {
      texts.push_back({failures[r], {}});
      it = texts.end() - 1;
    }
    it->second.push_back(static_cast<int>(r));
  }
  const auto ranks = [](const std::vector<int>& r) {
    return (r.size() == 1 ? "rank " : "ranks ") + log::rank_ranges(r);
  };
  if (texts.size() == 1) return where + " failed on " + ranks(failed) + ": " + texts.front().first;
  std::string line = where + " failed on " + ranks(failed) + ":";
  const size_t shown = std::min<size_t>(texts.size(), 3);
  for (size_t k = 0; k < shown; ++k) line += (k ? "; " : " ") + ("[" + ranks(texts[k].second) + "] ") + texts[k].first;
  if (texts.size() > shown) line += "; and " + std::to_string(texts.size() - shown) + " other message(s)";
  return line;
}

}  // namespace

void set_run_stopper(void (*stopper)(const std::string& why)) { g_stopper = stopper; }

void stop_the_run(const std::string& why) {
  // comin_plugin_finish prints on rank 0 only (comin_replay, ICON's log): the reason is logged
  // on the failing rank itself.
  log::error(why);
  stop("finecast stopped the run (the reason is in finecast's log on this rank)");
}

void agree_or_stop(MPI_Comm comm, const std::string& failure, const std::string& where) {
  int rank = 0, size = 1;
  CHECK_MPI(MPI_Comm_rank(comm, &rank));
  CHECK_MPI(MPI_Comm_size(comm, &size));
  int mine = failure.empty() ? 0 : 1, any = 0;
  CHECK_MPI(MPI_Allreduce(&mine, &any, 1, MPI_INT, MPI_MAX, comm));
  if (any == 0) return;
  // Every rank's text to rank 0, which reports them all at once.
  const int length = static_cast<int>(failure.size());
  std::vector<int> lengths(static_cast<size_t>(rank == 0 ? size : 0)), offsets(lengths.size(), 0);
  CHECK_MPI(MPI_Gather(&length, 1, MPI_INT, lengths.data(), 1, MPI_INT, 0, comm));
  std::string all;
  if (rank == 0) {
    for (int r = 1; r < size; ++r) offsets[r] = offsets[r - 1] + lengths[r - 1];
    all.resize(static_cast<size_t>(offsets.back() + lengths.back()));
  }
  CHECK_MPI(
      MPI_Gatherv(failure.data(), length, MPI_CHAR, all.data(), lengths.data(), offsets.data(), MPI_CHAR, 0, comm));
  if (rank == 0) {
    std::vector<std::string> failures;
    for (int r = 0; r < size; ++r) failures.push_back(all.substr(static_cast<size_t>(offsets[r]), lengths[r]));
    std::vector<int> failed;
    log::error(report(where, failures, failed));
    try {
      stop("finecast stopped the run: " + where + " failed on " + (failed.size() == 1 ? "rank " : "ranks ") +
           log::rank_ranges(failed) + " (the reason is in finecast's log on rank " + std::to_string(rank) + ")");
    } catch (const RunStopped&) {
    }
  }
  // The host's finish ends every process; a finish that returned (a host that stops later) lets
  // the others go on quietly too.
  CHECK_MPI(MPI_Barrier(comm));
  throw RunStopped{};
}

namespace {

/// The calling thread's OpenMP settings and CPU affinity when a callback starts, put back when it
/// returns. The thread is the host's: LibTorch sets its thread count through OpenMP on the calling
/// thread (a synchronous session, sampling, the set-up), and the host's next parallel loop would
/// run with it (ICON's CPU builds run OpenMP, and nothing in ICON restores it).
class HostThreadState {
 public:
  HostThreadState() noexcept
      : threads_(omp_get_max_threads()), dynamic_(omp_get_dynamic()), levels_(omp_get_max_active_levels()) {
    CPU_ZERO(&affinity_);
    has_affinity_ = pthread_getaffinity_np(pthread_self(), sizeof affinity_, &affinity_) == 0;
  }
  ~HostThreadState() {
    if (omp_get_max_threads() != threads_) omp_set_num_threads(threads_);
    if (omp_get_dynamic() != dynamic_) omp_set_dynamic(dynamic_);
    if (omp_get_max_active_levels() != levels_) omp_set_max_active_levels(levels_);
    cpu_set_t now;
    CPU_ZERO(&now);
    if (has_affinity_ && pthread_getaffinity_np(pthread_self(), sizeof now, &now) == 0 && !CPU_EQUAL(&now, &affinity_))
      pthread_setaffinity_np(pthread_self(), sizeof affinity_, &affinity_);
  }
  HostThreadState(const HostThreadState&) = delete;
  HostThreadState& operator=(const HostThreadState&) = delete;

 private:
  int threads_, dynamic_, levels_;
  cpu_set_t affinity_;
  bool has_affinity_ = false;
};

}  // namespace

void guard(const char* where, const std::function<void()>& fn) noexcept {
  const HostThreadState host_thread;  // restored when the callback returns, whatever happened
  try {
    fn();
  } catch (const RunStopped&) {
  } catch (...) {
    try {
      stop_the_run(std::string(where) + ": " + describe_current_exception());
    } catch (const RunStopped&) {
    }
  }
}

void guard_startup(const char* where, const std::function<void()>& fn) noexcept { guard(where, fn); }

}  // namespace finecast::plugin
