// SPDX-License-Identifier: BSD-3-Clause
// NetCDF field reading: dimension roles, unpacking, missing values, truncation checks.
#include "coupling/io/field_reader.hpp"

#include <netcdf.h>
#include <sys/stat.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

#include "common/log.hpp"
#include "coupling/error.hpp"
#include "coupling/io/input_files.hpp"
#include "coupling/io/nc_classic_size.hpp"

namespace finecast::coupling {
namespace {

constexpr double kPi = 3.14159265358979323846;

bool text_attr(int ncid, int varid, const char* name, std::string& out) {
  nc_type type;
  size_t len = 0;
  if (nc_inq_att(ncid, varid, name, &type, &len) != NC_NOERR || type != NC_CHAR) return false;
  out.assign(len, '\0');
  if (len > 0 && nc_get_att_text(ncid, varid, name, out.data()) != NC_NOERR) return false;
  while (!out.empty() && out.back() == '\0') out.pop_back();
  return true;
}

std::vector<double> num_attr(int ncid, int varid, const char* name) {
  nc_type type;
  size_t len = 0;
  if (nc_inq_att(ncid, varid, name, &type, &len) != NC_NOERR || type == NC_CHAR || type == NC_STRING || len == 0)
    return {};
  std::vector<double> v(len);
  if (nc_get_att_double(ncid, varid, name, v.data()) != NC_NOERR) return {};
  return v;
}

std::string lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

bool is_cell_dim_name(const std::string& name) {
  const std::string n = lower(name);
  return n == "ncells" || n == "cell" || n == "cells" || n == "ncell" || n == "ncells2" || n == "ncol" ||
         n == "cells_of_grid" || n == "nc";
}

std::string number_text(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

double default_fill(nc_type t) {
  switch (t) {
    case NC_SHORT:
      return NC_FILL_SHORT;
    case NC_INT:
      return NC_FILL_INT;
    case NC_FLOAT:
      return static_cast<double>(NC_FILL_FLOAT);
    case NC_DOUBLE:
      return NC_FILL_DOUBLE;
    case NC_USHORT:
      return NC_FILL_USHORT;
    case NC_UINT:
      return NC_FILL_UINT;
    default:
      return std::numeric_limits<double>::quiet_NaN();  // bytes: no default masking (as CF advises)
  }
}

/// A NetCDF file that exists, whose classic header is intact and describes no more than the file
/// holds (checked before and after nc_open, which allocates what a damaged header declares).
void check_file(const std::string& path, const std::string& var, struct stat& st) {
  if (::stat(path.c_str(), &st) != 0)
    throw IoError("NetCDF file " + path + " does not exist (reading variable '" + var + "')");
  if (const std::string damage = nc_classic_header_damage(path); !damage.empty())
    throw IoError("NetCDF file " + path + " is damaged: " + damage + " (reading variable '" + var + "')");
}

void check_size(const std::string& path, const std::string& var) {
  if (const std::string cut = nc_classic_truncation(path); !cut.empty())
    throw IoError("NetCDF file " + path + " is truncated: " + cut + " (reading variable '" + var + "')");
}

/// The variable's id; a missing one is an error that lists the file's variables.
int variable_id(int ncid, const std::string& path, const std::string& var) {
  int varid = -1;
  if (nc_inq_varid(ncid, var.c_str(), &varid) == NC_NOERR) return varid;
  int nvars = 0;
  nc_inq_nvars(ncid, &nvars);
  std::string names;
  for (int v = 0; v < nvars; ++v) {
    char name[NC_MAX_NAME + 1];
    if (nc_inq_varname(ncid, v, name) == NC_NOERR) names += (names.empty() ? "" : ", ") + std::string(name);
  }
  throw IoError("NetCDF file " + path + " has no variable '" + var + "' (variables: " + names + ")");
}

/// A variable's dimensions: ids, names and lengths, in the variable's order.
struct Dims {
  std::vector<int> ids;
  std::vector<std::string> names;
  std::vector<size_t> lens;
  int size() const { return static_cast<int>(ids.size()); }
};

Dims variable_dims(int ncid, int varid, int n_dims, const std::string& ctx) {
  Dims d;
  d.ids.resize(static_cast<size_t>(n_dims));
  CHECK_NC(nc_inq_vardimid(ncid, varid, d.ids.data()), ctx);
  d.names.resize(static_cast<size_t>(n_dims));
  d.lens.resize(static_cast<size_t>(n_dims));
  for (int i = 0; i < n_dims; ++i) {
    char name[NC_MAX_NAME + 1];
    CHECK_NC(nc_inq_dim(ncid, d.ids[i], name, &d.lens[i]), ctx);
    d.names[i] = name;
  }
  return d;
}

/// Whether dimension i is a time axis: unlimited, named time/t, or with a CF time coordinate.
bool is_time_dim(int ncid, const Dims& dims, int i) {
  int n_unlim = 0;
  std::vector<int> unlim(NC_MAX_DIMS);
  nc_inq_unlimdims(ncid, &n_unlim, unlim.data());
  if (std::find(unlim.begin(), unlim.begin() + n_unlim, dims.ids[i]) != unlim.begin() + n_unlim) return true;
  const std::string n = lower(dims.names[i]);
  if (n == "time" || n == "t") return true;
  int cv;
  if (nc_inq_varid(ncid, dims.names[i].c_str(), &cv) != NC_NOERR) return false;
  std::string units, axis, sn;
  text_attr(ncid, cv, "units", units);
  text_attr(ncid, cv, "axis", axis);
  text_attr(ncid, cv, "standard_name", sn);
  return units.find(" since ") != std::string::npos || lower(units).rfind("day as", 0) == 0 || axis == "T" ||
         sn == "time";
}

/// 0 when the first dimension is time, -1 when there is none; a time axis elsewhere is an error.
int time_dim_position(int ncid, const Dims& dims, const std::string& ctx) {
  int pos = -1;
  for (int i = 0; i < dims.size(); ++i) {
    if (!is_time_dim(ncid, dims, i)) continue;
    if (i != 0)
      throw IoError(ctx + " has its time dimension '" + dims.names[i] + "' at position " + std::to_string(i + 1) +
                    ", expected it first (CF order: time, [level,] y, x or time, [level,] cells)");
    pos = 0;
  }
  return pos;
}

/// ICON cells (one spatial dimension, a cell dimension name, grid_type or clon coordinates),
/// else a lat-lon grid, rotated when its grid mapping or dimension names say so.
FieldReader::GridKind grid_kind_of(int ncid, int varid, const Dims& dims, int n_rest) {
  std::string coords, grid_type, mapping;
  text_attr(ncid, varid, "coordinates", coords);
  text_attr(ncid, varid, "grid_type", grid_type);
  text_attr(ncid, varid, "grid_mapping", mapping);
  if (n_rest == 1 || is_cell_dim_name(dims.names.back()) || lower(grid_type) == "unstructured" ||
      coords.find("clon") != std::string::npos)
    return FieldReader::GridKind::kUnstructured;
  std::string gm_name;
  int gm;
  if (!mapping.empty() && nc_inq_varid(ncid, mapping.c_str(), &gm) == NC_NOERR &&
      text_attr(ncid, gm, "grid_mapping_name", gm_name) && gm_name == "rotated_latitude_longitude")
    return FieldReader::GridKind::kRotatedPole;
  const int n = dims.size();
  if (lower(dims.names[n - 1]) == "rlon" && lower(dims.names[n - 2]) == "rlat")
    return FieldReader::GridKind::kRotatedPole;
  return FieldReader::GridKind::kLatLon;
}

/// The one dimension of size > 1 between time and space (a level or member axis), or -1.
int level_dim_position(const Dims& dims, int first_space, int n_space, const std::string& ctx) {
  int pos = -1;
  for (int i = first_space; i < dims.size() - n_space; ++i) {
    if (dims.lens[i] <= 1) continue;
    if (pos >= 0)
      throw IoError(ctx + " has two non-spatial dimensions of size > 1 ('" + dims.names[pos] + "' and '" +
                    dims.names[i] + "'), expected at most one level dimension between time and space");
    pos = i;
  }
  return pos;
}

}  // namespace

std::string FieldReader::context() const { return "NetCDF file " + path_ + ", variable '" + var_ + "'"; }

FieldReader::FieldReader(const std::string& path, const std::string& var, int level)
    : path_(path), var_(var), level_(level) {
  struct stat st {};
  check_file(path, var, st);
  int rc = nc_open(path.c_str(), NC_NOWRITE, &ncid_);
  if (rc != NC_NOERR) {
    ncid_ = -1;
    throw IoError("cannot open " + path + " as NetCDF (reading variable '" + var + "'): " + nc_strerror(rc) +
                  " (not a NetCDF file, or truncated?)");
  }
  note_input_file(path);
  try {
    check_size(path, var);
    varid_ = variable_id(ncid_, path, var);
    nc_type type;
    CHECK_NC(nc_inq_vartype(ncid_, varid_, &type), context());
    if (type == NC_CHAR || type == NC_STRING) throw IoError(context() + " holds text, expected numbers");
    CHECK_NC(nc_inq_varndims(ncid_, varid_, &n_dims_), context());
    if (n_dims_ < 1) throw IoError(context() + " is a scalar, expected a field with spatial dimensions");
    const Dims dims = variable_dims(ncid_, varid_, n_dims_, context());
    time_dim_pos_ = time_dim_position(ncid_, dims, context());
    const int first_space = time_dim_pos_ == 0 ? 1 : 0;
    const int n_rest = n_dims_ - first_space;
    if (n_rest < 1) throw IoError(context() + " has only a time dimension, expected spatial dimensions after it");
    kind_ = grid_kind_of(ncid_, varid_, dims, n_rest);
    const int n_space = kind_ == GridKind::kUnstructured ? 1 : 2;

    start_.assign(static_cast<size_t>(n_dims_), 0);
    count_.assign(static_cast<size_t>(n_dims_), 1);
    level_dim_pos_ = level_dim_position(dims, first_space, n_space, context());
    n_levels_ = level_dim_pos_ >= 0 ? static_cast<int64_t>(dims.lens[level_dim_pos_]) : 1;
    if (level < 0 || level >= n_levels_)
      throw IoError(context() + ": level " + std::to_string(level) + " requested, expected 0.." +
                    std::to_string(n_levels_ - 1) +
                    (level_dim_pos_ >= 0 ? " (dimension '" + dims.names[level_dim_pos_] + "')" : ""));
    if (level_dim_pos_ >= 0) start_[level_dim_pos_] = static_cast<size_t>(level);

    n_values_ = 1;
    for (int d = n_dims_ - n_space; d < n_dims_; ++d) {
      if (dims.lens[d] == 0) throw IoError(context() + ": spatial dimension '" + dims.names[d] + "' is empty");
      spatial_shape_.push_back(dims.lens[d]);
      spatial_dims_.push_back(dims.names[d]);
      count_[d] = dims.lens[d];
      n_values_ *= static_cast<int64_t>(dims.lens[d]);
    }
    if (time_dim_pos_ == 0) read_time_axis(dims.names[0], dims.lens[0]);
    read_value_attributes(type);
  } catch (...) {
    nc_close(ncid_);
    ncid_ = -1;
    throw;
  }
}

void FieldReader::read_time_axis(const std::string& dim, size_t n) {
  n_times_ = static_cast<int64_t>(n);
  int tv;
  std::string units;
  if (nc_inq_varid(ncid_, dim.c_str(), &tv) != NC_NOERR || !text_attr(ncid_, tv, "units", units)) return;
  std::string calendar;
  text_attr(ncid_, tv, "calendar", calendar);
  time_ = std::make_unique<CfTime>(units, calendar, "NetCDF file " + path_ + ", time variable '" + dim + "'");
  time_values_.resize(n);
  if (n > 0) CHECK_NC(nc_get_var_double(ncid_, tv, time_values_.data()), context() + " (time coordinate)");
  // Every consumer tells steps apart by their time (the plugin's output records, replay's and
  // downscale's steps): a repeated time made 4 samplings into 1 record, silently.
  auto when = [&](size_t i) {
    const double v = time_values_[i];
    std::string s = "value " + number_text(v);
    try {
      s = format_datetime(time_->to_datetime(v)) + " (" + s + ")";
    } catch (const IoError&) {
      // No date (NaN, too far away): the value says enough.
    }
    return s;
  };
  for (size_t i = 1; i < n; ++i)
    if (!(time_values_[i] > time_values_[i - 1]))
      throw IoError("NetCDF file " + path_ + ", time variable '" + dim + "': step " + std::to_string(i) + " at " +
                    when(i) +
                    (time_values_[i] == time_values_[i - 1] ? " repeats the time of step " : " is not after step ") +
                    std::to_string(i - 1) + " at " + when(i - 1) +
                    "; the time axis must increase strictly (every step its own time)");
}

void FieldReader::read_value_attributes(int type) {
  text_attr(ncid_, varid_, "units", attrs_.units);
  text_attr(ncid_, varid_, "long_name", attrs_.long_name);
  text_attr(ncid_, varid_, "standard_name", attrs_.standard_name);
  if (auto v = num_attr(ncid_, varid_, "scale_factor"); !v.empty()) scale_ = v[0];
  if (auto v = num_attr(ncid_, varid_, "add_offset"); !v.empty()) offset_ = v[0];
  const auto fill = num_attr(ncid_, varid_, "_FillValue");
  missing_ = fill;
  if (fill.empty() && !std::isnan(default_fill(type))) missing_.push_back(default_fill(type));
  for (double m : num_attr(ncid_, varid_, "missing_value")) missing_.push_back(m);
  valid_min_ = -std::numeric_limits<double>::infinity();
  valid_max_ = std::numeric_limits<double>::infinity();
  bool explicit_range = false;
  if (auto v = num_attr(ncid_, varid_, "valid_range"); v.size() == 2)
    valid_min_ = v[0], valid_max_ = v[1], explicit_range = true;
  if (auto v = num_attr(ncid_, varid_, "valid_min"); !v.empty()) valid_min_ = v[0], explicit_range = true;
  if (auto v = num_attr(ncid_, varid_, "valid_max"); !v.empty()) valid_max_ = v[0], explicit_range = true;
  if (explicit_range) {
    range_source_ = "valid range [" + number_text(valid_min_) + ", " + number_text(valid_max_) + "]";
  } else if (fill.size() == 1 && std::isfinite(fill[0]) && fill[0] != 0) {
    // NUG: "If valid_range is not defined ... a positive _FillValue is the upper bound of the
    // valid range, a negative one the lower bound" (the fill itself is missing, not counted).
    (fill[0] > 0 ? valid_max_ : valid_min_) = fill[0];
    range_source_ = "beyond _FillValue " + number_text(fill[0]);
  }
  // The file's own valid range says what is valid; without one (a _FillValue bounds one side
  // only) the table's plausible range for its units and standard_name applies.
  if (const PlausibleRange* o = plausible_override(var_))
    plausible_ = *o;
  else if (!explicit_range)
    plausible_ = plausible_range(attrs_.units, attrs_.standard_name);
}

FieldReader::~FieldReader() {
  if (ncid_ >= 0) nc_close(ncid_);
}

FieldReader::FieldReader(FieldReader&& o) noexcept { *this = std::move(o); }

FieldReader& FieldReader::operator=(FieldReader&& o) noexcept {
  if (this == &o) return *this;
  if (ncid_ >= 0) nc_close(ncid_);
  path_ = std::move(o.path_);
  var_ = std::move(o.var_);
  ncid_ = o.ncid_;
  o.ncid_ = -1;
  varid_ = o.varid_;
  kind_ = o.kind_;
  n_dims_ = o.n_dims_;
  time_dim_pos_ = o.time_dim_pos_;
  level_dim_pos_ = o.level_dim_pos_;
  n_times_ = o.n_times_;
  n_values_ = o.n_values_;
  n_levels_ = o.n_levels_;
  level_ = o.level_;
  spatial_shape_ = std::move(o.spatial_shape_);
  spatial_dims_ = std::move(o.spatial_dims_);
  start_ = std::move(o.start_);
  count_ = std::move(o.count_);
  attrs_ = std::move(o.attrs_);
  scale_ = o.scale_;
  offset_ = o.offset_;
  missing_ = std::move(o.missing_);
  valid_min_ = o.valid_min_;
  valid_max_ = o.valid_max_;
  range_source_ = std::move(o.range_source_);
  max_abs_ = o.max_abs_;
  plausible_ = std::move(o.plausible_);
  out_of_range_ = o.out_of_range_;
  first_bad_step_ = o.first_bad_step_;
  first_bad_index_ = o.first_bad_index_;
  first_bad_value_ = o.first_bad_value_;
  time_ = std::move(o.time_);
  time_values_ = std::move(o.time_values_);
  raw_ = std::move(o.raw_);
  return *this;
}

std::string FieldReader::time_string(int64_t t) const {
  if (t < 0 || t >= n_times_)
    throw IoError(context() + ": time step " + std::to_string(t) + " requested, the file has " +
                  std::to_string(n_times_));
  if (!time_) return std::to_string(t);
  return format_datetime(time_->to_datetime(time_values_[static_cast<size_t>(t)]));
}

void FieldReader::set_max_abs(double bound) { max_abs_ = std::isfinite(bound) && bound > 0 ? bound : 0; }

std::string FieldReader::valid_range_text() const {
  std::string s = range_source_;
  if (!plausible_.none())
    s += (s.empty() ? "" : ", ") + std::string("plausible range ") + plausible_.text() + " (" + plausible_.source + ")";
  if (max_abs_ > 0) s += (s.empty() ? "" : ", ") + std::string("|value| > ") + number_text(max_abs_);
  return s.empty() ? "none" : s;
}

std::string FieldReader::out_of_range_report() const {
  if (out_of_range_ == 0) return "";
  return context() + ": " + std::to_string(out_of_range_) + " value(s) outside the valid or plausible range (" +
         valid_range_text() + ") treated as missing; the first at step " + std::to_string(first_bad_step_) +
         ", index " + std::to_string(first_bad_index_) + ": " + number_text(first_bad_value_);
}

int64_t FieldReader::read(int64_t t, float* out) {
  if (ncid_ < 0) throw IoError(context() + ": reader was moved from");
  if (t < 0 || t >= n_times_)
    throw IoError(context() + ": time step " + std::to_string(t) + " requested, the file has " +
                  std::to_string(n_times_));
  if (time_dim_pos_ == 0) start_[0] = static_cast<size_t>(t);
  raw_.resize(static_cast<size_t>(n_values_));
  CHECK_NC(nc_get_vara_double(ncid_, varid_, start_.data(), count_.data(), raw_.data()),
           context() + " (time step " + std::to_string(t) + ")");
  const double* raw = raw_.data();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  int64_t out_of_range = 0;
  for (int64_t i = 0; i < n_values_; ++i) {
    const double v = raw[i];
    // Missing values and the valid range are compared on the packed value, as CF specifies.
    bool missing = std::isnan(v);
    for (double m : missing_) missing |= v == m;
    if (missing) {
      out[i] = nan;
      continue;
    }
    const double value = v * scale_ + offset_;
    // Beyond float's range a finite value would become infinite: out of any plausible range.
    if (v < valid_min_ || v > valid_max_ || (max_abs_ > 0 && std::fabs(value) > max_abs_) ||
        !plausible_.contains(value) || !(std::fabs(value) <= std::numeric_limits<float>::max())) {
      out[i] = nan;
      if (out_of_range_ + out_of_range == 0) {
        first_bad_step_ = t;
        first_bad_index_ = i;
        first_bad_value_ = value;
      }
      ++out_of_range;
      continue;
    }
    out[i] = static_cast<float>(value);
  }
  // One line per reader, at the first read that drops values; the callers report totals.
  if (out_of_range > 0 && out_of_range_ == 0)
    log::warning(context() + ", step " + std::to_string(t) + ": " + std::to_string(out_of_range) +
                 " value(s) outside the valid or plausible range (" + valid_range_text() +
                 ") treated as missing, e.g. index " + std::to_string(first_bad_index_) + ": " +
                 number_text(first_bad_value_) + "; later steps are counted, not logged");
  out_of_range_ += out_of_range;
  return out_of_range;
}

std::vector<double> FieldReader::read_coord(const std::string& name) const {
  int id;
  if (nc_inq_varid(ncid_, name.c_str(), &id) != NC_NOERR)
    throw IoError("NetCDF file " + path_ + " has no coordinate variable '" + name + "' for variable '" + var_ + "'");
  int nd = 0;
  CHECK_NC(nc_inq_varndims(ncid_, id, &nd), "NetCDF file " + path_ + ", coordinate '" + name + "'");
  std::vector<int> dims(static_cast<size_t>(std::max(nd, 1)));
  CHECK_NC(nc_inq_vardimid(ncid_, id, dims.data()), "NetCDF file " + path_ + ", coordinate '" + name + "'");
  size_t len = 1;
  for (int d = 0; d < nd; ++d) {
    size_t l;
    CHECK_NC(nc_inq_dimlen(ncid_, dims[d], &l), "NetCDF file " + path_ + ", coordinate '" + name + "'");
    len *= l;
  }
  std::vector<double> v(len);
  CHECK_NC(nc_get_var_double(ncid_, id, v.data()), "NetCDF file " + path_ + ", coordinate '" + name + "'");
  return v;
}

OutputGrid FieldReader::output_grid() const {
  OutputGrid g;
  if (kind_ == GridKind::kUnstructured) {
    g.kind = OutputGrid::Kind::kIcon;
    g.clon = read_coord("clon");
    g.clat = read_coord("clat");
    if (static_cast<int64_t>(g.clon.size()) != n_values_ || g.clat.size() != g.clon.size())
      throw IoError("NetCDF file " + path_ + ": clon/clat have " + std::to_string(g.clon.size()) + "/" +
                    std::to_string(g.clat.size()) + " values, expected " + std::to_string(n_values_) + " (cells of '" +
                    var_ + "')");
    int id;
    std::string units;
    if (nc_inq_varid(ncid_, "clon", &id) == NC_NOERR && text_attr(ncid_, id, "units", units) &&
        lower(units).find("deg") == 0) {
      for (auto& v : g.clon) v *= kPi / 180.0;
      for (auto& v : g.clat) v *= kPi / 180.0;
    }
    return g;
  }
  g.kind = OutputGrid::Kind::kLatLon;
  auto coord = [&](const std::string& name) {
    CoordVar c;
    c.name = name;
    c.values = read_coord(name);
    int id;
    nc_inq_varid(ncid_, name.c_str(), &id);
    for (const char* a : {"units", "standard_name", "long_name", "axis"}) {
      std::string s;
      if (text_attr(ncid_, id, a, s)) c.text_attrs[a] = s;
    }
    return c;
  };
  g.y = coord(spatial_dims_[0]);
  g.x = coord(spatial_dims_[1]);
  if (g.y.values.size() != spatial_shape_[0] || g.x.values.size() != spatial_shape_[1])
    throw IoError("NetCDF file " + path_ + ": coordinates of '" + var_ + "' are not 1-D along its spatial dimensions");
  std::string mapping;
  int gm;
  if (text_attr(ncid_, varid_, "grid_mapping", mapping) && nc_inq_varid(ncid_, mapping.c_str(), &gm) == NC_NOERR) {
    g.grid_mapping = mapping;
    int natts = 0;
    nc_inq_varnatts(ncid_, gm, &natts);
    for (int a = 0; a < natts; ++a) {
      char name[NC_MAX_NAME + 1];
      if (nc_inq_attname(ncid_, gm, a, name) != NC_NOERR) continue;
      std::string s;
      if (text_attr(ncid_, gm, name, s)) {
        g.grid_mapping_text_attrs[name] = s;
      } else if (auto v = num_attr(ncid_, gm, name); v.size() == 1) {
        g.grid_mapping_num_attrs[name] = v[0];
      }
    }
  }
  return g;
}

}  // namespace finecast::coupling
