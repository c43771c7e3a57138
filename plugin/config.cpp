// SPDX-License-Identifier: BSD-3-Clause
// The plugin's config: its own option tables (grid, coupling, patch, buffer, checkpoint, ...)
// and the trainer's (model, train, sample; trainer/options.cpp), read and written through the
// one YAML walker of common/yaml_schema, plus the rules that involve several keys.
#include "plugin/config.hpp"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <functional>
#include <initializer_list>
#include <limits>

#include "common/error.hpp"
#include "comin_abi/entry_point_names.hpp"
#include "common/region.hpp"
#include "common/yaml_schema.hpp"

namespace finecast::plugin {

const schema::Names<OnError>& names(OnError) {
  static const schema::Names<OnError> n{{OnError::kAbort, "abort"}, {OnError::kDisable, "disable"}};
  return n;
}
const schema::Names<OutputFormat>& names(OutputFormat) {
  static const schema::Names<OutputFormat> n{{OutputFormat::kNetcdf4, "netcdf4"}, {OutputFormat::kCdf5, "cdf5"}};
  return n;
}
const schema::Names<Calibration>& names(Calibration) {
  static const schema::Names<Calibration> n{{Calibration::kNone, "none"}, {Calibration::kPrequential, "prequential"}};
  return n;
}

const schema::Names<DeviceFields>& names(DeviceFields) {
  static const schema::Names<DeviceFields> n{
      {DeviceFields::kAuto, "auto"}, {DeviceFields::kOn, "on"}, {DeviceFields::kOff, "off"}};
  return n;
}

const schema::Names<CommunicatorKind>& names(CommunicatorKind) {
  static const schema::Names<CommunicatorKind> n{{CommunicatorKind::kHost, "host"},
                                                 {CommunicatorKind::kPlugin, "plugin"}};
  return n;
}
const schema::Names<Placement>& names(Placement) {
  static const schema::Names<Placement> n{
      {Placement::kSpread, "spread"}, {Placement::kPacked, "packed"}, {Placement::kExternal, "external"}};
  return n;
}
const schema::Names<FaultPoint>& names(FaultPoint) {
  static const schema::Names<FaultPoint> n{
      {FaultPoint::kNone, "none"},           {FaultPoint::kGather, "gather"},
      {FaultPoint::kTraining, "training"},   {FaultPoint::kCheckpoint, "checkpoint"},
      {FaultPoint::kSampling, "sampling"},   {FaultPoint::kOutput, "output"},
      {FaultPoint::kWriteBack, "write_back"}};
  return n;
}

namespace {

using schema::BadValue;
using yaml_schema::ErrorList;

const std::vector<std::pair<std::string, int>>& entry_points() {
  // Names and ids follow ComIn's t_comin_entry_point (the order is ABI).
  static const std::vector<std::pair<std::string, int>> eps = [] {
    std::vector<std::pair<std::string, int>> v;
    for (int i = 0; i < comin_abi::kEntryPointCount; ++i) v.emplace_back(comin_abi::kEntryPointNames[i], i + 1);
    return v;
  }();
  return eps;
}

bool valid_device(const std::string& d) {
  if (d == "auto" || d == "cpu" || d == "cuda" || d == "mps") return true;
  if (d.rfind("cuda:", 0) != 0 || d.size() == 5 || d.size() > 9) return false;
  return d.find_first_not_of("0123456789", 5) == std::string::npos;
}

constexpr long long kMax = std::numeric_limits<int>::max();

/// The conditioning settings' rows (coupling/conditioning/conditioning_settings.hpp; the keys a
/// checkpoint's conditioning spec records) named `name` or in its section ("grid": grid.*), as
/// the config's rows.
schema::Table<Config> conditioning_rows(const std::string& name) {
  schema::Table<Config> out;
  for (const auto& f : schema::inherited<Config>(coupling::conditioning_settings_table()))
    if (f.key == name || f.key.rfind(name + ".", 0) == 0) out.push_back(f);
  return out;
}

/// The config's own keys, the conditioning settings and the trainer's options, in file order
/// (after `fields`).
const schema::Table<Config>& config_table() {
  using namespace schema;
  static const Table<Config> table = [] {
    Table<Config> s;
    auto add = [&s](const Table<Config>& more) { s.insert(s.end(), more.begin(), more.end()); };
    add(conditioning_rows("target"));
    s.push_back(text("device", &Config::device,
                     "auto (CUDA, then MPS, then CPU) | cpu | cuda | cuda:N | mps; explicit GPUs fail when absent",
                     "one of auto, cpu, cuda, cuda:N, mps", valid_device));
    s.push_back(unsigned64("seed", &Config::seed, "seed of every random choice (training and sampling)"));
    s.push_back(choice("on_error", &Config::on_error,
                       "on a runtime failure: abort the run | disable (log once, stop working, host finishes)"));
    add(nested(
        &Config::log,
        Table<LogConfig>{choice("level", &LogConfig::level, "lowest level printed: debug | info | warning | error"),
                         boolean("all_ranks", &LogConfig::all_ranks,
                                 "print training progress on every rank (default: trainer rank only)")},
        "log."));
    add(conditioning_rows("grid"));
    add(nested(
        &Config::coupling,
        Table<CouplingConfig>{
            text("entry_point", &CouplingConfig::entry_point, "ComIn entry point that couples (EP_...)",
                 "one of EP_ATM_WRITE_OUTPUT_BEFORE, EP_ATM_TIMELOOP_END, EP_ATM_INTEGRATE_AFTER, or another ComIn "
                 "EP_* name between EP_SECONDARY_CONSTRUCTOR and EP_FINISH",
                 [](const std::string& v) { return entry_point_id(v) > 1 && entry_point_id(v) < 41; }),
            integer("every", &CouplingConfig::every, 1, kMax, "couple on every n-th call of the entry point"),
            choice("communicator", &CouplingConfig::communicator,
                   "host | plugin (needs a comm for the plugin in &comin_nml)"),
            integer("trainer_rank", &CouplingConfig::trainer_rank, 0, kMax,
                    "rank of that communicator that gathers, trains and samples"),
            integer("domain", &CouplingConfig::domain, 1, kMax, "ComIn domain id (1-based)"),
            choice("device_fields", &CouplingConfig::device_fields,
                   "a GPU host's fields: auto (read the owned cells of the level from their device copies, "
                   "COMIN_FLAG_DEVICE, where the host has a device and the CUDA driver loads; else host access) | "
                   "on (that, or stop) | off (host access: ComIn copies each whole field to the host first)")},
        "coupling."));
    add(conditioning_rows("patch"));
    add(nested(&Config::buffer,
               Table<BufferConfig>{integer("capacity", &BufferConfig::capacity, 1, 10000,
                                           "coupling steps held in the rolling buffer (FIFO; at most 10,000, more "
                                           "than a year of hourly steps; the memory it needs is checked at start-up)")},
               "buffer."));
    add(nested(&Config::model, in_scope(trainer::model_options_table(), Scope::kConfig), "model."));
    Table<TrainConfig> train{
        boolean("async", &TrainConfig::async,
                "train on a background thread of the trainer rank while the host keeps stepping"),
        integer_or_auto("nice", &TrainConfig::nice, 19,
                        "with async: nice levels the training thread and its OpenMP threads run below the host's "
                        "(Linux; at most 19 in all; 0 = the host's priority): the host's ranks take the cores "
                        "first; auto: 0 on CPUs of its own (free_cores), else 19"),
        boolean("free_cores", &TrainConfig::free_cores,
                "with async: where the MPI launcher binds the ranks to cores and leaves some of the node free, "
                "the training thread and its OpenMP threads run on those (split among the node's trainers), "
                "not on the trainer rank's own cores; false: on the rank's cores"),
        integer("every", &TrainConfig::every, 1, kMax, "coupling steps between training sessions"),
        integer("min_steps", &TrainConfig::min_steps, 1, kMax,
                "buffered steps before the first session (<= buffer.capacity)"),
        integer("epochs", &TrainConfig::epochs, 1, 10000000,
                "epochs per training session (at most 10^7; with train.max_seconds the budget ends it first)"),
        integer("ranks", &TrainConfig::ranks, 1, 1 << 20,
                "trainer ranks: each holds, trains on and samples its share of the patches (data-parallel)"),
        choice("placement", &TrainConfig::placement,
               "spread: the trainer ranks evenly over the communicator; packed: next to coupling.trainer_rank; "
               "external: finecast-trainer processes started beside the host (MPMD), joined through the plugin's "
               "comm (needs coupling.communicator: plugin)"),
        real("device_memory_fraction", &TrainConfig::device_memory_fraction, 0.0, 1.0,
             "largest fraction of its GPU's memory a trainer rank may hold (LibTorch's caching allocator; "
             "0.5 leaves half to a GPU model sharing the GPU); no effect on the CPU",
             true),
        text("hold_out", &TrainConfig::hold_out,
             "lat0,lat1,lon0,lon1, or several boxes joined by ';': patches wholly inside one are never trained "
             "on; or FILE:VAR, a mask on the fine grid: patches with a non-zero cell are (as finecast-eval "
             "--hold-out); their coarse values stay in the neighbours' context (offline evaluation); \"\" = none",
             "\"\", lat0,lat1,lon0,lon1 in degrees (';' between boxes) or FILE:VAR", [](const std::string& v) {
               const size_t colon = v.rfind(':');
               return v.empty() || is_regions_text(v) ||
                      (colon != std::string::npos && colon > 0 && colon + 1 < v.size() &&
                       v.find('/', colon) == std::string::npos);
             })};
    for (const auto& f : inherited<TrainConfig>(in_scope(trainer::train_options_table(), Scope::kConfig)))
      train.push_back(f);
    add(nested(&Config::train, train, "train."));
    Table<SampleConfig> sample{integer("every", &SampleConfig::every, 0, kMax,
                                       "coupling steps between samplings; 0 = only at the end of the run"),
                               boolean("at_end", &SampleConfig::at_end,
                                       "sample the final weights at the end of the run (unless the latest "
                                       "sampling used them); false with every 0: no sampling at all (an "
                                       "evaluation that samples with finecast-downscale)")};
    for (const auto& f : inherited<SampleConfig>(in_scope(trainer::sample_options_table(), Scope::kConfig)))
      sample.push_back(f);
    sample.push_back(
        text("output", &SampleConfig::output,
             "NetCDF file of the sampled ensembles (relative to the working directory); not a file the run "
             "reads nor in checkpoint.dir, written by one run at a time; a fresh run keeps an existing "
             "one and writes <stem>_<first time>.nc (docs/output.md)"));
    sample.push_back(text("write_back", &SampleConfig::write_back,
                          "host variable created by the plugin for the ensemble mean (\"\" = none)"));
    sample.push_back(choice("calibration", &SampleConfig::calibration,
                            "none (the members' spread times sample.inflation) | prequential (each sampling's "
                            "inflation from the run's own errors: sqrt(sum of the ensemble mean's squared error "
                            "against the host's field / sum of the members' variance) over the samplings before "
                            "it, scored before the model trained on their steps; sample.inflation until the first; "
                            "needs members >= 2; docs/plugin.md)"));
    sample.push_back(real("calibration_decay", &SampleConfig::calibration_decay, 0.0, 1.0,
                          "calibration prequential: the weight a scored sampling keeps in the sums at each later "
                          "one (1: every sampling alike; 0: only the latest; 0.5 halves it per sampling), so that "
                          "the inflation follows an error that changes over the run (a season)"));
    sample.push_back(text("device", &SampleConfig::device,
                          "device that samples (\"\" = the training device); e.g. train on cpu, sample on cuda",
                          "\"\" or one of auto, cpu, cuda, cuda:N, mps",
                          [](const std::string& v) { return v.empty() || valid_device(v); }));
    add(nested(&Config::sample, sample, "sample."));
    add(nested(&Config::output,
               Table<OutputConfig>{
                   choice("format", &OutputConfig::format,
                          "netcdf4 (HDF5: chunked, shuffle + deflate) | cdf5 (uncompressed, each record durable)"),
                   integer("deflate", &OutputConfig::deflate, 0, 9, "zlib level of every variable (netcdf4); 0 = off"),
                   text("title", &OutputConfig::title, "global attribute title (\"\" = none)"),
                   text("source", &OutputConfig::source, "global attribute source (\"\" = finecast and its version)"),
                   text("institution", &OutputConfig::institution, "global attribute institution (\"\" = none)")},
               "output."));
    add(nested(&Config::checkpoint,
               Table<CheckpointConfig>{
                   text("dir", &CheckpointConfig::dir, "directory of the checkpoints"),
                   integer("every", &CheckpointConfig::every, 0, kMax,
                           "coupling steps between checkpoints; 0 = only at the end"),
                   integer("keep", &CheckpointConfig::keep, 1, 1000, "checkpoints kept (oldest removed; at most 1000)"),
                   text("resume", &CheckpointConfig::resume,
                        "checkpoint file or directory to resume from; auto = the newest usable one in "
                        "checkpoint.dir not later than the host's restart time, fresh when there is none (restart "
                        "chains; only damaged or later ones is an error); auto-or-fresh = the same, but fresh with "
                        "a warning instead of that error; \"\" = fresh"),
                   boolean("at_host_restart", &CheckpointConfig::at_host_restart,
                           "also checkpoint when the host writes its restart (EP_ATM_CHECKPOINT_AFTER)"),
                   boolean("buffer", &CheckpointConfig::buffer, "snapshot the rolling buffer with each checkpoint")},
               "checkpoint."));
    add(nested(&Config::testing,
               Table<TestingConfig>{choice("fault", &TestingConfig::fault,
                                           "fail on purpose there: none | gather | training | checkpoint | sampling | "
                                           "output | write_back (tests of on_error; never in production)"),
                                    integer("fault_step", &TestingConfig::fault_step, 0, kMax,
                                            "coupling step of the failure; 0 = every occasion"),
                                    integer("fault_rank", &TestingConfig::fault_rank, -1, kMax,
                                            "rank of the plugin communicator that fails; -1 = the trainer rank")},
               "testing."));
    return s;
  }();
  return table;
}

/// `fields`: the conditioning settings' row, with the levels only the config has: host variables,
/// each a name or {name: NAME, level: K} (ICON level numbering, 1 = model top) for one level of a
/// 3-D variable.
yaml_schema::Entry fields_entry(Config& c) {
  const schema::Field<Config> row = conditioning_rows("fields").at(0);
  yaml_schema::Entry e;
  e.key = row.key;
  e.required = true;
  e.comment = row.comment;
  e.read = [&c, set_names = row.set_value](const YAML::Node& n) {
    std::vector<std::string> names;
    std::vector<int> levels;
    auto add = [&](const YAML::Node& item) {
      if (item.IsScalar() && !item.Scalar().empty()) {
        names.push_back(item.Scalar());
        levels.push_back(0);
        return;
      }
      if (!item.IsMap())
        throw BadValue("entries must be variable names or {name: NAME, level: K}, got " + yaml_schema::describe(item));
      std::string name;
      long long level = 0;
      for (const auto& kv : item) {
        const std::string k = kv.first.IsScalar() ? kv.first.Scalar() : "";
        if (k == "name" && kv.second.IsScalar() && !kv.second.Scalar().empty()) {
          name = kv.second.Scalar();
        } else if (k == "level" && kv.second.IsScalar() && schema::parse_integer(kv.second.Scalar(), level) &&
                   level >= 1 && level <= 100000) {
        } else {
          throw BadValue(
              "entries of the form {name: NAME, level: K} take a variable name and a level >= 1 "
              "(1 = model top), got " +
              (k.empty() ? "a key that is not a string" : k + ": " + yaml_schema::describe(kv.second)));
        }
      }
      if (name.empty()) throw BadValue("entry {name: NAME, level: K} has no name");
      names.push_back(name);
      levels.push_back(static_cast<int>(level));
    };
    if (n.IsSequence()) {
      for (const auto& item : n) add(item);
    } else if (n.IsScalar() || n.IsMap()) {
      add(n);
    }
    if (names.empty()) throw BadValue("must be a non-empty list of variable names, got " + yaml_schema::describe(n));
    set_names(c, schema::Value(names));
    c.field_levels = levels;
  };
  e.write = [&c] {
    YAML::Node n(YAML::NodeType::Sequence);
    for (size_t i = 0; i < c.fields.size(); ++i) {
      const int level = i < c.field_levels.size() ? c.field_levels[i] : 0;
      if (level == 0) {
        n.push_back(c.fields[i]);
      } else {
        YAML::Node m(YAML::NodeType::Map);
        m["name"] = c.fields[i];
        m["level"] = level;
        m.SetStyle(YAML::EmitterStyle::Flow);
        n.push_back(m);
      }
    }
    n.SetStyle(YAML::EmitterStyle::Flow);
    return n;
  };
  return e;
}

/// `train.gpu_ids`: a list of CUDA device numbers.
yaml_schema::Entry gpu_ids_entry(Config& c) {
  yaml_schema::Entry e;
  e.key = "train.gpu_ids";
  e.comment = "CUDA device of each trainer rank on a node, e.g. [0, 1, 2, 3] ([] = 0, 1, ... in rank order)";
  e.read = [&c](const YAML::Node& n) {
    std::vector<int> ids;
    if (!n.IsSequence())
      throw BadValue("must be a list of device numbers, e.g. [0, 1], got " + yaml_schema::describe(n));
    for (const auto& item : n) {
      long long v = -1;
      if (!item.IsScalar() || !schema::parse_integer(item.Scalar(), v) || v < 0 || v > 1023)
        throw BadValue("must be a list of device numbers >= 0, got an entry " + yaml_schema::describe(item));
      ids.push_back(static_cast<int>(v));
    }
    c.train.gpu_ids = ids;
  };
  e.write = [&c] {
    YAML::Node n(YAML::NodeType::Sequence);
    for (int id : c.train.gpu_ids) n.push_back(id);
    n.SetStyle(YAML::EmitterStyle::Flow);
    return n;
  };
  return e;
}

/// Every key of the config bound to `c`, in file order: `fields` first, then the table (with
/// train.gpu_ids after train.placement).
std::vector<yaml_schema::Entry> config_entries(Config& c) {
  std::vector<yaml_schema::Entry> entries{fields_entry(c)};
  for (auto& e : yaml_schema::bind(c, config_table())) {
    e.required = e.key == "grid.file";
    const std::string key = e.key;
    entries.push_back(std::move(e));
    if (key == "train.placement") entries.push_back(gpu_ids_entry(c));
  }
  return entries;
}

void validate_together(const Config& c, ErrorList& errors) {
  // A rule runs only when its keys were read without error, and `check` returns "" or the message.
  auto rule = [&](std::initializer_list<const char*> keys, const std::function<std::string()>& check) {
    for (const char* k : keys)
      if (errors.failed(k)) return;
    const std::string message = check();
    if (!message.empty()) errors.add(*keys.begin(), c.source + ": " + message);
  };
  rule({"train.min_steps", "buffer.capacity"}, [&] {
    return c.train.min_steps <= c.buffer.capacity
               ? std::string()
               : "train.min_steps (" + std::to_string(c.train.min_steps) + ") must not exceed buffer.capacity (" +
                     std::to_string(c.buffer.capacity) + ")";
  });
  rule({"train.weight_decay", "train.lr"}, [&] {
    return c.train.lr * c.train.weight_decay < 1.0
               ? std::string()
               : "train.weight_decay (" + schema::format_real(c.train.weight_decay) + ") times train.lr (" +
                     schema::format_real(c.train.lr) +
                     ") must be below 1: AdamW scales the weights by 1 - lr x weight_decay at every step";
  });
  rule({"model.arch", "grid.type"}, [&] {
    return c.model.arch == trainer::Arch::kUnet && c.grid.type != GridType::kLatLon
               ? "model.arch unet needs square patches: set grid.type: latlon (ICON triangles use mlp or graph)"
           : c.model.arch == trainer::Arch::kGraph && c.grid.type != GridType::kIcon
               ? "model.arch graph needs ICON triangles: set grid.type: icon (lat-lon blocks use mlp or unet)"
               : std::string();
  });
  rule({"grid.geometry", "grid.type"}, [&] {
    return c.grid.geometry == IconGeometry::kUniform && c.grid.type != GridType::kIcon
               ? "grid.geometry: uniform applies to ICON grids only, but grid.type is latlon (whose coordinates "
                 "come from the file): remove grid.geometry, or set grid.type: icon"
               : std::string();
  });
  rule({"model.file", "model.arch"}, [&] {
    return c.model.arch == trainer::Arch::kTorchscript && c.model.file.empty()
               ? "model.arch torchscript needs model.file: the denoiser's TorchScript file (docs/training.md)"
               : std::string();
  });
  rule({"model.attention", "model.arch"}, [&] {
    return c.model.attention && c.model.arch != trainer::Arch::kUnet
               ? "model.attention is part of the unet: set model.arch: unet, or model.attention: false"
               : std::string();
  });
  rule({"train.placement", "coupling.communicator"}, [&] {
    return c.train.placement == Placement::kExternal && c.coupling.communicator != CommunicatorKind::kPlugin
               ? std::string(
                     "train.placement external needs coupling.communicator: plugin (the finecast-trainer processes "
                     "join the plugin's comm, named in the host's plugin list, e.g. comm = \"finecast\")")
               : std::string();
  });
  rule({"target", "fields"}, [&] {
    if (c.target.empty() || std::find(c.fields.begin(), c.fields.end(), c.target) != c.fields.end())
      return std::string();
    std::string list;
    for (const auto& f : c.fields) list += (list.empty() ? "" : ", ") + f;
    return "target \"" + c.target + "\" is not one of fields (" + list + ")";
  });
  rule({"fields"}, [&] {
    // The same host variable (and level) twice would be gathered, buffered and given to the
    // model twice: a context the user did not mean, and a target that is ambiguous.
    for (size_t i = 0; i < c.fields.size(); ++i)
      for (size_t j = 0; j < i; ++j)
        if (c.fields[i] == c.fields[j] && c.field_levels[i] == c.field_levels[j])
          return "fields lists \"" + c.fields[i] + "\"" +
                 (c.field_levels[i] > 0 ? " at level " + std::to_string(c.field_levels[i]) : std::string()) +
                 " twice (entries " + std::to_string(j + 1) + " and " + std::to_string(i + 1) + ")";
    return std::string();
  });
  rule({"sample.steps", "sample.sampler", "model.diffusion_steps"}, [&] {
    return c.sample.sampler == trainer::Sampler::kDdim && c.sample.steps > c.model.diffusion_steps
               ? "sample.steps (" + std::to_string(c.sample.steps) + ") must not exceed model.diffusion_steps (" +
                     std::to_string(c.model.diffusion_steps) + "): DDIM takes a subset of the schedule's steps"
               : std::string();
  });
  rule({"sample.calibration", "sample.members"}, [&] {
    return c.sample.calibration == Calibration::kPrequential && c.sample.members < 2
               ? "sample.calibration prequential scores the members' spread: it needs sample.members >= 2, got " +
                     std::to_string(c.sample.members)
               : std::string();
  });
  rule({"sample.write_back", "fields"}, [&] {
    for (const auto& f : c.fields)
      if (c.sample.write_back == f)
        return "sample.write_back must name a new variable, not the input field \"" + f + "\"";
    return std::string();
  });
  rule({"patch.static", "fields", "patch.orography"}, [&] {
    for (size_t i = 0; i < c.patch.statics.size(); ++i) {
      const std::string& v = c.patch.statics[i];
      if (std::find(c.patch.statics.begin(), c.patch.statics.begin() + i, v) != c.patch.statics.begin() + i)
        return "patch.static lists \"" + v + "\" twice";
      if (std::find(c.fields.begin(), c.fields.end(), v) != c.fields.end())
        return "patch.static: \"" + v + "\" is one of fields; a static covariate is a field that does not change";
    }
    return std::string();
  });
  rule({"patch.local_slopes", "patch.residual", "patch.static", "patch.local_slope_static"},
       [&] { return coupling::local_slope_problem(c.patch); });
  rule({"patch.interpolant", "grid.type"},
       [&] { return coupling::interpolant_mismatch(c.patch.interpolant, c.grid.type == GridType::kLatLon); });
  rule({"patch.global_interpolant", "grid.type"}, [&] {
    return coupling::interpolant_mismatch(c.patch.global_interpolant, c.grid.type == GridType::kLatLon,
                                          "patch.global_interpolant");
  });
  rule({"patch.global_interpolant", "patch.residual"}, [&] {
    return c.patch.global_interpolant != coupling::Interpolant::kAuto && c.patch.residual != Residual::kRegression
               ? "patch.global_interpolant is the interpolant of the global regression of patch.residual regression, "
                 "but patch.residual is " +
                     schema::name_of(c.patch.residual)
               : std::string();
  });
  rule({"patch.regression_refit", "patch.residual"}, [&] {
    return c.patch.regression_refit && c.patch.residual != Residual::kRegression
               ? std::string(
                     "patch.regression_refit refits the base of patch.residual regression, but patch.residual "
                     "is ") +
                     schema::name_of(c.patch.residual)
               : std::string();
  });
  rule({"patch.global_blend", "patch.residual"}, [&] {
    return c.patch.global_blend < 1.0 && c.patch.residual != Residual::kRegression
               ? "patch.global_blend moves the members' mean toward the global regression of patch.residual "
                 "regression, but patch.residual is " +
                     schema::name_of(c.patch.residual)
               : std::string();
  });
  rule({"patch.spread_regression", "patch.residual"}, [&] {
    return c.patch.spread_regression > 0.0 && c.patch.residual != Residual::kRegression
               ? "patch.spread_regression spreads the members by the global regression's term of patch.residual "
                 "regression, but patch.residual is " +
                     schema::name_of(c.patch.residual)
               : std::string();
  });
  rule({"patch.static_refresh", "patch.static"}, [&] {
    return c.patch.static_refresh && c.patch.statics.empty()
               ? std::string(
                     "patch.static_refresh gathers the patch.static fields at every step, but patch.static "
                     "lists none")
               : std::string();
  });
  rule({"patch.residual", "patch.static"}, [&] {
    return c.patch.residual == Residual::kRegression && c.patch.statics.empty()
               ? std::string(
                     "patch.residual regression fits the fine residual on the static covariates: list them in "
                     "patch.static (e.g. [topography_c, fr_land]), or use patch.residual: interp")
               : std::string();
  });
  rule({"train.mixed_precision", "device"}, [&] {
    return c.train.bf16 && c.device == "cpu" ? "train.mixed_precision needs a CUDA device, but device is cpu"
                                             : std::string();
  });
  // Early stopping, plateau and keep_best act on the validation score, and crps_held_out tunes on
  // the held-out part: they need held-out data.
  const std::pair<const char*, bool> on_validation[] = {
      {"train.early_stop", c.train.early_stop > 0},
      {"train.plateau", c.train.plateau > 0},
      {"train.keep_best", c.train.keep_best},
      {"train.crps_held_out", c.train.crps_held_out && c.train.crps_steps > 0}};
  for (const auto& [key, on] : on_validation)
    rule({key, "train.validation"}, [&, key = key, on = on] {
      return on && c.train.validation == 0 ? std::string(key) +
                                                 " needs the held-out part: set train.validation (e.g. 0.1) to "
                                                 "hold out the most recent steps (or samples: train.validation_split)"
                                           : std::string();
    });
  rule({"train.validation_members"}, [&] {
    return c.train.validation_members == 1
               ? "train.validation_members must be 0 (no CRPS) or at least 2 (an ensemble), got 1"
               : std::string();
  });
  rule({"train.validation_metric", "train.validation_members"}, [&] {
    return c.train.validation_metric != trainer::ValidationMetric::kLoss && c.train.validation_members == 0
               ? "train.validation_metric " + trainer::name(c.train.validation_metric) +
                     " needs train.validation_members >= 2"
               : std::string();
  });
}

}  // namespace

const std::string& target_field(const Config& c) { return c.target.empty() ? c.fields.front() : c.target; }

int first_static_input(const Config& c) {
  return static_cast<int>(c.fields.size() + (c.patch.orography.empty() ? 0 : 1));
}

int input_count(const Config& c) { return first_static_input(c) + static_cast<int>(c.patch.statics.size()); }

int target_index(const Config& c) {
  const auto it = std::find(c.fields.begin(), c.fields.end(), target_field(c));
  return it == c.fields.end() ? 0 : static_cast<int>(it - c.fields.begin());
}

int entry_point_id(const std::string& name) {
  for (const auto& [n, id] : entry_points())
    if (n == name) return id;
  return -1;
}

std::vector<std::string> split_options(const std::string& options) {
  std::vector<std::string> words;
  std::string word;
  bool in_word = false;
  char quote = 0;
  for (char ch : options) {
    if (quote != 0) {
      if (ch == quote)
        quote = 0;
      else
        word += ch;
    } else if (ch == '\'' || ch == '"') {
      quote = ch;
      in_word = true;
    } else if (std::isspace(static_cast<unsigned char>(ch))) {
      if (in_word) words.push_back(word);
      word.clear();
      in_word = false;
    } else {
      word += ch;
      in_word = true;
    }
  }
  if (quote != 0)
    throw ConfigError("plugin options: unterminated " + std::string(1, quote) + " quote in \"" + options + "\"");
  if (in_word) words.push_back(word);
  return words;
}

std::vector<std::string> config_keys() {
  Config c;
  std::vector<std::string> keys;
  for (const auto& e : config_entries(c)) keys.push_back(e.key);
  return keys;
}

std::vector<std::string> required_config_keys() {
  Config c;
  std::vector<std::string> keys;
  for (const auto& e : config_entries(c))
    if (e.required) keys.push_back(e.key);
  return keys;
}

Config parse_config(const std::string& yaml_text, const std::string& source,
                    const std::vector<std::string>& overrides) {
  YAML::Node root = yaml_schema::parse(yaml_text, source);
  if (!root.IsDefined() || root.IsNull()) root = YAML::Node(YAML::NodeType::Map);
  if (!root.IsMap()) throw ConfigError(source + ": the config must be a mapping of keys (e.g. \"fields: [ts]\")");
  Config config;
  config.source = source;
  const auto entries = config_entries(config);
  yaml_schema::Origin origin{source, {}};
  ErrorList errors;
  for (const auto& o : overrides)
    errors.collect("--set", [&] { yaml_schema::apply_override(root, o, entries, origin); });
  yaml_schema::read(root, entries, origin, errors);
  validate_together(config, errors);
  errors.throw_if_any();
  return config;
}

Config load_config(const std::string& path, const std::vector<std::string>& overrides) {
  return parse_config(yaml_schema::load_text(path, "config file"), path, overrides);
}

std::vector<std::string> config_differences(const Config& a, const Config& b) {
  Config ca = a, cb = b;
  const auto ea = config_entries(ca), eb = config_entries(cb);
  std::vector<std::string> keys;
  for (size_t i = 0; i < ea.size() && i < eb.size(); ++i) {
    YAML::Emitter x, y;
    x.SetDoublePrecision(17);
    y.SetDoublePrecision(17);
    x << ea[i].write();
    y << eb[i].write();
    if (std::string(x.c_str()) != y.c_str()) keys.push_back(ea[i].key);
  }
  return keys;
}

std::string config_hash(const std::string& yaml_text) {
  uint64_t h = 14695981039346656037ULL;
  for (unsigned char ch : yaml_text) {
    h ^= ch;
    h *= 1099511628211ULL;
  }
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(h));
  return hex;
}

