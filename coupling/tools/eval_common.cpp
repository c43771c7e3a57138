// SPDX-License-Identifier: BSD-3-Clause
// Step matching and report output shared by finecast-eval's lat-lon and ICON paths.
#include "coupling/tools/eval_common.hpp"

#include <netcdf.h>

#include <iostream>

#include "common/error.hpp"
#include "coupling/eval/report.hpp"

namespace finecast::tools {

void check_default_truth(const EvalOptions& o) {
  if (!o.truth.empty()) return;
  int ncid = -1, id = -1;
  if (nc_open(o.pred.c_str(), NC_NOWRITE, &ncid) != NC_NOERR) return;  // the reader says why
  const bool found = nc_inq_varid(ncid, o.truth_variable().c_str(), &id) == NC_NOERR;
  nc_close(ncid);
  if (!found)
    throw ConfigError("no --truth given, and prediction '" + o.pred + "' has no variable '" +
                      o.truth_variable() +
                      "' (the host's own field, which plugin outputs carry) to use as the truth: "
                      "give the fine truth with --truth FILE");
}

void match_steps(const StepAxis& truth, const StepAxis& pred, const std::string& time,
                 std::vector<std::size_t>& tsteps, std::vector<std::size_t>& psteps) {
  tsteps.clear();
  psteps.clear();
  if (!time.empty()) {
    const std::size_t t = truth.step(time);
    tsteps = {t};
    if (pred.n_times == truth.n_times)
      psteps = tsteps;
    else if (!pred.date(0).empty() && !truth.date(t).empty())
      psteps = {pred.step(truth.date(t))};  // both dated: the prediction's step at that date
    else if (pred.n_times == 1)
      psteps = {0};
    else
      throw ConfigError("--time " + time + ": " + pred.description + " has " + std::to_string(pred.n_times) +
                        " time steps and " + truth.description + " has " + std::to_string(truth.n_times) +
                        "; cannot tell which prediction step belongs to it");
  } else {
    if (pred.n_times != truth.n_times)
      throw ConfigError(pred.description + " has " + std::to_string(pred.n_times) +
                        " time steps but " + truth.description + " has " +
                        std::to_string(truth.n_times) + "; pass --time T to score one step");
    for (std::size_t t = 0; t < truth.n_times; ++t) tsteps.push_back(t), psteps.push_back(t);
  }
  // Both files dated: the dates must agree step by step (a prediction of another day would
  // otherwise be scored silently). Undated prediction steps are matched by index.
  for (std::size_t i = 0; i < tsteps.size(); ++i) {
    const std::string td = truth.date(tsteps[i]), pd = pred.date(psteps[i]);
    if (!td.empty() && !pd.empty() && td != pd)
      throw ConfigError("time steps do not match: " + truth.description + " step " +
                        std::to_string(tsteps[i]) + " is " + td + " but " + pred.description +
                        " step " + std::to_string(psteps[i]) + " is " + pd);
  }
}

std::string join(const std::vector<std::size_t>& v) {
  std::string s;
  for (std::size_t i = 0; i < v.size(); ++i) s += (i ? " " : "") + std::to_string(v[i]);
  return s;
}

void write_reports(const coupling::eval::EvalReport& report, const EvalOptions& o) {
  namespace fe = coupling::eval;
  std::cout << fe::format_table(report);
  if (!o.json.empty()) fe::write_text_file(o.json, fe::to_json(report));
  if (!o.csv.empty()) fe::write_text_file(o.csv, fe::to_csv(report));
}

}  // namespace finecast::tools
