// SPDX-License-Identifier: BSD-3-Clause
// NetCDF reading on real files (oracle values from netCDF4-python) and on small written ones:
// dimension roles, unpacking, missing values, CF time, and the errors for bad input.
#include <gtest/gtest.h>
#include <netcdf.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "common/error.hpp"
#include "coupling/io/cf_time.hpp"
#include "common/log.hpp"
#include "coupling/io/field_reader.hpp"
#include "coupling/io/plausibility.hpp"
#include "tests/coupling/io_test_util.hpp"

namespace finecast::coupling {
namespace {

using testing_io::ScratchDir;

double sum_of(const std::vector<float>& v) {
  double s = 0;
  for (float x : v) s += x;
  return s;
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const IoError& e) {
    return e.what();
  }
  return "no IoError";
}

TEST(CfTime, GregorianNoLeap360AndAbsolute) {
  const CfTime g("days since 1850-01-01 00:00:00", "proleptic_gregorian", "test");
  EXPECT_EQ(format_datetime(g.to_datetime(56628.5)), "2005-01-16T12:00:00");  // netCDF4-python
  EXPECT_EQ(format_datetime(g.to_datetime(56658.0)), "2005-02-15T00:00:00");
  const CfTime h("hours since 2000-02-28 18:00", "standard", "test");
  EXPECT_EQ(format_datetime(h.to_datetime(12)), "2000-02-29T06:00:00");
  const CfTime nl("days since 2000-01-01", "noleap", "test");
  EXPECT_EQ(format_datetime(nl.to_datetime(59)), "2000-03-01T00:00:00");
  EXPECT_EQ(format_datetime(nl.to_datetime(365)), "2001-01-01T00:00:00");
  const CfTime d360("days since 2000-01-01", "360_day", "test");
  EXPECT_EQ(format_datetime(d360.to_datetime(59)), "2000-02-30T00:00:00");
  const CfTime abs("day as %Y%m%d.%f", "proleptic_gregorian", "test");
  EXPECT_EQ(format_datetime(abs.to_datetime(20981118.25)), "2098-11-18T06:00:00");
  const CfTime s("seconds since 2021-01-01 00:00:00", "proleptic_gregorian", "test");
  DateTime t;
  ASSERT_TRUE(parse_datetime("2021-03-01T01:00:00.000", t));
  EXPECT_EQ(s.from_datetime(t), (31 + 28) * 86400.0 + 3600.0);
  EXPECT_FALSE(parse_datetime("step 3", t));
  EXPECT_THROW(CfTime("fortnights since 2000-01-01", "standard", "test"), IoError);
  EXPECT_THROW(CfTime("days since 2000-01-01", "martian", "test"), IoError);
}

// A damaged time axis may hold NaN or 2e214 (found by fuzzing: UBSan, a double outside the range
// of int64 converted to it); such a value is refused with the file's context, not turned into
// an arbitrary date.
TEST(CfTime, ValuesThatAreNoDateAreRefused) {
  const CfTime days("days since 1850-01-01", "noleap", "file.nc, time");
  const CfTime absolute("day as %Y%m%d.%f", "proleptic_gregorian", "file.nc, time");
  auto error = [](const std::function<void()>& f) {
    try {
      f();
    } catch (const IoError& e) {
      return std::string(e.what());
    }
    return std::string("no IoError");
  };
  EXPECT_NE(error([&] {
              days.to_datetime(2.11615e+214);
            }).find("file.nc, time: time value 2.11615e+214 (days since 1850-01-01) is not a date"),
            std::string::npos);
  EXPECT_NE(error([&] { days.to_datetime(std::nan("")); }).find("not a finite number"), std::string::npos);
  EXPECT_NE(error([&] { days.to_datetime(-INFINITY); }).find("not a finite number"), std::string::npos);
  EXPECT_NE(error([&] { absolute.to_datetime(1e300); }).find("a million years or more away"), std::string::npos);
  EXPECT_EQ(format_datetime(days.to_datetime(365.0 * 999999)).substr(0, 8), "1001849-") << "still a date";
  EXPECT_EQ(format_datetime(absolute.to_datetime(99991231.5)), "9999-12-31T12:00:00");
}

TEST(FieldReader, RectilinearMonthlyTemperature) {
  FINECAST_REQUIRE_FILE(testing_io::kTasFile);
  FieldReader r(testing_io::kTasFile, "tas");
  EXPECT_EQ(r.grid_kind(), FieldReader::GridKind::kLatLon);
  EXPECT_EQ(r.n_times(), 12);
  EXPECT_EQ(r.spatial_shape(), (std::vector<size_t>{96, 192}));
  EXPECT_EQ(r.n_values(), 96 * 192);
  EXPECT_EQ(r.attributes().units, "K");
  EXPECT_EQ(r.attributes().standard_name, "air_temperature");
  EXPECT_EQ(r.attributes().long_name, "Near-Surface Air Temperature");
  EXPECT_EQ(r.time_string(0), "2005-01-16T12:00:00");
  EXPECT_EQ(r.time_string(11), "2005-12-16T12:00:00");
  std::vector<float> v(static_cast<size_t>(r.n_values()));
  r.read(0, v.data());
  EXPECT_EQ(v[0], 239.09619140625f);
  EXPECT_NEAR(sum_of(v), 5100469.955078125, 1e-3);
  r.read(3, v.data());
  EXPECT_EQ(v[50 * 192 + 100], 299.80975341796875f);
  const OutputGrid g = r.output_grid();
  EXPECT_EQ(g.y.name, "lat");
  EXPECT_EQ(g.x.values.size(), 192u);
  EXPECT_EQ(g.y.text_attrs.at("units"), "degrees_north");
  EXPECT_NE(error_of([&] { r.read(12, v.data()); }).find("time step 12 requested, the file has 12"), std::string::npos);
}

TEST(FieldReader, RotatedPoleWithSingletonHeight) {
  FINECAST_REQUIRE_FILE(testing_io::kRotatedFile);
  FieldReader r(testing_io::kRotatedFile, "tas");
  EXPECT_EQ(r.grid_kind(), FieldReader::GridKind::kRotatedPole);
  EXPECT_EQ(r.spatial_shape(), (std::vector<size_t>{412, 424}));
  EXPECT_EQ(r.n_levels(), 1);
  EXPECT_EQ(r.time_string(0), "2006-01-16T12:00:00");
  std::vector<float> v(static_cast<size_t>(r.n_values()));
  r.read(0, v.data());
  EXPECT_EQ(v[200 * 424 + 300], 264.3837585449219f);
  const OutputGrid g = r.output_grid();
  EXPECT_EQ(g.grid_mapping, "rotated_pole");
  EXPECT_EQ(g.grid_mapping_text_attrs.at("grid_mapping_name"), "rotated_latitude_longitude");
  EXPECT_EQ(g.grid_mapping_num_attrs.at("grid_north_pole_latitude"), 39.25);
}

TEST(FieldReader, IconUnstructuredWithDepthLevels) {
  FINECAST_REQUIRE_FILE(testing_io::kIconFile);
  FieldReader r(testing_io::kIconFile, "S", 1);
  EXPECT_EQ(r.grid_kind(), FieldReader::GridKind::kUnstructured);
  EXPECT_EQ(r.spatial_shape(), (std::vector<size_t>{20480}));
  EXPECT_EQ(r.n_levels(), 3);
  EXPECT_EQ(r.time_string(0), "2098-11-18T00:00:00");  // "day as %Y%m%d.%f"
  std::vector<float> v(20480);
  r.read(0, v.data());
  EXPECT_EQ(v[12345], 34.09283447265625f);
  EXPECT_NEAR(sum_of(v), 438678.25058555603, 0.05);
  const OutputGrid g = r.output_grid();
  EXPECT_EQ(g.kind, OutputGrid::Kind::kIcon);
  EXPECT_EQ(g.clon.size(), 20480u);
  const std::string e = error_of([] { FieldReader(testing_io::kIconFile, "S", 3); });
  EXPECT_NE(e.find("level 3 requested, expected 0..2 (dimension 'depth')"), std::string::npos) << e;
}

TEST(FieldReader, FerretReliefWithoutTime) {
  FINECAST_REQUIRE_FILE(testing_io::kEtopo20File);
  FieldReader r(testing_io::kEtopo20File, "ROSE");
  EXPECT_EQ(r.n_times(), 1);
  EXPECT_FALSE(r.has_time_axis());
  EXPECT_EQ(r.time_string(0), "0");
  EXPECT_EQ(r.spatial_shape(), (std::vector<size_t>{540, 1081}));
  std::vector<float> v(static_cast<size_t>(r.n_values()));
  r.read(0, v.data());
  EXPECT_EQ(v[100 * 1081 + 200], -4588.25f);
  EXPECT_NEAR(sum_of(v), -1106011510.5625, 2e3);
}

// A packed short field(time, y, x) with scale/offset, fill, missing and valid range.
std::string write_packed_file(const std::string& path, const char* calendar) {
  int nc, dt, dy, dx, vt, vv;
  EXPECT_EQ(nc_create(path.c_str(), NC_CLOBBER, &nc), NC_NOERR);
  nc_def_dim(nc, "time", NC_UNLIMITED, &dt);
  nc_def_dim(nc, "y", 2, &dy);
  nc_def_dim(nc, "x", 3, &dx);
  nc_def_var(nc, "time", NC_DOUBLE, 1, &dt, &vt);
  const std::string units = "hours since 2001-02-28 12:00:00";
  nc_put_att_text(nc, vt, "units", units.size(), units.c_str());
  nc_put_att_text(nc, vt, "calendar", std::strlen(calendar), calendar);
  const int dims[3] = {dt, dy, dx};
  nc_def_var(nc, "pr", NC_SHORT, 3, dims, &vv);
  const double scale = 0.5, offset = 100.0;
  const short fill = -999, missing = -998;
  const short range[2] = {-100, 100};
  nc_put_att_double(nc, vv, "scale_factor", NC_DOUBLE, 1, &scale);
  nc_put_att_double(nc, vv, "add_offset", NC_DOUBLE, 1, &offset);
  nc_put_att_short(nc, vv, "_FillValue", NC_SHORT, 1, &fill);
  nc_put_att_short(nc, vv, "missing_value", NC_SHORT, 1, &missing);
  nc_put_att_short(nc, vv, "valid_range", NC_SHORT, 2, range);
  nc_enddef(nc);
  const double times[2] = {0, 24};
  const size_t t0 = 0, t2 = 2;
  nc_put_vara_double(nc, vt, &t0, &t2, times);
  const short data[12] = {0, 1, -2, fill, missing, 101, 10, 20, 30, 40, 50, 60};
  const size_t start[3] = {0, 0, 0}, count[3] = {2, 2, 3};
  nc_put_vara_short(nc, vv, start, count, data);
  nc_close(nc);
  return path;
}

TEST(FieldReader, UnpacksAndMasksAsCfSays) {
  ScratchDir dir;
  FieldReader r(write_packed_file(dir.file("packed.nc"), "noleap"), "pr");
  EXPECT_EQ(r.n_times(), 2);
  std::vector<float> v(6);
  r.read(0, v.data());
  EXPECT_EQ(v[0], 100.0f);
  EXPECT_EQ(v[1], 100.5f);
  EXPECT_EQ(v[2], 99.0f);
  EXPECT_TRUE(std::isnan(v[3])) << "_FillValue";
  EXPECT_TRUE(std::isnan(v[4])) << "missing_value";
  EXPECT_TRUE(std::isnan(v[5])) << "outside valid_range";
  EXPECT_EQ(r.out_of_range(), 1) << "only the value outside valid_range is counted";
  EXPECT_EQ(r.valid_range_text(), "valid range [-100, 100]");
  EXPECT_EQ(r.read(1, v.data()), 0);
  EXPECT_EQ(v[5], 130.0f);
  EXPECT_EQ(r.time_string(1), "2001-03-01T12:00:00");  // noleap, and 2001 has no Feb 29 anyway
  FieldReader r360(write_packed_file(dir.file("packed360.nc"), "360_day"), "pr");
  EXPECT_EQ(r360.time_string(1), "2001-02-29T12:00:00");
}

// Finite values far outside any plausible range (3e38 where _FillValue is 1e20) were once read
// as data and shifted whole patches: the range a _FillValue implies (NUG), values beyond float
// and an absolute bound (io.max_abs) make them missing, and they are counted for the log.
TEST(FieldReader, ImplausibleValuesBecomeMissingAndAreCounted) {
  ScratchDir dir;
  const std::string path = dir.file("implausible.nc");
  int nc, dx, vf, vd;
  ASSERT_EQ(nc_create(path.c_str(), NC_CLOBBER | NC_64BIT_DATA, &nc), NC_NOERR);
  nc_def_dim(nc, "ncells", 6, &dx);
  nc_def_var(nc, "tas", NC_FLOAT, 1, &dx, &vf);
  nc_def_var(nc, "big", NC_DOUBLE, 1, &dx, &vd);
  const float fill = 1e20f;
  nc_put_att_float(nc, vf, "_FillValue", NC_FLOAT, 1, &fill);
  nc_enddef(nc);
  const float tas[6] = {280.0f, 3e38f, 1e20f, -3e38f, 290.0f, 2e20f};
  nc_put_var_float(nc, vf, tas);
  const double big[6] = {1.0, 1e300, -1e300, 2.0, 3.0, 4.0};
  nc_put_var_double(nc, vd, big);
  nc_close(nc);

  // Without units the plausibility table's bound for any field applies (|value| <= 1e15).
  set_plausible_overrides({"tas=none"}, "test");
  FieldReader r(path, "tas");
  EXPECT_EQ(r.valid_range_text(), "beyond _FillValue 1e+20");
  std::vector<float> v(6);
  EXPECT_EQ(r.read(0, v.data()), 2) << "3e38 and 2e20 lie beyond the positive _FillValue";
  EXPECT_EQ(v[0], 280.0f);
  EXPECT_TRUE(std::isnan(v[1]));
  EXPECT_TRUE(std::isnan(v[2])) << "the fill value itself";
  EXPECT_EQ(v[3], -3e38f) << "a positive _FillValue bounds only the top";
  EXPECT_TRUE(std::isnan(v[5]));
  r.set_max_abs(1000);
  EXPECT_EQ(r.valid_range_text(), "beyond _FillValue 1e+20, |value| > 1000");
  EXPECT_EQ(r.read(0, v.data()), 3);
  EXPECT_TRUE(std::isnan(v[3]));
  EXPECT_EQ(v[4], 290.0f);
  EXPECT_EQ(r.out_of_range(), 5) << "counted over all reads";
  r.set_max_abs(std::numeric_limits<double>::infinity());
  EXPECT_EQ(r.read(0, v.data()), 2) << "an infinite bound is no bound";
  clear_plausible_overrides();
  FieldReader table(path, "tas");
  EXPECT_EQ(table.read(0, v.data()), 3) << "-3e38 is beyond the table's bound for any field";

  // No attributes at all: values a float cannot hold are still not data.
  FieldReader b(path, "big");
  EXPECT_EQ(b.read(0, v.data()), 2);
  EXPECT_EQ(v[0], 1.0f);
  EXPECT_TRUE(std::isnan(v[1]) && std::isnan(v[2]));
  EXPECT_EQ(v[3], 2.0f);
}

TEST(FieldReader, BadInputNamesFileVariableAndExpectation) {
  ScratchDir dir;
  std::string e = error_of([&] { FieldReader(dir.file("nope.nc"), "tas"); });
  EXPECT_NE(e.find("nope.nc"), std::string::npos) << e;
  EXPECT_NE(e.find("does not exist"), std::string::npos) << e;
  EXPECT_NE(e.find("'tas'"), std::string::npos) << e;

  const std::string packed = write_packed_file(dir.file("packed.nc"), "standard");
  e = error_of([&] { FieldReader(packed, "tas"); });
  EXPECT_NE(e.find("has no variable 'tas' (variables: time, pr)"), std::string::npos) << e;
  e = error_of([&] { FieldReader(packed, "time"); });
  EXPECT_NE(e.find("only a time dimension"), std::string::npos) << e;

  testing_io::spit(dir.file("text.nc"), "hello, not NetCDF\n");
  e = error_of([&] { FieldReader(dir.file("text.nc"), "tas"); });
  EXPECT_NE(e.find("cannot open"), std::string::npos) << e;

  // Time not first (possible only in NetCDF-4: classic files need the unlimited dimension first).
  int nc, dx, dt, v;
  ASSERT_EQ(nc_create(dir.file("order.nc").c_str(), NC_NETCDF4 | NC_CLOBBER, &nc), NC_NOERR);
  nc_def_dim(nc, "x", 4, &dx);
  nc_def_dim(nc, "time", NC_UNLIMITED, &dt);
  const int dims[2] = {dx, dt};
  ASSERT_EQ(nc_def_var(nc, "f", NC_FLOAT, 2, dims, &v), NC_NOERR);
  nc_close(nc);
  e = error_of([&] { FieldReader(dir.file("order.nc"), "f"); });
  EXPECT_NE(e.find("expected it first"), std::string::npos) << e;
}

// A few damaged bytes in a classic header can declare a name, an attribute or a list of
// gigabytes; the NetCDF library allocates that much before it reads (found by fuzzing:
// malloc(3200171727) from nc_open). The reader refuses such a header before nc_open.
TEST(FieldReader, HeadersDeclaringMoreThanTheFileAreRefusedBeforeTheLibraryOpensThem) {
  ScratchDir dir;
  auto be32 = [](uint32_t v) {
    return std::string{static_cast<char>(v >> 24), static_cast<char>(v >> 16), static_cast<char>(v >> 8),
                       static_cast<char>(v)};
  };
  // CDF-1, no records, one dimension whose name claims 0xBEBEBEBE bytes.
  testing_io::spit(dir.file("name.nc"), "CDF\x01" + be32(0) + be32(0x0A) + be32(1) + be32(0xBEBEBEBEu) + "tas");
  std::string e = error_of([&] { FieldReader(dir.file("name.nc"), "tas"); });
  EXPECT_NE(e.find("name.nc is damaged: its header declares a name of 3200171712 bytes at byte 20, "
                   "but the file "
                   "has 23 bytes"),
            std::string::npos)
      << e;
  // A list of 2^31 - 1 dimensions in a 16-byte file.
  testing_io::spit(dir.file("count.nc"), "CDF\x01" + be32(0) + be32(0x0A) + be32(0x7FFFFFFF));
  e = error_of([&] { FieldReader(dir.file("count.nc"), "tas"); });
  EXPECT_NE(e.find("count.nc is damaged: its header declares 2147483647 dimensions"), std::string::npos) << e;
  // The library reads zeros past the end of the file: a length cut off by the end (6 of its 8
  // bytes in CDF-5) is as long as the zeros make it.
  testing_io::spit(dir.file("cut.nc"), "CDF\x05" + std::string(7, '\0') + "\x02" + be32(0x0A) + std::string(7, '\0') +
                                           "\x01" + std::string("\xb1\xe6\x43\x8c\x80\x00", 6));
  e = error_of([&] { FieldReader(dir.file("cut.nc"), "tas"); });
  EXPECT_NE(e.find("cut.nc is damaged: its header declares a name of"), std::string::npos) << e;
  // The library accepts any tag on an empty list and reads on: so does the check, to the
  // variable name that follows.
  const std::string absent = be32(0x00930000) + be32(0);
  testing_io::spit(dir.file("lenient.nc"),
                   "CDF\x01" + be32(0) + absent + absent + be32(0x0B) + be32(1) + be32(0x7FFFFFF0u) + "tas");
  e = error_of([&] { FieldReader(dir.file("lenient.nc"), "tas"); });
  EXPECT_NE(e.find("lenient.nc is damaged: its header declares a name of 2147483632 bytes"), std::string::npos) << e;
  // A string variable (type 12) in a classic header: netCDF 4.9 divides by its element size of
  // zero (SIGFPE in NC_check_vlen; found by fuzzing).
  const std::string name_tas = be32(3) + std::string("tas\0", 4);
  testing_io::spit(dir.file("string.nc"), "CDF\x01" + be32(0) + be32(0x0A) + be32(1) + be32(1) +
                                              std::string("x\0\0\0", 4) + be32(4) + absent + be32(0x0B) + be32(1) +
                                              name_tas + be32(1) + be32(0) + absent + be32(12) + be32(16) + be32(100));
  e = error_of([&] { FieldReader(dir.file("string.nc"), "tas"); });
  EXPECT_NE(e.find("string.nc is damaged: its header declares a string variable"), std::string::npos) << e;
  // Intact files are untouched by the check.
  const std::string packed = write_packed_file(dir.file("packed.nc"), "standard");
  EXPECT_NO_THROW(FieldReader(packed, "pr"));
}

TEST(FieldReader, TruncatedFilesAreDetected) {
  FINECAST_REQUIRE_FILE(testing_io::kTasFile);
  ScratchDir dir;
  // Classic format: the library would read zeros past the end without complaint.
  const std::string bytes = testing_io::slurp(testing_io::kTasFile);
  testing_io::spit(dir.file("tas_cut.nc"), bytes.substr(0, bytes.size() - 1000));
  std::string e = error_of([&] { FieldReader(dir.file("tas_cut.nc"), "tas"); });
  EXPECT_NE(e.find("is truncated"), std::string::npos) << e;
  EXPECT_NE(e.find("tas_cut.nc"), std::string::npos) << e;
  testing_io::spit(dir.file("tas_whole.nc"), bytes);
  EXPECT_NO_THROW(FieldReader(dir.file("tas_whole.nc"), "tas"));

  // NetCDF-4 (HDF5).
  int nc, d, v;
  nc_create(dir.file("nc4.nc").c_str(), NC_NETCDF4 | NC_CLOBBER, &nc);
  nc_def_dim(nc, "ncells", 50000, &d);
  nc_def_var(nc, "f", NC_FLOAT, 1, &d, &v);
  std::vector<float> data(50000, 1.0f);
  nc_put_var_float(nc, v, data.data());
  nc_close(nc);
  const std::string nc4 = testing_io::slurp(dir.file("nc4.nc"));
  testing_io::spit(dir.file("nc4_cut.nc"), nc4.substr(0, nc4.size() / 2));
  e = error_of([&] {
    FieldReader r(dir.file("nc4_cut.nc"), "f");
    std::vector<float> out(50000);
    r.read(0, out.data());
  });
  EXPECT_NE(e.find("nc4_cut.nc"), std::string::npos) << e;
}

/// A 1-D field "tas" of `values` over cells with text attributes `attrs` ({name, value}), and
/// a time axis "time" of `times` (days since 2000-01-01) when not empty.
std::string write_field(const std::string& path, const std::vector<float>& values,
                        const std::vector<std::pair<std::string, std::string>>& attrs,
                        const std::vector<double>& times = {}) {
  int nc, dt = -1, dx, vt, vv;
  EXPECT_EQ(nc_create(path.c_str(), NC_CLOBBER, &nc), NC_NOERR);
  const size_t n_times = std::max<size_t>(times.size(), 1);
  const size_t n = values.size() / n_times;
  if (!times.empty()) {
    nc_def_dim(nc, "time", NC_UNLIMITED, &dt);
    nc_def_var(nc, "time", NC_DOUBLE, 1, &dt, &vt);
    nc_put_att_text(nc, vt, "units", 21, "days since 2000-01-01");
  }
  nc_def_dim(nc, "ncells", n, &dx);
  const int dims[2] = {dt, dx};
  nc_def_var(nc, "tas", NC_FLOAT, times.empty() ? 1 : 2, times.empty() ? &dx : dims, &vv);
  for (const auto& [name, value] : attrs) nc_put_att_text(nc, vv, name.c_str(), value.size(), value.c_str());
  nc_enddef(nc);
  if (!times.empty()) {
    const size_t t0 = 0, nt = times.size();
    nc_put_vara_double(nc, vt, &t0, &nt, times.data());
    const size_t start[2] = {0, 0}, count[2] = {nt, n};
    nc_put_vara_float(nc, vv, start, count, values.data());
  } else {
    nc_put_var_float(nc, vv, values.data());
  }
  nc_close(nc);
  return path;
}

// One value of 1e30 in a file without _FillValue or valid_range once went through replay,
// downscale and eval as data (samples of 3.5e28 K, RMSE 3e27): the table's range for the units
// and standard_name makes it missing, counts it and logs where it was.
TEST(FieldReader, ImplausibleValuesWithoutValidRangeAreMissingByThePlausibilityTable) {
  ScratchDir dir;
  const std::vector<float> values{280.0f, 1e30f, 290.0f, -5.0f};
  std::vector<std::string> lines;
  const log::Sink previous = log::set_sink([&](log::Level, const std::string& l) { lines.push_back(l); });
  std::vector<float> v(4);

  // Units alone (K): wide enough for a temperature difference, not for 1e30.
  FieldReader k(write_field(dir.file("k.nc"), values, {{"units", "K"}}), "tas");
  EXPECT_EQ(k.read(0, v.data()), 1);
  EXPECT_TRUE(std::isnan(v[1]));
  EXPECT_EQ(v[3], -5.0f);
  EXPECT_NE(k.valid_range_text().find("plausible range [-100, 400] (units K"), std::string::npos)
      << k.valid_range_text();
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_NE(lines[0].find("k.nc, variable 'tas', step 0: 1 value(s) outside the valid or plausible range "
                          "(plausible range [-100, 400] (units K, finecast's plausibility table)) treated as missing"),
            std::string::npos)
      << lines[0];
  EXPECT_NE(lines[0].find("index 1: 1e+30"), std::string::npos) << lines[0];
  k.read(0, v.data());
  EXPECT_EQ(lines.size(), 1u) << "one line per reader; later reads are counted";
  EXPECT_EQ(k.out_of_range(), 2);
  EXPECT_NE(k.out_of_range_report().find("2 value(s) outside"), std::string::npos) << k.out_of_range_report();

  // With its standard name: the physical range of air temperature.
  FieldReader sn(write_field(dir.file("sn.nc"), values, {{"units", "K"}, {"standard_name", "air_temperature"}}), "tas");
  EXPECT_EQ(sn.read(0, v.data()), 2) << "-5 K is no air temperature";
  EXPECT_EQ(sn.plausible().min, 150);
  EXPECT_EQ(sn.plausible().max, 350);
  // Units spelled otherwise, and orography.
  EXPECT_EQ(plausible_range("kg m**-2 s**-1", "precipitation_flux").max, 0.2);
  EXPECT_EQ(plausible_range("metres", "surface_altitude").min, -11000);
  EXPECT_EQ(plausible_range("furlongs", "").max, 1e15);

  // Overrides: a range of one's own, or none.
  set_plausible_overrides({"tas=-10,300"}, "--plausible");
  FieldReader own(dir.file("sn.nc"), "tas");
  EXPECT_EQ(own.read(0, v.data()), 1);
  EXPECT_EQ(v[3], -5.0f);
  clear_plausible_overrides();
  set_plausible_overrides({"none"}, "--plausible");
  EXPECT_EQ(FieldReader(dir.file("k.nc"), "tas").read(0, v.data()), 0) << "applies to every variable";
  set_plausible_overrides({"tas=-10,300"}, "--plausible");
  EXPECT_EQ(FieldReader(dir.file("k.nc"), "tas").read(0, v.data()), 1) << "the variable's own override wins";
  clear_plausible_overrides();
  EXPECT_THROW(set_plausible_overrides({"tas=300,200"}, "--plausible"), ConfigError);
  EXPECT_THROW(set_plausible_overrides({"tas=hot"}, "--plausible"), ConfigError);
  clear_plausible_overrides();
  log::set_sink(previous);
}

TEST(FieldReader, ValidRangeAttributesReplaceTheTable) {
  ScratchDir dir;
  int nc, dx, vv;
  const std::string path = dir.file("valid.nc");
  ASSERT_EQ(nc_create(path.c_str(), NC_CLOBBER, &nc), NC_NOERR);
  nc_def_dim(nc, "ncells", 3, &dx);
  nc_def_var(nc, "tas", NC_FLOAT, 1, &dx, &vv);
  nc_put_att_text(nc, vv, "units", 1, "K");
  nc_put_att_text(nc, vv, "standard_name", 15, "air_temperature");
  const float range[2] = {0.0f, 1000.0f};
  nc_put_att_float(nc, vv, "valid_range", NC_FLOAT, 2, range);
  nc_enddef(nc);
  const float values[3] = {100.0f, 900.0f, 1e30f};
  nc_put_var_float(nc, vv, values);
  nc_close(nc);
  FieldReader r(path, "tas");
  std::vector<float> v(3);
  EXPECT_EQ(r.read(0, v.data()), 1);
  EXPECT_EQ(v[1], 900.0f) << "the file says 900 K is valid";
  EXPECT_TRUE(r.plausible().none());
}

// An input whose steps carry one time: replay logged 4 samplings and kept 1 record. Refused when
// the file is opened, naming the file, the time variable and the step.
TEST(FieldReader, RepeatedOrDecreasingTimesAreRefusedAtOpen) {
  ScratchDir dir;
  const std::vector<float> values(8, 280.0f);
  std::string e = error_of([&] {
    FieldReader(write_field(dir.file("same.nc"), values, {{"units", "K"}}, {0, 1, 1, 2}), "tas");
  });
  EXPECT_NE(e.find("same.nc, time variable 'time': step 2 at 2000-01-02T00:00:00 (value 1) repeats the time of "
                   "step 1"),
            std::string::npos)
      << e;
  e = error_of([&] { FieldReader(write_field(dir.file("back.nc"), values, {{"units", "K"}}, {0, 2, 1, 3}), "tas"); });
  EXPECT_NE(e.find("back.nc, time variable 'time': step 2 at 2000-01-02T00:00:00 (value 1) is not after step 1"),
            std::string::npos)
      << e;
  FieldReader ok(write_field(dir.file("ok.nc"), values, {{"units", "K"}}, {0, 1, 2, 3}), "tas");
  EXPECT_EQ(ok.n_times(), 4);
}

TEST(CfTime, DatesThatDoNotExistInTheCalendarAreNamed) {
  DateTime t;
  ASSERT_TRUE(parse_datetime("1979-02-30", t)) << "the parser knows no calendar";
  EXPECT_EQ(date_error(t, "proleptic_gregorian"), "1979-02 has 28 days in the proleptic_gregorian calendar, not 30");
  EXPECT_EQ(date_error(t, "360_day"), "");
  parse_datetime("2000-02-29", t);
  EXPECT_EQ(date_error(t, "standard"), "");
  EXPECT_NE(date_error(t, "noleap"), "");
  parse_datetime("1900-02-29", t);
  EXPECT_NE(date_error(t, "proleptic_gregorian"), "");
  EXPECT_EQ(date_error(t, "all_leap"), "");
  parse_datetime("1979-04-31", t);
  EXPECT_NE(date_error(t, ""), "");
  parse_datetime("1979-01-01T24:30", t);
  EXPECT_NE(date_error(t, ""), "");
  parse_datetime("1979-01-01T24:00", t);
  EXPECT_EQ(date_error(t, ""), "");
  EXPECT_THROW(CfTime("days since 1979-02-30", "standard", "f.nc"), IoError);
  EXPECT_NO_THROW(CfTime("days since 1979-02-30", "360_day", "f.nc"));
}

}  // namespace
}  // namespace finecast::coupling