std::string to_yaml(const Config& config) {
  Config copy = config;
  return yaml_schema::dump(config_entries(copy));
}

namespace {

/// "  key: value" padded to the comment column, then the comment wrapped at 120 columns, its
/// continuation lines at the comment column.
std::string commented_line(const std::string& line, const std::string& comment) {
  constexpr size_t kColumn = 24, kWidth = 120;
  std::string out = line + std::string(line.size() < kColumn ? kColumn - line.size() : 1, ' ') + "#";
  size_t width = out.size();
  size_t start = 0;
  while (start < comment.size()) {
    size_t end = comment.find(' ', start);
    if (end == std::string::npos) end = comment.size();
    const std::string word = comment.substr(start, end - start);
    if (width + 1 + word.size() > kWidth && width > kColumn + 1) {
      out += "\n" + std::string(kColumn, ' ') + "#";
      width = kColumn + 1;
    }
    out += " " + word;
    width += 1 + word.size();
    start = end + 1;
  }
  return out + "\n";
}

}  // namespace

std::string reference_yaml() {
  Config c;  // the defaults, and examples for the keys that have none
  c.fields = {"ts"};
  c.field_levels = {0};
  c.grid.file = "/usr/share/ncarg/data/nug/triangular_grid_ICON.nc";
  std::string out =
      "# finecast reference config: every key with its default and what it does.\n"
      "# Check any config with:  build/bin/finecast-config my.yaml   (prints it resolved, or the error)\n"
      "# Keys marked (required) have no default; the values shown for them are examples.\n"
      "# Generated from the option tables (plugin/config.cpp, coupling/conditioning/conditioning_settings.hpp,\n"
      "# trainer/options.cpp), do not edit:\n"
      "#   build/bin/finecast-config --reference > configs/reference.yaml\n\n";
  std::string section;
  for (const auto& e : config_entries(c)) {
    const size_t dot = e.key.find('.');
    const std::string in = dot == std::string::npos ? "" : e.key.substr(0, dot);
    if (in != section) {
      if (in == "testing")
        out += "\n# Deliberate failures, for testing how a run survives them (docs/reliability.md).\n";
      out += (in == "testing" ? "" : "\n") + in + ":\n";
      section = in;
    }
    YAML::Emitter value;
    value << YAML::Flow << e.write();
    const std::string line =
        (in.empty() ? "" : "  ") + e.key.substr(dot == std::string::npos ? 0 : dot + 1) + ": " + value.c_str();
    out += commented_line(line, (e.required ? "(required) " : "") + e.comment);
  }
  return out;
}

}  // namespace finecast::plugin
