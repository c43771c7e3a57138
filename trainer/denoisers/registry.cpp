// SPDX-License-Identifier: BSD-3-Clause
// The registry: every architecture of list.hpp, by its entry function.
#include "trainer/denoisers/registry.hpp"

#include <stdexcept>

#include "trainer/denoisers/list.hpp"

namespace finecast::trainer::denoisers {

#define FINECAST_DECLARE_ENTRY(id, arch_name) \
  namespace arch_name {                       \
  const Entry& entry();                       \
  }
FINECAST_DENOISERS(FINECAST_DECLARE_ENTRY)
#undef FINECAST_DECLARE_ENTRY

const std::vector<const Entry*>& all() {
#define FINECAST_ENTRY(id, arch_name) &arch_name::entry(),
  static const std::vector<const Entry*> entries{FINECAST_DENOISERS(FINECAST_ENTRY)};
#undef FINECAST_ENTRY
  return entries;
}

const Entry& entry(Arch arch) {
  for (const Entry* e : all())
    if (e->arch == arch) return *e;
  throw std::logic_error("model.arch " + name(arch) + ": no denoiser registered (trainer/denoisers/list.hpp)");
}

ModelOptions tiny_options(Arch arch) {
  ModelOptions o;
  o.arch = arch;
  o.context_size = 3;
  o.patch_size = 16;
  o.time_embedding = 16;
  o.diffusion_steps = 20;
  return o;
}

int64_t unet_activation_floats(const ModelOptions& o) {
  // Full-resolution maps of c channels (about 16 kept for backward), half-resolution maps of
  // 2c channels (about 16), and the attention matrices of the lowest level.
  const int64_t P = o.patch_size, c = o.unet_channels, tokens = P / 4;
  int64_t per_sample = 16 * P * c + 16 * tokens * 2 * c + 6 * P;
  if (o.attention) per_sample += 3 * 4 * tokens * tokens + 8 * tokens * 2 * c;
  return per_sample;
}

}  // namespace finecast::trainer::denoisers
