// SPDX-License-Identifier: BSD-3-Clause
// The config schema: one table row per key (path, type, range, comment). Parsing, validation,
// unknown-key detection, --set overrides and the resolved dump all walk that one table.
#include "plugin/config.hpp"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <fstream>
#include <functional>
#include <initializer_list>
#include <limits>
#include <map>
#include <set>
#include <sstream>

#include "coupling/error.hpp"

namespace finecast::plugin {
namespace {

/// Where a node came from, for messages: "file:line" or "--set key=value".
struct Origin {
  std::string source;
  const std::set<std::string>* overridden;
  std::string where(const YAML::Node& node, const std::string& key) const {
    if (overridden->count(key)) return "--set " + key;
    const YAML::Mark m = node.Mark();
    if (m.line >= 0) return source + ":" + std::to_string(m.line + 1);
    return source;
  }
};

std::string scalar_text(const YAML::Node& n) {
  if (n.IsScalar()) return "\"" + n.Scalar() + "\"";
  if (n.IsSequence()) return "a list";
  if (n.IsMap()) return "a mapping";
  return "nothing";
}

/// One config key: how to read it into a Config and how to write it back out.
struct Field {
  std::string key;
  std::string comment;
  bool required = false;
  std::function<void(const YAML::Node&, Config&, const std::string& where)> read;
  std::function<YAML::Node(const Config&)> write;
};

[[noreturn]] void fail(const std::string& where, const std::string& msg) { throw ConfigError(where + ": " + msg); }

/// The errors of one validation pass, so that a config with several mistakes reports them all
/// at once. Each is recorded against the key it concerns; rules on several keys skip keys that
/// already failed (their value is then a default the user did not write).
class ErrorList {
 public:
  /// Runs `check`; a ConfigError it throws is recorded against `key` instead of propagating.
  template <class F>
  void collect(const std::string& key, F&& check) {
    try {
      check();
    } catch (const ConfigError& e) {
      add(key, e.what());
    }
  }
  void add(const std::string& key, const std::string& message) {
    messages_.push_back(message);
    failed_.insert(key);
  }
  /// Whether `key`, or its section ("grid" for "grid.type"), had an error.
  bool failed(const std::string& key) const {
    const auto dot = key.find('.');
    return failed_.count(key) != 0 || (dot != std::string::npos && failed_.count(key.substr(0, dot)) != 0);
  }
  /// One ConfigError with every message, one per line, in the order found (file order).
  void throw_if_any() const {
    if (messages_.empty()) return;
    std::string all;
    for (const auto& m : messages_) all += (all.empty() ? "" : "\n") + m;
    throw ConfigError(all);
  }

