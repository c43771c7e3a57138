// SPDX-License-Identifier: BSD-3-Clause
#include "plugin/comin_plugin/trainer_module.hpp"

#include <dlfcn.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>

#include "common/log.hpp"
#include "coupling/error.hpp"

namespace finecast::plugin {
namespace {

/// The module file: FINECAST_TRAINER_MODULE, else beside the library this function is in.
std::string module_path() {
  if (const char* env = std::getenv("FINECAST_TRAINER_MODULE"); env && *env) return env;
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&module_path), &info) == 0 || info.dli_fname == nullptr)
    return kTrainerModuleFile;  // the loader's search path
  return (std::filesystem::path(info.dli_fname).parent_path() / kTrainerModuleFile).string();
}

TrainerModule* load() {
  const std::string path = module_path();
  // RTLD_LOCAL: LibTorch's symbols stay out of the host's namespace.
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr)
    throw ConfigError("cannot load finecast's trainer module " + path + ": " + dlerror() +
                      " (it is installed beside libfinecast_comin.so; FINECAST_TRAINER_MODULE names another file)");
  using Entry = TrainerModule* (*)();
  auto entry = reinterpret_cast<Entry>(dlsym(handle, kTrainerModuleEntry));
  if (entry == nullptr)
    throw ConfigError("finecast's trainer module " + path + " has no " + kTrainerModuleEntry +
                      ": it belongs to another finecast build than libfinecast_comin.so");
  log::debug("Loaded the trainer module " + path);
  return entry();  // never dlclose'd: LibTorch does not support being unloaded
}

}  // namespace

TrainerModule& trainer_module() {
  static std::mutex mutex;
  static TrainerModule* module = nullptr;
  const std::lock_guard<std::mutex> lock(mutex);
  if (module == nullptr) module = load();
  return *module;
}

bool libtorch_loaded() {
  std::ifstream maps("/proc/self/maps");
  for (std::string line; std::getline(maps, line);)
    if (line.find("/libtorch_cpu.so") != std::string::npos || line.find("/libtorch.so") != std::string::npos)
      return true;
  return false;
}

double peak_resident_mib() {
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);)
    if (line.rfind("VmHWM:", 0) == 0) return std::strtod(line.c_str() + 6, nullptr) / 1024.0;  // kB
  return 0;
}

}  // namespace finecast::plugin
