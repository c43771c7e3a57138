// SPDX-License-Identifier: BSD-3-Clause
// comin.h: descriptive data (global data, grid, decomposition, time) in ICON's blocked Fortran
// layout. Array getters write the array's whole Fortran shape, as ComIn does; data the host
// does not offer is a fatal error naming it, as in ComIn (where it would be unassociated).
#include <algorithm>
#include <cstdlib>
#include <string>

#include "host/comin/host_state.hpp"

namespace ch = finecast::host::comin;
using ch::DomainArrays;
using ch::EntityArrays;
using ch::FortranArray;
using ch::Host;

namespace {

const char* entity_name(EntityArrays DomainArrays::*entity) {
  if (entity == &DomainArrays::cells) return "cells";
  if (entity == &DomainArrays::verts) return "verts";
  return "edges";
}

const EntityArrays* entity_or_fatal(int jg, EntityArrays DomainArrays::*entity, const char* routine) {
  const DomainArrays* d = ch::domain_or_fatal(jg, routine);
  if (d == nullptr) return nullptr;
  const EntityArrays& e = d->*entity;
  if (!e.present) {
    ch::fatal(routine,
              std::string("this host offers no ") + entity_name(entity) + " data for domain " + std::to_string(jg));
    return nullptr;
  }
  return &e;
}

template <typename T>
void give_array(const FortranArray<T>& a, const T** data, int* shape, const char* routine) {
  *data = nullptr;
  if (!a.present()) {
    ch::fatal(routine, "this host does not offer this array");
    return;
  }
  for (size_t i = 0; i < a.shape.size(); ++i) shape[i] = a.shape[i];
  *data = a.data.data();
}

template <typename T>
void give_entity_array(int jg, EntityArrays DomainArrays::*entity, FortranArray<T> EntityArrays::*array, const T** data,
                       int* shape, const char* routine) {
  *data = nullptr;
  if (const EntityArrays* e = entity_or_fatal(jg, entity, routine)) give_array(e->*array, data, shape, routine);
}

int entity_count(int jg, EntityArrays DomainArrays::*entity, int EntityArrays::*count, const char* routine) {
  const EntityArrays* e = entity_or_fatal(jg, entity, routine);
  return e == nullptr ? 0 : e->*count;
}

void give_string(const ch::FortranString& str, char const** val, int* len) {
  *val = str.buffer.data();
  *len = str.length;
}

void interval(ch::FortranString Host::State::*member, const char* routine, char const** val, int* len) {
  *val = nullptr;
  *len = 0;
  if (Host::State* s = ch::state_or_fatal(routine)) give_string(s->*member, val, len);
}

int global_nproma(const char* routine) {
  Host::State* s = ch::state_or_fatal(routine);
  if (s == nullptr) return 0;
  if (s->domains.empty()) {
    ch::fatal(routine, "the host has added no domain yet");
    return 0;
  }
  return s->domains.front().input.nproma;
}

// ICON's get_indices_c: the (start, end) cell index within block i_blk of a loop from zone
// irl_start to zone irl_end.
void loop_indices(int jg, EntityArrays DomainArrays::*entity, int min_rl, int max_rl, int i_blk, int i_startblk,
                  int i_endblk, int* i_startidx, int* i_endidx, int irl_start, int irl_end, const char* routine) {
  *i_startidx = 1;
  *i_endidx = 0;
  const EntityArrays* e = entity_or_fatal(jg, entity, routine);
  if (e == nullptr) return;
  for (int irl : {irl_start, irl_end})
    if (irl < min_rl || irl > max_rl) {
      ch::fatal(routine, "refin_ctrl zone " + std::to_string(irl) + " is outside " + std::to_string(min_rl) + ".." +
                             std::to_string(max_rl));
      return;
    }
  const int nproma = global_nproma(routine);
  *i_startidx = i_blk == i_startblk ? std::max(1, e->start_index.data[irl_start - min_rl]) : 1;
  *i_endidx = i_blk == i_endblk ? e->end_index.data[irl_end - min_rl] : nproma;
}

int npromz(int jg, EntityArrays DomainArrays::*entity, const char* routine) {
  const EntityArrays* e = entity_or_fatal(jg, entity, routine);
  return e == nullptr ? 0 : e->n - (e->nblks - 1) * global_nproma(routine);
}

}  // namespace

