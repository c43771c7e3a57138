// SPDX-License-Identifier: BSD-3-Clause
#include "plugin/comin_plugin/host_fields.hpp"

#include <algorithm>

#include "coupling/error.hpp"
#include "plugin/comin_plugin/comin_library.hpp"
#include "plugin/comin_plugin/device_reader.hpp"
#include "plugin/comin_plugin/host_api.hpp"

namespace finecast::plugin {
namespace {

/// A host variable the plugin reads or writes. The variable list is checked first, so that an
/// unknown name gets finecast's message (the host's variables listed) instead of ComIn's abort.
HostField get_field(const Config& cfg, const std::string& name, int level, int domain, t_comin_entry_point ep, int flag,
                    const std::string& key) {
  if (!host_has_variable(name, domain))
    throw ConfigError(cfg.source + ": " + key + ": the host has no variable \"" + name + "\" on domain " +
                      std::to_string(domain) + " (its variables there: " + host_variable_names(domain) + ")");
  HostField f;
  f.name = name;
  f.level = level;
  f.datatype = int_metadata(name, domain, "datatype", COMIN_VAR_DATATYPE_DOUBLE);
  if (f.datatype != COMIN_VAR_DATATYPE_DOUBLE && f.datatype != COMIN_VAR_DATATYPE_FLOAT)
    throw ConfigError(cfg.source + ": " + key + ": host variable \"" + name +
                      "\" holds integers; finecast couples floating-point fields");
  f.handle = comin_var_get(1, &ep, descriptor(name, domain), flag);
  if (!f.handle) throw ConfigError(cfg.source + ": " + key + ": the host did not hand out variable \"" + name + "\"");
  return f;
}

/// The number of levels of a host variable (the extent of its LEVEL dimension; 1 = 2-D).
int level_count(const int shape[5], const int sem[5]) {
  for (int i = 0; i < 5; ++i)
    if (sem[i] == COMIN_DIM_SEMANTICS_LEVEL) return shape[i];
  return 1;
}

void locate_owned_cells(const Config& cfg, HostField& f, int domain, const std::string& key) {
  const int nproma = comin_descrdata_get_global_nproma();
  const int n_local = comin_descrdata_get_domain_cells_ncells(domain);
  const int* glb = nullptr;
  const int* decomp = nullptr;
  int shape3[3] = {0, 0, 0};  // the getters write the whole Fortran shape
  comin_descrdata_get_domain_cells_glb_index(domain, &glb, shape3);
  comin_descrdata_get_domain_cells_decomp_domain(domain, &decomp, shape3);
  int shape[5], sem[5];
  comin_var_get_shape(f.handle, shape);
  var_dim_semantics(f.handle, f.name, sem);
  const int nlev = level_count(shape, sem);
  // A 3-D variable is read at one level, which the config must name: level index 0 would be
  // ICON's model top, almost never what a user means.
  if (nlev > 1 && f.level == 0)
    throw ConfigError(cfg.source + ": " + key + ": host variable \"" + f.name + "\" has " + std::to_string(nlev) +
                      " levels; name one, e.g. {name: " + f.name + ", level: " + std::to_string(nlev) +
                      "} (1 = model top, " + std::to_string(nlev) + " = lowest)");
  if (f.level > nlev)
    throw ConfigError(cfg.source + ": " + key + ": host variable \"" + f.name + "\" has " +
                      (nlev == 1 ? std::string("no levels (it is 2-D)") : std::to_string(nlev) + " levels") +
                      ", level " + std::to_string(f.level) + " does not exist");
  f.owned = coupling::owned_cells(shape, sem, nproma, n_local, decomp, glb, std::max(f.level - 1, 0));
}

/// coupling.device_fields: the CUDA driver when this rank reads the fields from the host's device
/// copies, else null (auto on a host without a device or a rank without the driver; off).
std::unique_ptr<DeviceReader> device_reader(const Config& cfg) {
  const DeviceFields mode = cfg.coupling.device_fields;
  if (mode == DeviceFields::kOff) return nullptr;
  std::string why;
  std::unique_ptr<DeviceReader> reader;
  if (!comin_descrdata_get_global_has_device())
    why = "the host has no device (ComIn's has_device is false)";
  else
    reader = DeviceReader::open(why);
  if (!reader && mode == DeviceFields::kOn)
    throw ConfigError(cfg.source + ": coupling.device_fields: on, but " + why +
                      " (auto falls back to host access; off always uses it)");
  return reader;
}

/// With device fields: every field has a device copy; rank 0 says what a step copies.
void report_device_fields(const Config& cfg, const CouplingState& c) {
  int64_t per_step = 0, once = 0, whole = 0;
  for (size_t i = 0; i < c.fields.size(); ++i) {
    const HostField& f = c.fields[i];
    if (comin_var_get_device_ptr(f.handle) == nullptr)
      throw ConfigError(cfg.source + ": coupling.device_fields: host variable \"" + f.name +
                        "\" has no device copy; set coupling.device_fields: off");
    const int64_t element = f.datatype == COMIN_VAR_DATATYPE_FLOAT ? sizeof(float) : sizeof(double);
    int shape[5];
    comin_var_get_shape(f.handle, shape);
    // The orography and static covariates come once, or with patch.static_refresh the covariates
    // every step.
    const bool every_step =
        i < cfg.fields.size() || (cfg.patch.static_refresh && i >= static_cast<size_t>(first_static_input(cfg)));
    (every_step ? per_step : once) += f.owned.region.elements() * element;
    whole += int64_t{shape[0]} * shape[1] * shape[2] * shape[3] * shape[4] * element;
  }
  if (c.rank != 0) return;
  log::info("coupling.device_fields: reading " + std::to_string(c.fields.size()) +
            " field(s) from the host's device copies (COMIN_FLAG_DEVICE): " + std::to_string(per_step / 1024) +
            " KiB a coupling step on this rank, + " + std::to_string(once / 1024) +
            " KiB of static fields once; host access would have ComIn copy " + std::to_string(whole / 1024) +
            " KiB of whole fields to the host before every callback");
}

}  // namespace

std::string write_back_marker(const Config& cfg) { return "finecast ensemble mean of " + target_field(cfg); }

void couple_fields(PluginState& s) {
  const Config& cfg = s.config;
  CouplingState& c = *s.coupling;
  const int jg = cfg.coupling.domain;
  const auto ep = static_cast<t_comin_entry_point>(s.coupling_ep);
  c.device = device_reader(cfg);
  // With the device copies, ComIn copies none of these fields to the host before each callback.
  const int read = c.device ? COMIN_FLAG_READ | COMIN_FLAG_DEVICE : COMIN_FLAG_READ;
  for (size_t i = 0; i < cfg.fields.size(); ++i)
    c.fields.push_back(
        get_field(cfg, cfg.fields[i], i < cfg.field_levels.size() ? cfg.field_levels[i] : 0, jg, ep, read, "fields"));
  if (!cfg.patch.orography.empty())
    c.fields.push_back(get_field(cfg, cfg.patch.orography, 0, jg, ep, read, "patch.orography"));
  for (const auto& name : cfg.patch.statics)  // gathered once like the orography, or every step (static_refresh)
    c.fields.push_back(get_field(cfg, name, 0, jg, ep, read, "patch.static"));

  const auto first_static = static_cast<size_t>(first_static_input(cfg));
  for (size_t i = 0; i < c.fields.size(); ++i)
    locate_owned_cells(cfg, c.fields[i], jg,
                       i < cfg.fields.size() ? "fields"
                       : i < first_static    ? "patch.orography"
                                             : "patch.static");
  for (const auto& f : c.fields)
    if (f.owned.global_index != c.fields.front().owned.global_index)
      throw ConfigError(cfg.source + ": host variable \"" + f.name + "\" is not a cell field like \"" +
                        c.fields.front().name + "\" (different owned cells)");
  if (c.device) report_device_fields(cfg, c);
  if (!cfg.sample.write_back.empty()) {
    c.write_back = get_field(cfg, cfg.sample.write_back, 0, jg, ep, COMIN_FLAG_WRITE, "sample.write_back");
    // Only into finecast's own variable: a host that handed over one of its fields instead
    // (it keeps that field's metadata) would see a prognostic field overwritten.
    if (text_metadata(cfg.sample.write_back, jg, "long_name") != write_back_marker(cfg))
      throw ConfigError(cfg.source + ": sample.write_back: \"" + cfg.sample.write_back +
                        "\" is one of the host's own fields; write-back goes into a new variable that finecast "
                        "creates (choose a name the host does not have, e.g. " +
                        target_field(cfg) + "_finecast)");
    locate_owned_cells(cfg, c.write_back, jg, "sample.write_back");
  }
}

}  // namespace finecast::plugin
