// SPDX-License-Identifier: BSD-3-Clause
// The Host: life-cycle phases, the plugin loader (dlopen + comin_main) and entry-point dispatch.
#include "coupling/comin/host.hpp"

#include <dlfcn.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <utility>

#include "coupling/comin/host_state.hpp"

namespace finecast::coupling::comin_host {
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
    throw InternalError(std::string("finecast host: ") + what + " is allowed in the " +
                        phase_name(wanted) + " phase only, the host is in the " +
                        phase_name(s.phase) + " phase");
}

// Runs one plugin function with the plugin made current; turns a finish request that the handler
// did not end the process for into an exception once the plugin has returned.
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

template <typename T>
void fill_blocked(std::vector<T>& out, int nproma, int nblks, int k, T pad) {
  out.assign(static_cast<size_t>(nproma) * nblks * k, pad);
}

// Offset of (local cell j, component c) in an (nproma, nblks, k) Fortran array.
size_t blocked_offset(int j, int c, int nproma, int nblks) {
  const int jc = j % nproma, jb = j / nproma;
  return static_cast<size_t>(jc) +
         static_cast<size_t>(nproma) * (jb + static_cast<size_t>(nblks) * c);
}

DomainArrays build_arrays(Domain d, int id) {
  const std::string where = "finecast host: domain " + std::to_string(id) + ": ";
  const int n = static_cast<int>(d.glb_index.size());
  if (d.nproma <= 0)
    throw ConfigError(where + "nproma must be > 0, got " + std::to_string(d.nproma));
  if (d.n_cells_global <= 0) throw ConfigError(where + "n_cells_global must be > 0");
  auto check = [&](size_t size, const char* name, bool optional) {
    if (optional && size == 0) return;
    if (size != static_cast<size_t>(n))
      throw ConfigError(where + name + " has " + std::to_string(size) + " entries, glb_index has " +
                        std::to_string(n) + " (one per local cell)");
  };
  check(d.decomp_domain.size(), "decomp_domain", false);
  check(d.clon.size(), "clon", false);
  check(d.clat.size(), "clat", false);
  check(d.area.size(), "area", false);
  check(d.neighbours.size(), "neighbours", false);
  check(d.parent_glb_index.size(), "parent_glb_index", true);
  check(d.children.size(), "children", true);
  check(d.vertices.size(), "vertices", true);
  check(d.refin_ctrl.size(), "refin_ctrl", true);

  DomainArrays a;
  a.ncells = n;
  const int np = d.nproma;
  a.nblks = n_blocks(n, np);
  const int nb = a.nblks;
  const double nan = std::numeric_limits<double>::quiet_NaN();
  a.glb_index = d.glb_index;
  // Padding of the last block: index 0 = "no cell", decomp_domain -1 and NaN coordinates, so a
  // reader that loops over nproma*nblks instead of ncells sees it at once.
  fill_blocked(a.decomp_domain, np, nb, 1, -1);
  fill_blocked(a.refin_ctrl, np, nb, 1, 0);
  fill_blocked(a.clon, np, nb, 1, nan);
  fill_blocked(a.clat, np, nb, 1, nan);
  fill_blocked(a.area, np, nb, 1, nan);
  fill_blocked(a.neighbor_idx, np, nb, 3, 0);
  fill_blocked(a.neighbor_blk, np, nb, 3, 0);
  fill_blocked(a.parent_glb_idx, np, nb, 1, 0);
  fill_blocked(a.parent_glb_blk, np, nb, 1, 0);
  fill_blocked(a.child_idx, np, nb, 4, 0);
  fill_blocked(a.child_blk, np, nb, 4, 0);
  fill_blocked(a.vertex_idx, np, nb, 3, 0);
  fill_blocked(a.vertex_blk, np, nb, 3, 0);
  for (int j = 0; j < n; ++j) {
    const int g = d.glb_index[j];
    if (g < 1 || g > d.n_cells_global)
      throw ConfigError(where + "glb_index[" + std::to_string(j) + "] = " + std::to_string(g) +
                        " is outside 1.." + std::to_string(d.n_cells_global));
    if (!a.glb2loc.emplace(g, j + 1).second)
      throw ConfigError(where + "global cell " + std::to_string(g) + " appears twice in glb_index");
    const size_t o = blocked_offset(j, 0, np, nb);
    a.decomp_domain[o] = d.decomp_domain[j];
    a.clon[o] = d.clon[j];
    a.clat[o] = d.clat[j];
    a.area[o] = d.area[j];
    if (!d.refin_ctrl.empty()) a.refin_ctrl[o] = d.refin_ctrl[j];
    if (!d.parent_glb_index.empty() && d.parent_glb_index[j] > 0) {
      a.parent_glb_idx[o] = block_index(d.parent_glb_index[j] - 1, np);
      a.parent_glb_blk[o] = block_number(d.parent_glb_index[j] - 1, np);
    }
    auto set_local = [&](std::vector<int>& idx, std::vector<int>& blk, int c, int local,
                         const char* name) {
      if (local < 0) return;
      if (local >= n)
        throw ConfigError(where + name + " of local cell " + std::to_string(j) + " is " +
                          std::to_string(local) + ", beyond the " + std::to_string(n) +
                          " local cells");
      idx[blocked_offset(j, c, np, nb)] = block_index(local, np);
      blk[blocked_offset(j, c, np, nb)] = block_number(local, np);
    };
    for (int c = 0; c < 3; ++c)
      set_local(a.neighbor_idx, a.neighbor_blk, c, d.neighbours[j][c], "neighbour");
    if (!d.children.empty())
      for (int c = 0; c < 4; ++c) set_local(a.child_idx, a.child_blk, c, d.children[j][c], "child");
    if (!d.vertices.empty())
      for (int c = 0; c < 3; ++c) {
        const int v = d.vertices[j][c];
        if (v < 0) continue;
        a.vertex_idx[blocked_offset(j, c, np, nb)] = block_index(v, np);
        a.vertex_blk[blocked_offset(j, c, np, nb)] = block_number(v, np);
      }
  }
  a.input = std::move(d);
  return a;
}

}  // namespace

