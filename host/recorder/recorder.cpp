// SPDX-License-Identifier: BSD-3-Clause
// libfinecast_recorder.so: a ComIn plugin, written against comin.h only, that records a run in
// the files ComIn's replay tool (comin_replay) plays back: per rank, <PREFIX><rank>.nc with the
// descriptive data and the sequence of entry points, and <PREFIX>vars_<rank>.nc with the values
// of the chosen variables at every EP_ATM_TIMELOOP_END (read back by ComIn's
// comin_var_replay_plugin at EP_ATM_TIMELOOP_START, with options "<PREFIX>vars_").
//
// It is finecast's counterpart of ComIn's run and variable recorder plugins, which are Fortran
// plugins and so cannot run in finecast-host; the file layout follows what comin_replay reads
// (attribute and variable names, Fortran dimension order: a Fortran array (n1, n2) is the NetCDF
// variable (name_dim_2, name_dim_1)).
//
// Options: "PREFIX [vars=NAME,NAME,...] [skip=verts,edges,vertical] [format=0.2|0.3]". Without
// vars= no variable file is written; skip= leaves out descriptive data the host does not offer.
// format=0.2 writes what ComIn 0.2's recorders write and its comin_replay reads (ICON 2024.x):
// the files differ only in the version attribute and in how a variable's layout is told (0.2:
// the Fortran positions pos_jc, pos_jk, pos_jb, pos_jn; 0.3: dim_semantics). Default: 0.3.
#include <mpi.h>
#include <netcdf.h>

#include <algorithm>
#include <cstring>
#include <exception>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "comin.h"

