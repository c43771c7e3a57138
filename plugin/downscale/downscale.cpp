// SPDX-License-Identifier: BSD-3-Clause
// finecast-downscale: grid and patch set-up checked against the checkpoint, sampling, output.
#include "plugin/downscale/downscale.hpp"

#include <fmt/format.h>
#include <sys/stat.h>

#include <chrono>
#include <functional>
#include <cmath>
#include <cstdio>
#include <algorithm>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/error.hpp"
#include "coupling/conditioning/conditioning_pipeline.hpp"
#include "coupling/conditioning/conditioning_spec.hpp"
#include "coupling/grid/patches.hpp"
#include "coupling/grid/static_covariates.hpp"
#include "coupling/io/field_reader.hpp"
#include "coupling/io/static_field.hpp"
#include "coupling/io/step_select.hpp"
#include "common/log.hpp"
#include "common/region.hpp"
#include "plugin/comin_plugin/output.hpp"
#include "plugin/config.hpp"
#include "trainer/checkpoint.hpp"
#include "trainer/device.hpp"
#include "trainer/downscaler.hpp"

namespace finecast::plugin {
namespace {

bool is_directory(const std::string& path) {
  struct stat st {};
  return stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

std::string resolve_checkpoint(const std::string& path) {
  if (path.empty()) throw ConfigError("--checkpoint is required (a checkpoint file or a checkpoint directory)");
  if (!is_directory(path)) {
    struct stat st {};
    if (stat(path.c_str(), &st) != 0) throw IoError("--checkpoint " + path + ": no such file or directory");
    return path;
  }
  auto newest = trainer::newest_valid_checkpoint(path, [](const std::string& why) { log::warning(why); });
  if (!newest) throw IoError("--checkpoint " + path + ": the directory holds no valid checkpoint (ckpt_*.h5)");
  return *newest;
}

std::string context_text(const coupling::PatchOptions& o) {
  if (o.static_features && o.orography) return "with position features and orography";
  if (o.static_features) return "with position features";
  if (o.orography) return "with orography";
  return "without position features or orography";
}

/// The context features of the checkpoint: from its conditioning spec, else (checkpoints written
/// before it recorded them) from its context size. Throws ConfigError when the orography is needed
/// and --orography is missing, or given for a model without one, and GridError when no
/// combination of features gives the checkpoint's context size. Also checks the static covariates
/// and --var against what the model was trained on.
coupling::PatchOptions context_features(const DownscaleOptions& opt, const std::string& checkpoint,
                                        const coupling::StoredSpec& stored, int64_t context_size,
                                        const coupling::PatchMap& map, int n_vars, const std::string& grid_text) {
  const coupling::ConditioningSpec& spec = stored.spec;
  const bool oro_known = stored.has("patch.orography"), features_known = stored.has("patch.static_features");
  const bool given = !opt.orography.empty();
  std::string trained_fields;
  for (const auto& f : spec.fields) trained_fields += (trained_fields.empty() ? "" : ",") + f;
  const std::string fields_hint =
      stored.has("fields") ? " (it was trained on the field(s) " + trained_fields + ")" : std::string();
  // Older checkpoints had no context rings, residual or covariates recorded: their defaults (edge
  // neighbours, residual from the mean, no covariates) are what they were trained with.
  coupling::PatchOptions recorded = coupling::patch_options(spec);
  std::string statics;
  for (const auto& v : spec.patch.statics) statics += (statics.empty() ? "" : ",") + v;
  if (!spec.patch.statics.empty() && opt.statics.size() != spec.patch.statics.size())
    throw ConfigError("checkpoint " + checkpoint + " was trained with " + std::to_string(spec.patch.statics.size()) +
                      " static covariate(s) (patch.static: " + statics + ")" +
                      (opt.statics.empty() ? ", but no --static was given"
                                           : ", but " + std::to_string(opt.statics.size()) + " --static given") +
                      ": give each on the fine grid with --static FILE:VAR, in that order");
  if (spec.patch.statics.empty() && !opt.statics.empty())
    throw ConfigError("--static " + opt.statics.front() + " given, but checkpoint " + checkpoint +
                      " was trained without static covariates (patch.static is empty)");
  if (stored.has("target") && stored.has("fields") && static_cast<int>(spec.fields.size()) != n_vars)
    throw ConfigError("checkpoint " + checkpoint + " was trained on " + std::to_string(spec.fields.size()) +
                      " field(s) (" + trained_fields + ", downscaling " + spec.target + "), but " +
                      std::to_string(n_vars) + " --var given: pass them in that order");

  if (oro_known && !spec.patch.orography.empty() && !given)
    throw ConfigError("checkpoint " + checkpoint +
                      " was trained with an orography context (patch.orography: " + spec.patch.orography +
                      "): give the surface height on the fine grid with --orography FILE:VAR "
                      "(finecast-host writes its own with --write-orography FILE)");
  if (oro_known && spec.patch.orography.empty() && given)
    throw ConfigError("--orography " + opt.orography + " given, but checkpoint " + checkpoint +
                      " was trained without an orography context (patch.orography is unset)");

  // Candidates in order of preference; the spec, when it records them, leaves one.
  std::vector<coupling::PatchOptions> candidates;
  for (bool st : {true, false})
    for (bool oro : {false, true}) {
      if (features_known && st != spec.patch.static_features) continue;
      if (oro_known && oro != !spec.patch.orography.empty()) continue;
      coupling::PatchOptions o = recorded;
      o.static_features = st;
      o.orography = oro;
      candidates.push_back(o);
    }
  std::string sizes;
  for (const auto& c : candidates) {
    const int size = coupling::context_size(map, n_vars, c);
    if (size == context_size && c.orography == given) return c;
    sizes += (sizes.empty() ? "" : ", ") + std::to_string(size) + " " + context_text(c);
  }
  // Old checkpoints: the size may fit only with (or only without) the orography.
  for (const auto& c : candidates)
    if (coupling::context_size(map, n_vars, c) == context_size) {
      if (c.orography)
        throw ConfigError("checkpoint " + checkpoint + " expects a context of " + std::to_string(context_size) +
                          " values per patch, which " + std::to_string(n_vars) + " field(s) give " + context_text(c) +
                          ": give the surface height on the fine grid with --orography FILE:VAR");
      throw ConfigError("--orography " + opt.orography + " given, but checkpoint " + checkpoint +
                        " expects a context of " + std::to_string(context_size) + " values per patch, which " +
                        std::to_string(n_vars) + " field(s) give " + context_text(c));
    }
  throw GridError("checkpoint " + checkpoint + " expects a context of " + std::to_string(context_size) +
                  " values per patch, but " + std::to_string(n_vars) + " field(s) on " + grid_text + " give " + sizes +
                  "; pass the fields the model was trained on with --var, in the same order" + fields_hint);
}

/// A patch.residual: regression checkpoint must hold its coefficients.
void check_regression(const std::string& checkpoint, const coupling::ConditioningSpec& spec) {
  if (spec.patch.residual == coupling::Residual::kRegression && spec.regression.empty())
    throw CheckpointError("checkpoint " + checkpoint +
                          " was trained with patch.residual: regression but records no coefficients "
                          "(patch.regression; written before its first coupling step?)");
}

/// patch.global_blend W < 1 (the checkpoint's, or --global-blend) needs the global regression the
/// plugin fits beside the base: a checkpoint of patch.residual regression that records it.
/// The same for patch.spread_regression k > 0, whose r2 is that regression's term.
void check_global_regression(const std::string& checkpoint, const coupling::ConditioningSpec& spec,
                             const std::string& flag, const std::string& key, double value, bool used,
                             const std::string& off) {
  if (!used) return;
  if (spec.patch.residual != coupling::Residual::kRegression)
    throw ConfigError("--" + flag + " " + schema::format_real(value) + ": checkpoint " + checkpoint +
                      " was trained with patch.residual: " + schema::name_of(spec.patch.residual) +
                      ", which has no global regression (" + off + " = off)");
  if (spec.global_regression.empty())
    throw CheckpointError("checkpoint " + checkpoint +
                          " records no global regression (patch.global_regression; "
                          "written before it existed), which " +
                          key + " " + schema::format_real(value) + " needs: train anew, or sample with --" + flag +
                          " " + off);
}

/// The fine orography of --orography, checked against the fine grid (its size, and for ICON
/// the cell centres when the file has them). Float, as the plugin holds the host's field.
std::vector<float> read_orography(const DownscaleOptions& opt, const coupling::ConditioningSpec& spec,
                                  const coupling::PatchMap& map, const std::string& grid_text,
                                  const coupling::OutputGrid* icon) {
  auto [file, var] = coupling::split_file_var(opt.orography);
  if (var.empty()) {
    if (spec.patch.orography.empty())
      throw ConfigError("--orography " + opt.orography +
                        ": name the variable as FILE:VAR (the checkpoint does not record the "
                        "orography's name)");
    var = spec.patch.orography;
  }
  coupling::FieldReader reader(file, var);
  if (reader.n_values() != map.n_fine)
    throw GridError("--orography " + file + ": " + var + " has " + std::to_string(reader.n_values()) +
                    " values, but the fine grid " + grid_text + " has " + std::to_string(map.n_fine) +
                    " cells: the orography must be on the fine grid of the input");
  if (reader.n_times() > 1)
    log::warning("--orography " + file + ": " + var + " has " + std::to_string(reader.n_times()) +
                 " steps; the first is used");
  if (icon) {
    coupling::OutputGrid g;
    try {
      g = reader.output_grid();
    } catch (const IoError&) {
      // No clon/clat in the file: the size check above is all there is.
    }
    for (size_t i = 0; i < g.clon.size() && g.clon.size() == icon->clon.size(); ++i)
      if (std::fabs(std::remainder(g.clon[i] - icon->clon[i], 2 * M_PI)) > 1e-5 ||
          std::fabs(g.clat[i] - icon->clat[i]) > 1e-5)
        throw GridError("--orography " + file + ": cell " + std::to_string(i) + " of " + var + " lies at clon " +
                        std::to_string(g.clon[i]) + ", clat " + std::to_string(g.clat[i]) + " but in " + grid_text +
                        " at " + std::to_string(icon->clon[i]) + ", " + std::to_string(icon->clat[i]) +
                        " (radians): not the same grid");
  }
  std::vector<float> out(static_cast<size_t>(map.n_fine));
  reader.read(0, out.data());
  log::info("Orography " + file + ": " + var + " (coarsened with the patches, as in the plugin)");
  return out;
}

void check_options(const DownscaleOptions& opt) {
  if (opt.vars.empty()) throw ConfigError("--var is required (the field to downscale)");
  if (opt.members < 1) throw ConfigError("--members must be >= 1, got " + std::to_string(opt.members));
  if (opt.input_kind != "auto" && opt.input_kind != "fine" && opt.input_kind != "coarse")
    throw ConfigError("--input-kind must be auto, fine or coarse; got '" + opt.input_kind + "'");
}

/// One reader per --var, all with the same steps and values per step.
std::vector<coupling::FieldReader> open_inputs(const DownscaleOptions& opt) {
  std::vector<coupling::FieldReader> readers;
  for (const auto& v : opt.vars) readers.emplace_back(opt.input, v);
  for (const auto& r : readers)
    if (r.n_values() != readers.front().n_values() || r.n_times() != readers.front().n_times())
      throw IoError(opt.input + ": variable " + r.var() + " has " + std::to_string(r.n_times()) + " steps of " +
                    std::to_string(r.n_values()) + " values, " + opt.vars.front() + " has " +
                    std::to_string(readers.front().n_times()) + " of " + std::to_string(readers.front().n_values()));
  return readers;
}

trainer::Downscaler load_model(const DownscaleOptions& opt, const std::string& checkpoint) {
  if (opt.threads > 0) trainer::set_torch_threads(opt.threads);  // first: the device line reports them
  const trainer::DeviceChoice device = trainer::select_device(opt.device);
  log::info(device.log_line());
  trainer::Downscaler model = trainer::Downscaler::load_checkpoint(checkpoint, device.torch_device);
  const trainer::ModelOptions& mo = model.model_options();
  log::info("Checkpoint " + checkpoint + ": " + trainer::name(mo.arch) + ", context " +
            std::to_string(mo.context_size) + ", patch " + std::to_string(mo.patch_size) + ", optimizer step " +
            std::to_string(model.step()));
  return model;
}

/// The fine grid the input lives on and its patches, through the conditioning pipeline with the
/// checkpoint's spec: the grid of --grid (ICON: required) or of the input, patches of the size the
/// model was trained on unless --block or --coarse-level say otherwise.
coupling::ConditioningGrid fine_grid(const DownscaleOptions& opt, const coupling::FieldReader& first,
                                     const std::string& checkpoint, const coupling::ConditioningSpec& trained,
                                     int64_t patch_size) {
  coupling::ConditioningSpec spec = trained;
  spec.patch_size = patch_size;
  spec.grid.coarse_level = opt.coarse_level;
  spec.grid.block = opt.block;
  if (first.grid_kind() == coupling::FieldReader::GridKind::kUnstructured) {
    if (opt.grid.empty())
      throw ConfigError("--grid is required for ICON input " + opt.input + " (the fine ICON grid file)");
    if (opt.block > 0)
      throw ConfigError("--block is for lat-lon grids; " + opt.input + " is an ICON field (use --coarse-level)");
    spec.grid.type = coupling::GridType::kIcon;
    spec.grid.file = opt.grid;
    if (!opt.geometry.empty()) spec.grid.geometry = coupling::parse_icon_geometry(opt.geometry, "--geometry");
  } else {
    if (opt.coarse_level >= 0)
      throw ConfigError("--coarse-level is for ICON grids; " + opt.input + " is a lat-lon field (use --block)");
    spec.grid.type = coupling::GridType::kLatLon;
    spec.grid.file = opt.grid.empty() ? opt.input : opt.grid;
    spec.grid.variable = !opt.grid_var.empty()         ? opt.grid_var
                         : spec.grid.file == opt.input ? opt.vars.front()
                                                       : coupling::find_latlon_variable(spec.grid.file);
  }
  coupling::ConditioningGrid g = coupling::read_conditioning_grid(spec, "checkpoint " + checkpoint);
  if (g.map.patch_size != patch_size)
    throw GridError("checkpoint " + checkpoint + " was trained on patches of " + std::to_string(patch_size) +
                    " fine cells, but " + g.text + " gives patches of " + std::to_string(g.map.patch_size) +
                    (g.icon ? " (check --coarse-level)" : " (check --block)"));
  return g;
}

/// The static covariates of --static on the fine grid, normalised as when the model was
/// trained (the checkpoint records the normalisation).
std::vector<std::vector<float>> read_statics(const DownscaleOptions& opt, const std::string& checkpoint,
                                             const trainer::ModelOptions& mo, const coupling::ConditioningSpec& spec,
                                             const coupling::ConditioningGrid& grid) {
  std::vector<std::vector<float>> statics;
  if (spec.patch.statics.empty()) return statics;
  const auto& names = spec.patch.statics;
  const auto& norms = spec.static_norms;
  const int channels = coupling::static_channels(coupling::patch_options(spec));
  if (norms.size() != names.size())
    throw CheckpointError("checkpoint " + checkpoint + " records " + std::to_string(names.size()) +
                          " static covariate(s) but the normalisation of " + std::to_string(norms.size()) +
                          " (patch.static_norm; written before its first coupling step?)");
  if (mo.static_channels != 0 && mo.static_channels != channels)
    throw CheckpointError("checkpoint " + checkpoint + ": the model has " + std::to_string(mo.static_channels) +
                          " covariate channels but patch.static names " + std::to_string(names.size()) +
                          " covariate(s), which give " + std::to_string(channels));
  for (size_t s = 0; s < names.size(); ++s) {
    auto [file, var] = coupling::split_file_var(opt.statics[s]);
    if (var.empty()) var = names[s];
    const std::vector<float> fine_values =
        grid.icon ? coupling::read_static_icon(file, var, *grid.icon)
                  : coupling::read_static_latlon(file, var, *grid.latlon, "--input " + grid.latlon->path);
    statics.emplace_back(fine_values.size());
    coupling::normalise_static(norms[s], fine_values.data(), statics.back().data(),
                               static_cast<int64_t>(fine_values.size()));
    log::info("Static covariate " + names[s] + " <- " + file + ":" + var + " (normalised with the checkpoint's mean " +
              std::to_string(norms[s].mean) + ", scale " + std::to_string(norms[s].scale) + ")");
  }
  return statics;
}

/// Whether the input holds coarse values (one per patch) rather than the fine field; checks the
/// size against the grid either way.
bool is_coarse_input(const DownscaleOptions& opt, const coupling::FieldReader& first,
                     const coupling::ConditioningGrid& grid) {
  const int64_t n_values = first.n_values();
  const coupling::PatchMap& map = grid.map;
  if (opt.input_kind == "coarse" || (opt.input_kind == "auto" && n_values == map.n_coarse && n_values != map.n_fine)) {
    if (n_values != map.n_coarse)
      throw GridError(opt.input + ": " + first.var() + " has " + std::to_string(n_values) +
                      " values per step, the coarse grid of " + grid.text + " has " + std::to_string(map.n_coarse) +
                      " cells");
    return true;
  }
  if (n_values != map.n_fine)
    throw GridError(opt.input + ": " + first.var() + " has " + std::to_string(n_values) + " values per step, but " +
                    grid.text + " has " + std::to_string(map.n_fine) + " fine and " + std::to_string(map.n_coarse) +
                    " coarse cells: give the grid the field lives on with --grid");
  return false;
}

/// A checkpoint whose sampling weights were fine-tuned on the CRPS of members drawn by DDIM with
/// train.crps_sampler_steps steps (train.crps_steps, in its stored train options) is a sampler of
/// its own: drawn another way, its members are not what the fine-tuning scored. Says so.
void warn_if_not_sampled_as_tuned(const std::string& checkpoint, const trainer::TrainOptions& to,
                                  const trainer::SampleOptions& so) {
  const int64_t k = to.crps_sampler_steps;
  if (to.crps_steps > 0 && (so.sampler != trainer::Sampler::kDdim || so.steps != k || so.eta != 0.0))
    log::warning("checkpoint " + checkpoint + " was fine-tuned (train.crps_steps " + std::to_string(to.crps_steps) +
                 ") for members drawn by DDIM with " + std::to_string(k) + " steps and eta 0; sampled with " +
                 sampling_text(so) + " its spread is not what the fine-tuning scored (--sampler ddim --steps " +
                 std::to_string(k) + " --eta 0)");
}

/// The sampling options of `checkpoint`: those given on the command line, the others as the run
/// that wrote it sampled (its /sampling group; for checkpoints written before that group, sample.*
/// of its metadata's config_resolved), else the plugin's defaults. `origin` says which, for the log.
trainer::SampleOptions sampling_options(const DownscaleOptions& opt, const std::string& checkpoint,
                                        std::string& origin) {
  trainer::SampleOptions so;
  origin = "the plugin's defaults";
  if (const auto recorded = trainer::read_checkpoint_sampling(checkpoint)) {
    so = *recorded;
    origin = "sample.* of the config it was trained with";
  } else {
    const auto meta = trainer::read_checkpoint_metadata(checkpoint);
    if (const auto it = meta.find("config_resolved"); it != meta.end()) {
      try {
        const Config trained = parse_config(it->second, checkpoint + " (/metadata config_resolved)");
        so = trained.sample;
        origin = "sample.* of the config it was trained with";
      } catch (const ConfigError& e) {
        // A checkpoint of another finecast version: its config may have keys this one does not know.
        log::warning("checkpoint " + checkpoint + ": its training config does not parse (" + e.what() +
                     "); the sampling options not given on the command line take the plugin's defaults");
      }
    }
  }
  try {
    so = trainer::overridden(so, opt.sample);
  } catch (const schema::BadValue& e) {
    throw ConfigError(e.what());
  }
  // What the command line owns whatever the config said.
  so.members = opt.members;
  so.threads = 0;
  so.max_threads = 0;
  so.cuda_graphs = trainer::SampleOptions{}.cuda_graphs;
  return so;
}

/// Step `t` of every --var as fine fields: a fine input as it is, a coarse one spread over its
/// patches, so that the patch extraction returns it (up to rounding of the area weights).
std::vector<const float*> read_step(std::vector<coupling::FieldReader>& readers, int64_t t, bool coarse_input,
                                    const coupling::PatchMap& map, std::vector<float>& raw,
                                    std::vector<std::vector<float>>& fine) {
  std::vector<const float*> fields;
  for (size_t v = 0; v < readers.size(); ++v) {
    if (coarse_input) {
      readers[v].read(t, raw.data());
      for (int64_t c = 0; c < map.n_coarse; ++c)
        for (int64_t k = 0; k < map.patch_size; ++k) fine[v][map.fine_of_patch[c * map.patch_size + k]] = raw[c];
    } else {
      readers[v].read(t, fine[v].data());
    }
    fields.push_back(fine[v].data());
  }
  return fields;
}

/// Progress lines of one step's sampling, at most every 5 s.
class SamplingProgress {
 public:
  SamplingProgress(size_t step, size_t steps) : step_(step), steps_(steps) {}
  void operator()(int64_t done, int64_t total) {
    const auto now = std::chrono::steady_clock::now();
    if (done < total && now - last_line_ < std::chrono::seconds(5)) return;
    last_line_ = now;
    const double secs = std::chrono::duration<double>(now - t0_).count();
    log::info(fmt::format("step {}/{}: {}/{} patches ({:.0f}%), {:.1f} s, ETA {:.0f} s", step_ + 1, steps_, done, total,
                          100.0 * static_cast<double>(done) / static_cast<double>(total), secs,
                          done > 0 ? secs * static_cast<double>(total - done) / static_cast<double>(done) : 0.0));
  }

 private:
  size_t step_, steps_;
  std::chrono::steady_clock::time_point t0_ = std::chrono::steady_clock::now(), last_line_ = t0_;
};

}  // namespace

coupling::StoredSpec read_checkpoint_spec(const std::string& checkpoint) {
  return coupling::read_spec(trainer::read_checkpoint_group(checkpoint, coupling::kConditioningGroup),
                             trainer::read_checkpoint_metadata(checkpoint), checkpoint);
}

namespace {

/// One checkpoint whose members go into the output, with the context it was trained on.
struct Source {
  std::string checkpoint;
  trainer::Downscaler model;
  coupling::PatchOptions patch_options;
  std::vector<float> orography;
  std::vector<std::vector<float>> statics;
  std::vector<const float*> static_ptrs;
  coupling::Patches patches;
  std::vector<float> samples;       ///< [n_coarse, members_each, P]
  trainer::SampleOptions sampling;  ///< its own sampling options (sampling_options)
};

/// Loads `checkpoint` and what its context needs; the grid is the first source's (`grid`, or
/// made from this one's spec when null), and every checkpoint must share its patch size.
Source load_source(const DownscaleOptions& opt, const std::string& path,
                   std::optional<coupling::ConditioningGrid>& grid, const coupling::FieldReader& first) {
  const std::string file = resolve_checkpoint(path);
  Source src{file, load_model(opt, file), {}, {}, {}, {}, {}, {}, {}};
  const trainer::ModelOptions& mo = src.model.model_options();
  // What the model was trained on (the checkpoint's conditioning spec), through the same pipeline
  // as the plugin: the grid and its patches, the context, the residual base.
  const coupling::StoredSpec stored = read_checkpoint_spec(src.checkpoint);
  const coupling::ConditioningSpec& spec = stored.spec;
  check_regression(src.checkpoint, spec);
  const double blend = opt.global_blend.value_or(spec.patch.global_blend);
  check_global_regression(src.checkpoint, spec, "global-blend", "patch.global_blend", blend, blend < 1.0, "1");
  const double spread = opt.spread_regression.value_or(spec.patch.spread_regression);
  check_global_regression(src.checkpoint, spec, "spread-regression", "patch.spread_regression", spread, spread > 0.0,
                          "0");
  if (!grid) grid = fine_grid(opt, first, src.checkpoint, spec, mo.patch_size);
  if (grid->map.patch_size != mo.patch_size)
    throw GridError("checkpoint " + src.checkpoint + " was trained on patches of " + std::to_string(mo.patch_size) +
                    " fine cells, but the first --checkpoint's grid " + grid->text + " has patches of " +
                    std::to_string(grid->map.patch_size) + ": pooled checkpoints must share their patches");
  // Which features the context holds: the checkpoint says so (or, for checkpoints written
  // before it recorded that, its context size does), and the options must provide them.
  src.patch_options = context_features(opt, src.checkpoint, stored, mo.context_size, grid->map,
                                       static_cast<int>(opt.vars.size()), grid->text);
  if (src.patch_options.orography)
    src.orography = read_orography(opt, spec, grid->map, grid->text, grid->icon ? &grid->output : nullptr);
  src.patch_options.global_blend = blend;
  src.patch_options.spread_regression = spread;
  src.statics = read_statics(opt, src.checkpoint, mo, spec, *grid);
  for (const auto& v : src.statics) src.static_ptrs.push_back(v.data());
  std::string origin;
  src.sampling = sampling_options(opt, src.checkpoint, origin);
  log::info("Sampling with " + src.checkpoint + ": " + sampling_text(src.sampling) +
            (src.patch_options.global_blend < 1.0
                 ? ", the members' mean moved toward the global regression" +
                       (spec.patch.global_interpolant != coupling::Interpolant::kAuto
                            ? " on the " + schema::name_of(spec.patch.global_interpolant) + " interpolant"
                            : std::string()) +
                       " (patch.global_blend " + schema::format_real(src.patch_options.global_blend) +
                       (opt.global_blend ? "" : ", as trained") + ")"
                 : std::string()) +
            (spread > 0.0 ? ", each patch's spread times r2^" + schema::format_real(spread) +
                                " (patch.spread_regression" + (opt.spread_regression ? "" : ", as trained") + ")"
                          : std::string()) +
            " (options not given: " + origin + ")");
  warn_if_not_sampled_as_tuned(src.checkpoint, src.model.train_options(), src.sampling);
  return src;
}

/// The patches to sample (issue 43): every patch, or those --hold-out and --region select (as
/// finecast-eval scores them). `what` describes the choice for the log and the output.
std::vector<int64_t> sampled_patches(const DownscaleOptions& opt, const coupling::ConditioningGrid& grid,
                                     std::string& what) {
  const int64_t n = grid.map.n_coarse;
  std::vector<char> chosen(static_cast<size_t>(n), 1);
  if (!opt.hold_out.empty()) chosen = coupling::held_out_patches(grid, opt.hold_out, "--hold-out");
  if (!opt.region.empty()) {
    const std::vector<char> inside = coupling::patches_inside(grid, parse_region(opt.region, "--region"));
    for (size_t c = 0; c < chosen.size(); ++c) chosen[c] = chosen[c] && inside[c];
  }
  std::vector<int64_t> rows;
  for (int64_t c = 0; c < n; ++c)
    if (chosen[static_cast<size_t>(c)]) rows.push_back(c);
  std::string by;
  if (!opt.hold_out.empty()) by = "held out by --hold-out " + opt.hold_out;
  if (!opt.region.empty()) by += (by.empty() ? "" : " and ") + std::string("inside --region ") + opt.region;
  if (rows.empty())
    throw ConfigError("no patch of " + grid.text + " is " + by +
                      (opt.hold_out.empty() || opt.region.empty() ? "" : " (each selects some, but none both)") +
                      ": nothing to sample");
  what = std::to_string(rows.size()) + " of " + std::to_string(n) + " patches, those " + by +
         "; the others were not sampled (missing values), their coarse values are in <var>_coarse and in the "
         "sampled patches' contexts";
  return rows;
}

}  // namespace

DownscaleResult run_downscale(const DownscaleOptions& opt) {
  check_options(opt);
  DownscaleResult result;
  std::vector<coupling::FieldReader> readers = open_inputs(opt);
  const coupling::FieldReader& first = readers.front();
  // Every --checkpoint draws members / checkpoints members (issue 26: members pooled from
  // several training seeds or checkpoints), the k-th with the seed seed + k.
  std::vector<std::string> paths{opt.checkpoint};
  paths.insert(paths.end(), opt.pool.begin(), opt.pool.end());
  const int n_sources = static_cast<int>(paths.size());
  if (opt.members % n_sources != 0)
    throw ConfigError("--members " + std::to_string(opt.members) + " must be a multiple of the " +
                      std::to_string(n_sources) + " --checkpoint given (each draws an equal share)");
  const int each = opt.members / n_sources;
  std::optional<coupling::ConditioningGrid> grid_holder;
  std::vector<Source> sources;
  for (const auto& path : paths) sources.push_back(load_source(opt, path, grid_holder, first));
  coupling::ConditioningGrid& grid = *grid_holder;
  coupling::PatchMap& map = grid.map;
  const Source& lead = sources.front();
  result.checkpoint = lead.checkpoint;
  result.device = lead.model.device();
  result.orography = lead.patch_options.orography;
  result.static_features = lead.patch_options.static_features;
  result.context_rings = lead.patch_options.rings;
  result.interp_base = lead.patch_options.interp_base;
  result.n_static = lead.patch_options.n_static;
  result.sampling = sampling_text(lead.sampling);
  const int n_vars = static_cast<int>(opt.vars.size());

  result.coarse_input = is_coarse_input(opt, first, grid);
  const std::vector<int64_t> times = coupling::select_steps(first, opt.times);
  result.n_coarse = map.n_coarse;
  // Only the patches scored (issue 43): their contexts still come from the whole field.
  const bool restricted = !opt.hold_out.empty() || !opt.region.empty();
  std::string restriction;
  std::vector<int64_t> rows;
  if (restricted) rows = sampled_patches(opt, grid, restriction);
  result.n_sampled = restricted ? static_cast<long long>(rows.size()) : map.n_coarse;
  if (restricted) log::info("Sampling " + restriction);
  // Distinct sampling seeds for pooled checkpoints: two models sampled with the same noise give
  // near copies (issue 43: correlation 0.95 between their members).
  std::string seeds;
  for (int k = 0; k < n_sources; ++k) {
    result.seeds.push_back(opt.seed + static_cast<unsigned long long>(k));
    seeds += (k ? ", " : "") + sources[static_cast<size_t>(k)].checkpoint + ": " + std::to_string(result.seeds.back());
  }
  log::info((n_sources > 1 ? "Sampling seeds (--seed + k for the k-th --checkpoint): " : "Sampling seed: ") + seeds);
  result.patch_size = map.patch_size;
  log::info("Input " + opt.input + ": " + first.var() + (result.coarse_input ? " (coarse)" : " (fine, coarsened)") +
            "; grid " + grid.text + ": " + std::to_string(map.n_coarse) + " patches; " + std::to_string(times.size()) +
            " step(s), " + std::to_string(opt.members) + " member(s)" +
            (n_sources > 1
                 ? " (" + std::to_string(each) + " from each of " + std::to_string(n_sources) + " checkpoints)"
                 : std::string()) +
            ", " + sampling_text(lead.sampling));

  const auto target = static_cast<size_t>(lead.patch_options.target);
  std::map<std::string, std::string> attrs = output_attributes(map, result.checkpoint, lead.sampling);
  if (restricted) attrs["finecast_sampled_patches"] = restriction;
  Output output(opt.output, grid.output, opt.vars[target], readers[target].attributes(), opt.members, attrs,
                ExistingOutput::kReplace, "");
  std::vector<std::vector<float>> fine(
      static_cast<size_t>(n_vars),
      std::vector<float>(static_cast<size_t>(map.n_fine), std::numeric_limits<float>::quiet_NaN()));
  std::vector<float> raw(static_cast<size_t>(first.n_values()));
  const auto P = static_cast<size_t>(map.patch_size);
  // Patches not sampled stay NaN: missing values in the output.
  std::vector<float> samples(static_cast<size_t>(map.n_coarse * opt.members) * P,
                             std::numeric_limits<float>::quiet_NaN());
  coupling::Patches selected;
  for (size_t i = 0; i < times.size(); ++i) {
    const std::vector<const float*> fields = read_step(readers, times[i], result.coarse_input, map, raw, fine);
    for (size_t k = 0; k < sources.size(); ++k) {
      Source& src = sources[k];
      coupling::extract_patches(map, fields, src.orography.empty() ? nullptr : src.orography.data(), src.static_ptrs,
                                src.patch_options, src.patches);
      if (k == 0 && src.patches.n_invalid > 0)
        log::warning(opt.input + " at " + first.time_string(times[i]) + ": " + std::to_string(src.patches.n_invalid) +
                     " patch(es) with missing values; their output is NaN");
      // Same seed sequence as the plugin's samplings: 1st, 2nd, ... write.
      SamplingProgress progress(i, times.size());
      if (restricted) coupling::select_patches(src.patches, rows, selected);
      coupling::Patches& drawn = restricted ? selected : src.patches;
      src.samples.resize(static_cast<size_t>(drawn.n * each) * P);
      int64_t beyond = 0;  // patches whose context leaves the training range (+ margin)
      coupling::sample_fine(
          drawn, each, coupling::sampling_seed(result.seeds[k], static_cast<long long>(i) + 1), src.samples.data(),
          [&](const float* context, const float* coarse, const float* weights, int64_t n, uint64_t seed, float* out) {
            trainer::SampleOptions so = src.sampling;
            so.members = each;
            beyond += src.model.rows_beyond_training_range(context, n, so.clip_margin);
            src.model.sample(context, coarse, weights, n, so, seed, out, std::ref(progress));
          },
          map, n_vars, src.patch_options);
      if (k == 0 && beyond > 0)
        log::info(first.time_string(times[i]) + ": " +
                  trainer::beyond_training_range_text(beyond, drawn.n, src.sampling));
      // Members k*each .. (k+1)*each-1 of every patch sampled.
      for (int64_t j = 0; j < drawn.n; ++j) {
        const int64_t c = restricted ? rows[static_cast<size_t>(j)] : j;
        std::copy_n(src.samples.data() + static_cast<size_t>(j * each) * P, static_cast<size_t>(each) * P,
                    samples.data() + (static_cast<size_t>(c * opt.members) + k * each) * P);
      }
    }
    // A fine input is the truth the downscaled ensemble can be scored against: keep it beside it.
    write_patch_record(output, map, first.time_string(times[i]), samples.data(), opt.members,
                       lead.patches.coarse.data(), result.coarse_input ? nullptr : fine[target].data());
    ++result.steps_written;
  }
  output.close();
  log::info("Output written: " + opt.output + " (" + std::to_string(result.steps_written) + " step(s))");
  return result;
}

}  // namespace finecast::plugin
