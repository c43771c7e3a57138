// SPDX-License-Identifier: BSD-3-Clause
// Ensemble output: definitions, and per-step appends that are on disk as soon as they return.
#include "coupling/io/ensemble_writer.hpp"

#include <fcntl.h>
#include <netcdf.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <functional>
#include <limits>

#include "coupling/error.hpp"
#include "coupling/io/cf_time.hpp"
#include "common/log.hpp"

#ifndef FINECAST_VERSION
#define FINECAST_VERSION "unknown"
#endif

namespace finecast::coupling {
namespace {

constexpr float kFill = 1.0e20f;       // CMIP's fill value: cdo and most tools expect a finite one
constexpr size_t kHeaderRoom = 16384;  // bytes kept free in the header for later attributes
// NetCDF-4 chunks hold at most this many values (4 MiB of float): large enough for deflate and
// few chunk-index entries, small enough that a reader of one member or one region reads little.
// The plugin's trainer ranks send their pieces of a record in blocks of the same 2^20 cells
// (whole rows on lat-lon grids), so each piece fills whole chunks.
constexpr size_t kChunkValues = size_t{1} << 20;

void put_text(int ncid, int varid, const std::string& name, const std::string& value, const std::string& ctx) {
  CHECK_NC(nc_put_att_text(ncid, varid, name.c_str(), value.size(), value.c_str()), ctx + ", attribute " + name);
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

namespace {
/// A descriptor of an anonymous in-memory copy of the file open as `fd` (memfd), or of /dev/null
/// when the copy cannot be made whole (no memory) or the process has a file-size limit
/// (RLIMIT_FSIZE, ulimit -f: it applies to the copy too, and HDF5's close writes past it).
int memory_stand_in(int fd) {
  rlimit limit{};
  if (getrlimit(RLIMIT_FSIZE, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY)
    return open("/dev/null", O_RDWR | O_CLOEXEC);
  struct stat st {};
  const int copy = memfd_create("finecast-discarded-netcdf4", MFD_CLOEXEC);
  if (copy >= 0 && fstat(fd, &st) == 0) {
    off_t offset = 0;
    while (offset < st.st_size)
      if (sendfile(copy, fd, &offset, static_cast<size_t>(st.st_size - offset)) <= 0) break;
    if (offset == st.st_size) return copy;
  }
  if (copy >= 0) close(copy);
  return open("/dev/null", O_RDWR | O_CLOEXEC);
}

/// Points every descriptor of this process open on `path` at an in-memory copy of the file: what
/// HDF5 still writes or reads back while it closes the file goes to memory and succeeds, so HDF5
/// releases the file, and nothing is left for its clean-up at exit (which crashed the process on
/// a file whose close had failed). The file on disk keeps what it held. (/dev/null, the stand-in
/// when no copy can be made, takes the writes but gives zeros for reads.)
void detach_from_disk(const std::string& path) {
  std::error_code ec;
  const std::filesystem::path target = std::filesystem::canonical(path, ec);
  if (ec) return;
  int stand_in = -1;
  for (const auto& entry : std::filesystem::directory_iterator("/proc/self/fd", ec)) {
    std::error_code link_ec;
    const std::filesystem::path file = std::filesystem::read_symlink(entry.path(), link_ec);
    if (link_ec || file != target) continue;
    const int fd = std::atoi(entry.path().filename().c_str());
    if (stand_in < 0) stand_in = memory_stand_in(fd);
    if (stand_in >= 0 && fd != stand_in) dup2(stand_in, fd);
  }
  if (stand_in >= 0) close(stand_in);
}

/// Reserves `need` bytes of disk after the end of the file at `path`, without changing its size
/// (fallocate FALLOC_FL_KEEP_SIZE): HDF5's writes into that space cannot fail for want of room,
/// even when another process fills the disk meanwhile. give_back_room() frees what was not used.
/// A file system without that fallocate gets the room allocated and freed at once (a check
/// only). Returns "" when the disk has the room (or cannot say), else why not.
std::string room_after(const std::string& path, off_t need) {
  const int fd = open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return std::string("cannot open it: ") + std::strerror(errno);
  struct stat st {};
  int rc = fstat(fd, &st) == 0 ? 0 : errno;
  // A file-size limit (RLIMIT_FSIZE, ulimit -f) does not bound a reservation past the end.
  rlimit limit{};
  if (rc == 0 && getrlimit(RLIMIT_FSIZE, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY &&
      static_cast<rlim_t>(st.st_size + need) > limit.rlim_cur)
    rc = EFBIG;
  if (rc == 0 && fallocate(fd, FALLOC_FL_KEEP_SIZE, st.st_size, need) != 0) {
    rc = errno;
    if (rc == EOPNOTSUPP) {
      rc = posix_fallocate(fd, st.st_size, need);
      if (ftruncate(fd, st.st_size) != 0 && rc == 0) rc = errno;
    }
  }
  ::close(fd);
  return rc == 0 || rc == EOPNOTSUPP ? std::string() : std::strerror(rc);
}

/// Frees the blocks reserved past the end of the file (truncating it to its own size).
void give_back_room(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && ::truncate(path.c_str(), st.st_size) != 0) {
    // (nothing to do: the blocks stay reserved until the file is next truncated or removed)
  }
}

/// Room for what HDF5 writes when it flushes or closes a file outside a record: the header's
/// attributes, the metadata cache, the chunk indices.
constexpr off_t kMetadataRoom = off_t{1} << 18;
}  // namespace

std::string EnsembleWriter::context() const { return "NetCDF output " + path_ + ", variable '" + var_ + "'"; }

namespace {

/// Definitions of a grid and the writes of its coordinate values, which classic files take only
/// after the definitions.
using DeferredWrites = std::vector<std::function<void()>>;

void put_double_attrs(int ncid, int varid, const std::map<std::string, double>& attrs, const std::string& ctx) {
  for (const auto& [k, v] : attrs)
    CHECK_NC(nc_put_att_double(ncid, varid, k.c_str(), NC_DOUBLE, 1, &v), ctx + ", attribute " + k);
}

/// A double variable over `dims` whose values are written later from `values` (which must
/// outlive the deferred writes).
int define_doubles(int ncid, const std::string& name, const std::vector<int>& dims, const std::vector<double>& values,
                   DeferredWrites& data, const std::string& ctx) {
  int id = -1;
  CHECK_NC(nc_def_var(ncid, name.c_str(), NC_DOUBLE, static_cast<int>(dims.size()), dims.data(), &id),
           ctx + " (variable " + name + ")");
  data.push_back([=, &values] { CHECK_NC(nc_put_var_double(ncid, id, values.data()), ctx + " (" + name + ")"); });
  return id;
}

/// ICON cells: clon/clat with their corners (clon_bnds/clat_bnds, as ICON's own output names
/// them) and the grid's identity, which CDO uses to match grids. Returns the cell dimension.
int define_icon_grid(int ncid, const OutputGrid& grid, DeferredWrites& data, const std::string& ctx) {
  const size_t n = grid.clon.size();
  if (grid.clat.size() != n)
    throw IoError(ctx + ": the ICON output grid has " + std::to_string(n) + " clon but " +
                  std::to_string(grid.clat.size()) + " clat values");
  const bool corners = !grid.clon_bnds.empty();
  if (corners && (grid.clon_bnds.size() != 3 * n || grid.clat_bnds.size() != 3 * n))
    throw IoError(ctx + ": the cell corners must hold 3 values per cell");
  int cell_dim = -1, corner_dim = -1;
  CHECK_NC(nc_def_dim(ncid, "ncells", n, &cell_dim), ctx);
  if (corners) CHECK_NC(nc_def_dim(ncid, "vertices", 3, &corner_dim), ctx);
  for (const bool lon : {true, false}) {
    const std::string name = lon ? "clon" : "clat", what = lon ? "longitude" : "latitude";
    const int id = define_doubles(ncid, name, {cell_dim}, lon ? grid.clon : grid.clat, data, ctx);
    put_text(ncid, id, "standard_name", what, ctx);
    put_text(ncid, id, "long_name", "center " + what, ctx);
    put_text(ncid, id, "units", "radian", ctx);
    if (!corners) continue;
    put_text(ncid, id, "bounds", name + "_bnds", ctx);
    const int b =
        define_doubles(ncid, name + "_bnds", {cell_dim, corner_dim}, lon ? grid.clon_bnds : grid.clat_bnds, data, ctx);
    put_text(ncid, b, "units", "radian", ctx);
  }
  if (!grid.uuid_of_hgrid.empty()) put_text(ncid, NC_GLOBAL, "uuidOfHGrid", grid.uuid_of_hgrid, ctx);
  if (grid.number_of_grid_used >= 0)
    CHECK_NC(nc_put_att_int(ncid, NC_GLOBAL, "number_of_grid_used", NC_INT, 1, &grid.number_of_grid_used), ctx);
  return cell_dim;
}

/// Lat-lon cells: the y and x coordinates as the input had them (lat/lon, or rlat/rlon of a
/// rotated grid) with bounds, the grid mapping, and for rotated grids 2-D geographic lat/lon.
/// Returns the y and x dimensions and fills the `coordinates` attribute the fields need.
std::vector<int> define_latlon_grid(int ncid, const OutputGrid& grid, DeferredWrites& data, std::string& coordinates,
                                    const std::string& ctx) {
  if (grid.y.name.empty() || grid.x.name.empty() || grid.y.name == grid.x.name)
    throw IoError(ctx + ": the lat-lon output grid needs two distinct coordinate names");
  std::vector<int> dims;
  int bnds_dim = -1;
  for (const CoordVar* c : {&grid.y, &grid.x}) {
    int dim = -1;
    CHECK_NC(nc_def_dim(ncid, c->name.c_str(), c->values.size(), &dim), ctx + " (dimension " + c->name + ")");
    const int id = define_doubles(ncid, c->name, {dim}, c->values, data, ctx);
    for (const auto& [k, v] : c->text_attrs)
      if (k != "bounds") put_text(ncid, id, k, v, ctx);
    put_double_attrs(ncid, id, c->num_attrs, ctx);
    if (!c->bounds.empty()) {
      if (c->bounds.size() != 2 * c->values.size())
        throw IoError(ctx + ": coordinate " + c->name + " has " + std::to_string(c->values.size()) + " values but " +
                      std::to_string(c->bounds.size()) + " bounds (expected 2 per value)");
      if (bnds_dim < 0) CHECK_NC(nc_def_dim(ncid, "bnds", 2, &bnds_dim), ctx);
      put_text(ncid, id, "bounds", c->name + "_bnds", ctx);
      const int b = define_doubles(ncid, c->name + "_bnds", {dim, bnds_dim}, c->bounds, data, ctx);
      if (const auto u = c->text_attrs.find("units"); u != c->text_attrs.end())
        put_text(ncid, b, "units", u->second, ctx);
    }
    dims.push_back(dim);
  }
  if (!grid.grid_mapping.empty()) {
    int gm = -1;
    CHECK_NC(nc_def_var(ncid, grid.grid_mapping.c_str(), NC_INT, 0, nullptr, &gm), ctx + " (grid mapping)");
    for (const auto& [k, v] : grid.grid_mapping_text_attrs) put_text(ncid, gm, k, v, ctx);
    put_double_attrs(ncid, gm, grid.grid_mapping_num_attrs, ctx);
  }
  if (!grid.lat_2d.empty()) {
    const size_t cells = grid.y.values.size() * grid.x.values.size();
    if (grid.lat_2d.size() != cells || grid.lon_2d.size() != cells)
      throw IoError(ctx + ": the 2-D latitudes and longitudes must hold one value per cell");
    // CF's auxiliary coordinates of a rotated grid; renamed if the grid's own axes are lat/lon.
    const bool clash = grid.y.name == "lat" || grid.x.name == "lon" || grid.y.name == "lon" || grid.x.name == "lat";
    const std::string lat = clash ? "geographic_lat" : "lat", lon = clash ? "geographic_lon" : "lon";
    for (const bool is_lat : {true, false}) {
      const int id = define_doubles(ncid, is_lat ? lat : lon, dims, is_lat ? grid.lat_2d : grid.lon_2d, data, ctx);
      put_text(ncid, id, "standard_name", is_lat ? "latitude" : "longitude", ctx);
      put_text(ncid, id, "long_name", is_lat ? "latitude" : "longitude", ctx);
      put_text(ncid, id, "units", is_lat ? "degrees_north" : "degrees_east", ctx);
    }
    coordinates = lat + " " + lon;
  }
  return dims;
}

}  // namespace

void EnsembleWriter::set_storage(int varid, bool with_member) {
  if (!netcdf4_) return;
  const std::string ctx = context();
  std::vector<size_t> chunk = chunk_;
  if (!with_member) chunk.erase(chunk.begin() + 1);
  CHECK_NC(nc_def_var_chunking(ncid_, varid, NC_CHUNKED, chunk.data()), ctx + " (chunking)");
  if (deflate_ > 0) CHECK_NC(nc_def_var_deflate(ncid_, varid, 1, 1, deflate_), ctx + " (deflate)");
  set_chunk_cache(varid, with_member);
}

void EnsembleWriter::set_chunk_cache(int varid, bool with_member) {
  std::vector<size_t> chunk = chunk_;
  if (!with_member) chunk.erase(chunk.begin() + 1);
  // Room for two chunks of every member (companions: two chunks): a record's pieces that do not
  // fill whole chunks stay in memory until they do, instead of being compressed, read back and
  // compressed again.
  size_t bytes = sizeof(float);
  for (size_t c : chunk) bytes *= c;
  const size_t copies = with_member ? static_cast<size_t>(members_) : 1;
  const size_t cache = std::min<size_t>(bytes * 2 * copies, size_t{256} << 20);
  CHECK_NC(nc_set_var_chunk_cache(ncid_, varid, cache, 1009, 0.75f), context() + " (chunk cache)");
}

EnsembleWriter::EnsembleWriter(const std::string& path, const OutputGrid& grid, const std::string& var,
                               const VarAttributes& attrs, int members,
                               const std::map<std::string, std::string>& global_attrs, const std::string& calendar,
                               const WriterOptions& options)
    : netcdf4_(options.format == OutputFormat::kNetcdf4),
      deflate_(netcdf4_ ? options.deflate : 0),
      time_origin_(options.time_origin),
      path_(path),
      var_(var),
      calendar_(calendar),
      members_(members) {
  if (members < 1) throw IoError("NetCDF output " + path + ": members must be >= 1, got " + std::to_string(members));
  if (var.empty()) throw IoError("NetCDF output " + path + ": the variable name is empty");
  if (options.deflate < 0 || options.deflate > 9)
    throw IoError("NetCDF output " + path + ": the deflate level must be 0..9, got " + std::to_string(options.deflate));
  CfTime(std::string("seconds since 2000-01-01"), calendar, "NetCDF output " + path);  // validates the calendar
  n_cells_ = grid.n_cells();
  if (n_cells_ < 1) throw IoError("NetCDF output " + path + ": the output grid has no cells");
  const std::string ctx = context();
  // CDF-5 (64-bit data): a record is on disk once nc_sync returns and the header's record count
  // is updated after the data, so a run that dies or fails mid-write leaves a readable file
  // with every record written before. NetCDF-4 (HDF5) compresses; nc_sync flushes HDF5's caches
  // after each record, but a kill or a full disk during that flush can leave the file's
  // metadata half written (docs/output.md).
  CHECK_NC(nc_create(path_.c_str(), (netcdf4_ ? NC_NETCDF4 : NC_64BIT_DATA) | NC_CLOBBER, &ncid_), ctx);
  int old_fill = 0;  // every value is written: no pre-fill (it would write each record twice)
  CHECK_NC(nc_set_fill(ncid_, NC_NOFILL, &old_fill), ctx);
  DeferredWrites data;
  std::vector<int> member_values(static_cast<size_t>(members));
  for (int m = 0; m < members; ++m) member_values[m] = m;
  try {
    CHECK_NC(nc_def_dim(ncid_, "time", NC_UNLIMITED, &time_dimid_), ctx);
    // The ensemble axis as CF names it: standard_name "realization" (xarray and Iris read it as
    // the ensemble dimension; see docs/output.md for CDO).
    int member_dim = -1, member_id = -1;
    CHECK_NC(nc_def_dim(ncid_, "realization", static_cast<size_t>(members), &member_dim), ctx);
    std::string coordinates;
    if (grid.kind == OutputGrid::Kind::kIcon) {
      spatial_dimids_ = {define_icon_grid(ncid_, grid, data, ctx)};
      coordinates = "clon clat";
    } else {
      spatial_dimids_ = define_latlon_grid(ncid_, grid, data, coordinates, ctx);
    }
    for (int d : spatial_dimids_) {
      size_t len = 0;
      CHECK_NC(nc_inq_dimlen(ncid_, d, &len), ctx);
      spatial_shape_.push_back(len);
    }
    // Chunks: one record, one member, and a block of cells (lat-lon: whole rows).
    chunk_ = {1, 1};
    if (spatial_shape_.size() == 2) {
      const size_t nx = spatial_shape_[1];
      chunk_.push_back(std::clamp<size_t>(kChunkValues / nx, 1, spatial_shape_[0]));
      chunk_.push_back(nx);
    } else {
      chunk_.push_back(std::min(spatial_shape_[0], kChunkValues));
    }

    CHECK_NC(nc_def_var(ncid_, "time", NC_DOUBLE, 1, &time_dimid_, &time_varid_), ctx);
    put_text(ncid_, time_varid_, "standard_name", "time", ctx);
    put_text(ncid_, time_varid_, "axis", "T", ctx);
    CHECK_NC(nc_def_var(ncid_, "realization", NC_INT, 1, &member_dim, &member_id), ctx);
    put_text(ncid_, member_id, "standard_name", "realization", ctx);
    put_text(ncid_, member_id, "long_name", "ensemble member", ctx);
    put_text(ncid_, member_id, "units", "1", ctx);
    data.push_back(
        [&, member_id] { CHECK_NC(nc_put_var_int(ncid_, member_id, member_values.data()), ctx + " (realization)"); });

    std::vector<int> dims = {time_dimid_, member_dim};
    dims.insert(dims.end(), spatial_dimids_.begin(), spatial_dimids_.end());
    CHECK_NC(nc_def_var(ncid_, var.c_str(), NC_FLOAT, static_cast<int>(dims.size()), dims.data(), &varid_), ctx);
    CHECK_NC(nc_def_var_fill(ncid_, varid_, 0, &kFill), ctx);
    set_storage(varid_, true);
    if (!attrs.standard_name.empty()) put_text(ncid_, varid_, "standard_name", attrs.standard_name, ctx);
    put_text(ncid_, varid_, "long_name",
             (attrs.long_name.empty() ? var : attrs.long_name) + " (downscaled by finecast)", ctx);
    if (!attrs.units.empty()) put_text(ncid_, varid_, "units", attrs.units, ctx);
    CHECK_NC(nc_put_att_float(ncid_, varid_, "missing_value", NC_FLOAT, 1, &kFill), ctx);
    if (!coordinates.empty()) put_text(ncid_, varid_, "coordinates", coordinates, ctx);
    if (grid.kind == OutputGrid::Kind::kIcon) put_text(ncid_, varid_, "CDI_grid_type", "unstructured", ctx);
    if (grid.kind == OutputGrid::Kind::kLatLon && !grid.grid_mapping.empty())
      put_text(ncid_, varid_, "grid_mapping", grid.grid_mapping, ctx);

    put_text(ncid_, NC_GLOBAL, "Conventions", "CF-1.8", ctx);
    put_text(ncid_, NC_GLOBAL, "source", std::string("finecast ") + FINECAST_VERSION, ctx);
    put_text(ncid_, NC_GLOBAL, "finecast_version", FINECAST_VERSION, ctx);
    put_text(ncid_, NC_GLOBAL, "history",
             now_utc() + ": fine fields sampled by finecast " FINECAST_VERSION " (in-situ diffusion downscaling)", ctx);
    if (!grid.grid_file.empty()) put_text(ncid_, NC_GLOBAL, "grid_file_uri", grid.grid_file, ctx);
    if (!global_attrs.count("finecast_checkpoint")) put_text(ncid_, NC_GLOBAL, "finecast_checkpoint", "none", ctx);
    for (const auto& [k, v] : global_attrs) put_text(ncid_, NC_GLOBAL, k, v, ctx);
    if (deflate_ > 0) {
      // The coordinates and cell corners too (at R2B9 the corners alone are 1 GB of doubles).
      int nvars = 0;
      CHECK_NC(nc_inq_nvars(ncid_, &nvars), ctx);
      for (int v = 0; v < nvars; ++v) {
        int ndims = 0;
        CHECK_NC(nc_inq_varndims(ncid_, v, &ndims), ctx);
        if (v != varid_ && v != time_varid_ && ndims > 0)
          CHECK_NC(nc_def_var_deflate(ncid_, v, 1, 1, deflate_), ctx + " (deflate)");
      }
    }
    // Room in the header for what later writes add (time units, the companion variables, the
    // checkpoint attribute), so that they do not move the data already on disk.
    CHECK_NC(nc__enddef(ncid_, kHeaderRoom, 4, 0, 4), ctx);
    // NetCDF-4: the coordinates and the header's flush must fit before HDF5 writes any of them
    // (a full disk half-way loses the file's structure, and a failed close crashed the process
    // at exit); the room for them is allocated and given back first.
    if (netcdf4_) {
      // (doubles: ICON centres and corners; lat-lon axes with their bounds, rotated grids' 2-D lat/lon)
      const size_t values = grid.clon.size() + grid.clat.size() + grid.clon_bnds.size() + grid.clat_bnds.size() +
                            3 * (grid.y.values.size() + grid.x.values.size()) + grid.lat_2d.size() + grid.lon_2d.size();
      const off_t coordinate_bytes = static_cast<off_t>(values) * 8;
      if (const std::string why = room_after(path_, coordinate_bytes + kMetadataRoom); !why.empty())
        throw IoError(ctx + ": no room for the file's grid and header (" + std::to_string(coordinate_bytes >> 10) +
                      " KiB): " + why);
    }
    for (const auto& write : data) write();
    CHECK_NC(nc_sync(ncid_), ctx);
    if (netcdf4_) give_back_room(path_);
  } catch (...) {
    // The file is removed: NetCDF-4's is discarded without a flush onto the disk (discard()).
    discard();
    std::remove(path_.c_str());
    throw;
  }
}

EnsembleWriter::EnsembleWriter(Append, const std::string& path, const std::string& var, int members, int64_t n_cells)
    : path_(path), var_(var), members_(members), n_cells_(n_cells) {
  const std::string ctx = context() + " (appending)";
  CHECK_NC(nc_open(path_.c_str(), NC_WRITE, &ncid_), ctx);
  try {
    int format = 0;
    CHECK_NC(nc_inq_format(ncid_, &format), ctx);
    netcdf4_ = format == NC_FORMAT_NETCDF4 || format == NC_FORMAT_NETCDF4_CLASSIC;
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
      throw IoError(ctx + ": the file has " + std::to_string(len) + " members, this run samples " +
                    std::to_string(members));
    size_t cells = 1;
    for (int d = 2; d < ndims; ++d) {
      CHECK_NC(nc_inq_dimlen(ncid_, dims[d], &len), ctx);
      spatial_dimids_.push_back(dims[d]);
      spatial_shape_.push_back(len);
      cells *= len;
    }
    if (static_cast<int64_t>(cells) != n_cells)
      throw IoError(ctx + ": the file's grid has " + std::to_string(cells) + " cells, this run's " +
                    std::to_string(n_cells));
    time_dimid_ = dims[0];
    if (netcdf4_) {
      // Companions defined later get the main variable's chunks and compression.
      int storage = 0, shuffle = 0, deflate = 0, level = 0;
      chunk_.assign(static_cast<size_t>(ndims), 0);
      CHECK_NC(nc_inq_var_chunking(ncid_, varid_, &storage, chunk_.data()), ctx);
      if (storage != NC_CHUNKED) throw IoError(ctx + ": '" + var + "' is not chunked (not written by finecast)");
      CHECK_NC(nc_inq_var_deflate(ncid_, varid_, &shuffle, &deflate, &level), ctx);
      deflate_ = deflate ? level : 0;
      set_chunk_cache(varid_, true);
    }
    CHECK_NC(nc_inq_varid(ncid_, "time", &time_varid_), ctx + ": no variable 'time'");
    if (nc_inq_varid(ncid_, (var + "_coarse").c_str(), &coarse_varid_) != NC_NOERR) coarse_varid_ = -1;
    if (nc_inq_varid(ncid_, (var + "_host").c_str(), &host_varid_) != NC_NOERR) host_varid_ = -1;
    if (nc_inq_varid(ncid_, (var + "_mean").c_str(), &mean_varid_) != NC_NOERR) mean_varid_ = -1;
    if (nc_inq_varid(ncid_, (var + "_masked").c_str(), &masked_varid_) != NC_NOERR) masked_varid_ = -1;
    for (int id : {coarse_varid_, host_varid_, mean_varid_})
      if (id >= 0 && netcdf4_) set_chunk_cache(id, false);
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

int EnsembleWriter::define_companion(const std::string& suffix, const std::string& long_name,
                                     const std::string& cell_methods) {
  const std::string ctx = context();
  CHECK_NC(nc_redef(ncid_), ctx);
  std::vector<int> dims = {time_dimid_};
  dims.insert(dims.end(), spatial_dimids_.begin(), spatial_dimids_.end());
  const std::string name = var_ + suffix;
  int id = -1;
  CHECK_NC(nc_def_var(ncid_, name.c_str(), NC_FLOAT, static_cast<int>(dims.size()), dims.data(), &id), ctx);
  CHECK_NC(nc_def_var_fill(ncid_, id, 0, &kFill), ctx);
  set_storage(id, false);
  CHECK_NC(nc_put_att_float(ncid_, id, "missing_value", NC_FLOAT, 1, &kFill), ctx);
  put_text(ncid_, id, "long_name", long_name, ctx);
  if (!cell_methods.empty()) put_text(ncid_, id, "cell_methods", cell_methods, ctx);
  // The same quantity on the same grid as the main variable.
  for (const char* att : {"standard_name", "units", "coordinates", "grid_mapping", "CDI_grid_type"})
    nc_copy_att(ncid_, varid_, att, ncid_, id);
  CHECK_NC(nc_enddef(ncid_), ctx);
  return id;
}

void EnsembleWriter::set_global_attribute(const std::string& name, const std::string& value) {
  const std::string ctx = context() + ", global attribute " + name;
  if (closed_ || broken_) throw IoError(ctx + ": the file is closed");
  guarded([&] {
    if (netcdf4_) check_room(kMetadataRoom);
    CHECK_NC(nc_redef(ncid_), ctx);
    put_text(ncid_, NC_GLOBAL, name, value, ctx);
    CHECK_NC(nc_enddef(ncid_), ctx);
    CHECK_NC(nc_sync(ncid_), ctx);
    if (netcdf4_) give_back_room(path_);
  });
}

void EnsembleWriter::add_history(const std::string& text) {
  std::string history;
  size_t n = 0;
  if (nc_inq_attlen(ncid_, NC_GLOBAL, "history", &n) == NC_NOERR && n > 0) {
    history.resize(n);
    CHECK_NC(nc_get_att_text(ncid_, NC_GLOBAL, "history", history.data()), context() + ", global attribute history");
    history = history.c_str();  // without a trailing NUL some writers add
    if (!history.empty() && history.back() != '\n') history += '\n';
  }
  set_global_attribute("history", history + now_utc() + ": " + text);
}

void EnsembleWriter::write(const std::string& datetime, const float* members_by_cell, const float* coarse_on_fine,
                           const float* host_field) {
  if (!members_by_cell) throw IoError(context() + ": write() got no data");
  begin(datetime, coarse_on_fine != nullptr, host_field != nullptr);
  put(0, n_cells_, members_by_cell, coarse_on_fine, host_field);
  end();
  mean_ = chunk_mean_;
}

int64_t EnsembleWriter::chunk_alignment() const {
  // Lat-lon records are written row by row: a chunk is whole rows.
  return spatial_shape_.size() == 2 ? static_cast<int64_t>(spatial_shape_[1]) : 1;
}

void EnsembleWriter::guarded(const std::function<void()>& io) {
  try {
    io();
  } catch (const std::exception& e) {
    // The file keeps every record synced before this one: close it without writing more.
    in_record_ = false;
    discard();
    throw IoError(std::string(e.what()) + "; " + path_ + " keeps the " + std::to_string(steps_) +
                  " record(s) written before");
  }
}

void EnsembleWriter::discard() noexcept {
  broken_ = true;
  if (ncid_ < 0) return;
  // NetCDF-4: HDF5 flushes its caches when the file is closed, and keeps the file open when that
  // flush fails (as it does again on a full disk); HDF5's clean-up at exit then crashed the
  // process. Its descriptor is pointed at an in-memory copy first: the flush succeeds without
  // reaching the disk, and HDF5 releases the file.
  if (netcdf4_) detach_from_disk(path_);
  nc_redef(ncid_);  // discarded by nc_abort: nothing more reaches the disk
  nc_abort(ncid_);
  ncid_ = -1;
}

void EnsembleWriter::check_room(off_t need) {
  if (const std::string why = room_after(path_, need); !why.empty())
    throw IoError(context() + ": no room for another record (" + std::to_string(need >> 10) + " KiB): " + why);
}

void EnsembleWriter::check_record_space() {
  // HDF5 writes a record's metadata in place and its chunks at the end of the file; on a full
  // disk the first succeed and the second fail, and the file's structure is lost. So before any
  // of a record is written, the disk must take the whole record (uncompressed, plus room for
  // metadata): the room is allocated and given back (HDF5 keeps its own account of the file's
  // end). A full disk then fails here and the file stays as it was synced.
  check_room(static_cast<off_t>(n_cells_) * static_cast<off_t>(members_ + 3) * 4 * 101 / 100 + kMetadataRoom);
}

void EnsembleWriter::begin(const std::string& datetime, bool with_coarse, bool with_host) {
  const std::string ctx = context();
  if (closed_) throw IoError(ctx + ": write after close()");
  if (broken_) throw IoError(ctx + ": an earlier write failed; the file keeps the records written before it");
  if (in_record_) throw IoError(ctx + ": begin() of " + datetime + " before end() of the record before");
  DateTime t;
  const bool is_date = parse_datetime(datetime, t);
  if (steps_ > 0 && is_date != dated_)
    throw IoError(ctx + ": time \"" + datetime + "\" is " + (is_date ? "" : "not ") +
                  "an ISO 8601 date but the first written time was " + (dated_ ? "" : "not"));
  if (steps_ > 0 && dated_ && datetime != last_datetime_ &&
      CfTime(time_units_, calendar_, ctx).from_datetime(t) < last_time_)
    throw IoError(ctx + ": time " + datetime + " is earlier than the file's last record (" + last_datetime_ + ")");
  // The record's time first, before the file is touched: a time the calendar does not have (a
  // 360_day February 30 written in the proleptic Gregorian calendar) is an error of this record,
  // not a failed write (which would discard the file).
  std::string units = time_units_;
  if (steps_ == 0 && is_date) {
    // From the experiment start when known (every chunk of a restarted run counts from the
    // same origin), else from the first record.
    DateTime ref = t, origin;
    if (!time_origin_.empty() && parse_datetime(time_origin_, origin)) ref = origin;
    ref.second = std::floor(ref.second);
    units = "seconds since " + format_datetime(ref);
    std::replace(units.begin(), units.end(), 'T', ' ');
  }
  const bool replace = steps_ > 0 && datetime == last_datetime_;  // one time, one record
  const int64_t record = replace ? steps_ - 1 : steps_;
  if (is_date)
    if (const std::string why = CfTime(units, calendar_, ctx).date_error(t); !why.empty())
      throw IoError(ctx + ": time " + datetime + " is no date of the output's " + calendar_ + " calendar (" + why +
                    "); the record is not written");
  const double record_time = is_date ? CfTime(units, calendar_, ctx).from_datetime(t) : static_cast<double>(record);
  guarded([&] {
    if (netcdf4_) check_record_space();
    if (steps_ == 0) {
      dated_ = is_date;
      time_units_ = units;
      CHECK_NC(nc_redef(ncid_), ctx);
      if (dated_) {
        put_text(ncid_, time_varid_, "units", time_units_, ctx);
        put_text(ncid_, time_varid_, "calendar", calendar_, ctx);
      } else {
        put_text(ncid_, time_varid_, "long_name", "output step index (the model gave no date)", ctx);
      }
      CHECK_NC(nc_enddef(ncid_), ctx);
    }
    replace_ = replace;
    record_ = record;
    record_time_ = record_time;
    if (mean_varid_ < 0) mean_varid_ = define_companion("_mean", "ensemble mean of " + var_, "realization: mean");
    if (with_coarse && coarse_varid_ < 0)
      coarse_varid_ = define_companion("_coarse", "coarse-grained input on the fine grid (finecast's condition)");
    if (with_host && host_varid_ < 0) host_varid_ = define_companion("_host", "the host model's own fine field");
    const size_t ts = static_cast<size_t>(record_);
    CHECK_NC(nc_put_var1_double(ncid_, time_varid_, &ts, &record_time_), ctx + " (time)");
  });
  record_datetime_ = datetime;
  in_record_ = true;
}

void EnsembleWriter::put(int64_t first_cell, int64_t count, const float* members, const float* coarse,
                         const float* host) {
  const std::string ctx = context() + " (time step " + std::to_string(record_) + ")";
  if (!in_record_) throw IoError(context() + ": put() outside begin()/end()");
  const int64_t align = chunk_alignment();
  if (first_cell < 0 || count < 0 || first_cell + count > n_cells_ || first_cell % align != 0 ||
      (count % align != 0 && first_cell + count != n_cells_))
    throw IoError(ctx + ": cells " + std::to_string(first_cell) + "+" + std::to_string(count) +
                  " are not whole rows of " + std::to_string(align) + " within " + std::to_string(n_cells_));
  if (count == 0) return;
  guarded([&] {
    // The hyperslab of cells first_cell..first_cell+count-1 (whole rows on lat-lon grids).
    std::vector<size_t> start{static_cast<size_t>(record_)}, shape{1};
    if (spatial_shape_.size() == 2) {
      start.insert(start.end(), {static_cast<size_t>(first_cell / align), 0});
      shape.insert(shape.end(), {static_cast<size_t>(count / align), spatial_shape_[1]});
    } else {
      start.push_back(static_cast<size_t>(first_cell));
      shape.push_back(static_cast<size_t>(count));
    }
    auto with_member = [](std::vector<size_t> v, size_t value) {
      v.insert(v.begin() + 1, value);
      return v;
    };
    scratch_.resize(static_cast<size_t>(count));
    chunk_mean_.assign(static_cast<size_t>(count), 0.0f);
    std::vector<int> counted(static_cast<size_t>(count), 0);
    for (int m = 0; m < members_; ++m) {
      const float* v = members + static_cast<size_t>(m) * static_cast<size_t>(count);
      for (int64_t i = 0; i < count; ++i) {
        scratch_[i] = std::isfinite(v[i]) ? v[i] : kFill;
        if (std::isfinite(v[i])) chunk_mean_[i] += v[i], ++counted[i];
      }
      const auto st = with_member(start, static_cast<size_t>(m)), sh = with_member(shape, 1);
      CHECK_NC(nc_put_vara_float(ncid_, varid_, st.data(), sh.data(), scratch_.data()), ctx);
    }
    // The ensemble mean over the members with a value (NaN where none has one).
    for (int64_t i = 0; i < count; ++i)
      chunk_mean_[i] =
          counted[i] > 0 ? chunk_mean_[i] / static_cast<float>(counted[i]) : std::numeric_limits<float>::quiet_NaN();
    auto companion = [&](int varid, const float* values, const char* suffix) {
      for (int64_t i = 0; i < count; ++i) scratch_[i] = std::isfinite(values[i]) ? values[i] : kFill;
      CHECK_NC(nc_put_vara_float(ncid_, varid, start.data(), shape.data(), scratch_.data()),
               ctx + " (" + var_ + suffix + ")");
    };
    companion(mean_varid_, chunk_mean_.data(), "_mean");
    if (coarse) {
      if (coarse_varid_ < 0) throw IoError(ctx + ": a coarse field given although begin() said none");
      companion(coarse_varid_, coarse, "_coarse");
    }
    if (host) {
      if (host_varid_ < 0) throw IoError(ctx + ": a host field given although begin() said none");
      companion(host_varid_, host, "_host");
    }
  });
}

void EnsembleWriter::set_masked(int64_t count) {
  const std::string ctx = context() + " (time step " + std::to_string(record_) + ", " + var_ + "_masked)";
  if (!in_record_) throw IoError(context() + ": set_masked() outside begin()/end()");
  guarded([&] {
    if (masked_varid_ < 0) {
      CHECK_NC(nc_redef(ncid_), ctx);
      const std::string name = var_ + "_masked";
      CHECK_NC(nc_def_var(ncid_, name.c_str(), NC_INT64, 1, &time_dimid_, &masked_varid_), ctx);
      put_text(ncid_, masked_varid_, "long_name",
               "values of the members masked as non-finite or implausible (written as missing)", ctx);
      put_text(ncid_, masked_varid_, "units", "1", ctx);
      CHECK_NC(nc_enddef(ncid_), ctx);
    }
    const size_t ts = static_cast<size_t>(record_);
    const long long value = count;
    CHECK_NC(nc_put_var1_longlong(ncid_, masked_varid_, &ts, &value), ctx);
  });
}

void EnsembleWriter::end() {
  if (!in_record_) throw IoError(context() + ": end() without begin()");
  guarded([&] {
    CHECK_NC(nc_sync(ncid_), context() + " (time step " + std::to_string(record_) + ", writing to disk)");
    if (netcdf4_) give_back_room(path_);
  });
  in_record_ = false;
  last_datetime_ = record_datetime_;
  last_time_ = record_time_;
  if (!replace_) ++steps_;
}

void EnsembleWriter::close() {
  if (closed_) return;
  closed_ = true;
  if (broken_) return;  // closed when the write failed
  // NetCDF-4's close flushes HDF5's metadata: with room for it first, else the file is discarded
  // (every record was synced when it was written).
  guarded([&] {
    if (netcdf4_) check_room(kMetadataRoom);
    CHECK_NC(nc_close(ncid_), context() + " (closing)");
    ncid_ = -1;
    if (netcdf4_) give_back_room(path_);
  });
}

EnsembleWriter::~EnsembleWriter() {
  if (closed_ || broken_ || ncid_ < 0) return;
  try {
    close();  // every record is on disk already
  } catch (const std::exception&) {
    // (discarded by close(): nothing is left open)
  }
}

}  // namespace finecast::coupling