namespace {

void nc(int status, const std::string& what) {
  if (status != NC_NOERR) throw std::runtime_error(what + ": " + nc_strerror(status));
}

struct RecordedVariable {
  std::string name;
  int domain = 1;
  t_comin_var_handle* handle = nullptr;
  int shape[5] = {1, 1, 1, 1, 1};
  int datatype = COMIN_VAR_DATATYPE_DOUBLE;
  int ncid = -1, varid = -1;
};

struct Recorder {
  std::string prefix;
  std::vector<std::string> var_names;
  bool skip_verts = false, skip_edges = false, skip_vertical = false;
  int format_minor = COMIN_VERSION_MINOR;  ///< 2 or 3: the ComIn 0.x whose replay reads the files
  int rank = 0;
  int run_ncid = -1, vars_ncid = -1;
  int ep_varid = -1, domain_varid = -1, datetime_varid = -1;
  size_t n_callbacks = 0, n_events = 0;
  std::vector<RecordedVariable> variables;
};

Recorder& recorder() {
  static Recorder r;
  return r;
}

std::string fortran_string(void (*get)(char const**, int*)) {
  const char* val = nullptr;
  int len = 0;
  get(&val, &len);
  return val && len > 0 ? std::string(val, static_cast<size_t>(len)) : std::string();
}

void put_int(int ncid, const char* name, int value) {
  nc(nc_put_att_int(ncid, NC_GLOBAL, name, NC_INT, 1, &value), name);
}

void put_double(int ncid, const char* name, double value) {
  nc(nc_put_att_double(ncid, NC_GLOBAL, name, NC_DOUBLE, 1, &value), name);
}

void put_text(int ncid, const char* name, const char* value, int len) {
  nc(nc_put_att_text(ncid, NC_GLOBAL, name, static_cast<size_t>(len), value), name);
}

// A Fortran array of `ndims` dims: dimensions NAME_dim_1.. in Fortran order, reversed for C.
template <typename T>
void put_array(int ncid, const std::string& name, nc_type type, const T* data, const int* shape, int ndims) {
  if (data == nullptr) return;
  int dims[3];
  for (int i = 0; i < ndims; ++i) {
    const std::string dim = name + "_dim_" + std::to_string(i + 1);
    nc(nc_def_dim(ncid, dim.c_str(), static_cast<size_t>(shape[i]), &dims[ndims - 1 - i]), dim);
  }
  int varid = -1;
  nc(nc_def_var(ncid, name.c_str(), type, ndims, dims, &varid), name);
  if constexpr (std::is_same_v<T, double>)
    nc(nc_put_var_double(ncid, varid, data), name);
  else
    nc(nc_put_var_int(ncid, varid, data), name);
}

using IntArrayGetter = void (*)(int, const int**, int*);
using RealArrayGetter = void (*)(int, const double**, int*);

void record_int(int ncid, int jg, const char* name, IntArrayGetter get, int ndims) {
  const int* data = nullptr;
  int shape[3] = {0, 0, 0};
  get(jg, &data, shape);
  put_array(ncid, name, NC_INT, data, shape, ndims);
}

void record_real(int ncid, int jg, const char* name, RealArrayGetter get, int ndims) {
  const double* data = nullptr;
  int shape[3] = {0, 0, 0};
  get(jg, &data, shape);
  put_array(ncid, name, NC_DOUBLE, data, shape, ndims);
}

void record_global(const Recorder& r) {
  const int ncid = r.run_ncid;
  put_int(ncid, "n_dom", comin_descrdata_get_global_n_dom());
  put_int(ncid, "max_dom", comin_descrdata_get_global_max_dom());
  put_int(ncid, "nproma", comin_descrdata_get_global_nproma());
  put_int(ncid, "wp", comin_descrdata_get_global_wp());
  put_int(ncid, "min_rlcell_int", comin_descrdata_get_global_min_rlcell_int());
  put_int(ncid, "min_rlcell", comin_descrdata_get_global_min_rlcell());
  put_int(ncid, "max_rlcell", comin_descrdata_get_global_max_rlcell());
  put_int(ncid, "min_rlvert_int", comin_descrdata_get_global_min_rlvert_int());
  put_int(ncid, "min_rlvert", comin_descrdata_get_global_min_rlvert());
  put_int(ncid, "max_rlvert", comin_descrdata_get_global_max_rlvert());
  put_int(ncid, "min_rledge_int", comin_descrdata_get_global_min_rledge_int());
  put_int(ncid, "min_rledge", comin_descrdata_get_global_min_rledge());
  put_int(ncid, "max_rledge", comin_descrdata_get_global_max_rledge());
  put_int(ncid, "grf_bdywidth_c", comin_descrdata_get_global_grf_bdywidth_c());
  put_int(ncid, "grf_bdywidth_e", comin_descrdata_get_global_grf_bdywidth_e());
  put_int(ncid, "lrestartrun", comin_descrdata_get_global_lrestartrun() ? 1 : 0);
  put_int(ncid, "yac_instance_id", comin_descrdata_get_global_yac_instance_id());
  put_int(ncid, "has_device", comin_descrdata_get_global_has_device() ? 1 : 0);
  const char* text = nullptr;
  int len = 0;
  comin_descrdata_get_global_host_revision(&text, &len);
  if (text != nullptr) put_text(ncid, "host_revision", text, len);
  if (!r.skip_vertical) {
    const double* vct_a = nullptr;
    int shape[1] = {0};
    comin_descrdata_get_global_vct_a(&vct_a, shape);
    put_array(ncid, "vct_a", NC_DOUBLE, vct_a, shape, 1);
  }
  for (const auto& [name, get] : {std::pair<const char*, void (*)(char const**, int*)>{
                                      "exp_start", comin_descrdata_get_simulation_interval_exp_start},
                                  {"exp_stop", comin_descrdata_get_simulation_interval_exp_stop},
                                  {"run_start", comin_descrdata_get_simulation_interval_run_start},
                                  {"run_stop", comin_descrdata_get_simulation_interval_run_stop}}) {
    const std::string value = fortran_string(get);
    put_text(ncid, name, value.data(), static_cast<int>(value.size()));
  }
}

void record_domain(const Recorder& r, int jg) {
  int ncid = -1;
  const std::string group = "domain_" + std::to_string(jg);
  nc(nc_def_grp(r.run_ncid, group.c_str(), &ncid), group);
  const char* text = nullptr;
  int len[1] = {0};
  comin_descrdata_get_domain_grid_filename(jg, &text, len);
  if (text != nullptr) put_text(ncid, "grid_filename", text, len[0]);
  put_int(ncid, "id", comin_descrdata_get_domain_id(jg));
  put_int(ncid, "n_childdom", comin_descrdata_get_domain_n_childdom(jg));
  put_double(ncid, "dom_start", comin_descrdata_get_domain_dom_start(jg));
  put_double(ncid, "dom_end", comin_descrdata_get_domain_dom_end(jg));
  put_int(ncid, "nlev", comin_descrdata_get_domain_nlev(jg));
  put_int(ncid, "nshift", comin_descrdata_get_domain_nshift(jg));
  put_int(ncid, "nshift_total", comin_descrdata_get_domain_nshift_total(jg));
  put_double(ncid, "timestep_length", comin_descrdata_get_timesteplength(jg));
  put_int(ncid, "cells%ncells", comin_descrdata_get_domain_cells_ncells(jg));
  put_int(ncid, "cells%ncells_global", comin_descrdata_get_domain_cells_ncells_global(jg));
  put_int(ncid, "cells%nblks", comin_descrdata_get_domain_cells_nblks(jg));
  put_int(ncid, "cells%max_connectivity", comin_descrdata_get_domain_cells_max_connectivity(jg));
  record_int(ncid, jg, "cells%num_edges", comin_descrdata_get_domain_cells_num_edges, 2);
  record_int(ncid, jg, "cells%refin_ctrl", comin_descrdata_get_domain_cells_refin_ctrl, 2);
  record_int(ncid, jg, "cells%start_index", comin_descrdata_get_domain_cells_start_index, 1);
  record_int(ncid, jg, "cells%end_index", comin_descrdata_get_domain_cells_end_index, 1);
  record_int(ncid, jg, "cells%start_block", comin_descrdata_get_domain_cells_start_block, 1);
  record_int(ncid, jg, "cells%end_block", comin_descrdata_get_domain_cells_end_block, 1);
  record_int(ncid, jg, "cells%child_id", comin_descrdata_get_domain_cells_child_id, 2);
  record_int(ncid, jg, "cells%child_idx", comin_descrdata_get_domain_cells_child_idx, 3);
  record_int(ncid, jg, "cells%child_blk", comin_descrdata_get_domain_cells_child_blk, 3);
  record_int(ncid, jg, "cells%parent_glb_idx", comin_descrdata_get_domain_cells_parent_glb_idx, 2);
  record_int(ncid, jg, "cells%parent_glb_blk", comin_descrdata_get_domain_cells_parent_glb_blk, 2);
  record_int(ncid, jg, "cells%neighbor_idx", comin_descrdata_get_domain_cells_neighbor_idx, 3);
  record_int(ncid, jg, "cells%neighbor_blk", comin_descrdata_get_domain_cells_neighbor_blk, 3);
  record_real(ncid, jg, "cells%clon", comin_descrdata_get_domain_cells_clon, 2);
  record_real(ncid, jg, "cells%clat", comin_descrdata_get_domain_cells_clat, 2);
  record_real(ncid, jg, "cells%area", comin_descrdata_get_domain_cells_area, 2);
  record_int(ncid, jg, "cells%glb_index", comin_descrdata_get_domain_cells_glb_index, 1);
  record_int(ncid, jg, "cells%decomp_domain", comin_descrdata_get_domain_cells_decomp_domain, 2);
  if (!r.skip_vertical) record_real(ncid, jg, "cells%hhl", comin_descrdata_get_domain_cells_hhl, 3);
  if (!r.skip_verts && comin_descrdata_get_domain_verts_nverts(jg) > 0) {
    record_int(ncid, jg, "cells%vertex_idx", comin_descrdata_get_domain_cells_vertex_idx, 3);
    record_int(ncid, jg, "cells%vertex_blk", comin_descrdata_get_domain_cells_vertex_blk, 3);
    put_int(ncid, "verts%nverts", comin_descrdata_get_domain_verts_nverts(jg));
    put_int(ncid, "verts%nverts_global", comin_descrdata_get_domain_verts_nverts_global(jg));
    put_int(ncid, "verts%nblks", comin_descrdata_get_domain_verts_nblks(jg));
    record_int(ncid, jg, "verts%num_edges", comin_descrdata_get_domain_verts_num_edges, 2);
    record_int(ncid, jg, "verts%refin_ctrl", comin_descrdata_get_domain_verts_refin_ctrl, 2);
    record_int(ncid, jg, "verts%start_index", comin_descrdata_get_domain_verts_start_index, 1);
    record_int(ncid, jg, "verts%end_index", comin_descrdata_get_domain_verts_end_index, 1);
    record_int(ncid, jg, "verts%start_block", comin_descrdata_get_domain_verts_start_block, 1);
    record_int(ncid, jg, "verts%end_block", comin_descrdata_get_domain_verts_end_block, 1);
    record_int(ncid, jg, "verts%neighbor_idx", comin_descrdata_get_domain_verts_neighbor_idx, 3);
    record_int(ncid, jg, "verts%neighbor_blk", comin_descrdata_get_domain_verts_neighbor_blk, 3);
    record_int(ncid, jg, "verts%cell_idx", comin_descrdata_get_domain_verts_cell_idx, 3);
    record_int(ncid, jg, "verts%cell_blk", comin_descrdata_get_domain_verts_cell_blk, 3);
    record_int(ncid, jg, "verts%edge_idx", comin_descrdata_get_domain_verts_edge_idx, 3);
    record_int(ncid, jg, "verts%edge_blk", comin_descrdata_get_domain_verts_edge_blk, 3);
    record_real(ncid, jg, "verts%vlon", comin_descrdata_get_domain_verts_vlon, 2);
    record_real(ncid, jg, "verts%vlat", comin_descrdata_get_domain_verts_vlat, 2);
  }
  if (!r.skip_edges && comin_descrdata_get_domain_edges_nedges(jg) > 0) {
    record_int(ncid, jg, "cells%edge_idx", comin_descrdata_get_domain_cells_edge_idx, 3);
    record_int(ncid, jg, "cells%edge_blk", comin_descrdata_get_domain_cells_edge_blk, 3);
    put_int(ncid, "edges%nedges", comin_descrdata_get_domain_edges_nedges(jg));
    put_int(ncid, "edges%nedges_global", comin_descrdata_get_domain_edges_nedges_global(jg));
    put_int(ncid, "edges%nblks", comin_descrdata_get_domain_edges_nblks(jg));
    record_int(ncid, jg, "edges%refin_ctrl", comin_descrdata_get_domain_edges_refin_ctrl, 2);
    record_int(ncid, jg, "edges%start_index", comin_descrdata_get_domain_edges_start_index, 1);
    record_int(ncid, jg, "edges%end_index", comin_descrdata_get_domain_edges_end_index, 1);
    record_int(ncid, jg, "edges%start_block", comin_descrdata_get_domain_edges_start_block, 1);
    record_int(ncid, jg, "edges%end_block", comin_descrdata_get_domain_edges_end_block, 1);
    record_int(ncid, jg, "edges%child_id", comin_descrdata_get_domain_edges_child_id, 2);
    record_int(ncid, jg, "edges%child_idx", comin_descrdata_get_domain_edges_child_idx, 3);
    record_int(ncid, jg, "edges%child_blk", comin_descrdata_get_domain_edges_child_blk, 3);
    record_int(ncid, jg, "edges%parent_glb_idx", comin_descrdata_get_domain_edges_parent_glb_idx, 2);
    record_int(ncid, jg, "edges%parent_glb_blk", comin_descrdata_get_domain_edges_parent_glb_blk, 2);
    record_int(ncid, jg, "edges%cell_idx", comin_descrdata_get_domain_edges_cell_idx, 3);
    record_int(ncid, jg, "edges%cell_blk", comin_descrdata_get_domain_edges_cell_blk, 3);
    record_int(ncid, jg, "edges%vertex_idx", comin_descrdata_get_domain_edges_vertex_idx, 3);
    record_int(ncid, jg, "edges%vertex_blk", comin_descrdata_get_domain_edges_vertex_blk, 3);
    record_real(ncid, jg, "edges%elon", comin_descrdata_get_domain_edges_elon, 2);
    record_real(ncid, jg, "edges%elat", comin_descrdata_get_domain_edges_elat, 2);
  }
}

void parse_options(Recorder& r) {
  std::istringstream in(fortran_string(comin_current_get_plugin_options));
  std::string word;
  while (in >> word) {
    if (word.rfind("vars=", 0) == 0) {
      std::istringstream list(word.substr(5));
      std::string name;
      while (std::getline(list, name, ','))
        if (!name.empty()) r.var_names.push_back(name);
    } else if (word.rfind("skip=", 0) == 0) {
      std::istringstream list(word.substr(5));
      std::string what;
      while (std::getline(list, what, ',')) {
        if (what == "verts")
          r.skip_verts = true;
        else if (what == "edges")
          r.skip_edges = true;
        else if (what == "vertical")
          r.skip_vertical = true;
        else
          throw std::runtime_error("skip=" + what + ": expected verts, edges or vertical");
      }
    } else if (word.rfind("format=", 0) == 0) {
      const std::string f = word.substr(7);
      if (f != "0.2" && f != "0.3") throw std::runtime_error("format=" + f + ": expected 0.2 or 0.3");
      r.format_minor = f == "0.2" ? 2 : 3;
    } else if (r.prefix.empty()) {
      r.prefix = word;
    } else {
      throw std::runtime_error("unexpected option '" + word +
                               "' (options: PREFIX [vars=NAME,...] [skip=verts,edges,vertical] [format=0.2|0.3])");
    }
  }
  if (r.prefix.empty())
    throw std::runtime_error("no PREFIX in the options (options: PREFIX [vars=NAME,...] [skip=...])");
}

void record_entry_point() {
  Recorder& r = recorder();
  const int ep = comin_current_get_ep();
  const int domain = comin_current_get_domain_id();
  // The time without padding: the rest of the fixed-length record stays NUL, as ComIn writes it.
  std::string datetime = fortran_string(comin_current_get_datetime);
  datetime.resize(std::min<size_t>(datetime.size(), COMIN_MAX_DATETIME_STR_LEN));
  const size_t start[2] = {r.n_callbacks, 0}, count[2] = {1, datetime.size()};
  nc(nc_put_var1_int(r.run_ncid, r.ep_varid, start, &ep), "current_ep");
  nc(nc_put_var1_int(r.run_ncid, r.domain_varid, start, &domain), "current_domain_id");
  nc(nc_put_vara_text(r.run_ncid, r.datetime_varid, start, count, datetime.data()), "current_datetime");
  ++r.n_callbacks;
}

void define_variable(RecordedVariable& v, int event_dim) {
  int dims[6];
  dims[0] = event_dim;
  for (int i = 0; i < 5; ++i) {
    const std::string dim = v.name + "_dim_" + std::to_string(i + 1);
    nc(nc_def_dim(v.ncid, dim.c_str(), static_cast<size_t>(v.shape[i]), &dims[5 - i]), dim);
  }
  nc(nc_def_var(v.ncid, v.name.c_str(), NC_DOUBLE, 6, dims, &v.varid), v.name);
  int sem[5];
  comin_var_get_dim_semantics(v.handle, sem);
  if (recorder().format_minor == 2) {
    // ComIn 0.2: the Fortran (1-based) position of the cell, level and block dimensions, -1 for
    // none; pos_jn, the container's, is -1 for a variable that is no container slice.
    auto position = [&](int what) {
      for (int d = 0; d < 5; ++d)
        if (sem[d] == what) return d + 1;
      return -1;
    };
    const int pos[4] = {position(COMIN_DIM_SEMANTICS_NPROMA), position(COMIN_DIM_SEMANTICS_LEVEL),
                        position(COMIN_DIM_SEMANTICS_BLOCK), -1};
    const char* names[4] = {"pos_jc", "pos_jk", "pos_jb", "pos_jn"};
    for (int i = 0; i < 4; ++i) nc(nc_put_att_int(v.ncid, v.varid, names[i], NC_INT, 1, &pos[i]), v.name);
  } else {
    nc(nc_put_att_int(v.ncid, v.varid, "dim_semantics", NC_INT, 5, sem), v.name);
  }
  int ncontained = 0;
  comin_var_get_ncontained(v.handle, &ncontained);
  ++ncontained;  // the C interface hands out the 0-based position
  const int lcontained = 0;
  nc(nc_put_att_int(v.ncid, v.varid, "ncontained", NC_INT, 1, &ncontained), v.name);
  nc(nc_put_att_int(v.ncid, v.varid, "lcontained", NC_INT, 1, &lcontained), v.name);
  t_comin_var_descriptor d{};
  std::strncpy(d.name, v.name.c_str(), COMIN_MAX_LEN_VAR_NAME);
  d.id = v.domain;
  t_comin_metadata_iterator* it = comin_metadata_get_iterator_begin(d);
  t_comin_metadata_iterator* end = comin_metadata_get_iterator_end(d);
  for (; !comin_metadata_iterator_compare(it, end); comin_metadata_iterator_next(it)) {
    const char* key = comin_metadata_iterator_get_key(it);
    const std::string att = std::string("metadata::") + key;
    switch (comin_metadata_get_typeid(d, key)) {
      case COMIN_METADATA_TYPEID_INTEGER: {
        int value = 0;
        comin_metadata_get_integer(d, key, &value);
        nc(nc_put_att_int(v.ncid, v.varid, att.c_str(), NC_INT, 1, &value), att);
        break;
      }
      case COMIN_METADATA_TYPEID_REAL: {
        double value = 0;
        comin_metadata_get_real(d, key, &value);
        nc(nc_put_att_double(v.ncid, v.varid, att.c_str(), NC_DOUBLE, 1, &value), att);
        break;
      }
      case COMIN_METADATA_TYPEID_LOGICAL: {
        bool value = false;
        comin_metadata_get_logical(d, key, &value);
        const signed char byte = value ? 1 : 0;
        nc(nc_put_att_schar(v.ncid, v.varid, att.c_str(), NC_BYTE, 1, &byte), att);
        break;
      }
      case COMIN_METADATA_TYPEID_CHARACTER: {
        const char* value = nullptr;
        int len = 0;
        comin_metadata_get_character(d, key, &value, &len);
        // comin_replay reads every attribute it finds: give empty strings one blank.
        nc(nc_put_att_text(v.ncid, v.varid, att.c_str(), len > 0 ? len : 1, len > 0 ? value : " "), att);
        break;
      }
      default:
        break;
    }
  }
  comin_metadata_iterator_delete(it);
  comin_metadata_iterator_delete(end);
  v.datatype = COMIN_VAR_DATATYPE_DOUBLE;
  if (comin_metadata_get_typeid(d, "datatype") == COMIN_METADATA_TYPEID_INTEGER)
    comin_metadata_get_integer(d, "datatype", &v.datatype);
}

void secondary_constructor() {
  Recorder& r = recorder();
  record_entry_point();
  if (r.var_names.empty()) return;
  const std::string path = r.prefix + "vars_" + std::to_string(r.rank) + ".nc";
  nc(nc_create(path.c_str(), NC_NETCDF4 | NC_CLOBBER, &r.vars_ncid), path);
  const int version[3] = {COMIN_VERSION_MAJOR, r.format_minor,
                          r.format_minor == COMIN_VERSION_MINOR ? COMIN_VERSION_PATCH : 0};
  nc(nc_put_att_int(r.vars_ncid, NC_GLOBAL, "comin_version", NC_INT, 3, version), path);
  int size = 1;
  MPI_Comm_size(MPI_Comm_f2c(comin_parallel_get_host_mpi_comm()), &size);
  put_int(r.vars_ncid, "host_comm_rank", r.rank);
  put_int(r.vars_ncid, "host_comm_size", size);
  const int ep = EP_ATM_TIMELOOP_END;
  put_int(r.vars_ncid, "ep", ep);
  const std::string ep_name = "EP_ATM_TIMELOOP_END(" + std::to_string(ep) + ")";
  put_text(r.vars_ncid, "ep_name", ep_name.data(), static_cast<int>(ep_name.size()));
  int event_dim = -1;
  nc(nc_def_dim(r.vars_ncid, "event", NC_UNLIMITED, &event_dim), path);
  const int n_dom = comin_descrdata_get_global_n_dom();
  for (int jg = 1; jg <= n_dom; ++jg) {
    int group = -1;
    const std::string name = "domain_" + std::to_string(jg);
    nc(nc_def_grp(r.vars_ncid, name.c_str(), &group), path + ": " + name);
    for (const std::string& var : r.var_names) {
      RecordedVariable v;
      v.name = var;
      v.domain = jg;
      v.ncid = group;
      t_comin_var_descriptor d{};
      std::strncpy(d.name, var.c_str(), COMIN_MAX_LEN_VAR_NAME);
      d.id = jg;
      t_comin_entry_point context = EP_ATM_TIMELOOP_END;
      v.handle = comin_var_get(1, &context, d, COMIN_FLAG_READ);
      if (v.handle == nullptr) throw std::runtime_error("no variable '" + var + "' on domain " + std::to_string(jg));
      comin_var_get_shape(v.handle, v.shape);
      // The event dimension is shared by every domain group: define it in the root group.
      define_variable(v, event_dim);
      r.variables.push_back(v);
    }
  }
}

void record_variables() {
  Recorder& r = recorder();
  record_entry_point();
  for (const RecordedVariable& v : r.variables) {
    const size_t start[6] = {r.n_events, 0, 0, 0, 0, 0};
    const size_t count[6] = {1,
                             static_cast<size_t>(v.shape[4]),
                             static_cast<size_t>(v.shape[3]),
                             static_cast<size_t>(v.shape[2]),
                             static_cast<size_t>(v.shape[1]),
                             static_cast<size_t>(v.shape[0])};
    void* data = comin_var_get_ptr(v.handle);
    if (v.datatype == COMIN_VAR_DATATYPE_FLOAT)
      nc(nc_put_vara_float(v.ncid, v.varid, start, count, static_cast<const float*>(data)), v.name);
    else if (v.datatype == COMIN_VAR_DATATYPE_INT)
      nc(nc_put_vara_int(v.ncid, v.varid, start, count, static_cast<const int*>(data)), v.name);
    else
      nc(nc_put_vara_double(v.ncid, v.varid, start, count, static_cast<const double*>(data)), v.name);
  }
  if (!r.variables.empty()) ++r.n_events;
}

void destructor() {
  Recorder& r = recorder();
  record_entry_point();
  nc(nc_close(r.run_ncid), "closing the run file");
  if (r.vars_ncid >= 0) nc(nc_close(r.vars_ncid), "closing the variable file");
  if (r.rank == 0) {
    const std::string line = "finecast_recorder: " + std::to_string(r.n_callbacks) + " entry points and " +
                             std::to_string(r.n_events) + " variable events recorded under " + r.prefix;
    comin_print_info(line.c_str());
  }
}

// Every callback stops its exceptions here: ComIn callbacks are C functions.
template <void (*Fn)()>
void guarded() {
  try {
    Fn();
  } catch (const std::exception& e) {
    comin_plugin_finish("finecast_recorder", e.what());
  }
}

void primary_constructor() {
  Recorder& r = recorder();
  parse_options(r);
  r.rank = comin_parallel_get_host_mpi_rank();
  const std::string path = r.prefix + std::to_string(r.rank) + ".nc";
  nc(nc_create(path.c_str(), NC_NETCDF4 | NC_CLOBBER, &r.run_ncid), path);
  const int version[3] = {COMIN_VERSION_MAJOR, r.format_minor,
                          r.format_minor == COMIN_VERSION_MINOR ? COMIN_VERSION_PATCH : 0};
  nc(nc_put_att_int(r.run_ncid, NC_GLOBAL, "comin_version", NC_INT, 3, version), path);
  int size = 1;
  MPI_Comm_size(MPI_Comm_f2c(comin_parallel_get_host_mpi_comm()), &size);
  put_int(r.run_ncid, "host_comm_rank", r.rank);
  put_int(r.run_ncid, "host_comm_size", size);
  int callback_dim = -1, datetime_dim = -1;
  nc(nc_def_dim(r.run_ncid, "callback", NC_UNLIMITED, &callback_dim), path);
  nc(nc_def_dim(r.run_ncid, "datetime_len", COMIN_MAX_DATETIME_STR_LEN, &datetime_dim), path);
  nc(nc_def_var(r.run_ncid, "current_ep", NC_INT, 1, &callback_dim, &r.ep_varid), path);
  nc(nc_def_var(r.run_ncid, "current_domain_id", NC_INT, 1, &callback_dim, &r.domain_varid), path);
  const int datetime_dims[2] = {callback_dim, datetime_dim};
  nc(nc_def_var(r.run_ncid, "current_datetime", NC_CHAR, 2, datetime_dims, &r.datetime_varid), path);
  record_global(r);
  for (int jg = 1; jg <= comin_descrdata_get_global_n_dom(); ++jg) record_domain(r, jg);

  comin_callback_register(EP_SECONDARY_CONSTRUCTOR, guarded<secondary_constructor>);
  for (int ep = EP_SECONDARY_CONSTRUCTOR + 1; ep < EP_DESTRUCTOR; ++ep)
    comin_callback_register(static_cast<t_comin_entry_point>(ep),
                            ep == EP_ATM_TIMELOOP_END ? guarded<record_variables> : guarded<record_entry_point>);
  comin_callback_register(EP_DESTRUCTOR, guarded<destructor>);
}

}  // namespace

extern "C" __attribute__((visibility("default"))) void comin_main(void) { guarded<primary_constructor>(); }
