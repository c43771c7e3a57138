// SPDX-License-Identifier: BSD-3-Clause
#include "plugin/comin_plugin/comin_library.hpp"

#include <dlfcn.h>

#include <mutex>

#include "coupling/error.hpp"

namespace finecast::plugin {
namespace {

/// ComIn's version record (t_comin_setup_version_info: three C ints, BIND(C)).
struct VersionInfo {
  int major, minor, patch;
};
/// ComIn's Fortran function comin_setup_utils::comin_setup_get_version, as gfortran names it. A
/// function result of a BIND(C) type of 12 bytes comes back as the C struct would (registers on
/// x86-64 and aarch64): the C prototype below is that ABI. Other compilers' builds name it
/// otherwise and are not called: the functions the library has tell its version instead.
using GetVersion = VersionInfo (*)();
constexpr const char* kGetVersionGfortran = "__comin_setup_utils_MOD_comin_setup_get_version";

/// ComIn 0.2's comin_var_get_pos (0-based C positions of the jc, jk, jb and container dimensions).
using GetPos = void (*)(t_comin_var_handle*, int*, int*, int*, int*);
/// ComIn 0.3's comin_var_get_dim_semantics.
using GetDimSemantics = void (*)(t_comin_var_handle*, int[5]);

struct Probe {
  CominLibrary library;
  GetPos get_pos = nullptr;
  GetDimSemantics get_dim_semantics = nullptr;
};

Probe probe_library() {
  Probe p;
  // The library that defines the functions the plugin links: where its ComIn calls go. (ICON
  // links its ComIn statically and exports none of it; the plugin's own libcomin.so.0 is the one.)
  Dl_info info{};
  void* handle = nullptr;
  if (dladdr(reinterpret_cast<void*>(&comin_var_get_shape), &info) != 0 && info.dli_fname != nullptr) {
    p.library.path = info.dli_fname;
    handle = dlopen(info.dli_fname, RTLD_NOW | RTLD_NOLOAD);
  }
  if (handle == nullptr) handle = dlopen("libcomin.so.0", RTLD_NOW | RTLD_NOLOAD);
  if (handle == nullptr) return p;  // cannot happen for a loaded library; then nothing optional is used
  p.get_dim_semantics = reinterpret_cast<GetDimSemantics>(dlsym(handle, "comin_var_get_dim_semantics"));
  p.get_pos = reinterpret_cast<GetPos>(dlsym(handle, "comin_var_get_pos"));
  p.library.has_dim_semantics = p.get_dim_semantics != nullptr;
  p.library.has_var_get_pos = p.get_pos != nullptr;
  if (auto get_version = reinterpret_cast<GetVersion>(dlsym(handle, kGetVersionGfortran))) {
    const VersionInfo v = get_version();
    if (v.major >= 0 && v.major < 100 && v.minor >= 0 && v.minor < 1000 && v.patch >= 0 && v.patch < 1000) {
      p.library.major = v.major;
      p.library.minor = v.minor;
      p.library.patch = v.patch;
      p.library.version_source = "comin_setup_get_version";
    }
  }
  dlclose(handle);  // RTLD_NOLOAD took a reference; the library stays loaded by the plugin's own
  return p;
}

const Probe& probe() {
  static std::once_flag once;
  static Probe p;
  std::call_once(once, [] { p = probe_library(); });
  return p;
}

}  // namespace

std::string CominLibrary::version() const {
  if (major >= 0) return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(patch);
  if (has_dim_semantics) return "0.3 or later";
  if (has_var_get_pos) return "0.2";
  return "unknown";
}

std::string CominLibrary::describe() const {
  std::string how = version_source.empty() ? "told by its functions" : version_source;
  std::string layout = has_dim_semantics ? "variable layout from comin_var_get_dim_semantics"
                                         : "variable layout from comin_var_get_pos (ComIn 0.2)";
  return "ComIn " + version() + " (" + (path.empty() ? std::string("libcomin") : path) + "; version " + how + "; " +
         layout + ")";
}

const CominLibrary& comin_library() { return probe().library; }

void dim_semantics_from_positions(int pos_jc, int pos_jk, int pos_jb, int pos_jn, const int shape[5],
                                  const std::string& name, int sem[5]) {
  for (int d = 0; d < 5; ++d) sem[d] = shape[d] == 1 ? COMIN_DIM_SEMANTICS_UNUSED : COMIN_DIM_SEMANTICS_UNDEF;
  auto place = [&](int pos, int what) {
    if (pos >= 0 && pos < 5) sem[pos] = what;
  };
  // A container (ICON's tracers) is a 4-D slice of a 5-D array: its container dimension has
  // extent 1 in the slice. When it lies behind the cells' block the slice is contiguous and reads
  // like any field; before it, the slice's elements lie a container's width apart, which ComIn
  // 0.2 does not hand out.
  if (pos_jn >= 0 && pos_jn < 5) {
    if (shape[pos_jn] == 1 && pos_jn < pos_jb)
      throw ConfigError("host variable \"" + name + "\" is a slice of a container along dimension " +
                        std::to_string(pos_jn + 1) + ", before its block dimension " + std::to_string(pos_jb + 1) +
                        " (ComIn 0.2's comin_var_get_pos): finecast cannot read that layout under ComIn " +
                        comin_library().version() + "; couple a variable that is not a container slice");
    place(pos_jn, shape[pos_jn] == 1 ? COMIN_DIM_SEMANTICS_UNUSED : COMIN_DIM_SEMANTICS_CONTAINER);
  }
  place(pos_jc, COMIN_DIM_SEMANTICS_NPROMA);
  place(pos_jk, COMIN_DIM_SEMANTICS_LEVEL);
  place(pos_jb, COMIN_DIM_SEMANTICS_BLOCK);
}

void var_dim_semantics(t_comin_var_handle* handle, const std::string& name, int sem[5]) {
  const Probe& p = probe();
  if (p.get_dim_semantics != nullptr) {
    p.get_dim_semantics(handle, sem);
    return;
  }
  if (p.get_pos == nullptr)
    throw ConfigError("the ComIn library " + p.library.path +
                      " has neither comin_var_get_dim_semantics (ComIn 0.3) nor comin_var_get_pos (ComIn 0.2): "
                      "finecast cannot tell the layout of host variable \"" +
                      name + "\"");
  int pos_jc = -1, pos_jk = -1, pos_jb = -1, pos_jn = -1;
  p.get_pos(handle, &pos_jc, &pos_jk, &pos_jb, &pos_jn);
  int shape[5] = {1, 1, 1, 1, 1};
  comin_var_get_shape(handle, shape);
  dim_semantics_from_positions(pos_jc, pos_jk, pos_jb, pos_jn, shape, name, sem);
}

}  // namespace finecast::plugin
