// SPDX-License-Identifier: BSD-3-Clause
// Text, JSON (nlohmann-json) and CSV renderings of an evaluation.
#include "eval/report.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>

#include "common/atomic_file.hpp"
#include "common/error.hpp"

namespace finecast::eval {

namespace {

// Keys in the order written, so the file reads top-down like the table.
using Json = nlohmann::ordered_json;

/// JSON has no NaN or infinity; a metric that is undefined (no valid blocks) becomes null.
Json number(double v) { return std::isfinite(v) ? Json(v) : Json(nullptr); }

Json numbers(const std::vector<double>& v) {
  Json out = Json::array();
  for (double x : v) out.push_back(number(x));
  return out;
}

Json spectrum_json(const RadialSpectrum& s) {
  return Json{{"wavenumber", numbers(s.wavenumber)}, {"energy", numbers(s.energy)}, {"modes", s.modes}};
}

constexpr const char* kCsvHeader =
    "name,members,n_points,rmse,bias,mae,crps,crps_fair,spread,std_ratio,upper_energy_ratio,n_nonfinite";

}  // namespace

std::string format_table(const EvalReport& r) {
  // The name column fits the longest name (regression_local), 15 characters at least.
  std::size_t w = 15;
  for (const EvalRow& row : r.rows) w = std::max(w, row.name.size());
  std::string out = fmt::format("{:<{}} {:>4} {:>11} {:>11} {:>11} {:>11} {:>9} {:>9} {:>10}\n", "prediction", w, "mem",
                                "rmse", "bias", "crps", "crps_fair", "std_ratio", "hf_ratio", "nonfinite");
  for (const EvalRow& row : r.rows) {
    const Scores& s = row.scores;
    out +=
        fmt::format("{:<{}} {:4d} {:11.5g} {:11.4g} {:11.5g} {:11.5g} {:9.4f} {:9.4f} {:10d}\n", row.name, w, s.members,
                    s.rmse, s.bias, s.crps, s.crps_fair, s.std_ratio, s.upper_energy_ratio, s.n_nonfinite);
  }
  return out;
}

std::string to_json(const EvalReport& r) {
  Json meta = Json::object();
  for (const auto& [key, value] : r.meta) meta[key] = value;
  Json predictions = Json::array();
  for (const EvalRow& row : r.rows) {
    const Scores& s = row.scores;
    predictions.push_back(Json{{"name", row.name},
                               {"members", s.members},
                               {"n_points", s.n_points},
                               {"n_nonfinite", s.n_nonfinite},
                               {"rmse", number(s.rmse)},
                               {"bias", number(s.bias)},
                               {"mae", number(s.mae)},
                               {"crps", number(s.crps)},
                               {"crps_fair", number(s.crps_fair)},
                               {"spread", number(s.spread)},
                               {"std_ratio", number(s.std_ratio)},
                               {"upper_energy_ratio", number(s.upper_energy_ratio)},
                               {"spectrum", spectrum_json(s.spectrum)}});
  }
  Json grid;
  if (r.grid == EvalReport::Grid::kLatLon) {
    grid = Json{{"ny", r.ny},
                {"nx", r.nx},
                {"block", r.k},
                {"n_times", r.n_times},
                {"blocks_per_step", r.blocks_total},
                {"blocks_scored", r.blocks_valid}};
  } else {
    // The same keys where they mean the same (blocks are patches here), so readers of lat-lon
    // results need no second path for the counts.
    Json levels = Json::array();
    for (int b = 1; b <= static_cast<int>(r.truth_spectrum.energy.size()); ++b)
      levels.push_back(r.coarse_level >= 0 ? r.coarse_level + b : b);
    grid = Json{{"kind", "unstructured"},
                {"n_cells", r.n_cells},
                {"patch_size", r.patch_size},
                {"fine_level", r.fine_level},
                {"coarse_level", r.coarse_level},
                {"n_times", r.n_times},
                {"blocks_per_step", r.blocks_total},
                {"blocks_scored", r.blocks_valid},
                {"spectrum", "variance by refinement level (Haar): band b = R2B<coarse_level + b>"},
                {"spectrum_levels", levels}};
  }
  const Json doc{{"meta", meta},
                 {"grid", grid},
                 {"truth_spectrum", spectrum_json(r.truth_spectrum)},
                 {"predictions", predictions}};
  return doc.dump(2) + "\n";
}

std::string to_csv(const EvalReport& r) {
  // CSV readers take an empty field as missing, which is what an undefined metric is.
  auto c = [](double v) { return std::isfinite(v) ? fmt::format("{:.9g}", v) : std::string(); };
  std::string out = std::string(kCsvHeader) + "\n";
  for (const EvalRow& row : r.rows) {
    const Scores& s = row.scores;
    out += fmt::format("{},{},{},{},{},{},{},{},{},{},{},{}\n", row.name, s.members, s.n_points, c(s.rmse), c(s.bias),
                       c(s.mae), c(s.crps), c(s.crps_fair), c(s.spread), c(s.std_ratio), c(s.upper_energy_ratio),
                       s.n_nonfinite);
  }
  return out;
}

void write_text_file(const std::string& path, const std::string& text) {
  AtomicFile file(path);
  {
    std::ofstream f(file.tmp_path(), std::ios::binary | std::ios::trunc);
    if (!f) throw IoError("cannot open '" + file.tmp_path() + "' for writing (output " + path + ")");
    f << text;
    f.flush();
    if (!f) throw IoError("writing '" + file.tmp_path() + "' failed (output " + path + ")");
  }
  file.commit();
}

}  // namespace finecast::eval
