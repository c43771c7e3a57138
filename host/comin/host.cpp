// SPDX-License-Identifier: BSD-3-Clause
// The Host: life-cycle phases, the plugin loader (dlopen, comin_plugin_init, primary
// constructor), the variables plugins request, and entry-point dispatch.
#include "host/comin/host.hpp"

#include <dlfcn.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <utility>

#include "comin_abi/entry_point_names.hpp"
#include "coupling/mpi/handshake.hpp"
#include "host/comin/descrdata_arrays.hpp"
#include "host/comin/host_state.hpp"

extern "C" {
// The hand-over a ComIn host makes to each plugin's libcomin (see comin_plugin_init in
// api_lifecycle.cpp); declared here, not in comin.h, because only hosts call it.
struct finecast_comin_version {
  int major, minor, patch;
};
void comin_plugin_init(void* state, const finecast_comin_version* host_version, const int* host_wp);
}

namespace finecast::host::comin {
namespace {

Host::State* g_state = nullptr;

FinishHandler& finish_handler() {
  static FinishHandler handler;
  return handler;
}

PrintSink& print_sink() {
  static PrintSink sink;
  return sink;
}

const char* phase_name(Phase phase) {
  switch (phase) {
    case Phase::kSetup:
      return "setup";
    case Phase::kPrimaryConstructor:
      return "primary constructor";
    case Phase::kPluginsLoaded:
      return "plugins loaded";
    case Phase::kSecondaryConstructor:
      return "secondary constructor";
    case Phase::kRunning:
      return "time loop";
    case Phase::kFinished:
      return "finished";
  }
  return "?";
}

void require_phase(const Host::State& s, Phase wanted, const char* what) {
  if (s.phase != wanted)
    throw InternalError(std::string("finecast host: ") + what + " is allowed in the " + phase_name(wanted) +
                        " phase only, the host is in the " + phase_name(s.phase) + " phase");
}

// Runs one plugin function with the plugin made current; turns a finish request that the
// handler did not end the process for into an exception once the plugin has returned.
void call_plugin(Host::State& s, int plugin, void (*fn)()) {
  struct Restore {
    Host::State& s;
    int plugin;
    ~Restore() { s.current_plugin = plugin; }
  } restore{s, s.current_plugin};
  s.current_plugin = plugin;
  fn();
  if (s.finish_requested) {
    s.finish_requested = false;
    throw PluginFinishError(s.finish_message);
  }
}

// ComIn's synchronisation of a GPU host's fields around a callback at a GPU entry point: before
// it (to_device false) every variable the plugin reads at `ep` without COMIN_FLAG_DEVICE is
// copied whole to the host; after it (to_device true) every one it writes, back to the device.
void sync_for_callback(Host::State& s, int ep, int plugin, bool to_device) {
  if (!s.has_device || !s.device.sync) return;
  const auto found = s.access.find({ep, plugin});
  if (found == s.access.end()) return;
  const int wanted = to_device ? COMIN_FLAG_WRITE : COMIN_FLAG_READ;
  for (const VariableAccess& a : found->second) {
    if ((a.flag & COMIN_FLAG_DEVICE) != 0 || (a.flag & wanted) == 0) continue;
    const Variable& v = s.variables[static_cast<size_t>(a.variable)];
    if (v.device == nullptr) continue;  // a variable the host keeps on the host only
    const auto t0 = std::chrono::steady_clock::now();
    s.device.sync(v.name, v.domain, to_device);
    s.device_sync.seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    s.device_sync.bytes += v.bytes();
    (to_device ? s.device_sync.to_device : s.device_sync.to_host) += 1;
  }
}

// A callback of a time-loop entry point, with the device synchronisation around it.
void call_at_entry_point(Host::State& s, int ep, int plugin, void (*fn)()) {
  sync_for_callback(s, ep, plugin, false);
  call_plugin(s, plugin, fn);
  sync_for_callback(s, ep, plugin, true);
}

// ComIn's plugin name when the namelist gives none: "<library file>(<constructor>)".
std::string default_plugin_name(const PluginSpec& spec) {
  const size_t slash = spec.library.find_last_of('/');
  return (slash == std::string::npos ? spec.library : spec.library.substr(slash + 1)) + "(" + spec.primary_constructor +
         ")";
}

// dlopen's message for a library that cannot be loaded, explained where finecast knows why.
std::string explain_dlopen_failure(const std::string& why) {
  if (why.find("_MOD_") != std::string::npos && why.find("comin") != std::string::npos)
    return why +
           "\n  This is a Fortran plugin: it uses ComIn's Fortran module interface, which "
           "finecast-host does not provide (it implements ComIn's C interface, comin.h). Run "
           "Fortran plugins under ICON or ComIn's comin_replay.";
  if (why.find("undefined symbol: yac_") != std::string::npos)
    return why + "\n  The plugin needs YAC, which finecast-host does not provide.";
  return why;
}

// The metadata every variable carries, with ComIn's defaults (docs: "Metadata" of ComIn's ICON
// documentation); the host or a request then sets what it knows.
CominMetadata default_metadata(int zaxis, int hgrid, int datatype, bool tracer) {
  return {{"zaxis_id", zaxis},
          {"hgrid_id", hgrid},
          {"restart", false},
          {"multi_timelevel", false},
          {"tracer", tracer},
          {"tracer_turb", false},
          {"tracer_conv", false},
          {"tracer_hlimit", 4},
          {"tracer_vlimit", 1},
          {"tracer_hadv", 2},
          {"tracer_vadv", 3},
          {"units", std::string()},
          {"standard_name", std::string()},
          {"long_name", std::string()},
          {"short_name", std::string()},
          {"datatype", datatype}};
}

// The variable a plugin's request creates: ComIn's defaults for the metadata it did not set.
Variable variable_for_request(const Host::State& s, const Request& r) {
  const auto get_int = [&](const char* key, int fallback) {
    auto it = r.metadata.find(key);
    if (it == r.metadata.end()) return fallback;
    if (const int* v = std::get_if<int>(&it->second)) return *v;
    throw ConfigError("variable '" + r.name + "': metadata '" + key + "' must be an integer");
  };
  const auto get_bool = [&](const char* key, bool fallback) {
    auto it = r.metadata.find(key);
    if (it == r.metadata.end()) return fallback;
    if (const bool* v = std::get_if<bool>(&it->second)) return *v;
    throw ConfigError("variable '" + r.name + "': metadata '" + key + "' must be logical");
  };
  const std::string who = "variable '" + r.name + "' (domain " + std::to_string(r.domain) + ") requested by plugin '" +
                          s.plugins[r.plugins.front()].spec.name + "'";
  const DomainArrays& d = s.domains[r.domain - 1];
  const int zaxis = get_int("zaxis_id", COMIN_ZAXIS_3D);
  const int hgrid = get_int("hgrid_id", COMIN_HGRID_UNSTRUCTURED_CELL);
  const int datatype = get_int("datatype", COMIN_VAR_DATATYPE_DOUBLE);
  const bool tracer = get_bool("tracer", false);
  if (hgrid != COMIN_HGRID_UNSTRUCTURED_CELL)
    throw ConfigError(who + ": hgrid_id " + std::to_string(hgrid) +
                      " (edges or vertices): finecast-host creates variables on cells only");
  int nlev = 0;
  if (zaxis == COMIN_ZAXIS_3D)
    nlev = d.input.nlev;
  else if (zaxis == COMIN_ZAXIS_3D_HALF)
    nlev = d.input.nlev + 1;
  else if (zaxis != COMIN_ZAXIS_2D)
    throw ConfigError(who + ": unsupported zaxis_id " + std::to_string(zaxis));
  if (datatype < COMIN_VAR_DATATYPE_DOUBLE || datatype > COMIN_VAR_DATATYPE_INT)
    throw ConfigError(who + ": unknown datatype " + std::to_string(datatype));
  if (tracer && datatype != COMIN_VAR_DATATYPE_DOUBLE) throw ConfigError(who + ": tracers must be double precision");
  Variable v = make_variable(d, r.name, r.domain, nlev, datatype);
  v.requested_by = r.plugins.front();
  v.exclusive = r.exclusive;
  v.metadata = default_metadata(zaxis, hgrid, datatype, tracer);
  for (const auto& [key, value] : r.metadata) v.metadata[key] = value;
  return v;
}

// After every primary constructor: each request becomes a variable (or shares the host's).
void apply_requests(Host::State& s) {
  std::map<int, int> tracers;  // per domain
  for (const Request& r : s.requests) {
    const int existing = s.find_variable(r.name, r.domain);
    if (existing >= 0) {
      if (r.exclusive)
        throw ConfigError("plugin '" + s.plugins[r.plugins.front()].spec.name + "' requested variable '" + r.name +
                          "' (domain " + std::to_string(r.domain) +
                          ") exclusively, but it is one of the host's own fields; an exclusive "
                          "request creates a new variable and cannot share an existing one");
      continue;  // a shared request of a host field: the plugin uses the host's variable
    }
    Variable v = variable_for_request(s, r);
    if (std::get<bool>(v.metadata["tracer"])) v.ncontained = ++tracers[r.domain];
    s.variables.push_back(std::move(v));
  }
}

}  // namespace

Host::State* current_state() { return g_state; }

void* Variable::data() {
  switch (datatype) {
    case COMIN_VAR_DATATYPE_FLOAT:
      return f32.data();
    case COMIN_VAR_DATATYPE_INT:
      return i32.data();
    default:
      return f64.data();
  }
}

int64_t Variable::bytes() const {
  return static_cast<int64_t>(f64.size() * sizeof(double) + f32.size() * sizeof(float) + i32.size() * sizeof(int));
}

FinishHandler set_finish_handler(FinishHandler handler) {
  FinishHandler old = std::move(finish_handler());
  finish_handler() = std::move(handler);
  return old;
}

PrintSink set_print_sink(PrintSink sink) {
  PrintSink old = std::move(print_sink());
  print_sink() = std::move(sink);
  return old;
}

void print_line(bool is_warning, const std::string& line) {
  if (print_sink()) {
    print_sink()(is_warning, line);
    return;
  }
  std::fprintf(stderr, "%s\n", line.c_str());  // ComIn writes its messages to stderr
  std::fflush(stderr);
}

void fatal(const std::string& routine, const std::string& text) {
  Host::State* s = g_state;
  // ComIn ignores a finish request made inside EP_FINISH itself (the host is finishing).
  if (s != nullptr && s->current_ep == EP_FINISH) return;
  std::string who;
  if (s != nullptr) {
    who = " (rank " + std::to_string(s->rank);
    if (s->current_plugin >= 0) who += ", plugin '" + s->plugins[s->current_plugin].spec.name + "'";
    if (s->current_ep > 0) who += std::string(", ") + Host::entry_point_name(s->current_ep);
    who += ")";
  }
  const std::string message = routine + who + ": " + text;
  if (finish_handler()) {
    finish_handler()(routine, text);
    // The handler returned: let the host stop at the next opportunity.
    if (s != nullptr) {
      s->finish_requested = true;
      s->finish_message = message;
    }
    return;
  }
  std::fprintf(stderr, "ComIn FATAL ERROR in %s\n", message.c_str());
  std::fflush(stderr);
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (initialized && !finalized) MPI_Abort(MPI_COMM_WORLD, 1);
  std::abort();
}

void api_error(t_comin_error_code code, const char* routine, const std::string& detail) {
  Host::State* s = g_state;
  if (s != nullptr) {
    s->error = code;
    s->error_detail = std::string(routine) + ": " + detail;
    if (s->plugin() != nullptr && s->plugin()->errors_return) return;
  }
  fatal(routine, std::string(code >= COMIN_ERROR_STATUS ? "ERROR: " : "") + error_message(code) + " " + detail);
}

Host::State* state_or_fatal(const char* routine) {
  if (g_state == nullptr) fatal(routine, "no ComIn host is running in this process");
  return g_state;
}

DomainArrays* domain_or_fatal(int jg, const char* routine) {
  Host::State* s = state_or_fatal(routine);
  if (s == nullptr) return nullptr;
  if (jg < 1 || jg > static_cast<int>(s->domains.size())) {
    fatal(routine,
          "domain " + std::to_string(jg) + " does not exist (the host has " + std::to_string(s->domains.size()) + ")");
    return nullptr;
  }
  return &s->domains[jg - 1];
}

Variable make_variable(const DomainArrays& d, const std::string& name, int domain_id, int nlev, int datatype) {
  Variable v;
  v.name = name;
  v.domain = domain_id;
  v.datatype = datatype;
  const int np = d.input.nproma, nb = d.cells.nblks, levels = std::max(nlev, 1);
  if (nlev == 0) {
    v.shape = {np, nb, 1, 1, 1};
    v.dim_semantics = {COMIN_DIM_SEMANTICS_NPROMA, COMIN_DIM_SEMANTICS_BLOCK, COMIN_DIM_SEMANTICS_UNUSED,
                       COMIN_DIM_SEMANTICS_UNUSED, COMIN_DIM_SEMANTICS_UNUSED};
  } else {
    v.shape = {np, nlev, nb, 1, 1};
    v.dim_semantics = {COMIN_DIM_SEMANTICS_NPROMA, COMIN_DIM_SEMANTICS_LEVEL, COMIN_DIM_SEMANTICS_BLOCK,
                       COMIN_DIM_SEMANTICS_UNUSED, COMIN_DIM_SEMANTICS_UNUSED};
  }
  const size_t total = static_cast<size_t>(np) * levels * nb;
  // Valid cells start at 0; the padding of the last block is NaN (or INT_MIN), so that a reader
  // that loops over nproma*nblks instead of ncells sees it at once.
  auto fill = [&](auto& vec, auto pad) {
    vec.assign(total, pad);
    for (int j = 0; j < d.cells.n; ++j)
      for (int k = 0; k < levels; ++k)
        vec[static_cast<size_t>(j % np) + static_cast<size_t>(np) * (k + static_cast<size_t>(levels) * (j / np))] = 0;
  };
  if (datatype == COMIN_VAR_DATATYPE_FLOAT)
    fill(v.f32, std::numeric_limits<float>::quiet_NaN());
  else if (datatype == COMIN_VAR_DATATYPE_INT)
    fill(v.i32, std::numeric_limits<int>::min());
  else
    fill(v.f64, std::numeric_limits<double>::quiet_NaN());
  return v;
}

int Host::State::find_variable(const std::string& name, int domain) const {
  for (size_t i = 0; i < variables.size(); ++i)
    if (variables[i].name == name && variables[i].domain == domain) return static_cast<int>(i);
  return -1;
}

t_comin_var_handle* Host::State::handle(int variable) {
  auto it = handle_of.find(variable);
  if (it != handle_of.end()) return it->second;
  handles.push_back({variable});
  handle_of[variable] = &handles.back();
  return &handles.back();
}

Host::Host(MPI_Comm host_comm, SimulationInterval interval, GlobalData global, MPI_Comm comin_comm) {
  if (g_state != nullptr) throw InternalError("finecast host: a Host already exists in this process");
  auto s = std::make_unique<State>();
  CHECK_MPI(MPI_Comm_dup(host_comm, &s->comm));
  // Not duplicated: a duplicate is collective over the external processes too, which do not take
  // part; the handshake in load_plugins is ComIn's only use of it.
  s->comin = comin_comm == MPI_COMM_NULL ? s->comm : comin_comm;
  CHECK_MPI(MPI_Comm_rank(s->comm, &s->rank));
  s->global = std::move(global);
  s->exp_start.set(interval.exp_start);
  s->exp_stop.set(interval.exp_stop);
  s->run_start.set(interval.run_start);
  s->run_stop.set(interval.run_stop);
  s->datetime.set(interval.run_start);
  s->host_revision.set(s->global.host_revision);
  s->empty.set("");
  state_ = std::move(s);
  g_state = state_.get();
}

Host::~Host() {
  g_state = nullptr;
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) {
    for (auto& [name, comm] : state_->plugin_comms) MPI_Comm_free(&comm);
    MPI_Comm_free(&state_->comm);
  }
  // Plugin libraries stay loaded (ComIn does not dlclose either): their threads or atexit
  // handlers may still refer to their code.
}