Host::State* current_state() { return g_state; }

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

void print_line(bool is_warning, const std::string& msg) {
  if (print_sink()) {
    print_sink()(is_warning, msg);
    return;
  }
  std::FILE* out = is_warning ? stderr : stdout;
  std::fprintf(out, "%s%s\n", is_warning ? "WARNING: " : "", msg.c_str());
  std::fflush(out);
}

void fatal(const std::string& routine, const std::string& text) {
  Host::State* s = g_state;
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
  if (initialized && !finalized) MPI_Abort(s != nullptr ? s->comm : MPI_COMM_WORLD, 1);
  std::abort();
}

void api_error(const char* routine, const std::string& text) {
  Host::State* s = g_state;
  if (s != nullptr && s->errors_return) {
    s->error = COMIN_ERROR_STATUS;
    s->error_message = std::string(routine) + ": " + text;
    return;
  }
  fatal(routine, text);
}

Variable make_variable(const DomainArrays& d, const std::string& name, int domain, int nlev) {
  Variable v;
  v.name = name;
  v.domain = domain;
  v.shape = {d.input.nproma, nlev, d.nblks, 1, 1};
  v.dim_semantics = {COMIN_DIM_SEMANTICS_NPROMA, COMIN_DIM_SEMANTICS_LEVEL,
                     COMIN_DIM_SEMANTICS_BLOCK, COMIN_DIM_SEMANTICS_UNUSED,
                     COMIN_DIM_SEMANTICS_UNUSED};
  const int np = d.input.nproma;
  v.data.assign(static_cast<size_t>(np) * nlev * d.nblks, std::numeric_limits<double>::quiet_NaN());
  for (int j = 0; j < d.ncells; ++j)
    for (int k = 0; k < nlev; ++k)
      v.data[static_cast<size_t>(j % np) +
             static_cast<size_t>(np) * (k + static_cast<size_t>(nlev) * (j / np))] = 0.0;
  return v;
}

int Host::State::find_variable(const std::string& name, int domain) const {
  for (size_t i = 0; i < variables.size(); ++i)
    if (variables[i].name == name && variables[i].domain == domain) return static_cast<int>(i);
  return -1;
}

