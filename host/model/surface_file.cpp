// SPDX-License-Identifier: BSD-3-Clause
// The surface fields of finecast-host written as CF NetCDF on the ICON cells.
#include "host/model/surface_file.hpp"

#include <netcdf.h>

#include <vector>

#include "common/atomic_file.hpp"
#include "coupling/error.hpp"
#include "coupling/io/nc_metadata.hpp"

namespace finecast::host {
namespace {

void put_text(int nc, int var, const char* name, const std::string& value, const std::string& ctx) {
  CHECK_NC(nc_put_att_text(nc, var, name, value.size(), value.c_str()), ctx);
}

}  // namespace

void write_surface_file(const std::string& path, const coupling::IconGrid& grid, const CellOrography& surface,
                        const std::string& source) {
  const size_t n = static_cast<size_t>(grid.n_cells);
  if (surface.height.size() != n || surface.land_fraction.size() != n)
    throw InternalError("write_surface_file: " + std::to_string(surface.height.size()) + " values for a grid of " +
                        std::to_string(n) + " cells");
  const coupling::OutputGrid g = coupling::OutputGrid::of(grid);
  AtomicFile file(path);
  const std::string ctx = "writing " + path;
  int nc = -1;
  CHECK_NC(nc_create(file.tmp_path().c_str(), NC_CLOBBER | NC_64BIT_DATA, &nc), ctx);
  struct Closer {
    int nc;
    ~Closer() {
      if (nc >= 0) nc_close(nc);
    }
  } closer{nc};
  int dcell = -1, dvert = -1;
  CHECK_NC(nc_def_dim(nc, "ncells", n, &dcell), ctx);
  CHECK_NC(nc_def_dim(nc, "vertices", 3, &dvert), ctx);
  const int cell_dims[2] = {dcell, dvert};
  int vclon, vclat, vclon_b, vclat_b, vtopo, vland;
  CHECK_NC(nc_def_var(nc, "clon", NC_DOUBLE, 1, &dcell, &vclon), ctx);
  CHECK_NC(nc_def_var(nc, "clat", NC_DOUBLE, 1, &dcell, &vclat), ctx);
  CHECK_NC(nc_def_var(nc, "clon_bnds", NC_DOUBLE, 2, cell_dims, &vclon_b), ctx);
  CHECK_NC(nc_def_var(nc, "clat_bnds", NC_DOUBLE, 2, cell_dims, &vclat_b), ctx);
  put_text(nc, vclon, "standard_name", "longitude", ctx);
  put_text(nc, vclon, "units", "radian", ctx);
  put_text(nc, vclon, "bounds", "clon_bnds", ctx);
  put_text(nc, vclat, "standard_name", "latitude", ctx);
  put_text(nc, vclat, "units", "radian", ctx);
  put_text(nc, vclat, "bounds", "clat_bnds", ctx);
  CHECK_NC(nc_def_var(nc, "topography_c", NC_DOUBLE, 1, &dcell, &vtopo), ctx);
  put_text(nc, vtopo, "standard_name", "surface_altitude", ctx);
  put_text(nc, vtopo, "long_name", "geometric height of the earth's surface above sea level", ctx);
  put_text(nc, vtopo, "units", "m", ctx);
  put_text(nc, vtopo, "coordinates", "clon clat", ctx);
  CHECK_NC(nc_def_var(nc, "fr_land", NC_DOUBLE, 1, &dcell, &vland), ctx);
  put_text(nc, vland, "standard_name", "land_area_fraction", ctx);
  put_text(nc, vland, "long_name", "fraction land", ctx);
  put_text(nc, vland, "units", "1", ctx);
  put_text(nc, vland, "coordinates", "clon clat", ctx);
  put_text(nc, NC_GLOBAL, "Conventions", "CF-1.8", ctx);
  put_text(nc, NC_GLOBAL, "source", std::string("finecast-host ") + FINECAST_VERSION, ctx);
  put_text(nc, NC_GLOBAL, "history",
           "surface fields finecast-host gives its plugins: relief of " + source +
               ", max(z, 0) averaged (cos-lat weighted) over the relief points inside each cell",
           ctx);
  put_text(nc, NC_GLOBAL, "grid_file_uri", grid.path, ctx);
  if (!grid.uuid_of_hgrid.empty()) put_text(nc, NC_GLOBAL, "uuidOfHGrid", grid.uuid_of_hgrid, ctx);
  if (grid.number_of_grid_used >= 0)
    CHECK_NC(nc_put_att_int(nc, NC_GLOBAL, "number_of_grid_used", NC_INT, 1, &grid.number_of_grid_used), ctx);
  CHECK_NC(nc_enddef(nc), ctx);
  CHECK_NC(nc_put_var_double(nc, vclon, g.clon.data()), ctx);
  CHECK_NC(nc_put_var_double(nc, vclat, g.clat.data()), ctx);
  CHECK_NC(nc_put_var_double(nc, vclon_b, g.clon_bnds.data()), ctx);
  CHECK_NC(nc_put_var_double(nc, vclat_b, g.clat_bnds.data()), ctx);
  CHECK_NC(nc_put_var_double(nc, vtopo, surface.height.data()), ctx);
  CHECK_NC(nc_put_var_double(nc, vland, surface.land_fraction.data()), ctx);
  closer.nc = -1;
  CHECK_NC(nc_close(nc), ctx);
  file.commit();
}

}  // namespace finecast::host