int Host::add_domain(Domain domain) {
  require_phase(*state_, Phase::kSetup, "add_domain");
  const int id = static_cast<int>(state_->domains.size()) + 1;
  if (id > 1 && domain.nproma != state_->domains.front().input.nproma)
    throw ConfigError("finecast host: domain " + std::to_string(id) + " has nproma " + std::to_string(domain.nproma) +
                      ", domain 1 has " + std::to_string(state_->domains.front().input.nproma) + " (nproma is global)");
  if (id == 1 ? domain.parent_id != 0 : domain.parent_id < 1 || domain.parent_id >= id)
    throw ConfigError("finecast host: domain " + std::to_string(id) + " has parent_id " +
                      std::to_string(domain.parent_id) + "; domain 1 has 0, a nest the id of an earlier domain");
  state_->domains.push_back(build_domain_arrays(std::move(domain), id));
  state_->global.max_dom = std::max(state_->global.max_dom, id);
  return id;
}

double* Host::add_variable(const std::string& name, int domain, const VariableInfo& info) {
  require_phase(*state_, Phase::kSetup, "add_variable");
  if (domain < 1 || domain > static_cast<int>(state_->domains.size()))
    throw ConfigError("finecast host: variable '" + name + "': domain " + std::to_string(domain) + " does not exist (" +
                      std::to_string(state_->domains.size()) + " domains)");
  if (info.nlev < 0) throw ConfigError("finecast host: variable '" + name + "': nlev must be >= 0");
  if (name.empty() || name.size() > COMIN_MAX_LEN_VAR_NAME)
    throw ConfigError("finecast host: variable name '" + name + "' must have 1.." +
                      std::to_string(COMIN_MAX_LEN_VAR_NAME) + " characters");
  if (state_->find_variable(name, domain) >= 0)
    throw ConfigError("finecast host: variable '" + name + "' exists already on domain " + std::to_string(domain));
  Variable v = make_variable(state_->domains[domain - 1], name, domain, info.nlev, COMIN_VAR_DATATYPE_DOUBLE);
  v.metadata = default_metadata(info.nlev == 0 ? COMIN_ZAXIS_2D : COMIN_ZAXIS_3D, COMIN_HGRID_UNSTRUCTURED_CELL,
                                COMIN_VAR_DATATYPE_DOUBLE, false);
  v.metadata["restart"] = info.restart;
  v.metadata["units"] = info.units;
  v.metadata["standard_name"] = info.standard_name;
  v.metadata["long_name"] = info.long_name;
  v.metadata["short_name"] = name;
  state_->variables.push_back(std::move(v));
  return state_->variables.back().f64.data();
}