Host::Host(MPI_Comm host_comm, SimulationInterval interval) {
  if (g_state != nullptr)
    throw InternalError("finecast host: a Host already exists in this process");
  auto s = std::make_unique<State>();
  CHECK_MPI(MPI_Comm_dup(host_comm, &s->comm));
  CHECK_MPI(MPI_Comm_rank(s->comm, &s->rank));
  s->exp_start.set(interval.exp_start);
  s->exp_stop.set(interval.exp_stop);
  s->run_start.set(interval.run_start);
  s->run_stop.set(interval.run_stop);
  s->datetime.set(interval.run_start);
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
  // Plugin libraries stay loaded: their threads or atexit handlers may still refer to their code.
}

int Host::add_domain(Domain domain) {
  require_phase(*state_, Phase::kSetup, "add_domain");
  const int id = static_cast<int>(state_->domains.size()) + 1;
  if (id > 1 && domain.nproma != state_->domains.front().input.nproma)
    throw ConfigError("finecast host: domain " + std::to_string(id) + " has nproma " +
                      std::to_string(domain.nproma) + ", domain 1 has " +
                      std::to_string(state_->domains.front().input.nproma) + " (nproma is global)");
  state_->domains.push_back(build_arrays(std::move(domain), id));
  return id;
}

double* Host::add_variable(const std::string& name, int domain, int nlev) {
  require_phase(*state_, Phase::kSetup, "add_variable");
  if (domain < 1 || domain > static_cast<int>(state_->domains.size()))
    throw ConfigError("finecast host: variable '" + name + "': domain " + std::to_string(domain) +
                      " does not exist (" + std::to_string(state_->domains.size()) + " domains)");
  if (nlev < 1) throw ConfigError("finecast host: variable '" + name + "': nlev must be >= 1");
  if (name.empty() || name.size() > COMIN_MAX_LEN_VAR_NAME)
    throw ConfigError("finecast host: variable name '" + name + "' must have 1.." +
                      std::to_string(COMIN_MAX_LEN_VAR_NAME) + " characters");
  if (state_->find_variable(name, domain) >= 0)
    throw ConfigError("finecast host: variable '" + name + "' exists already on domain " +
                      std::to_string(domain));
  state_->variables.push_back(make_variable(state_->domains[domain - 1], name, domain, nlev));
  return state_->variables.back().data.data();
}

void Host::load_plugins(const std::vector<PluginSpec>& plugins) {
  require_phase(*state_, Phase::kSetup, "load_plugins");
  State& s = *state_;
  for (const PluginSpec& spec : plugins) {
    const std::string who =
        "finecast host: plugin '" + spec.name + "' (library '" + spec.library + "')";
    if (spec.library.empty()) throw ConfigError(who + ": no plugin_library given");
    dlerror();
    void* handle = dlopen(spec.library.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) {
      const char* why = dlerror();
      throw IoError(who + ": dlopen failed: " + (why ? why : "unknown reason"));
    }
    dlerror();
    void* sym = dlsym(handle, "comin_main");
    if (sym == nullptr)
      throw ConfigError(who + ": the library has no symbol comin_main (is it a ComIn plugin?)");
    Plugin p;
    p.spec = spec;
    p.handle = handle;
    p.name.set(spec.name);
    p.options.set(spec.options);
    if (!spec.comm.empty()) {
      auto it = s.plugin_comms.find(spec.comm);
      if (it == s.plugin_comms.end()) {
        MPI_Comm c;
        CHECK_MPI(MPI_Comm_dup(s.comm, &c));
        it = s.plugin_comms.emplace(spec.comm, c).first;
      }
      p.comm = it->second;
    }
    s.plugins.push_back(std::move(p));
    const int index = static_cast<int>(s.plugins.size()) - 1;
    s.phase = Phase::kPrimaryConstructor;
    struct Back {
      State& s;
      ~Back() { s.phase = Phase::kSetup; }
    } back{s};
    call_plugin(s, index, reinterpret_cast<void (*)()>(sym));
  }
  s.phase = Phase::kPluginsLoaded;
}

void Host::secondary_constructor() {
  require_phase(*state_, Phase::kPluginsLoaded, "secondary_constructor");
  State& s = *state_;
  s.phase = Phase::kSecondaryConstructor;
  s.current_ep = EP_SECONDARY_CONSTRUCTOR;
  s.current_domain = 1;
  for (const Callback& cb : s.callbacks[EP_SECONDARY_CONSTRUCTOR]) call_plugin(s, cb.plugin, cb.fn);
  s.current_ep = 0;
  s.phase = Phase::kRunning;
}

