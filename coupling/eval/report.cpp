// SPDX-License-Identifier: BSD-3-Clause
// Text, JSON and CSV renderings of an evaluation; no JSON library needed for this flat layout.
#include "coupling/eval/report.hpp"

#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <type_traits>

#include "coupling/error.hpp"

namespace finecast::coupling::eval {

namespace {

/// JSON has no NaN or infinity; a metric that is undefined (no valid blocks) becomes null.
std::string num(double v) {
  if (!std::isfinite(v)) return "null";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return buf;
}

std::string quote(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out += buf;
        } else {
          out += c;
        }
    }
  }
  return out + "\"";
}

template <class T>
std::string array(const std::vector<T>& v) {
  std::string out = "[";
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (i) out += ", ";
    if constexpr (std::is_floating_point_v<T>)
      out += num(v[i]);
    else
      out += std::to_string(v[i]);
  }
  return out + "]";
}

std::string spectrum_json(const RadialSpectrum& s) {
  return "{\"wavenumber\": " + array(s.wavenumber) + ", \"energy\": " + array(s.energy) +
         ", \"modes\": " + array(s.modes) + "}";
}

const char* kCsvHeader =
    "name,members,n_points,rmse,bias,mae,crps,crps_fair,spread,std_ratio,upper_energy_ratio";

}  // namespace

std::string format_table(const EvalReport& r) {
  std::ostringstream os;
  char line[256];
  std::snprintf(line, sizeof line, "%-15s %4s %11s %11s %11s %11s %9s %9s\n", "prediction", "mem",
                "rmse", "bias", "crps", "crps_fair", "std_ratio", "hf_ratio");
  os << line;
  for (const EvalRow& row : r.rows) {
    const Scores& s = row.scores;
    std::snprintf(line, sizeof line, "%-15s %4d %11.5g %11.4g %11.5g %11.5g %9.4f %9.4f\n",
                  row.name.c_str(), s.members, s.rmse, s.bias, s.crps, s.crps_fair, s.std_ratio,
                  s.upper_energy_ratio);
    os << line;
  }
  return os.str();
}

std::string to_json(const EvalReport& r) {
  std::ostringstream os;
  os << "{\n  \"meta\": {";
  for (std::size_t i = 0; i < r.meta.size(); ++i)
    os << (i ? ", " : "") << quote(r.meta[i].first) << ": " << quote(r.meta[i].second);
  os << "},\n  \"grid\": {\"ny\": " << r.ny << ", \"nx\": " << r.nx << ", \"block\": " << r.k
     << ", \"n_times\": " << r.n_times << ", \"blocks_per_step\": " << r.blocks_total
     << ", \"blocks_scored\": " << r.blocks_valid << "},\n";
  os << "  \"truth_spectrum\": " << spectrum_json(r.truth_spectrum) << ",\n";
  os << "  \"predictions\": [\n";
  for (std::size_t i = 0; i < r.rows.size(); ++i) {
    const Scores& s = r.rows[i].scores;
    os << "    {\"name\": " << quote(r.rows[i].name) << ", \"members\": " << s.members
       << ", \"n_points\": " << s.n_points << ", \"rmse\": " << num(s.rmse)
       << ", \"bias\": " << num(s.bias) << ", \"mae\": " << num(s.mae)
       << ", \"crps\": " << num(s.crps) << ", \"crps_fair\": " << num(s.crps_fair)
       << ", \"spread\": " << num(s.spread) << ", \"std_ratio\": " << num(s.std_ratio)
       << ", \"upper_energy_ratio\": " << num(s.upper_energy_ratio)
       << ",\n     \"spectrum\": " << spectrum_json(s.spectrum) << "}"
       << (i + 1 < r.rows.size() ? "," : "") << "\n";
  }
  os << "  ]\n}\n";
  return os.str();
}

std::string to_csv(const EvalReport& r) {
  std::ostringstream os;
  os << kCsvHeader << "\n";
  for (const EvalRow& row : r.rows) {
    const Scores& s = row.scores;
    // CSV readers take an empty field as missing, which is what an undefined metric is.
    auto c = [](double v) { return std::isfinite(v) ? num(v) : std::string(); };
    os << row.name << "," << s.members << "," << s.n_points << "," << c(s.rmse) << "," << c(s.bias)
       << "," << c(s.mae) << "," << c(s.crps) << "," << c(s.crps_fair) << "," << c(s.spread) << ","
       << c(s.std_ratio) << "," << c(s.upper_energy_ratio) << "\n";
  }
  return os.str();
}

void write_text_file(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    if (!f) throw IoError("cannot open '" + tmp + "' for writing (output " + path + ")");
    f << text;
    f.flush();
    if (!f) throw IoError("writing '" + tmp + "' failed (output " + path + ")");
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    throw IoError("cannot rename '" + tmp + "' to '" + path + "'");
  }
}

}  // namespace finecast::coupling::eval