 private:
  std::vector<std::string> messages_;
  std::set<std::string> failed_;
};

template <class Get>
Field int_field(std::string key, Get get, int lo, int hi, std::string comment) {
  Field f;
  f.key = key;
  f.comment = std::move(comment);
  f.read = [key, get, lo, hi](const YAML::Node& n, Config& c, const std::string& where) {
    std::string what = lo == 1 && hi == std::numeric_limits<int>::max() ? "a positive integer"
                       : lo == 0 && hi == std::numeric_limits<int>::max()
                           ? "a non-negative integer"
                           : "an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]";
    long long v = 0;
    if (!n.IsScalar() || !YAML::convert<long long>::decode(n, v)) fail(where, key + " must be " + what + ", got " + scalar_text(n));
    if (v < lo || v > hi) fail(where, key + " must be " + what + ", got " + std::to_string(v));
    get(c) = static_cast<int>(v);
  };
  f.write = [get](const Config& c) { return YAML::Node(get(const_cast<Config&>(c))); };
  return f;
}

template <class Get>
Field u64_field(std::string key, Get get, std::string comment) {
  Field f;
  f.key = key;
  f.comment = std::move(comment);
  f.read = [key, get](const YAML::Node& n, Config& c, const std::string& where) {
    unsigned long long v = 0;
    if (!n.IsScalar() || n.Scalar().find('-') != std::string::npos || !YAML::convert<unsigned long long>::decode(n, v))
      fail(where, key + " must be a non-negative integer, got " + scalar_text(n));
    get(c) = static_cast<uint64_t>(v);
  };
  f.write = [get](const Config& c) { return YAML::Node(static_cast<unsigned long long>(get(const_cast<Config&>(c)))); };
  return f;
}

template <class Get>
Field real_field(std::string key, Get get, double lo, double hi, bool lo_open, std::string comment) {
  Field f;
  f.key = key;
  f.comment = std::move(comment);
  f.read = [key, get, lo, hi, lo_open](const YAML::Node& n, Config& c, const std::string& where) {
    std::ostringstream what;
    what << "a number in " << (lo_open ? "(" : "[") << lo << ", " << hi << "]";
    double v = 0;
    if (!n.IsScalar() || !YAML::convert<double>::decode(n, v)) fail(where, key + " must be " + what.str() + ", got " + scalar_text(n));
    if (!(lo_open ? v > lo : v >= lo) || !(v <= hi)) fail(where, key + " must be " + what.str() + ", got " + n.Scalar());
    get(c) = v;
  };
  f.write = [get](const Config& c) { return YAML::Node(get(const_cast<Config&>(c))); };
  return f;
}

template <class Get>
Field bool_field(std::string key, Get get, std::string comment) {
  Field f;
  f.key = key;
  f.comment = std::move(comment);
  f.read = [key, get](const YAML::Node& n, Config& c, const std::string& where) {
    bool v = false;
    if (!n.IsScalar() || !YAML::convert<bool>::decode(n, v)) fail(where, key + " must be true or false, got " + scalar_text(n));
    get(c) = v;
  };
  f.write = [get](const Config& c) { return YAML::Node(get(const_cast<Config&>(c))); };
  return f;
}

/// A string; when `choices` is non-empty it must be one of them, or satisfy `accept` if given.
template <class Get>
Field string_field(std::string key, Get get, std::vector<std::string> choices, std::string comment,
                   std::function<bool(const std::string&)> accept = {}) {
  Field f;
  f.key = key;
  f.comment = std::move(comment);
  f.read = [key, get, choices, accept](const YAML::Node& n, Config& c, const std::string& where) {
    if (!n.IsScalar()) fail(where, key + " must be a string, got " + scalar_text(n));
    const std::string v = n.Scalar();
    // With `accept`, the choices only describe the allowed values (e.g. "cuda:N").
    const bool ok = accept ? accept(v) : choices.empty() || std::find(choices.begin(), choices.end(), v) != choices.end();
    if (!ok) {
      std::string list;
      for (const auto& ch : choices) list += (list.empty() ? "" : ", ") + ch;
      fail(where, key + " must be one of " + list + ", got \"" + v + "\"");
    }
    get(c) = v;
  };
  f.write = [get](const Config& c) { return YAML::Node(get(const_cast<Config&>(c))); };
  return f;
}

/// `fields`: host variables, each a name or {name: NAME, level: K} (ICON level numbering,
/// 1 = model top) for one level of a 3-D variable.
Field coupled_fields_field(std::string comment) {
  Field f;
  f.key = "fields";
  f.comment = std::move(comment);
  f.required = true;
  f.read = [](const YAML::Node& n, Config& c, const std::string& where) {
    const std::string key = "fields";
    std::vector<std::string> names;
    std::vector<int> levels;
    auto add = [&](const YAML::Node& item) {
      if (item.IsScalar() && !item.Scalar().empty()) {
        names.push_back(item.Scalar());
        levels.push_back(0);
        return;
      }
      if (!item.IsMap())
        fail(where, key + " entries must be variable names or {name: NAME, level: K}, got " + scalar_text(item));
      std::string name;
      long long level = 0;
      for (const auto& kv : item) {
        const std::string k = kv.first.IsScalar() ? kv.first.Scalar() : "";
        if (k == "name" && kv.second.IsScalar() && !kv.second.Scalar().empty()) {
          name = kv.second.Scalar();
        } else if (k == "level" && kv.second.IsScalar() && YAML::convert<long long>::decode(kv.second, level) &&
                   level >= 1 && level <= 100000) {
        } else {
          fail(where, key + " entries of the form {name: NAME, level: K} take a variable name and a level >= 1 "
                            "(1 = model top), got " + (k.empty() ? "a key that is not a string" : k + ": " + scalar_text(kv.second)));
        }
      }
      if (name.empty()) fail(where, key + " entry {name: NAME, level: K} has no name");
      names.push_back(name);
      levels.push_back(static_cast<int>(level));
    };
    if (n.IsSequence()) {
      for (const auto& item : n) add(item);
    } else if (n.IsScalar() || n.IsMap()) {
      add(n);
    }
    if (names.empty()) fail(where, key + " must be a non-empty list of variable names, got " + scalar_text(n));
    c.fields = names;
    c.field_levels = levels;
  };
  f.write = [](const Config& c) {
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
  return f;
}

const std::vector<std::pair<std::string, int>>& entry_points() {
  // Names and ids follow ComIn's t_comin_entry_point (the order is ABI).
  static const std::vector<std::pair<std::string, int>> eps = [] {
    const char* names[] = {"EP_SECONDARY_CONSTRUCTOR", "EP_ATM_YAC_DEFCOMP_BEFORE", "EP_ATM_YAC_DEFCOMP_AFTER",
                           "EP_ATM_YAC_SYNCDEF_BEFORE", "EP_ATM_YAC_SYNCDEF_AFTER", "EP_ATM_YAC_ENDDEF_BEFORE",
                           "EP_ATM_YAC_ENDDEF_AFTER", "EP_ATM_INIT_FINALIZE", "EP_ATM_TIMELOOP_BEFORE",
                           "EP_ATM_TIMELOOP_START", "EP_ATM_TIMELOOP_END", "EP_ATM_TIMELOOP_AFTER",
                           "EP_ATM_INTEGRATE_BEFORE", "EP_ATM_INTEGRATE_START", "EP_ATM_INTEGRATE_END",
                           "EP_ATM_INTEGRATE_AFTER", "EP_ATM_WRITE_OUTPUT_BEFORE", "EP_ATM_WRITE_OUTPUT_AFTER",
                           "EP_ATM_CHECKPOINT_BEFORE", "EP_ATM_CHECKPOINT_AFTER", "EP_ATM_ADVECTION_BEFORE",
                           "EP_ATM_ADVECTION_AFTER", "EP_ATM_PHYSICS_BEFORE", "EP_ATM_PHYSICS_AFTER",
                           "EP_ATM_NUDGING_BEFORE", "EP_ATM_NUDGING_AFTER", "EP_ATM_SURFACE_BEFORE",
                           "EP_ATM_SURFACE_AFTER", "EP_ATM_TURBULENCE_BEFORE", "EP_ATM_TURBULENCE_AFTER",
                           "EP_ATM_MICROPHYSICS_BEFORE", "EP_ATM_MICROPHYSICS_AFTER", "EP_ATM_CONVECTION_BEFORE",
                           "EP_ATM_CONVECTION_AFTER", "EP_ATM_RADIATION_BEFORE", "EP_ATM_RADIATION_AFTER",
                           "EP_ATM_RADHEAT_BEFORE", "EP_ATM_RADHEAT_AFTER", "EP_ATM_GWDRAG_BEFORE",
                           "EP_ATM_GWDRAG_AFTER", "EP_FINISH", "EP_DESTRUCTOR"};
    std::vector<std::pair<std::string, int>> v;
    for (int i = 0; i < static_cast<int>(sizeof names / sizeof *names); ++i) v.emplace_back(names[i], i + 1);
    return v;
  }();
  return eps;
}

bool valid_device(const std::string& d) {
  if (d == "auto" || d == "cpu" || d == "cuda" || d == "mps") return true;
  if (d.rfind("cuda:", 0) != 0 || d.size() == 5 || d.size() > 9) return false;
  return d.find_first_not_of("0123456789", 5) == std::string::npos;
}

constexpr int kMax = std::numeric_limits<int>::max();

#define GET(member) [](Config& c) -> auto& { return c.member; }

const std::vector<Field>& schema() {
  static const std::vector<Field> fields = [] {
    std::vector<Field> s;
    s.push_back(coupled_fields_field(
        "host variables to couple, each a name or {name: NAME, level: K} (one level of a 3-D variable, "
        "1 = model top); the first one is downscaled"));
    s.push_back(string_field("device", GET(device), {"auto", "cpu", "cuda", "cuda:N", "mps"},
                             "auto picks CUDA, then MPS, then CPU; cuda/cuda:N/mps fail when absent", valid_device));
    s.push_back(u64_field("seed", GET(seed), "seed of every random choice (training and sampling)"));
    s.push_back(string_field("on_error", GET(on_error), {"abort", "disable"},
                             "on a runtime failure: abort the run, or log once and stop working"));
    s.push_back(string_field("log.level", GET(log.level), {"debug", "info", "warning", "error"}, "lowest level printed"));
    s.push_back(bool_field("log.all_ranks", GET(log.all_ranks), "print training progress on every rank"));
    s.push_back(string_field("grid.type", GET(grid.type), {"icon", "latlon"}, "icon (triangles) or latlon (blocks)"));
    Field grid_file = string_field("grid.file", GET(grid.file), {}, "ICON grid file, or a CF file with the lat/lon coordinates");
    grid_file.required = true;
    s.push_back(grid_file);
    s.push_back(string_field("grid.variable", GET(grid.variable), {}, "latlon: variable whose coordinates define the grid (\"\" = first field)"));
    s.push_back(int_field("grid.coarse_level", GET(grid.coarse_level), 0, 20, "icon: patches are the cells of R2B<coarse_level>"));
    s.push_back(int_field("grid.block", GET(grid.block), 2, 4096, "latlon: patches are block x block cells"));
    s.push_back(string_field("coupling.entry_point", GET(coupling.entry_point),
                             {"EP_ATM_WRITE_OUTPUT_BEFORE", "EP_ATM_TIMELOOP_END", "EP_ATM_INTEGRATE_AFTER",
                              "or another ComIn EP_* name between EP_SECONDARY_CONSTRUCTOR and EP_FINISH"},
                             "ComIn entry point that couples (EP_...)",
                             [](const std::string& v) { return entry_point_id(v) > 1 && entry_point_id(v) < 41; }));
    s.push_back(int_field("coupling.every", GET(coupling.every), 1, kMax, "couple on every n-th call of the entry point"));
    s.push_back(string_field("coupling.communicator", GET(coupling.communicator), {"host", "plugin"},
                             "host, or plugin (needs a comm for the plugin in the namelist)"));
    s.push_back(int_field("coupling.trainer_rank", GET(coupling.trainer_rank), 0, kMax, "rank that gathers, trains and samples"));
    s.push_back(int_field("coupling.domain", GET(coupling.domain), 1, kMax, "ComIn domain id (1-based)"));
    s.push_back(bool_field("patch.static_features", GET(patch.static_features), "add sin lat, cos lat cos lon, cos lat sin lon to the context"));
    s.push_back(string_field("patch.orography", GET(patch.orography), {}, "host variable with the surface height for the context (\"\" = none)"));
    s.push_back(int_field("buffer.capacity", GET(buffer.capacity), 1, 100000, "coupling steps held in the rolling buffer (FIFO)"));
    s.push_back(string_field("model.arch", GET(model.arch), {"mlp", "unet"}, "denoiser: mlp, or unet for square latlon blocks"));
    s.push_back(int_field("model.hidden", GET(model.hidden), 1, 65536, "MLP hidden width"));
    s.push_back(int_field("model.depth", GET(model.depth), 1, 64, "MLP hidden layers"));
    s.push_back(int_field("model.time_embedding", GET(model.time_embedding), 2, 4096, "size of the sinusoidal step embedding"));
    s.push_back(int_field("model.unet_channels", GET(model.unet_channels), 1, 4096, "U-Net base channels"));
    s.push_back(int_field("model.diffusion_steps", GET(model.diffusion_steps), 2, 100000, "diffusion steps (training and DDPM sampling)"));
    s.push_back(string_field("model.schedule", GET(model.schedule), {"linear", "cosine"}, "noise schedule"));
    s.push_back(string_field("model.objective", GET(model.objective), {"v", "eps"}, "v or epsilon prediction"));
    s.push_back(bool_field("model.conservative", GET(model.conservative), "every sampled patch's mean equals its coarse value"));
    s.push_back(bool_field("train.async", GET(train.async), "train on a background thread while the host keeps stepping"));
    s.push_back(int_field("train.every", GET(train.every), 1, kMax, "coupling steps between training sessions"));
    s.push_back(int_field("train.min_steps", GET(train.min_steps), 1, kMax, "buffered steps before the first session"));
    s.push_back(int_field("train.epochs", GET(train.epochs), 1, kMax, "epochs per training session"));
    s.push_back(int_field("train.batch_size", GET(train.batch_size), 1, kMax, "minibatch size"));
    s.push_back(real_field("train.lr", GET(train.lr), 0.0, 10.0, true, "peak learning rate (AdamW)"));
    s.push_back(real_field("train.weight_decay", GET(train.weight_decay), 0.0, 1.0, false, "AdamW weight decay"));
    s.push_back(int_field("train.warmup_steps", GET(train.warmup_steps), 0, kMax, "linear learning-rate warm-up (optimizer steps)"));
    s.push_back(int_field("train.decay_steps", GET(train.decay_steps), 1, kMax, "cosine decay length after warm-up (optimizer steps)"));
    s.push_back(real_field("train.min_lr_ratio", GET(train.min_lr_ratio), 0.0, 1.0, false, "final learning rate as a fraction of lr"));
    s.push_back(real_field("train.grad_clip", GET(train.grad_clip), 0.0, 1e9, true, "gradient norm clipping"));
    s.push_back(real_field("train.ema_decay", GET(train.ema_decay), 0.0, 1.0, false, "decay of the weight average used for sampling"));
    s.push_back(bool_field("train.mixed_precision", GET(train.mixed_precision), "bf16 autocast (CUDA only)"));
    s.push_back(int_field("train.max_bad_steps", GET(train.max_bad_steps), 1, kMax, "consecutive NaN/Inf losses before restoring the last good weights"));
    s.push_back(int_field("train.threads", GET(train.threads), 0, 4096, "torch threads on the trainer rank; 0 = cores / local ranks, at least 1"));
    s.push_back(int_field("sample.every", GET(sample.every), 0, kMax, "coupling steps between samplings; 0 = only at the end"));
    s.push_back(int_field("sample.members", GET(sample.members), 1, 4096, "ensemble members per sampling"));
    s.push_back(string_field("sample.sampler", GET(sample.sampler), {"ddpm", "ddim"}, "ddpm (all diffusion steps) or ddim"));
    s.push_back(int_field("sample.steps", GET(sample.steps), 1, 100000, "ddim steps"));
    s.push_back(real_field("sample.eta", GET(sample.eta), 0.0, 1.0, false, "ddim noise per step: 0 deterministic .. 1 ancestral"));
    s.push_back(string_field("sample.output", GET(sample.output), {}, "NetCDF file for the sampled ensembles"));
    s.push_back(string_field("sample.write_back", GET(sample.write_back), {}, "host variable created for the ensemble mean (\"\" = none)"));
    s.push_back(string_field("checkpoint.dir", GET(checkpoint.dir), {}, "directory of the checkpoints"));
    s.push_back(int_field("checkpoint.every", GET(checkpoint.every), 0, kMax, "coupling steps between checkpoints; 0 = only at the end"));
    s.push_back(int_field("checkpoint.keep", GET(checkpoint.keep), 1, 100000, "checkpoints kept (oldest removed)"));
    s.push_back(string_field("checkpoint.resume", GET(checkpoint.resume), {},
                             "checkpoint file or directory to resume from; auto = the newest in checkpoint.dir if any "
                             "(restart chains); \"\" = fresh"));
    s.push_back(bool_field("checkpoint.at_host_restart", GET(checkpoint.at_host_restart),
                           "also checkpoint when the host writes its restart (EP_ATM_CHECKPOINT_AFTER)"));
    s.push_back(bool_field("checkpoint.buffer", GET(checkpoint.buffer), "snapshot the rolling buffer with each checkpoint"));
    s.push_back(string_field("testing.fault", GET(testing.fault),
                             {"none", "gather", "training", "checkpoint", "sampling", "output", "write_back"},
                             "fail on purpose there (tests of on_error; never in production)"));
    s.push_back(int_field("testing.fault_step", GET(testing.fault_step), 0, kMax, "coupling step of the failure; 0 = every occasion"));
    s.push_back(int_field("testing.fault_rank", GET(testing.fault_rank), -1, kMax, "rank that fails; -1 = the trainer rank"));
    return s;
  }();
  return fields;
}

#undef GET

/// Sections are the key prefixes ("train" for "train.lr").
std::map<std::string, std::vector<std::string>> children_of() {
  std::map<std::string, std::vector<std::string>> out;
  for (const auto& f : schema()) {
    const auto dot = f.key.find('.');
    const std::string parent = dot == std::string::npos ? "" : f.key.substr(0, dot);
    const std::string child = dot == std::string::npos ? f.key : f.key.substr(dot + 1);
    auto& list = out[parent];
    if (std::find(list.begin(), list.end(), child) == list.end()) list.push_back(child);
    if (!parent.empty()) {
      auto& top = out[""];
      if (std::find(top.begin(), top.end(), parent) == top.end()) top.push_back(parent);
    }
  }
  return out;
}

void apply_override(YAML::Node& root, const std::string& text, std::set<std::string>& overridden) {
  const auto eq = text.find('=');
  if (eq == std::string::npos || eq == 0) throw ConfigError("--set " + text + ": expected key.path=value");
  const std::string key = text.substr(0, eq);
  // "device.x=1" would turn the value of `device` into a section: say so here, where the
  // mistake is, rather than as a type error of `device`.
  const auto keys = config_keys();
  for (auto dot = key.find('.'); dot != std::string::npos; dot = key.find('.', dot + 1))
    if (std::find(keys.begin(), keys.end(), key.substr(0, dot)) != keys.end())
      throw ConfigError("--set " + text + ": " + key.substr(0, dot) + " takes a value, it has no keys below it (--set " +
                        key.substr(0, dot) + "=VALUE)");
  YAML::Node value;
  try {
    value = YAML::Load(text.substr(eq + 1));
  } catch (const YAML::Exception& e) {
    throw ConfigError("--set " + text + ": the value is not valid YAML (" + e.msg + ")");
  }
  if (!value.IsDefined() || value.IsNull()) value = YAML::Node("");
  const auto dot = key.find('.');
  if (dot == std::string::npos) {
    root[key] = value;
  } else {
    YAML::Node section = root[key.substr(0, dot)];
    if (!section.IsDefined() || section.IsNull()) root[key.substr(0, dot)] = YAML::Node(YAML::NodeType::Map);
    root[key.substr(0, dot)][key.substr(dot + 1)] = value;
  }
  overridden.insert(key);
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
  rule({"model.arch", "grid.type"}, [&] {
    return c.model.arch == "unet" && c.grid.type != "latlon"
               ? "model.arch unet needs square patches: set grid.type: latlon (ICON triangles use mlp)"
               : std::string();
  });
  rule({"sample.write_back", "fields"}, [&] {
    return c.sample.write_back == c.fields.front()
               ? "sample.write_back must name a new variable, not the input field \"" + c.fields.front() + "\""
               : std::string();
  });
  rule({"train.mixed_precision", "device"}, [&] {
    return c.train.mixed_precision && c.device == "cpu"
               ? "train.mixed_precision needs a CUDA device, but device is cpu"
               : std::string();
  });
}

}  // namespace

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
      if (ch == quote) quote = 0;
      else word += ch;
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
  std::vector<std::string> keys;
  for (const auto& f : schema()) keys.push_back(f.key);
  return keys;
}

std::vector<std::string> required_config_keys() {
  std::vector<std::string> keys;
  for (const auto& f : schema())
    if (f.required) keys.push_back(f.key);
  return keys;
}

Config parse_config(const std::string& yaml_text, const std::string& source, const std::vector<std::string>& overrides) {
  YAML::Node root;
  try {
    root = YAML::Load(yaml_text);
  } catch (const YAML::ParserException& e) {
    throw ConfigError(source + ":" + std::to_string(e.mark.line + 1) + ": not valid YAML: " + e.msg);
  }
  if (!root.IsDefined() || root.IsNull()) root = YAML::Node(YAML::NodeType::Map);
  if (!root.IsMap()) throw ConfigError(source + ": the config must be a mapping of keys (e.g. \"fields: [ts]\")");
  std::set<std::string> overridden;
  ErrorList errors;
  for (const auto& o : overrides) errors.collect("--set", [&] { apply_override(root, o, overridden); });

  const Origin origin{source, &overridden};
  const auto children = children_of();
  std::map<std::string, const Field*> by_key;
  for (const auto& f : schema()) by_key[f.key] = &f;

  Config config;
  config.source = source;
  std::set<std::string> seen;
  std::function<void(const YAML::Node&, const std::string&)> walk = [&](const YAML::Node& map, const std::string& prefix) {
    std::map<std::string, YAML::Mark> names;  // keys of this mapping so far, for duplicates
    for (auto it = map.begin(); it != map.end(); ++it) {
      if (!it->first.IsScalar()) {
        errors.add(prefix, origin.where(it->first, prefix) + ": keys must be names, got " + scalar_text(it->first) +
                               (prefix.empty() ? "" : " in " + prefix));
        continue;
      }
      const std::string name = it->first.Scalar();
      const std::string key = prefix.empty() ? name : prefix + "." + name;
      const std::string where = origin.where(it->first, key);
      // YAML forbids a key twice in one mapping; yaml-cpp would silently keep one of them.
      if (const auto dup = names.find(name); dup != names.end() && !overridden.count(key)) {
        errors.add(key, where + ": duplicate key " + key + " (first given on line " +
                            std::to_string(dup->second.line + 1) + ")");
        continue;
      }
      names.emplace(name, it->first.Mark());
      if (by_key.count(key)) {
        seen.insert(key);
        errors.collect(key, [&] {
          by_key[key]->read(it->second, config, origin.where(it->second.IsDefined() ? it->second : it->first, key));
        });
      } else if (children.count(key)) {
        if (it->second.IsMap()) {
          walk(it->second, key);
        } else {
          std::string l;
          for (const auto& c : children.at(key)) l += (l.empty() ? "" : ", ") + c;
          errors.add(key, where + ": " + key + " must be a mapping of keys (" + l + ")");
          for (const auto& c : children.at(key)) seen.insert(key + "." + c);  // not "missing" too
        }
      } else {
        std::string allowed;
        for (const auto& c : children.at(prefix)) allowed += (allowed.empty() ? "" : ", ") + c;
        errors.add(key, where + ": unknown key " + key + " (allowed" + (prefix.empty() ? "" : " in " + prefix) + ": " +
                            allowed + ")");
      }
    }
  };
  walk(root, "");
  for (const auto& f : schema())
    if (f.required && !seen.count(f.key)) errors.add(f.key, source + ": missing required key " + f.key + " (" + f.comment + ")");
  validate_together(config, errors);
  errors.throw_if_any();
  return config;
}

Config load_config(const std::string& path, const std::vector<std::string>& overrides) {
  std::ifstream in(path);
  if (!in) throw ConfigError(path + ": cannot open the config file (does it exist and is it readable?)");
  std::stringstream text;
  text << in.rdbuf();
  return parse_config(text.str(), path, overrides);
}

std::string to_yaml(const Config& config) {
  YAML::Node root(YAML::NodeType::Map);
  for (const auto& f : schema()) {
    const auto dot = f.key.find('.');
    if (dot == std::string::npos) {
      root[f.key] = f.write(config);
    } else {
      root[f.key.substr(0, dot)][f.key.substr(dot + 1)] = f.write(config);
    }
  }
  YAML::Emitter out;
  out.SetDoublePrecision(12);
  out << root;
  return std::string(out.c_str()) + "\n";
}

}  // namespace finecast::plugin