void Host::run_entry_point(t_comin_entry_point ep, int domain, const std::string& datetime) {
  require_phase(*state_, Phase::kRunning, "run_entry_point");
  if (ep == EP_SECONDARY_CONSTRUCTOR || ep == EP_FINISH || ep == EP_DESTRUCTOR || ep < 1 ||
      ep > EP_DESTRUCTOR)
    throw InternalError(std::string("finecast host: run_entry_point cannot run ") +
                        entry_point_name(ep) + " (use secondary_constructor() / finish())");
  State& s = *state_;
  s.datetime.set(datetime);
  s.current_ep = ep;
  s.current_domain = domain;
  struct Reset {
    State& s;
    ~Reset() { s.current_ep = 0; }
  } reset{s};
  for (const Callback& cb : s.callbacks[ep]) call_plugin(s, cb.plugin, cb.fn);
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
    s.current_domain = 1;
    for (const Callback& cb : s.callbacks[ep]) call_plugin(s, cb.plugin, cb.fn);
  }
}

double* Host::variable(const std::string& name, int domain) const {
  const int i = state_->find_variable(name, domain);
  return i < 0 ? nullptr : state_->variables[i].data.data();
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
  static const char* const names[] = {"EP_SECONDARY_CONSTRUCTOR",
                                      "EP_ATM_YAC_DEFCOMP_BEFORE",
                                      "EP_ATM_YAC_DEFCOMP_AFTER",
                                      "EP_ATM_YAC_SYNCDEF_BEFORE",
                                      "EP_ATM_YAC_SYNCDEF_AFTER",
                                      "EP_ATM_YAC_ENDDEF_BEFORE",
                                      "EP_ATM_YAC_ENDDEF_AFTER",
                                      "EP_ATM_INIT_FINALIZE",
                                      "EP_ATM_TIMELOOP_BEFORE",
                                      "EP_ATM_TIMELOOP_START",
                                      "EP_ATM_TIMELOOP_END",
                                      "EP_ATM_TIMELOOP_AFTER",
                                      "EP_ATM_INTEGRATE_BEFORE",
                                      "EP_ATM_INTEGRATE_START",
                                      "EP_ATM_INTEGRATE_END",
                                      "EP_ATM_INTEGRATE_AFTER",
                                      "EP_ATM_WRITE_OUTPUT_BEFORE",
                                      "EP_ATM_WRITE_OUTPUT_AFTER",
                                      "EP_ATM_CHECKPOINT_BEFORE",
                                      "EP_ATM_CHECKPOINT_AFTER",
                                      "EP_ATM_ADVECTION_BEFORE",
                                      "EP_ATM_ADVECTION_AFTER",
                                      "EP_ATM_PHYSICS_BEFORE",
                                      "EP_ATM_PHYSICS_AFTER",
                                      "EP_ATM_NUDGING_BEFORE",
                                      "EP_ATM_NUDGING_AFTER",
                                      "EP_ATM_SURFACE_BEFORE",
                                      "EP_ATM_SURFACE_AFTER",
                                      "EP_ATM_TURBULENCE_BEFORE",
                                      "EP_ATM_TURBULENCE_AFTER",
                                      "EP_ATM_MICROPHYSICS_BEFORE",
                                      "EP_ATM_MICROPHYSICS_AFTER",
                                      "EP_ATM_CONVECTION_BEFORE",
                                      "EP_ATM_CONVECTION_AFTER",
                                      "EP_ATM_RADIATION_BEFORE",
                                      "EP_ATM_RADIATION_AFTER",
                                      "EP_ATM_RADHEAT_BEFORE",
                                      "EP_ATM_RADHEAT_AFTER",
                                      "EP_ATM_GWDRAG_BEFORE",
                                      "EP_ATM_GWDRAG_AFTER",
                                      "EP_FINISH",
                                      "EP_DESTRUCTOR"};
  static_assert(sizeof(names) / sizeof(names[0]) == EP_DESTRUCTOR, "one name per entry point");
  return ep >= 1 && ep <= EP_DESTRUCTOR ? names[ep - 1] : "EP_UNKNOWN";
}

}  // namespace finecast::coupling::comin_host