namespace {

/// The plugins' communicators, as ComIn makes them before the primary constructors: one MPI
/// handshake over the model's ranks and the external processes with the plugins' `comm` names
/// (each once) and the host's own group. Collective over them.
void make_plugin_comms(Host::State& s, const std::vector<PluginSpec>& plugins) {
  std::vector<std::string> names;
  for (const PluginSpec& p : plugins)
    if (!p.comm.empty() && std::find(names.begin(), names.end(), p.comm) == names.end()) names.push_back(p.comm);
  names.push_back(coupling::kCominHostGroup);
  std::vector<MPI_Comm> comms = coupling::mpi_handshake(s.comin, names);
  MPI_Comm_free(&comms.back());  // the host's ranks: s.comm already
  for (size_t i = 0; i + 1 < names.size(); ++i) s.plugin_comms.emplace(names[i], comms[i]);
}

}  // namespace

void Host::load_plugins(const std::vector<PluginSpec>& plugins) {
  require_phase(*state_, Phase::kSetup, "load_plugins");
  State& s = *state_;
  if (s.domains.empty()) throw InternalError("finecast host: load_plugins before add_domain");
  make_plugin_comms(s, plugins);
  for (const PluginSpec& given : plugins) {
    PluginSpec spec = given;
    if (spec.primary_constructor.empty()) spec.primary_constructor = "comin_main";
    if (spec.name.empty()) spec.name = default_plugin_name(spec);
    const std::string who = "finecast host: plugin '" + spec.name + "' (library '" + spec.library + "')";
    if (spec.library.empty()) throw ConfigError(who + ": no plugin_library given");
    dlerror();
    void* handle = dlopen(spec.library.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) {
      const char* why = dlerror();
      throw IoError(who + ": cannot load the library: " + explain_dlopen_failure(why ? why : "unknown reason"));
    }
    // As ComIn does: the plugin's own libcomin (found through its dependencies) must accept
    // this host's state, version and precision.
    dlerror();
    auto* init = reinterpret_cast<decltype(&comin_plugin_init)>(dlsym(handle, "comin_plugin_init"));
    if (init == nullptr)
      throw ConfigError(who +
                        ": cannot load 'comin_plugin_init' from the plugin: a ComIn plugin "
                        "links libcomin.so.0, which defines it (" +
                        std::string(dlerror() ? "symbol not found" : "") + ")");
    if (init != &comin_plugin_init) {
      Dl_info info{};
      dladdr(reinterpret_cast<void*>(init), &info);
      throw ConfigError(who + ": its comin_plugin_init comes from " +
                        (info.dli_fname ? info.dli_fname : "another library") +
                        ", not from the libcomin.so.0 of this host; the plugin must link "
                        "libcomin by its SONAME libcomin.so.0");
    }
    dlerror();
    void* main = dlsym(handle, spec.primary_constructor.c_str());
    if (main == nullptr)
      throw ConfigError(who + ": cannot load the primary constructor '" + spec.primary_constructor +
                        "' from the plugin (is it a ComIn plugin?)");
    Plugin p;
    p.spec = spec;
    p.id = static_cast<int>(s.plugins.size()) + 1;
    p.handle = handle;
    p.name.set(spec.name);
    p.options.set(spec.options);
    p.comm_name.set(spec.comm);
    if (!spec.comm.empty()) p.comm = s.plugin_comms.at(spec.comm);
    s.plugins.push_back(std::move(p));
    const int index = static_cast<int>(s.plugins.size()) - 1;
    s.phase = Phase::kPrimaryConstructor;
    struct Back {
      State& s;
      ~Back() { s.phase = Phase::kSetup; }
    } back{s};
    const finecast_comin_version version{COMIN_VERSION_MAJOR, COMIN_VERSION_MINOR, COMIN_VERSION_PATCH};
    const int wp = 8;  // C_DOUBLE's kind: the host's working precision is double
    s.error = COMIN_SUCCESS;
    init(&s, &version, &wp);
    if (s.error != COMIN_SUCCESS)
      throw ConfigError(who + ": comin_plugin_init refused this host: " + error_message(s.error));
    call_plugin(s, index, reinterpret_cast<void (*)()>(main));
  }
  apply_requests(s);
  s.phase = Phase::kPluginsLoaded;
}

