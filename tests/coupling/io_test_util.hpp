// SPDX-License-Identifier: BSD-3-Clause
// Helpers shared by the NetCDF, rolling-buffer and grid tests: a scratch folder and real-data paths.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>

#include "coupling/grid/spherical.hpp"

namespace finecast::testing_io {

/// A fresh folder under the test temp dir, removed at the end of the test.
class ScratchDir {
 public:
  ScratchDir() {
    std::string tmpl = ::testing::TempDir() + "finecast_io_XXXXXX";
    if (!mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp failed for " + tmpl);
    path_ = tmpl;
  }
  ~ScratchDir() { std::system(("rm -rf '" + path_ + "'").c_str()); }
  std::string file(const std::string& name) const { return path_ + "/" + name; }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

inline bool exists(const std::string& path) { return access(path.c_str(), F_OK) == 0; }

inline std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

inline void spit(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

/// Real data from Debian packages (libncarg-data, ferret-datasets); tests skip when absent.
inline const char* kTasFile = "/usr/share/ncarg/data/nug/tas_rectilinear_grid_2D.nc";
inline const char* kRotatedFile = "/usr/share/ncarg/data/nug/tas_rotated_grid_EUR11.nc";
inline const char* kIconFile = "/usr/share/ncarg/data/nug/triangular_grid_ICON.nc";
inline const char* kEtopo20File = "/usr/share/ferret-vis/data/etopo20.cdf";

/// The area of the spherical Earth the grids are on (m^2): what a global grid's cells add up to.
inline double sphere_area() {
  namespace sphere = finecast::coupling::sphere;
  return 4.0 * sphere::kPi * sphere::kEarthRadius * sphere::kEarthRadius;
}

#define FINECAST_REQUIRE_FILE(path)          \
  if (!::finecast::testing_io::exists(path)) \
  GTEST_SKIP() << "missing data file " << (path) << " (install its Debian package)"

}  // namespace finecast::testing_io
