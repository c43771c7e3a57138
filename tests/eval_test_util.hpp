// SPDX-License-Identifier: BSD-3-Clause
// Helpers of the evaluation tests: a block layout; running finecast-eval and reading its CSV report.
#pragma once

#include <sys/wait.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "eval/baseline_list.hpp"
#include "eval/blocks.hpp"

namespace finecast::testing_eval {

/// A layout of ny x nx fine cells in k x k blocks, with cell weights `w` (none: equal).
inline finecast::eval::BlockLayout block_layout(int ny, int nx, int k, std::vector<double> w = {}) {
  finecast::eval::BlockLayout L;
  L.ny = ny;
  L.nx = nx;
  L.k = k;
  L.weight = std::move(w);
  return L;
}

/// The conservative bicubic baseline: the default base of the regression on lat-lon blocks.
inline const finecast::eval::Baseline kBicubicCons{"bicubic_cons", finecast::eval::Interp::kBicubic, true};

inline const std::string kEval = std::string(FINECAST_BINARY_DIR) + "/bin/finecast-eval";

struct Result {
  int rc = -1;
  std::string out;  ///< stdout and stderr
};

/// Runs finecast-eval with `args`.
inline Result run_eval(const std::string& args) {
  Result r;
  FILE* p = popen((kEval + " " + args + " 2>&1").c_str(), "r");
  if (!p) return r;
  char buf[4096];
  std::size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) r.out.append(buf, n);
  const int status = pclose(p);
  r.rc = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

/// finecast-eval's CSV report: each row's numbers by its name (an empty cell is NaN).
inline std::map<std::string, std::vector<double>> read_csv(const std::string& path) {
  std::ifstream f(path);
  std::string line;
  std::getline(f, line);
  std::map<std::string, std::vector<double>> rows;
  while (std::getline(f, line)) {
    std::stringstream ss(line);
    std::string name, cell;
    std::getline(ss, name, ',');
    while (std::getline(ss, cell, ',')) rows[name].push_back(cell.empty() ? NAN : std::stod(cell));
  }
  return rows;
}

/// The CSV columns after the name.
enum Col { kMembers = 0, kPoints, kRmse, kBias, kMae, kCrps, kCrpsFair, kSpread, kStdRatio, kHf, kNonFinite };

}  // namespace finecast::testing_eval