void Host::secondary_constructor() {
  require_phase(*state_, Phase::kPluginsLoaded, "secondary_constructor");
  State& s = *state_;
  s.phase = Phase::kSecondaryConstructor;
  s.current_ep = EP_SECONDARY_CONSTRUCTOR;
  s.current_domain = COMIN_DOMAIN_OUTSIDE_LOOP;
  for (const auto& [plugin, fn] : s.callbacks[EP_SECONDARY_CONSTRUCTOR]) call_plugin(s, plugin, fn);
  s.current_ep = 0;
  s.phase = Phase::kRunning;
}

void Host::run_entry_point(t_comin_entry_point ep, int domain, const std::string& datetime) {
  require_phase(*state_, Phase::kRunning, "run_entry_point");
  if (ep == EP_SECONDARY_CONSTRUCTOR || ep == EP_FINISH || ep == EP_DESTRUCTOR || ep < 1 || ep > EP_DESTRUCTOR)
    throw InternalError(std::string("finecast host: run_entry_point cannot run ") + entry_point_name(ep) +
                        " (use secondary_constructor() / finish())");
  if (domain != COMIN_DOMAIN_OUTSIDE_LOOP && (domain < 1 || domain > static_cast<int>(state_->domains.size())))
    throw InternalError("finecast host: run_entry_point on domain " + std::to_string(domain) +
                        ", which does not exist");
  State& s = *state_;
  s.datetime.set(datetime);
  s.current_ep = ep;
  s.current_domain = domain;
  struct Reset {
    State& s;
    ~Reset() { s.current_ep = 0; }
  } reset{s};
  for (const auto& [plugin, fn] : s.callbacks[ep]) call_at_entry_point(s, ep, plugin, fn);
}

