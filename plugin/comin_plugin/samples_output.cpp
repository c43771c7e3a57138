// SPDX-License-Identifier: BSD-3-Clause
#include "plugin/comin_plugin/samples_output.hpp"

#include <functional>

#include "coupling/error.hpp"
#include "plugin/comin_plugin/guard.hpp"

namespace finecast::plugin {
namespace {

/// The lead's failures while the trainers' collective goes on, in one place: the first one is
/// kept and later file work is skipped; it is thrown once every trainer has passed the last piece.
/// (Every other trainer only sends: it has nothing to defer.)
class DeferredFailure {
 public:
  void run(const std::function<void()>& fn) {
    if (what_.empty()) what_ = failure_of(fn);  // never "" for a failure
  }
  /// (The step names the stage and the time: "output at <time>: ...".)
  void rethrow() const {
    if (!what_.empty()) throw IoError(what_);
  }

 private:
  std::string what_;
};

/// The lead's output at the first sampling; the checkpoint it names is the latest written, else
/// the one resumed from.
void open_output(const Config& cfg, TrainerState& t, const std::string& datetime) {
  auto attrs =
      output_attributes(t.map,
                        !t.last_checkpoint.empty() ? t.last_checkpoint
                        : !t.resumed_from.empty()  ? t.resumed_from
                                                   : "none written yet (checkpoint.dir " + cfg.checkpoint.dir + ")",
                        cfg.sample);
  attrs.insert(t.output_globals.begin(), t.output_globals.end());
  t.output = open_run_output(cfg.sample.output, t.output_grid, target_field(cfg), t.output_attrs, cfg.sample.members,
                             std::move(attrs), t.output_options, datetime, {t.command, t.resumed_from});
}

}  // namespace

void write_samples(const Config& cfg, TrainerState& t, const CouplingState& c, const Faults& faults, RunStats& stats,
                   int64_t masked) {
  const int members = cfg.sample.members;
  const int64_t P = t.map.patch_size;
  const float* host = t.slot_values.data() + static_cast<size_t>(target_index(cfg)) * t.slot_cells.size();
  DeferredFailure failure;
  if (c.is_lead)
    failure.run([&] {
      faults.check(FaultPoint::kOutput, stats.steps, c.rank, true);
      if (!t.output) open_output(cfg, t, stats.datetime);
      t.output->begin(stats.datetime);
      t.output->set_masked(masked);
    });
  // Per slot: its members, the coarse value and the host's value; NaN at cells in no patch.
  const int n_fields = members + 2;
  t.gather->gather(
      n_fields,
      [&](const std::vector<int64_t>& slots, float* values) {
        const size_t n = slots.size();
        for (size_t i = 0; i < n; ++i) {
          const int64_t slot = slots[i], patch = slot / P, pos = slot % P;
          for (int m = 0; m < members; ++m)
            values[m * n + i] = t.samples[static_cast<size_t>((patch * members + m) * P + pos)];
          values[members * n + i] = t.patches.coarse[static_cast<size_t>(patch)];
          values[(members + 1) * n + i] = host[slot];
        }
      },
      [&](int64_t first, int64_t count, const float* values) {
        failure.run(
            [&] { t.output->put(first, count, values, values + members * count, values + (members + 1) * count); });
      });
  if (c.is_lead) failure.run([&] { t.output->end(); });
  failure.rethrow();
  ++stats.samplings;
  t.fresh_weights = false;
}

}  // namespace finecast::plugin
