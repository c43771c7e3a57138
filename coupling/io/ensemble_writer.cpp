// SPDX-License-Identifier: BSD-3-Clause
// Ensemble output: definitions, and per-step appends that are on disk as soon as they return.
#include "coupling/io/ensemble_writer.hpp"

#include <netcdf.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <functional>

#include "coupling/error.hpp"
#include "coupling/io/cf_time.hpp"
#include "common/log.hpp"

#ifndef FINECAST_VERSION
#define FINECAST_VERSION "unknown"
#endif

namespace finecast::coupling {
namespace {

constexpr float kFill = 1.0e20f;  // CMIP's fill value: cdo and most tools expect a finite one

void put_text(int ncid, int varid, const std::string& name, const std::string& value,
              const std::string& ctx) {
  CHECK_NC(nc_put_att_text(ncid, varid, name.c_str(), value.size(), value.c_str()),
           ctx + ", attribute " + name);
}

std::string now_utc() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

}  // namespace

std::string EnsembleWriter::context() const { return "NetCDF output " + path_ + ", variable '" + var_ + "'"; }

EnsembleWriter::EnsembleWriter(const std::string& path, const OutputGrid& grid,
                               const std::string& var, const VarAttributes& attrs, int members,
                               const std::map<std::string, std::string>& global_attrs,
                               const std::string& calendar)
    : path_(path), var_(var), calendar_(calendar), members_(members) {
  if (members < 1)
    throw IoError("NetCDF output " + path + ": members must be >= 1, got " +
                  std::to_string(members));
  if (var.empty()) throw IoError("NetCDF output " + path + ": the variable name is empty");
  CfTime(std::string("seconds since 2000-01-01"), calendar,
         "NetCDF output " + path);  // validates the calendar
  n_cells_ = grid.n_cells();
  if (n_cells_ < 1) throw IoError("NetCDF output " + path + ": the output grid has no cells");
  const std::string ctx = context();
  // CDF-5 (64-bit data): a record is on disk once nc_sync returns and the header's record count
  // is updated after the data, so a run that dies or fails mid-write leaves a readable file
  // with every record written before (HDF5-based NetCDF-4 cannot promise that).
  CHECK_NC(nc_create(path_.c_str(), NC_64BIT_DATA | NC_CLOBBER, &ncid_), ctx);
  int old_fill = 0;  // every value is written: no pre-fill (it would write each record twice)
  CHECK_NC(nc_set_fill(ncid_, NC_NOFILL, &old_fill), ctx);
  // Classic files take data only after the definitions: coordinate values are written then.
  std::vector<std::function<void()>> data;
  try {
    CHECK_NC(nc_def_dim(ncid_, "time", NC_UNLIMITED, &time_dimid_), ctx);
    int member_dim;
    CHECK_NC(nc_def_dim(ncid_, "member", static_cast<size_t>(members), &member_dim), ctx);
    if (grid.kind == OutputGrid::Kind::kIcon) {
      if (grid.clat.size() != grid.clon.size())
        throw IoError(ctx + ": the ICON output grid has " + std::to_string(grid.clon.size()) +
                      " clon but " + std::to_string(grid.clat.size()) + " clat values");
      int cell_dim, clon_id, clat_id;
      CHECK_NC(nc_def_dim(ncid_, "ncells", grid.clon.size(), &cell_dim), ctx);
      spatial_dimids_ = {cell_dim};
      spatial_shape_ = {grid.clon.size()};
      const bool bounds = !grid.clon_vertices.empty();
      if (bounds && (grid.clon_vertices.size() != 3 * grid.clon.size() ||
                     grid.clat_vertices.size() != grid.clon_vertices.size()))
        throw IoError(ctx + ": the cell vertices must hold 3 values per cell");
      int nv_dim = -1;
      if (bounds) CHECK_NC(nc_def_dim(ncid_, "nv", 3, &nv_dim), ctx);
      CHECK_NC(nc_def_var(ncid_, "clon", NC_DOUBLE, 1, &cell_dim, &clon_id), ctx);
      CHECK_NC(nc_def_var(ncid_, "clat", NC_DOUBLE, 1, &cell_dim, &clat_id), ctx);
      put_text(ncid_, clon_id, "standard_name", "longitude", ctx);
      put_text(ncid_, clon_id, "long_name", "center longitude", ctx);
      put_text(ncid_, clon_id, "units", "radian", ctx);
      put_text(ncid_, clat_id, "standard_name", "latitude", ctx);
      put_text(ncid_, clat_id, "long_name", "center latitude", ctx);
      put_text(ncid_, clat_id, "units", "radian", ctx);
      int vlon = -1, vlat = -1;
      if (bounds) {
        const int d2[2] = {cell_dim, nv_dim};
        CHECK_NC(nc_def_var(ncid_, "clon_vertices", NC_DOUBLE, 2, d2, &vlon), ctx);
        CHECK_NC(nc_def_var(ncid_, "clat_vertices", NC_DOUBLE, 2, d2, &vlat), ctx);
        put_text(ncid_, vlon, "units", "radian", ctx);
        put_text(ncid_, vlat, "units", "radian", ctx);
        put_text(ncid_, clon_id, "bounds", "clon_vertices", ctx);
        put_text(ncid_, clat_id, "bounds", "clat_vertices", ctx);
      }
      data.push_back([=, &grid] {
        CHECK_NC(nc_put_var_double(ncid_, clon_id, grid.clon.data()), ctx + " (clon)");
        CHECK_NC(nc_put_var_double(ncid_, clat_id, grid.clat.data()), ctx + " (clat)");
        if (bounds) {
          CHECK_NC(nc_put_var_double(ncid_, vlon, grid.clon_vertices.data()), ctx + " (clon_vertices)");
          CHECK_NC(nc_put_var_double(ncid_, vlat, grid.clat_vertices.data()), ctx + " (clat_vertices)");
        }
      });
    } else {
      if (grid.y.name.empty() || grid.x.name.empty() || grid.y.name == grid.x.name)
        throw IoError(ctx + ": the lat-lon output grid needs two distinct coordinate names");
      for (const CoordVar* c : {&grid.y, &grid.x}) {
        int dim, id;
        CHECK_NC(nc_def_dim(ncid_, c->name.c_str(), c->values.size(), &dim),
                 ctx + " (dimension " + c->name + ")");
        CHECK_NC(nc_def_var(ncid_, c->name.c_str(), NC_DOUBLE, 1, &dim, &id),
                 ctx + " (coordinate " + c->name + ")");
        for (const auto& [k, v] : c->text_attrs) put_text(ncid_, id, k, v, ctx);
        for (const auto& [k, v] : c->num_attrs)
          CHECK_NC(nc_put_att_double(ncid_, id, k.c_str(), NC_DOUBLE, 1, &v), ctx);
        data.push_back([=] {
          CHECK_NC(nc_put_var_double(ncid_, id, c->values.data()), ctx + " (coordinate " + c->name + ")");
        });
        spatial_dimids_.push_back(dim);
        spatial_shape_.push_back(c->values.size());
      }
      if (!grid.grid_mapping.empty()) {
        int gm;
        CHECK_NC(nc_def_var(ncid_, grid.grid_mapping.c_str(), NC_INT, 0, nullptr, &gm),
                 ctx + " (grid mapping)");
        for (const auto& [k, v] : grid.grid_mapping_text_attrs) put_text(ncid_, gm, k, v, ctx);
        for (const auto& [k, v] : grid.grid_mapping_num_attrs)
          CHECK_NC(nc_put_att_double(ncid_, gm, k.c_str(), NC_DOUBLE, 1, &v), ctx);
      }
    }

    CHECK_NC(nc_def_var(ncid_, "time", NC_DOUBLE, 1, &time_dimid_, &time_varid_), ctx);
    put_text(ncid_, time_varid_, "standard_name", "time", ctx);
    put_text(ncid_, time_varid_, "axis", "T", ctx);
    int member_id;
    CHECK_NC(nc_def_var(ncid_, "member", NC_INT, 1, &member_dim, &member_id), ctx);
    put_text(ncid_, member_id, "standard_name", "realization", ctx);
    put_text(ncid_, member_id, "long_name", "ensemble member", ctx);
    data.push_back([=] {
      std::vector<int> member_values(static_cast<size_t>(members));
      for (int m = 0; m < members; ++m) member_values[m] = m;
      CHECK_NC(nc_put_var_int(ncid_, member_id, member_values.data()), ctx + " (member)");
    });

    std::vector<int> dims = {time_dimid_, member_dim};
    dims.insert(dims.end(), spatial_dimids_.begin(), spatial_dimids_.end());
    CHECK_NC(nc_def_var(ncid_, var.c_str(), NC_FLOAT, static_cast<int>(dims.size()), dims.data(),
                        &varid_),
             ctx);
    CHECK_NC(nc_def_var_fill(ncid_, varid_, 0, &kFill), ctx);
    if (!attrs.standard_name.empty())
      put_text(ncid_, varid_, "standard_name", attrs.standard_name, ctx);
    put_text(ncid_, varid_, "long_name",
             (attrs.long_name.empty() ? var : attrs.long_name) + " (downscaled by finecast)", ctx);
    if (!attrs.units.empty()) put_text(ncid_, varid_, "units", attrs.units, ctx);
    CHECK_NC(nc_put_att_float(ncid_, varid_, "missing_value", NC_FLOAT, 1, &kFill), ctx);
    if (grid.kind == OutputGrid::Kind::kIcon) {
      put_text(ncid_, varid_, "coordinates", "clon clat", ctx);
      put_text(ncid_, varid_, "CDI_grid_type", "unstructured", ctx);
    } else if (!grid.grid_mapping.empty()) {
      put_text(ncid_, varid_, "grid_mapping", grid.grid_mapping, ctx);
    }

    put_text(ncid_, NC_GLOBAL, "Conventions", "CF-1.8", ctx);
    put_text(ncid_, NC_GLOBAL, "source", std::string("finecast ") + FINECAST_VERSION, ctx);
    put_text(ncid_, NC_GLOBAL, "finecast_version", FINECAST_VERSION, ctx);
    put_text(ncid_, NC_GLOBAL, "history",
             now_utc() + ": fine fields sampled by finecast " FINECAST_VERSION
                         " (in-situ diffusion downscaling)",
             ctx);
    if (!global_attrs.count("finecast_checkpoint"))
      put_text(ncid_, NC_GLOBAL, "finecast_checkpoint", "none", ctx);
    for (const auto& [k, v] : global_attrs) put_text(ncid_, NC_GLOBAL, k, v, ctx);
    // Room in the header for what the first write adds (time units, the companion variables),
    // so that it does not move the data already on disk.
    CHECK_NC(nc__enddef(ncid_, 16384, 4, 0, 4), ctx);
    for (const auto& write : data) write();
    CHECK_NC(nc_sync(ncid_), ctx);
  } catch (...) {
    nc_close(ncid_);
    ncid_ = -1;
    std::remove(path_.c_str());
    throw;
  }
}

EnsembleWriter::EnsembleWriter(Append, const std::string& path, const std::string& var, int members,
                               int64_t n_cells)
    : path_(path), var_(var), members_(members), n_cells_(n_cells) {
  const std::string ctx = context() + " (appending)";
  CHECK_NC(nc_open(path_.c_str(), NC_WRITE, &ncid_), ctx);
  try {
    int format = 0;
    CHECK_NC(nc_inq_format(ncid_, &format), ctx);
    if (format == NC_FORMAT_NETCDF4 || format == NC_FORMAT_NETCDF4_CLASSIC)
      throw IoError(ctx + ": the file is NetCDF-4 (an older finecast's output); finecast appends to CDF-5 outputs only");
    CHECK_NC(nc_inq_varid(ncid_, var.c_str(), &varid_), ctx + ": no variable '" + var + "'");
    int ndims = 0;
    CHECK_NC(nc_inq_varndims(ncid_, varid_, &ndims), ctx);
    std::vector<int> dims(static_cast<size_t>(ndims));
    CHECK_NC(nc_inq_vardimid(ncid_, varid_, dims.data()), ctx);
    int unlimited = -1;
    CHECK_NC(nc_inq_unlimdim(ncid_, &unlimited), ctx);
    if (ndims < 3 || dims[0] != unlimited) throw IoError(ctx + ": '" + var + "' is not (time, member, cells...)");
    size_t len = 0;
    CHECK_NC(nc_inq_dimlen(ncid_, dims[1], &len), ctx);
    if (static_cast<int>(len) != members)
      throw IoError(ctx + ": the file has " + std::to_string(len) + " members, this run samples " + std::to_string(members));
    size_t cells = 1;
    for (int d = 2; d < ndims; ++d) {
      CHECK_NC(nc_inq_dimlen(ncid_, dims[d], &len), ctx);
      spatial_dimids_.push_back(dims[d]);
      spatial_shape_.push_back(len);
      cells *= len;
    }
    if (static_cast<int64_t>(cells) != n_cells)
      throw IoError(ctx + ": the file's grid has " + std::to_string(cells) + " cells, this run's " + std::to_string(n_cells));
    time_dimid_ = dims[0];
    CHECK_NC(nc_inq_varid(ncid_, "time", &time_varid_), ctx + ": no variable 'time'");
    if (nc_inq_varid(ncid_, (var + "_coarse").c_str(), &coarse_varid_) != NC_NOERR) coarse_varid_ = -1;
    if (nc_inq_varid(ncid_, (var + "_host").c_str(), &host_varid_) != NC_NOERR) host_varid_ = -1;
    size_t records = 0;
    CHECK_NC(nc_inq_dimlen(ncid_, time_dimid_, &records), ctx);
    steps_ = static_cast<int64_t>(records);
    auto text = [&](const char* name) {
      size_t n = 0;
      if (nc_inq_attlen(ncid_, time_varid_, name, &n) != NC_NOERR) return std::string();
      std::string v(n, '\0');
      CHECK_NC(nc_get_att_text(ncid_, time_varid_, name, v.data()), ctx);
      return v;
    };
    time_units_ = text("units");
    calendar_ = text("calendar");
    if (calendar_.empty()) calendar_ = "proleptic_gregorian";
    dated_ = time_units_.find(" since ") != std::string::npos;
    if (steps_ > 0) {
      const size_t last = records - 1;
      CHECK_NC(nc_get_var1_double(ncid_, time_varid_, &last, &last_time_), ctx + " (time)");
      last_datetime_ = dated_ ? format_datetime(CfTime(time_units_, calendar_, ctx).to_datetime(last_time_))
                              : std::to_string(static_cast<long long>(last_time_));
    }
    int old_fill = 0;
    CHECK_NC(nc_set_fill(ncid_, NC_NOFILL, &old_fill), ctx);
  } catch (...) {
    nc_close(ncid_);
    ncid_ = -1;
    throw;
  }
}

int EnsembleWriter::define_companion(const std::string& suffix, const std::string& long_name) {
  const std::string ctx = context();
  CHECK_NC(nc_redef(ncid_), ctx);
  std::vector<int> dims = {time_dimid_};
  dims.insert(dims.end(), spatial_dimids_.begin(), spatial_dimids_.end());
  const std::string name = var_ + suffix;
  int id = -1;
  CHECK_NC(nc_def_var(ncid_, name.c_str(), NC_FLOAT, static_cast<int>(dims.size()), dims.data(), &id), ctx);
  CHECK_NC(nc_def_var_fill(ncid_, id, 0, &kFill), ctx);
  CHECK_NC(nc_put_att_float(ncid_, id, "missing_value", NC_FLOAT, 1, &kFill), ctx);
  put_text(ncid_, id, "long_name", long_name, ctx);
  // Units and coordinates as the main variable.
  nc_copy_att(ncid_, varid_, "units", ncid_, id);
  nc_copy_att(ncid_, varid_, "coordinates", ncid_, id);
  nc_copy_att(ncid_, varid_, "grid_mapping", ncid_, id);
  nc_copy_att(ncid_, varid_, "CDI_grid_type", ncid_, id);
  CHECK_NC(nc_enddef(ncid_), ctx);
  return id;
}

void EnsembleWriter::put_companion(int varid, const std::string& suffix, const float* values, size_t record) {
  for (int64_t i = 0; i < n_cells_; ++i) scratch_[i] = std::isfinite(values[i]) ? values[i] : kFill;
  std::vector<size_t> start = {record}, count = {1};
  for (size_t s : spatial_shape_) start.push_back(0), count.push_back(s);
  CHECK_NC(nc_put_vara_float(ncid_, varid, start.data(), count.data(), scratch_.data()),
           "NetCDF output " + path_ + ", variable '" + var_ + suffix + "' (time step " + std::to_string(record) + ")");
}

void EnsembleWriter::write(const std::string& datetime, const float* members_by_cell,
                           const float* coarse_on_fine, const float* host_field) {
  const std::string ctx = context();
  if (closed_) throw IoError(ctx + ": write after close()");
  if (broken_) throw IoError(ctx + ": an earlier write failed; the file keeps the records written before it");
  DateTime t;
  const bool is_date = parse_datetime(datetime, t);
  if (steps_ > 0 && is_date != dated_)
    throw IoError(ctx + ": time \"" + datetime + "\" is " + (is_date ? "" : "not ") +
                  "an ISO 8601 date but the first written time was " + (dated_ ? "" : "not"));
  if (steps_ > 0 && dated_ && datetime != last_datetime_ &&
      CfTime(time_units_, calendar_, ctx).from_datetime(t) < last_time_)
    throw IoError(ctx + ": time " + datetime + " is earlier than the file's last record (" + last_datetime_ + ")");
  try {
    append(datetime, members_by_cell, coarse_on_fine, host_field);
  } catch (const std::exception& e) {
    // The file keeps every record synced before this one: close it without writing more.
    broken_ = true;
    nc_abort(ncid_);
    ncid_ = -1;
    throw IoError(std::string(e.what()) + "; " + path_ + " keeps the " + std::to_string(steps_) +
                  " record(s) written before");
  }
}

void EnsembleWriter::append(const std::string& datetime, const float* members_by_cell,
                            const float* coarse_on_fine, const float* host_field) {
  const std::string ctx = context();
  if (!members_by_cell) throw IoError(ctx + ": write() got no data");
  DateTime t;
  const bool is_date = parse_datetime(datetime, t);
  if (steps_ == 0) {
    dated_ = is_date;
    if (dated_) {
      DateTime ref = t;
      ref.second = std::floor(ref.second);
      time_units_ = "seconds since " + format_datetime(ref);
      std::replace(time_units_.begin(), time_units_.end(), 'T', ' ');
      CHECK_NC(nc_redef(ncid_), ctx);
      put_text(ncid_, time_varid_, "units", time_units_, ctx);
      put_text(ncid_, time_varid_, "calendar", calendar_, ctx);
      CHECK_NC(nc_enddef(ncid_), ctx);
    } else {
      CHECK_NC(nc_redef(ncid_), ctx);
      put_text(ncid_, time_varid_, "long_name", "output step index (the model gave no date)", ctx);
      CHECK_NC(nc_enddef(ncid_), ctx);
    }
  }
  // The same model time again replaces its record: one time, one record.
  const bool replace = steps_ > 0 && datetime == last_datetime_;
  const int64_t record = replace ? steps_ - 1 : steps_;
  const double tv =
      dated_ ? CfTime(time_units_, calendar_, ctx).from_datetime(t) : static_cast<double>(record);
  if (coarse_on_fine && coarse_varid_ < 0)
    coarse_varid_ = define_companion("_coarse", "coarse-grained input on the fine grid (finecast's condition)");
  if (host_field && host_varid_ < 0) host_varid_ = define_companion("_host", "the host model's own fine field");

  const size_t ts = static_cast<size_t>(record);
  CHECK_NC(nc_put_var1_double(ncid_, time_varid_, &ts, &tv), ctx + " (time)");
  const size_t total = static_cast<size_t>(members_) * static_cast<size_t>(n_cells_);
  scratch_.resize(total);
  for (size_t i = 0; i < total; ++i)
    scratch_[i] = std::isfinite(members_by_cell[i]) ? members_by_cell[i] : kFill;
  std::vector<size_t> start = {ts, 0}, count = {1, static_cast<size_t>(members_)};
  for (size_t s : spatial_shape_) start.push_back(0), count.push_back(s);
  CHECK_NC(nc_put_vara_float(ncid_, varid_, start.data(), count.data(), scratch_.data()),
           ctx + " (time step " + std::to_string(record) + ")");
  if (coarse_on_fine) put_companion(coarse_varid_, "_coarse", coarse_on_fine, ts);
  if (host_field) put_companion(host_varid_, "_host", host_field, ts);
  CHECK_NC(nc_sync(ncid_), ctx + " (time step " + std::to_string(record) + ", writing to disk)");
  last_datetime_ = datetime;
  last_time_ = tv;
  if (!replace) ++steps_;
}

void EnsembleWriter::close() {
  if (closed_) return;
  closed_ = true;
  if (broken_) return;  // closed when the write failed
  const int id = ncid_;
  ncid_ = -1;
  CHECK_NC(nc_close(id), context() + " (closing)");
}

EnsembleWriter::~EnsembleWriter() {
  if (closed_ || broken_ || ncid_ < 0) return;
  nc_close(ncid_);  // every record is on disk already
}

}  // namespace finecast::coupling