void Host::finish() {
  require_phase(*state_, Phase::kRunning, "finish");
  State& s = *state_;
  s.phase = Phase::kFinished;
  struct Reset {
    State& s;
    ~Reset() { s.current_ep = 0; }
  } reset{s};
  for (int ep : {EP_FINISH, EP_DESTRUCTOR}) {
    s.current_ep = ep;
    s.current_domain = COMIN_DOMAIN_OUTSIDE_LOOP;
    for (const auto& [plugin, fn] : s.callbacks[ep]) call_at_entry_point(s, ep, plugin, fn);
  }
}

void Host::set_device(DeviceSupport device) {
  State& s = *state_;
  if (s.phase != Phase::kSetup)
    throw InternalError("finecast host: set_device must come before load_plugins (plugins ask for device access then)");
  if (!device.sync) throw InternalError("finecast host: set_device needs a sync function");
  s.device_name.set(device.name);
  s.device_vendor.set(device.vendor);
  s.device_driver.set(device.driver);
  s.device = std::move(device);
  s.has_device = true;
}

void Host::set_device_pointer(const std::string& name, int domain, void* device_ptr) {
  State& s = *state_;
  if (!s.has_device) throw InternalError("finecast host: set_device_pointer(" + name + ") before set_device");
  const int i = s.find_variable(name, domain);
  if (i < 0) throw InternalError("finecast host: set_device_pointer: no variable " + name);
  s.variables[static_cast<size_t>(i)].device = device_ptr;
}

