// SPDX-License-Identifier: BSD-3-Clause
// comin.h: descriptive data (grid, decomposition, time step, simulation interval) in ICON's
// blocked Fortran layout. Array getters write the whole Fortran shape, as real ComIn does.
#include <string>
#include <vector>

#include "coupling/comin/comin.h"
#include "coupling/comin/host_state.hpp"

using finecast::coupling::comin_host::api_error;
using finecast::coupling::comin_host::current_state;
using finecast::coupling::comin_host::DomainArrays;
using finecast::coupling::comin_host::Host;

namespace {

Host::State* state_or_error(const char* routine) {
  Host::State* s = current_state();
  if (s == nullptr) api_error(routine, "no finecast host is running in this process");
  return s;
}

const DomainArrays* domain(int jg, const char* routine) {
  Host::State* s = state_or_error(routine);
  if (s == nullptr) return nullptr;
  if (jg < 1 || jg > static_cast<int>(s->domains.size())) {
    api_error(routine, "domain " + std::to_string(jg) + " does not exist (the host has " +
                           std::to_string(s->domains.size()) + ")");
    return nullptr;
  }
  return &s->domains[jg - 1];
}

// Hands out a blocked array: shape (nproma, nblks[, k]) with k = size / (nproma*nblks).
template <typename T>
void give_blocked(int jg, const char* routine, std::vector<T> DomainArrays::*member, const T** data,
                  int* shape) {
  *data = nullptr;
  const DomainArrays* d = domain(jg, routine);
  if (d == nullptr) {
    shape[0] = shape[1] = 0;
    return;
  }
  const std::vector<T>& a = d->*member;
  const int np = d->input.nproma;
  shape[0] = np;
  shape[1] = d->nblks;
  const size_t plane = static_cast<size_t>(np) * d->nblks;
  if (plane > 0 && a.size() > plane) shape[2] = static_cast<int>(a.size() / plane);
  *data = a.data();
}

void give_interval(finecast::coupling::comin_host::FortranString Host::State::*member,
                   const char* routine, char const** val, int* len) {
  *val = nullptr;
  *len = 0;
  if (Host::State* s = state_or_error(routine)) {
    *val = (s->*member).buffer.data();
    *len = (s->*member).length;
  }
}

int global_nproma(const char* routine) {
  Host::State* s = state_or_error(routine);
  if (s == nullptr) return 0;
  if (s->domains.empty()) {
    api_error(routine, "the host has added no domain yet");
    return 0;
  }
  return s->domains.front().input.nproma;
}

}  // namespace

extern "C" {

int comin_descrdata_get_global_nproma(void) {
  return global_nproma("comin_descrdata_get_global_nproma");
}

int comin_descrdata_get_global_n_dom(void) {
  Host::State* s = state_or_error("comin_descrdata_get_global_n_dom");
  return s == nullptr ? 0 : static_cast<int>(s->domains.size());
}

int comin_descrdata_get_domain_cells_ncells(int jg) {
  const DomainArrays* d = domain(jg, "comin_descrdata_get_domain_cells_ncells");
  return d == nullptr ? 0 : d->ncells;
}

int comin_descrdata_get_domain_cells_ncells_global(int jg) {
  const DomainArrays* d = domain(jg, "comin_descrdata_get_domain_cells_ncells_global");
  return d == nullptr ? 0 : d->input.n_cells_global;
}

int comin_descrdata_get_domain_cells_nblks(int jg) {
  const DomainArrays* d = domain(jg, "comin_descrdata_get_domain_cells_nblks");
  return d == nullptr ? 0 : d->nblks;
}

double comin_descrdata_get_timesteplength(int jg) {
  const DomainArrays* d = domain(jg, "comin_descrdata_get_timesteplength");
  return d == nullptr ? 0.0 : d->input.dt;
}

int comin_descrdata_get_index(int j) {
  const int np = global_nproma("comin_descrdata_get_index");
  return np <= 0 ? 0 : (j - 1) % np + 1;
}

int comin_descrdata_get_block(int j) {
  const int np = global_nproma("comin_descrdata_get_block");
  return np <= 0 ? 0 : (j - 1) / np + 1;
}

int comin_descrdata_index_lookup_glb2loc_cell(int jg, int global_idx) {
  const DomainArrays* d = domain(jg, "comin_descrdata_index_lookup_glb2loc_cell");
  if (d == nullptr) return -1;
  auto it = d->glb2loc.find(global_idx);
  return it == d->glb2loc.end() ? -1 : it->second;
}

void comin_descrdata_get_domain_cells_glb_index(int jg, const int** data, int* shape) {
  *data = nullptr;
  shape[0] = 0;
  const DomainArrays* d = domain(jg, "comin_descrdata_get_domain_cells_glb_index");
  if (d == nullptr) return;
  shape[0] = d->ncells;
  *data = d->glb_index.data();
}

#define FINECAST_BLOCKED_GETTER(T, name)                                                      \
  void comin_descrdata_get_domain_cells_##name(int jg, const T** data, int* shape) {          \
    give_blocked<T>(jg, "comin_descrdata_get_domain_cells_" #name, &DomainArrays::name, data, \
                    shape);                                                                   \
  }

FINECAST_BLOCKED_GETTER(int, decomp_domain)
FINECAST_BLOCKED_GETTER(double, clon)
FINECAST_BLOCKED_GETTER(double, clat)
FINECAST_BLOCKED_GETTER(double, area)
FINECAST_BLOCKED_GETTER(int, neighbor_idx)
FINECAST_BLOCKED_GETTER(int, neighbor_blk)
FINECAST_BLOCKED_GETTER(int, parent_glb_idx)
FINECAST_BLOCKED_GETTER(int, parent_glb_blk)
FINECAST_BLOCKED_GETTER(int, child_idx)
FINECAST_BLOCKED_GETTER(int, child_blk)
FINECAST_BLOCKED_GETTER(int, vertex_idx)
FINECAST_BLOCKED_GETTER(int, vertex_blk)
FINECAST_BLOCKED_GETTER(int, refin_ctrl)
#undef FINECAST_BLOCKED_GETTER

void comin_descrdata_get_simulation_interval_exp_start(char const** val, int* len) {
  give_interval(&Host::State::exp_start, "comin_descrdata_get_simulation_interval_exp_start", val,
                len);
}
void comin_descrdata_get_simulation_interval_exp_stop(char const** val, int* len) {
  give_interval(&Host::State::exp_stop, "comin_descrdata_get_simulation_interval_exp_stop", val,
                len);
}
void comin_descrdata_get_simulation_interval_run_start(char const** val, int* len) {
  give_interval(&Host::State::run_start, "comin_descrdata_get_simulation_interval_run_start", val,
                len);
}
void comin_descrdata_get_simulation_interval_run_stop(char const** val, int* len) {
  give_interval(&Host::State::run_stop, "comin_descrdata_get_simulation_interval_run_stop", val,
                len);
}

}  // extern "C"
