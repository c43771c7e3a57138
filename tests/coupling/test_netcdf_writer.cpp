// SPDX-License-Identifier: BSD-3-Clause
// NetCDF ensemble output: content read back, ncdump's view of it, and atomic publication.
#include <dirent.h>
#include <gtest/gtest.h>
#include <netcdf.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <limits>

#include "common/error.hpp"
#include "coupling/io/ensemble_writer.hpp"
#include "coupling/io/field_reader.hpp"
#include "coupling/io/plausibility.hpp"
#include "tests/coupling/io_test_util.hpp"

namespace finecast::coupling {
namespace {

using testing_io::ScratchDir;

std::string run(const std::string& cmd, int* status) {
  std::string out;
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  *status = pclose(p);
  return out;
}

OutputGrid small_icon(int n) {
  std::vector<double> lon(n), lat(n);
  for (int i = 0; i < n; ++i) lon[i] = 0.01 * i, lat[i] = -0.005 * i;
  return OutputGrid::icon(lon, lat);
}

std::vector<float> ensemble(int members, int n, float base) {
  std::vector<float> v(static_cast<size_t>(members) * n);
  for (int m = 0; m < members; ++m)
    for (int i = 0; i < n; ++i) v[m * n + i] = base + 100.0f * m + 0.25f * i;
  return v;
}

TEST(EnsembleWriter, IconOutputReadsBackAndNcdumpAcceptsIt) {
  ScratchDir dir;
  const std::string path = dir.file("out.nc");
  const int n = 50, members = 3;
  {
    EnsembleWriter w(path, small_icon(n), "tas", {"K", "Near-Surface Air Temperature", "air_temperature"}, members,
                     {{"finecast_checkpoint", "run1/ckpt_000100.h5"}});
    auto a = ensemble(members, n, 250.0f);
    a[1] = std::numeric_limits<float>::quiet_NaN();
    std::vector<float> coarse(n, 260.0f);
    w.write("2021-01-01T00:00:00.000", a.data(), coarse.data());
    w.write("2021-01-01T06:00:00.000", ensemble(members, n, 251.0f).data(), coarse.data());
    EXPECT_EQ(FieldReader(path, "tas_coarse").n_times(), 2) << "records are readable during the run";
    w.set_global_attribute("finecast_checkpoint", "run1/ckpt_000200.h5");
    w.close();
  }
  ASSERT_TRUE(testing_io::exists(path));
  EXPECT_FALSE(testing_io::exists(path + ".tmp"));

  int status = -1;
  const std::string header = run("ncdump -h '" + path + "' 2>&1", &status);
  ASSERT_EQ(status, 0) << header;
  for (const char* want :
       {"time = UNLIMITED ; // (2 currently)", "realization = 3 ;", "ncells = 50 ;",
        "float tas(time, realization, ncells) ;", "tas:coordinates = \"clon clat\" ;",
        "realization:standard_name = \"realization\" ;", "float tas_mean(time, ncells) ;",
        "tas_mean:cell_methods = \"realization: mean\" ;", "tas_mean:units = \"K\" ;",
        "tas_coarse:standard_name = \"air_temperature\" ;", "tas:units = \"K\" ;",
        "tas:standard_name = \"air_temperature\" ;", "time:units = \"seconds since 2021-01-01 00:00:00\" ;",
        "time:calendar = \"proleptic_gregorian\" ;", ":Conventions = \"CF-1.8\" ;",
        ":finecast_checkpoint = \"run1/ckpt_000200.h5\" ;", "float tas_coarse(time, ncells) ;",
        "clon:units = \"radian\" ;"})
    EXPECT_NE(header.find(want), std::string::npos) << "missing: " << want << "\n" << header;
  EXPECT_NE(header.find(std::string(":finecast_version = \"") + FINECAST_VERSION + "\""), std::string::npos) << header;
  EXPECT_EQ(run("ncdump -k '" + path + "'", &status), "netCDF-4\n");  // the default

  // Values and time through the library, the missing value as NaN through the reader.
  int nc, vt, vv;
  ASSERT_EQ(nc_open(path.c_str(), NC_NOWRITE, &nc), NC_NOERR);
  nc_inq_varid(nc, "time", &vt);
  nc_inq_varid(nc, "tas", &vv);
  double times[2];
  nc_get_var_double(nc, vt, times);
  EXPECT_EQ(times[0], 0.0);
  EXPECT_EQ(times[1], 21600.0);
  std::vector<float> got(2 * members * n);
  nc_get_var_float(nc, vv, got.data());
  nc_close(nc);
  const auto want = ensemble(members, n, 251.0f);
  for (size_t i = 0; i < want.size(); ++i) ASSERT_EQ(got[members * n + i], want[i]) << i;
  EXPECT_EQ(got[1], 1.0e20f);
  // The ensemble mean: over the members with a value (cell 1 of the first record has two). The
  // synthetic members reach 450 K, beyond the plausibility table's air temperature.
  set_plausible_overrides({"tas_mean=none"}, "test");
  FieldReader mean(path, "tas_mean");
  clear_plausible_overrides();
  std::vector<float> m(n);
  mean.read(0, m.data());
  const auto first = ensemble(members, n, 250.0f);
  EXPECT_FLOAT_EQ(m[1], (first[n + 1] + first[2 * n + 1]) / 2);
  EXPECT_FLOAT_EQ(m[7], (first[7] + first[n + 7] + first[2 * n + 7]) / 3);
  FieldReader r(path, "tas_coarse");
  EXPECT_EQ(r.time_string(1), "2021-01-01T06:00:00");
  std::vector<float> c(n);
  r.read(1, c.data());
  EXPECT_EQ(c[7], 260.0f);
}

TEST(EnsembleWriter, LatLonCopiesCoordinatesFromTheInput) {
  FINECAST_REQUIRE_FILE(testing_io::kTasFile);
  ScratchDir dir;
  FieldReader in(testing_io::kTasFile, "tas");
  const OutputGrid grid = in.output_grid().cropped(0, 96, 0, 176);  // whole 16 x 16 blocks: 11 columns of blocks
  std::vector<float> field(static_cast<size_t>(in.n_values())), crop(96 * 176);
  in.read(2, field.data());
  for (int y = 0; y < 96; ++y)
    for (int x = 0; x < 176; ++x) crop[y * 176 + x] = field[y * 192 + x];
  const std::string path = dir.file("tas_fine.nc");
  EnsembleWriter w(path, grid, "tas", in.attributes(), 1, {});
  w.write(in.time_string(2), crop.data());
  w.close();

  FieldReader back(path, "tas");
  EXPECT_EQ(back.spatial_shape(), (std::vector<size_t>{96, 176}));
  EXPECT_EQ(back.time_string(0), in.time_string(2));
  EXPECT_EQ(back.attributes().units, "K");
  std::vector<float> v(96 * 176);
  back.read(0, v.data());
  EXPECT_EQ(v, crop);
  const OutputGrid g = back.output_grid();
  EXPECT_EQ(g.x.values, grid.x.values);
  EXPECT_EQ(g.y.text_attrs.at("standard_name"), "latitude");
  int status = -1;
  const std::string header = run("ncdump -h '" + path + "' 2>&1", &status);
  EXPECT_EQ(status, 0) << header;
  EXPECT_NE(header.find("float tas(time, realization, lat, lon)"), std::string::npos) << header;
  EXPECT_NE(header.find(":finecast_checkpoint = \"none\""), std::string::npos) << header;
}

// Every record is on disk when write() returns: a job killed in the middle of its run keeps
// every record it wrote, in a file any reader opens; so does a run that ends without close().
TEST(EnsembleWriter, AKilledRunKeepsEveryRecordItWrote) {
  ScratchDir dir;
  const std::string path = dir.file("out.nc");
  const int n = 20;
  {
    EnsembleWriter w(path, small_icon(n), "t", {}, 2, {});
    w.write("2000-01-01T00:00:00", ensemble(2, n, 1.0f).data());
    w.write("2000-01-02T00:00:00", ensemble(2, n, 2.0f).data());
  }  // destroyed without close(), as when an exception unwinds
  {
    FieldReader r(path, "t");
    EXPECT_EQ(r.n_times(), 2);
  }
  // A process killed in the middle of a run, after two records and while a third is pending.
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    EnsembleWriter w(path, small_icon(n), "t", {}, 2, {});
    w.write("2000-01-03T00:00:00", ensemble(2, n, 3.0f).data());
    w.write("2000-01-04T00:00:00", ensemble(2, n, 4.0f).data());
    raise(SIGKILL);
    _exit(0);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  EXPECT_TRUE(WIFSIGNALED(status));
  FieldReader r(path, "t");
  ASSERT_EQ(r.n_times(), 2);
  EXPECT_EQ(r.time_string(0), "2000-01-03T00:00:00");
  EXPECT_EQ(r.time_string(1), "2000-01-04T00:00:00");
  std::vector<float> values(static_cast<size_t>(n));
  r.read(1, values.data());  // member 0 of the second record
  EXPECT_FLOAT_EQ(values[0], 4.0f);
  EXPECT_FALSE(testing_io::exists(path + ".tmp"));
}

/// Open file descriptors of this process.
int open_fds() {
  int n = 0;
  if (DIR* d = opendir("/proc/self/fd")) {
    while (readdir(d)) ++n;
    closedir(d);
  }
  return n;
}

// A write that fails (here: the file-size limit, as a full disk does it) leaves the file with
// the records synced before, and releases it: nc_abort once tried to sync the failed record,
// failed again, and kept netCDF's state and the file's descriptor (ASan: a leak per failure);
// HDF5 (NetCDF-4) kept the file open when the flush at its close failed. Both formats.
class FailedWrite : public ::testing::TestWithParam<OutputFormat> {};
TEST_P(FailedWrite, ReleasesTheFileAndKeepsTheRecordsBefore) {
  ScratchDir dir;
  const std::string path = dir.file("out.nc");
  const int n = 20000;
  const WriterOptions options{GetParam(), 4, ""};
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {  // the size limit applies to this child only
    signal(SIGXFSZ, SIG_IGN);
    const int before = open_fds();
    int written = 0;
    {
      EnsembleWriter w(path, small_icon(n), "t", {}, 2, {}, "proleptic_gregorian", options);
      // Two records without a limit, then a limit half a record beyond them (the sizes of the
      // header, coordinates and records follow the writer's layout, so they are measured).
      rlim_t size[3] = {0, 0, 0};
      for (; written < 2; ++written) {
        w.write("2000-01-0" + std::to_string(written + 1) + "T00:00:00", ensemble(2, n, 1.0f * (written + 1)).data());
        size[written + 1] = static_cast<rlim_t>(std::filesystem::file_size(path));
      }
      const rlimit limit{size[2] + (size[2] - size[1]) / 2, RLIM_INFINITY};
      setrlimit(RLIMIT_FSIZE, &limit);
      try {
        for (int day = 3; day <= 10; ++day, ++written)
          w.write("2000-01-0" + std::to_string(day % 10) + "T00:00:00", ensemble(2, n, 1.0f * day).data());
        _exit(10);  // never failed
      } catch (const IoError&) {
      }
      try {
        w.write("2000-01-09T00:00:00", ensemble(2, n, 9.0f).data());
        _exit(11);  // a broken writer took another record
      } catch (const IoError&) {
      }
      if (open_fds() != before) _exit(12);  // the failed file is still open
    }
    _exit(written == 2 ? 0 : 13);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFEXITED(status));
  ASSERT_EQ(WEXITSTATUS(status), 0) << "10: no write failed, 11: a write after the failure was taken, "
                                       "12: the file was not released, 13: not 2 records before the failure";
  FieldReader r(path, "t");
  ASSERT_EQ(r.n_times(), 2) << "the records synced before the failure, and only those";
  std::vector<float> values(static_cast<size_t>(n));
  r.read(1, values.data());
  EXPECT_FLOAT_EQ(values[0], 2.0f);
}
INSTANTIATE_TEST_SUITE_P(EnsembleWriter, FailedWrite, ::testing::Values(OutputFormat::kNetcdf4, OutputFormat::kCdf5),
                         [](const auto& info) { return info.param == OutputFormat::kCdf5 ? "cdf5" : "netcdf4"; });

TEST(EnsembleWriter, ASecondWriteAtTheSameTimeReplacesTheRecord) {
  ScratchDir dir;
  const std::string path = dir.file("out.nc");
  const int n = 10;
  {
    EnsembleWriter w(path, small_icon(n), "t", {}, 2, {});
    std::vector<float> coarse(n, 5.0f), coarse2(n, 6.0f);
    w.write("2000-01-01T00:00:00", ensemble(2, n, 1.0f).data(), coarse.data());
    w.write("2000-01-02T00:00:00", ensemble(2, n, 2.0f).data(), coarse.data());
    w.write("2000-01-02T00:00:00", ensemble(2, n, 3.0f).data(), coarse2.data());  // newer weights, same time
    EXPECT_EQ(w.steps_written(), 2);
    w.write("2000-01-03T00:00:00", ensemble(2, n, 4.0f).data(), coarse.data());
    w.close();
  }
  FieldReader r(path, "t"), c(path, "t_coarse");
  ASSERT_EQ(r.n_times(), 3);
  EXPECT_EQ(r.time_string(1), "2000-01-02T00:00:00");
  EXPECT_EQ(r.time_string(2), "2000-01-03T00:00:00");
  std::vector<float> v(n);
  r.read(1, v.data());
  EXPECT_EQ(v[0], 3.0f) << "the replacing write's values";
  c.read(1, v.data());
  EXPECT_EQ(v[0], 6.0f);
  r.read(2, v.data());
  EXPECT_EQ(v[0], 4.0f);
}

TEST(EnsembleWriter, RejectsBadUse) {
  ScratchDir dir;
  EXPECT_THROW(EnsembleWriter(dir.file("no/such/dir/out.nc"), small_icon(4), "t", {}, 1, {}), IoError);
  EXPECT_THROW(EnsembleWriter(dir.file("a.nc"), small_icon(4), "t", {}, 0, {}), IoError);
  EXPECT_THROW(EnsembleWriter(dir.file("b.nc"), small_icon(4), "t", {}, 1, {}, "martian"), IoError);
  EnsembleWriter w(dir.file("c.nc"), small_icon(4), "t", {}, 1, {});
  const std::vector<float> v(4, 1.0f);
  w.write("3", v.data());  // no date: time holds the step index
  EXPECT_THROW(w.write("2000-01-01T00:00:00", v.data()), IoError);
  w.write("4", v.data());
  w.close();
  FieldReader r(dir.file("c.nc"), "t");
  EXPECT_EQ(r.n_times(), 2);
  EXPECT_EQ(r.time_string(1), "1");
}

// A time the file's calendar does not have (a 360_day February 30 in a proleptic Gregorian
// output) is an error of that record, raised before the file is touched: the writer goes on and
// the file keeps every record. Once it was raised inside the record's I/O, which discarded the
// NetCDF-4 file and crashed in netCDF's nc_abort with an HDF5 object still open.
TEST(EnsembleWriter, ATimeTheCalendarDoesNotHaveIsRefusedBeforeTheFileIsTouched) {
  ScratchDir dir;
  const int n = 10;
  for (const std::string first : {"2000-02-30T00:00:00", "2000-02-28T00:00:00"}) {
    const std::string path = dir.file("out_" + first.substr(8, 2) + ".nc");
    {
      EnsembleWriter w(path, small_icon(n), "t", {}, 2, {}, "proleptic_gregorian", {OutputFormat::kNetcdf4, 1, ""});
      if (first != "2000-02-30T00:00:00") w.write(first, ensemble(2, n, 1.0f).data());
      EXPECT_THROW(w.write("2000-02-30T00:00:00", ensemble(2, n, 2.0f).data()), IoError);
      w.write("2000-03-01T00:00:00", ensemble(2, n, 3.0f).data());
      w.close();
    }
    FieldReader r(path, "t");
    ASSERT_EQ(r.n_times(), first == "2000-02-30T00:00:00" ? 1 : 2) << path;
    EXPECT_EQ(r.time_string(r.n_times() - 1), "2000-03-01T00:00:00");
  }
}

// A record written in chunks of cells (as the plugin's trainer ranks deliver it) is the record
// written at once: members, mean and companions, on ICON and on lat-lon grids (whole rows).
TEST(EnsembleWriter, ARecordWrittenInChunksEqualsOneWrite) {
  ScratchDir dir;
  const int members = 3;
  std::vector<double> lat(6), lon(8);
  for (int i = 0; i < 6; ++i) lat[i] = -50 + 20 * i;
  for (int i = 0; i < 8; ++i) lon[i] = 45 * i;
  for (const OutputGrid& grid : {small_icon(50), OutputGrid::latlon(lat, lon)}) {
    const int64_t n = grid.n_cells();
    auto a = ensemble(members, static_cast<int>(n), 250.0f);
    a[5] = std::numeric_limits<float>::quiet_NaN();
    std::vector<float> coarse(static_cast<size_t>(n)), host(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) coarse[i] = 260.0f + 0.5f * i, host[i] = 270.0f - 0.25f * i;
    const std::string once = dir.file("once.nc"), parts = dir.file("parts.nc");
    {
      EnsembleWriter w(once, grid, "t", {"K", "", ""}, members, {});
      w.write("2021-01-01T00:00:00", a.data(), coarse.data(), host.data());
    }
    {
      EnsembleWriter w(parts, grid, "t", {"K", "", ""}, members, {});
      const int64_t chunk = 2 * w.chunk_alignment() + (grid.kind == OutputGrid::Kind::kIcon ? 5 : 0);
      EXPECT_THROW(w.put(0, 1, a.data(), nullptr, nullptr), IoError) << "put() outside a record";
      w.begin("2021-01-01T00:00:00", true, true);
      for (int64_t first = 0; first < n; first += chunk) {
        const int64_t count = std::min(chunk, n - first);
        std::vector<float> m(static_cast<size_t>(members * count));
        for (int k = 0; k < members; ++k)
          std::copy(a.begin() + k * n + first, a.begin() + k * n + first + count, m.begin() + k * count);
        w.put(first, count, m.data(), coarse.data() + first, host.data() + first);
      }
      w.end();
    }
    if (grid.kind == OutputGrid::Kind::kLatLon) {
      EnsembleWriter w(dir.file("rows.nc"), grid, "t", {"K", "", ""}, members, {});
      w.begin("2021-01-01T06:00:00", false, false);
      EXPECT_THROW(w.put(3, 8, a.data(), nullptr, nullptr), IoError) << "not whole rows";
    }
    int status = -1;
    const std::string diff =
        run("/usr/bin/python3 " + std::string(FINECAST_SOURCE_DIR) + "/tests/comin/compare_netcdf.py '" + once + "' '" +
                parts + "' --ignore history 2>&1",
            &status);
    EXPECT_EQ(status, 0) << diff;
  }
}

// NetCDF-4 (the default): one chunk per record, member and block of cells, shuffle + deflate at
// the configured level on every field; `time` counts from the given origin (the experiment
// start). Python's netCDF4 and cdo read it; CDF-5 and deflate 0 are what they say.
TEST(EnsembleWriter, NetCdf4IsChunkedCompressedAndCountsFromTheOrigin) {
  ScratchDir dir;
  const int n = 6000, members = 3;
  // A smooth field, as model fields are: it compresses.
  std::vector<float> a(static_cast<size_t>(members) * n), coarse(n, 280.0f);
  for (int m = 0; m < members; ++m)
    for (int i = 0; i < n; ++i) a[m * n + i] = 280.0f + 10.0f * std::sin(0.001f * i) + 0.5f * m;
  auto write = [&](const std::string& name, const WriterOptions& options) {
    const std::string path = dir.file(name);
    EnsembleWriter w(path, small_icon(n), "tas", {"K", "", "air_temperature"}, members,
                     {{"title", "a test"}, {"institution", "nowhere"}}, "proleptic_gregorian", options);
    w.write("2021-01-02T06:00:00", a.data(), coarse.data());
    w.write("2021-01-02T12:00:00", a.data(), coarse.data());
    w.close();
    return path;
  };
  const std::string deflated = write("deflate4.nc", {OutputFormat::kNetcdf4, 4, "2021-01-01T00:00:00.000"});
  const std::string plain = write("deflate0.nc", {OutputFormat::kNetcdf4, 0, ""});
  const std::string cdf5 = write("cdf5.nc", {OutputFormat::kCdf5, 4, ""});
  int status = -1;
  const std::string header = run("ncdump -hs '" + deflated + "' 2>&1", &status);
  ASSERT_EQ(status, 0) << header;
  for (const char* want : {":_Format = \"netCDF-4\" ;", "tas:_DeflateLevel = 4 ;", "tas:_Shuffle = \"true\" ;",
                           "tas:_ChunkSizes = 1, 1, 6000 ;", "tas_mean:_DeflateLevel = 4 ;",
                           "tas_mean:_ChunkSizes = 1, 6000 ;", "tas_coarse:_DeflateLevel = 4 ;",
                           "clon:_DeflateLevel = 4 ;", "time:units = \"seconds since 2021-01-01 00:00:00\" ;",
                           ":title = \"a test\" ;", ":institution = \"nowhere\" ;"})
    EXPECT_NE(header.find(want), std::string::npos) << "missing: " << want << "\n" << header;
  const std::string plain_header = run("ncdump -hs '" + plain + "' 2>&1", &status);
  EXPECT_EQ(plain_header.find("_DeflateLevel"), std::string::npos) << plain_header;
  EXPECT_NE(plain_header.find("tas:_ChunkSizes = 1, 1, 6000 ;"), std::string::npos) << plain_header;
  EXPECT_NE(plain_header.find("time:units = \"seconds since 2021-01-02 06:00:00\" ;"), std::string::npos)
      << "without an origin, time counts from the first record\n"
      << plain_header;
  EXPECT_EQ(run("ncdump -k '" + cdf5 + "'", &status), "cdf5\n");
  EXPECT_LT(std::filesystem::file_size(deflated), std::filesystem::file_size(plain) / 2);

  // Python's netCDF4 (Debian's) and cdo read the compressed file: values, time, chunking.
  const std::string py = run("/usr/bin/python3 -c \"import netCDF4; f = netCDF4.Dataset('" + deflated +
                                 "'); v = f['tas']; flt = v.filters(); print(f.data_model, list(f['time'][:]), "
                                 "v.chunking(), flt['zlib'], flt['shuffle'], flt['complevel'], "
                                 "'%.3f' % float(v[1, 2, 1234]))\" 2>&1",
                             &status);
  EXPECT_EQ(status, 0) << py;
  char expect[160];
  std::snprintf(expect, sizeof expect, "NETCDF4 [108000.0, 129600.0] [1, 1, 6000] True True 4 %.3f\n",
                static_cast<double>(a[2 * n + 1234]));
  EXPECT_EQ(py, expect);
  const std::string info = run("cdo -s sinfon '" + deflated + "' 2>&1", &status);
  EXPECT_EQ(status, 0) << info;
  EXPECT_NE(info.find("points=6000"), std::string::npos) << info;
  EXPECT_NE(info.find("tas_mean"), std::string::npos) << info;
}

// A resumed run continues a NetCDF-4 output: its records are kept, the new ones follow, and a
// companion first written after the restart is chunked and compressed like the others.
TEST(EnsembleWriter, AppendingToANetCdf4OutputKeepsItsLayout) {
  ScratchDir dir;
  const std::string path = dir.file("out.nc");
  const int n = 40;
  {
    EnsembleWriter w(path, small_icon(n), "t", {}, 2, {}, "proleptic_gregorian",
                     {OutputFormat::kNetcdf4, 2, "2000-01-01T00:00:00"});
    w.write("2000-01-01T06:00:00", ensemble(2, n, 1.0f).data());
    w.write("2000-01-01T12:00:00", ensemble(2, n, 2.0f).data());
  }
  {
    EnsembleWriter w(EnsembleWriter::Append{}, path, "t", 2, n);
    EXPECT_EQ(w.steps_written(), 2);
    EXPECT_EQ(w.last_datetime(), "2000-01-01T12:00:00");
    const std::vector<float> host(n, 7.0f);
    w.write("2000-01-01T18:00:00", ensemble(2, n, 3.0f).data(), nullptr, host.data());
    w.close();
  }
  FieldReader r(path, "t");
  ASSERT_EQ(r.n_times(), 3);
  EXPECT_EQ(r.time_string(2), "2000-01-01T18:00:00");
  std::vector<float> v(n);
  r.read(2, v.data());
  EXPECT_FLOAT_EQ(v[0], 3.0f);
  int status = -1;
  const std::string header = run("ncdump -hs '" + path + "' 2>&1", &status);
  for (const char* want : {"t_host:_DeflateLevel = 2 ;", "t_host:_ChunkSizes = 1, 40 ;", "t:_DeflateLevel = 2 ;",
                           "time:units = \"seconds since 2000-01-01 00:00:00\" ;"})
    EXPECT_NE(header.find(want), std::string::npos) << "missing: " << want << "\n" << header;
}

}  // namespace
}  // namespace finecast::coupling