DeviceSyncStats Host::device_sync_stats() const { return state_->device_sync; }

double* Host::variable(const std::string& name, int domain) const {
  const int i = state_->find_variable(name, domain);
  if (i < 0 || state_->variables[i].datatype != COMIN_VAR_DATATYPE_DOUBLE) return nullptr;
  return state_->variables[i].f64.data();
}

int64_t Host::variable_bytes(const std::string& name, int domain) const {
  const int i = state_->find_variable(name, domain);
  return i < 0 ? 0 : state_->variables[static_cast<size_t>(i)].bytes();
}

std::vector<std::string> Host::variable_names(int domain) const {
  std::vector<std::string> names;
  for (const Variable& v : state_->variables)
    if (v.domain == domain) names.push_back(v.name);
  return names;
}

int Host::n_callbacks(t_comin_entry_point ep) const {
  auto it = state_->callbacks.find(ep);
  return it == state_->callbacks.end() ? 0 : static_cast<int>(it->second.size());
}

Phase Host::phase() const { return state_->phase; }
MPI_Comm Host::comm() const { return state_->comm; }
int Host::rank() const { return state_->rank; }

const char* Host::entry_point_name(int ep) {
  static_assert(comin_abi::kEntryPointCount == EP_DESTRUCTOR, "one name per entry point");
  return ep >= 1 && ep <= EP_DESTRUCTOR ? comin_abi::kEntryPointNames[ep - 1] : "UNKNOWN";
}

}  // namespace finecast::host::comin