// One C getter per (entity, array): the name says which, e.g.
// comin_descrdata_get_domain_cells_neighbor_idx -> cells.neighbor_idx.
#define FINECAST_ENTITY_ARRAY(T, entity, name, member)                                    \
  void comin_descrdata_get_domain_##entity##_##name(int jg, const T** data, int* shape) { \
    give_entity_array<T>(jg, &DomainArrays::entity, &EntityArrays::member, data, shape,   \
                         "comin_descrdata_get_domain_" #entity "_" #name);                \
  }
#define FINECAST_ENTITY_COUNT(entity, name, member)                       \
  int comin_descrdata_get_domain_##entity##_##name(int jg) {              \
    return entity_count(jg, &DomainArrays::entity, &EntityArrays::member, \
                        "comin_descrdata_get_domain_" #entity "_" #name); \
  }

extern "C" {

// ---- cells ----
FINECAST_ENTITY_COUNT(cells, ncells, n)
FINECAST_ENTITY_COUNT(cells, ncells_global, n_global)
FINECAST_ENTITY_COUNT(cells, nblks, nblks)
int comin_descrdata_get_domain_cells_max_connectivity(int jg) {
  return entity_or_fatal(jg, &DomainArrays::cells, "comin_descrdata_get_domain_cells_max_connectivity") ? 3 : 0;
}
FINECAST_ENTITY_ARRAY(int, cells, num_edges, num_edges)
FINECAST_ENTITY_ARRAY(int, cells, refin_ctrl, refin_ctrl)
FINECAST_ENTITY_ARRAY(int, cells, start_index, start_index)
FINECAST_ENTITY_ARRAY(int, cells, end_index, end_index)
FINECAST_ENTITY_ARRAY(int, cells, start_block, start_block)
FINECAST_ENTITY_ARRAY(int, cells, end_block, end_block)
FINECAST_ENTITY_ARRAY(int, cells, child_id, child_id)
FINECAST_ENTITY_ARRAY(int, cells, child_idx, child_idx)
FINECAST_ENTITY_ARRAY(int, cells, child_blk, child_blk)
FINECAST_ENTITY_ARRAY(int, cells, parent_glb_idx, parent_glb_idx)
FINECAST_ENTITY_ARRAY(int, cells, parent_glb_blk, parent_glb_blk)
FINECAST_ENTITY_ARRAY(int, cells, vertex_idx, vertex_idx)
FINECAST_ENTITY_ARRAY(int, cells, vertex_blk, vertex_blk)
FINECAST_ENTITY_ARRAY(int, cells, neighbor_idx, neighbor_idx)
FINECAST_ENTITY_ARRAY(int, cells, neighbor_blk, neighbor_blk)
FINECAST_ENTITY_ARRAY(int, cells, edge_idx, edge_idx)
FINECAST_ENTITY_ARRAY(int, cells, edge_blk, edge_blk)
FINECAST_ENTITY_ARRAY(double, cells, clon, lon)
FINECAST_ENTITY_ARRAY(double, cells, clat, lat)
FINECAST_ENTITY_ARRAY(double, cells, area, area)
FINECAST_ENTITY_ARRAY(double, cells, hhl, hhl)
FINECAST_ENTITY_ARRAY(int, cells, glb_index, glb_index)
FINECAST_ENTITY_ARRAY(int, cells, decomp_domain, decomp_domain)

// ---- vertices ----
FINECAST_ENTITY_COUNT(verts, nverts, n)
FINECAST_ENTITY_COUNT(verts, nverts_global, n_global)
FINECAST_ENTITY_COUNT(verts, nblks, nblks)
FINECAST_ENTITY_ARRAY(int, verts, num_edges, num_edges)
FINECAST_ENTITY_ARRAY(int, verts, refin_ctrl, refin_ctrl)
FINECAST_ENTITY_ARRAY(int, verts, start_index, start_index)
FINECAST_ENTITY_ARRAY(int, verts, end_index, end_index)
FINECAST_ENTITY_ARRAY(int, verts, start_block, start_block)
FINECAST_ENTITY_ARRAY(int, verts, end_block, end_block)
FINECAST_ENTITY_ARRAY(int, verts, neighbor_blk, neighbor_blk)
FINECAST_ENTITY_ARRAY(int, verts, neighbor_idx, neighbor_idx)
FINECAST_ENTITY_ARRAY(int, verts, cell_idx, cell_idx)
FINECAST_ENTITY_ARRAY(int, verts, cell_blk, cell_blk)
FINECAST_ENTITY_ARRAY(int, verts, edge_idx, edge_idx)
FINECAST_ENTITY_ARRAY(int, verts, edge_blk, edge_blk)
FINECAST_ENTITY_ARRAY(double, verts, vlon, lon)
FINECAST_ENTITY_ARRAY(double, verts, vlat, lat)

// ---- edges ----
FINECAST_ENTITY_COUNT(edges, nedges, n)
FINECAST_ENTITY_COUNT(edges, nedges_global, n_global)
FINECAST_ENTITY_COUNT(edges, nblks, nblks)
FINECAST_ENTITY_ARRAY(int, edges, refin_ctrl, refin_ctrl)
FINECAST_ENTITY_ARRAY(int, edges, start_index, start_index)
FINECAST_ENTITY_ARRAY(int, edges, end_index, end_index)
FINECAST_ENTITY_ARRAY(int, edges, start_block, start_block)
FINECAST_ENTITY_ARRAY(int, edges, end_block, end_block)
FINECAST_ENTITY_ARRAY(int, edges, child_id, child_id)
FINECAST_ENTITY_ARRAY(int, edges, child_idx, child_idx)
FINECAST_ENTITY_ARRAY(int, edges, child_blk, child_blk)
FINECAST_ENTITY_ARRAY(int, edges, parent_glb_idx, parent_glb_idx)
FINECAST_ENTITY_ARRAY(int, edges, parent_glb_blk, parent_glb_blk)
FINECAST_ENTITY_ARRAY(int, edges, cell_idx, cell_idx)
FINECAST_ENTITY_ARRAY(int, edges, cell_blk, cell_blk)
FINECAST_ENTITY_ARRAY(int, edges, vertex_idx, vertex_idx)
FINECAST_ENTITY_ARRAY(int, edges, vertex_blk, vertex_blk)
FINECAST_ENTITY_ARRAY(double, edges, elon, lon)
FINECAST_ENTITY_ARRAY(double, edges, elat, lat)

#undef FINECAST_ENTITY_ARRAY
#undef FINECAST_ENTITY_COUNT

// ---- the domain itself ----
void comin_descrdata_get_domain_grid_filename(int jg, const char** grid_filename, int* arr_size) {
  *grid_filename = nullptr;
  const DomainArrays* d = ch::domain_or_fatal(jg, "comin_descrdata_get_domain_grid_filename");
  if (d == nullptr) return;
  *grid_filename = d->grid_filename.buffer.data();
  arr_size[0] = d->grid_filename.length;
}

void comin_descrdata_get_domain_grid_uuid(int jg, const int8_t** grid_uuid, int* arr_size) {
  const char* routine = "comin_descrdata_get_domain_grid_uuid";
  *grid_uuid = nullptr;
  const DomainArrays* d = ch::domain_or_fatal(jg, routine);
  if (d == nullptr) return;
  if (d->grid_uuid.empty()) {
    ch::fatal(routine, "this host knows no grid uuid for domain " + std::to_string(jg));
    return;
  }
  *grid_uuid = d->grid_uuid.data();
  arr_size[0] = static_cast<int>(d->grid_uuid.size());
}

void comin_descrdata_get_domain_number_of_grid_used(int jg, const int** number_of_grid_used, int* arr_size) {
  *number_of_grid_used = nullptr;
  const DomainArrays* d = ch::domain_or_fatal(jg, "comin_descrdata_get_domain_number_of_grid_used");
  if (d == nullptr) return;
  *number_of_grid_used = &d->number_of_grid_used;
  arr_size[0] = 1;
}

int comin_descrdata_get_domain_id(int jg) {
  return ch::domain_or_fatal(jg, "comin_descrdata_get_domain_id") != nullptr ? jg : 0;
}

int comin_descrdata_get_domain_n_childdom(int jg) {
  if (ch::domain_or_fatal(jg, "comin_descrdata_get_domain_n_childdom") == nullptr) return 0;
  const Host::State* s = ch::state_or_fatal("comin_descrdata_get_domain_n_childdom");
  return static_cast<int>(std::count_if(s->domains.begin(), s->domains.end(),
                                        [jg](const DomainArrays& d) { return d.input.parent_id == jg; }));
}

double comin_descrdata_get_domain_dom_start(int jg) {
  const DomainArrays* d = ch::domain_or_fatal(jg, "comin_descrdata_get_domain_dom_start");
  return d == nullptr ? 0.0 : d->input.dom_start;
}

double comin_descrdata_get_domain_dom_end(int jg) {
  const DomainArrays* d = ch::domain_or_fatal(jg, "comin_descrdata_get_domain_dom_end");
  return d == nullptr ? 0.0 : d->input.dom_end;
}

int comin_descrdata_get_domain_nlev(int jg) {
  const DomainArrays* d = ch::domain_or_fatal(jg, "comin_descrdata_get_domain_nlev");
  return d == nullptr ? 0 : d->input.nlev;
}

int comin_descrdata_get_domain_nshift(int jg) {
  ch::domain_or_fatal(jg, "comin_descrdata_get_domain_nshift");
  return 0;
}

int comin_descrdata_get_domain_nshift_total(int jg) {
  ch::domain_or_fatal(jg, "comin_descrdata_get_domain_nshift_total");
  return 0;
}

// ---- global data ----
int comin_descrdata_get_global_n_dom(void) {
  Host::State* s = ch::state_or_fatal("comin_descrdata_get_global_n_dom");
  return s == nullptr ? 0 : static_cast<int>(s->domains.size());
}
int comin_descrdata_get_global_max_dom(void) {
  Host::State* s = ch::state_or_fatal("comin_descrdata_get_global_max_dom");
  return s == nullptr ? 0 : s->global.max_dom;
}
int comin_descrdata_get_global_nproma(void) { return global_nproma("comin_descrdata_get_global_nproma"); }
int comin_descrdata_get_global_wp(void) { return static_cast<int>(sizeof(double)); }
int comin_descrdata_get_global_min_rlcell_int(void) { return ch::kMinRlCellInt; }
int comin_descrdata_get_global_min_rlcell(void) { return ch::kMinRlCell; }
int comin_descrdata_get_global_max_rlcell(void) { return ch::kMaxRlCell; }
int comin_descrdata_get_global_min_rlvert_int(void) { return ch::kMinRlVertInt; }
int comin_descrdata_get_global_min_rlvert(void) { return ch::kMinRlVert; }
int comin_descrdata_get_global_max_rlvert(void) { return ch::kMaxRlVert; }
int comin_descrdata_get_global_min_rledge_int(void) { return ch::kMinRlEdgeInt; }
int comin_descrdata_get_global_min_rledge(void) { return ch::kMinRlEdge; }
int comin_descrdata_get_global_max_rledge(void) { return ch::kMaxRlEdge; }
int comin_descrdata_get_global_grf_bdywidth_c(void) { return ch::kGrfBdyWidthC; }
int comin_descrdata_get_global_grf_bdywidth_e(void) { return ch::kGrfBdyWidthE; }
bool comin_descrdata_get_global_lrestartrun(void) {
  Host::State* s = ch::state_or_fatal("comin_descrdata_get_global_lrestartrun");
  return s != nullptr && s->global.restart_run;
}
void comin_descrdata_get_global_vct_a(const double** vct_a, int* arr_size) {
  const char* routine = "comin_descrdata_get_global_vct_a";
  *vct_a = nullptr;
  Host::State* s = ch::state_or_fatal(routine);
  if (s == nullptr) return;
  if (s->global.vct_a.empty()) {
    ch::fatal(routine, "this host has no vertical coordinate table (vct_a)");
    return;
  }
  *vct_a = s->global.vct_a.data();
  arr_size[0] = static_cast<int>(s->global.vct_a.size());
}
int comin_descrdata_get_global_yac_instance_id(void) { return -1; }  // no YAC
bool comin_descrdata_get_global_has_device(void) {
  const Host::State* s = ch::state_or_fatal("comin_descrdata_get_global_has_device");
  return s != nullptr && s->has_device;
}

// Strings of the global data: the host's revision, and empty ones for what it does not have.
#define FINECAST_GLOBAL_STRING(name, member)                                        \
  void comin_descrdata_get_global_##name(const char** val, int* arr_size) {         \
    *val = nullptr;                                                                 \
    if (Host::State* s = ch::state_or_fatal("comin_descrdata_get_global_" #name)) { \
      *val = s->member.buffer.data();                                               \
      arr_size[0] = s->member.length;                                               \
    }                                                                               \
  }
FINECAST_GLOBAL_STRING(host_git_remote_url, empty)
FINECAST_GLOBAL_STRING(host_git_branch, empty)
FINECAST_GLOBAL_STRING(host_git_tag, empty)
FINECAST_GLOBAL_STRING(host_revision, host_revision)
FINECAST_GLOBAL_STRING(device_name, device_name)
FINECAST_GLOBAL_STRING(device_vendor, device_vendor)
FINECAST_GLOBAL_STRING(device_driver, device_driver)
#undef FINECAST_GLOBAL_STRING

// ---- index helpers, time ----
double comin_descrdata_get_timesteplength(int jg) {
  const DomainArrays* d = ch::domain_or_fatal(jg, "comin_descrdata_get_timesteplength");
  return d == nullptr ? 0.0 : d->input.dt;
}

// ICON's conventions: 1-based global index j -> (index, block); the sign of j is kept (ICON
// marks missing neighbours with negative indices), and j = 0 gives index 0, block 1.
int comin_descrdata_get_index(int j) {
  const int np = global_nproma("comin_descrdata_get_index");
  if (np <= 0 || j == 0) return 0;
  const int idx = (std::abs(j) - 1) % np + 1;
  return j < 0 ? -idx : idx;
}

int comin_descrdata_get_block(int j) {
  const int np = global_nproma("comin_descrdata_get_block");
  return np <= 0 ? 0 : std::max((std::abs(j) - 1) / np + 1, 1);
}

void comin_descrdata_get_cell_indices(int jg, int i_blk, int i_startblk, int i_endblk, int* i_startidx, int* i_endidx,
                                      int irl_start, int irl_end) {
  loop_indices(jg, &DomainArrays::cells, ch::kMinRlCell, ch::kMaxRlCell, i_blk, i_startblk, i_endblk, i_startidx,
               i_endidx, irl_start, irl_end, "comin_descrdata_get_cell_indices");
}
void comin_descrdata_get_edge_indices(int jg, int i_blk, int i_startblk, int i_endblk, int* i_startidx, int* i_endidx,
                                      int irl_start, int irl_end) {
  loop_indices(jg, &DomainArrays::edges, ch::kMinRlEdge, ch::kMaxRlEdge, i_blk, i_startblk, i_endblk, i_startidx,
               i_endidx, irl_start, irl_end, "comin_descrdata_get_edge_indices");
}
void comin_descrdata_get_vert_indices(int jg, int i_blk, int i_startblk, int i_endblk, int* i_startidx, int* i_endidx,
                                      int irl_start, int irl_end) {
  loop_indices(jg, &DomainArrays::verts, ch::kMinRlVert, ch::kMaxRlVert, i_blk, i_startblk, i_endblk, i_startidx,
               i_endidx, irl_start, irl_end, "comin_descrdata_get_vert_indices");
}

int comin_descrdata_get_cell_npromz(int jg) {
  return npromz(jg, &DomainArrays::cells, "comin_descrdata_get_cell_npromz");
}
int comin_descrdata_get_edge_npromz(int jg) {
  return npromz(jg, &DomainArrays::edges, "comin_descrdata_get_edge_npromz");
}
int comin_descrdata_get_vert_npromz(int jg) {
  return npromz(jg, &DomainArrays::verts, "comin_descrdata_get_vert_npromz");
}

int comin_descrdata_index_lookup_glb2loc_cell(int jg, int global_idx) {
  const DomainArrays* d = ch::domain_or_fatal(jg, "comin_descrdata_index_lookup_glb2loc_cell");
  if (d == nullptr) return -1;
  auto it = d->glb2loc.find(global_idx);
  return it == d->glb2loc.end() ? -1 : it->second;
}

void comin_descrdata_get_simulation_interval_exp_start(char const** val, int* len) {
  interval(&Host::State::exp_start, "comin_descrdata_get_simulation_interval_exp_start", val, len);
}
void comin_descrdata_get_simulation_interval_exp_stop(char const** val, int* len) {
  interval(&Host::State::exp_stop, "comin_descrdata_get_simulation_interval_exp_stop", val, len);
}
void comin_descrdata_get_simulation_interval_run_start(char const** val, int* len) {
  interval(&Host::State::run_start, "comin_descrdata_get_simulation_interval_run_start", val, len);
}
void comin_descrdata_get_simulation_interval_run_stop(char const** val, int* len) {
  interval(&Host::State::run_stop, "comin_descrdata_get_simulation_interval_run_stop", val, len);
}

}  // extern "C"
