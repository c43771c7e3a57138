// SPDX-License-Identifier: BSD-3-Clause
// The conditioning spec's option table, its checkpoint record (the typed /conditioning group, and
// the older string maps), and the comparison a resumed run makes.
#include "coupling/conditioning/conditioning_spec.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "common/error.hpp"
#include "coupling/grid/context_stencil.hpp"
#include "coupling/grid/patch_regression.hpp"

namespace finecast::coupling {
namespace {

using schema::BadValue;
using schema::Field;
using Spec = ConditioningSpec;

std::vector<std::string> split_list(const std::string& text) {
  std::vector<std::string> out;
  if (text.empty()) return out;
  size_t start = 0;
  for (;;) {
    const size_t comma = text.find(',', start);
    out.push_back(text.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    if (comma == std::string::npos) return out;
    start = comma + 1;
  }
}

/// A list of finite reals (an array), `what` saying what the elements are.
std::vector<double> finite_reals(const schema::Value& v, const std::string& what) {
  const auto& xs = schema::value_as<std::vector<double>>(v);
  if (!std::all_of(xs.begin(), xs.end(), [](double x) { return std::isfinite(x); }))
    throw BadValue("must be " + what + ", got " + schema::to_text(v));
  return xs;
}

/// A 64-bit count (the patch size).
Field<Spec> count_field(std::string key, int64_t Spec::*member, std::string comment) {
  Field<Spec> f = schema::field_head<Spec>(std::move(key), schema::Kind::kInteger, std::move(comment));
  f.rule = "a non-negative integer";
  f.get = [member](const Spec& s) { return std::to_string(s.*member); };
  f.set = [member](Spec& s, const std::string& text) {
    long long v = 0;
    if (!schema::parse_integer(text, v) || v < 0)
      throw BadValue("must be a non-negative integer, got \"" + text + "\"");
    s.*member = v;
  };
  return f;
}

/// A fit's coefficients: finite numbers, as text joined by commas (version 1), typed a real array.
Field<Spec> coefficients_field(std::string key, std::vector<double> Spec::*member, std::string comment) {
  Field<Spec> f = schema::field_head<Spec>(key, schema::Kind::kText, std::move(comment));
  f.rule = "finite numbers joined by commas";
  f.get = [member](const Spec& s) { return format_regression(s.*member); };
  f.set = [member, key](Spec& s, const std::string& text) {
    try {
      s.*member = parse_regression(text, static_cast<int>(split_list(text).size()), key);
    } catch (const Error&) {
      throw BadValue("must be finite numbers joined by commas, got \"" + text + "\"");
    }
  };
  f.get_value = [member](const Spec& s) { return schema::Value(s.*member); };
  f.set_value = [member](Spec& s, const schema::Value& v) { s.*member = finite_reals(v, "finite numbers"); };
  return f;
}

/// The settings' rows (conditioning_settings.hpp), with what a run derives: the target's units
/// after the target, the patch size after the grid's rows; then what it learns.
schema::Table<Spec> make_table() {
  using namespace schema;
  constexpr long long kMax = std::numeric_limits<int>::max();
  Table<Spec> t;
  t.push_back(integer("spec_version", &Spec::spec_version, 1, kMax, "version of this record"));
  for (const auto& f : inherited<Spec>(conditioning_settings_table())) {
    t.push_back(f);
    if (f.key == "grid.block")
      // Unknown on either side (0: before the grid is read) is not compared.
      t.push_back(count_field("patch.size", &Spec::patch_size, "fine cells per patch")
                      .compared_on_resume()
                      .applies_when([](const Spec& s) { return s.patch_size != 0; }));
    if (f.key == "target")
      // Unknown on either side: units a host does not give.
      t.push_back(text("target_units", &Spec::target_units, "the downscaled field's units")
                      .compared_on_resume()
                      .applies_when([](const Spec& s) { return !s.target_units.empty(); }));
  }
  Field<Spec> norms = field_head<Spec>("patch.static_norm", Kind::kText, "the covariates' normalisation");
  norms.rule = "\"mean scale\" pairs joined by ';'";
  norms.get = [](const Spec& s) { return format_static_norms(s.static_norms); };
  norms.set = [](Spec& s, const std::string& text) {
    try {
      s.static_norms = parse_static_norms(text, "patch.static_norm");
    } catch (const Error&) {
      throw BadValue("must be \"mean scale\" pairs joined by ';' with positive scales, got \"" + text + "\"");
    }
  };
  // Typed: a real array of (mean, scale) pairs, one per covariate.
  norms.get_value = [](const Spec& s) {
    std::vector<double> pairs;
    for (const auto& n : s.static_norms) pairs.insert(pairs.end(), {n.mean, n.scale});
    return schema::Value(std::move(pairs));
  };
  norms.set_value = [](Spec& s, const schema::Value& v) {
    const std::string rule = "(mean, scale) pairs of finite numbers with positive scales";
    const auto xs = finite_reals(v, rule);
    std::vector<StaticNorm> out;
    for (size_t i = 0; i + 1 < xs.size(); i += 2) out.push_back({xs[i], xs[i + 1]});
    if (xs.size() % 2 != 0 || std::any_of(out.begin(), out.end(), [](const StaticNorm& n) { return !(n.scale > 0); }))
      throw BadValue("must be " + rule + ", got " + schema::to_text(v));
    s.static_norms = std::move(out);
  };
  t.push_back(norms);
  t.push_back(coefficients_field("patch.regression", &Spec::regression, "the regression's coefficients"));
  t.push_back(coefficients_field("patch.global_regression", &Spec::global_regression,
                                 "the global regression's coefficients (patch.global_blend)"));
  return t;
}

}  // namespace

const schema::Table<ConditioningSpec>& conditioning_spec_table() {
  static const schema::Table<ConditioningSpec> table = make_table();
  return table;
}

PatchOptions patch_options(const ConditioningSpec& spec) {
  PatchOptions o;
  o.static_features = spec.patch.static_features;
  o.orography = !spec.patch.orography.empty();
  o.rings = spec.patch.context_rings;
  o.relative = spec.patch.relative_context;
  const auto it = std::find(spec.fields.begin(), spec.fields.end(), spec.target);
  o.target = it == spec.fields.end() ? 0 : static_cast<int>(it - spec.fields.begin());
  o.n_static = static_cast<int>(spec.patch.statics.size());
  o.interp_base = spec.patch.residual != Residual::kMean;
  if (spec.patch.residual == Residual::kRegression) {
    o.regression = spec.regression;
    o.global_regression = spec.global_regression;
    o.global_blend = spec.patch.global_blend;
    o.spread_regression = spec.patch.spread_regression;
  }
  o.local_slopes = local_slope_options(spec.patch);
  return o;
}

schema::Record spec_record(const ConditioningSpec& spec) { return schema::to_record(conditioning_spec_table(), spec); }

namespace {

/// What every version's reader ends with: the spec is this build's, and a regression's
/// coefficients fit its covariates (a constant and a slope per covariate).
StoredSpec finished(StoredSpec stored, const std::string& source) {
  stored.spec.spec_version = kConditioningSpecVersion;
  // Written before patch.interpolant existed: the grid's interpolant of that time (bicubic on
  // lat-lon, idw on ICON), compared on resume as if recorded. Without a recorded grid.type (version
  // 0) it stays auto, resolved once the grid is known.
  if (!stored.has("patch.interpolant") && stored.has("grid.type")) {
    stored.spec.patch.interpolant = legacy_interpolant(stored.spec.grid.type == GridType::kLatLon);
    stored.keys.insert("patch.interpolant");
  }
  // Written before patch.global_interpolant existed: its global regression (if any) is on the
  // base's interpolant, auto, compared on resume as if recorded.
  if (stored.has("patch.residual")) stored.keys.insert("patch.global_interpolant");
  // The config's rule, which every run that wrote a checkpoint passed.
  if (const std::string problem = local_slope_problem(stored.spec.patch); !problem.empty())
    throw CheckpointError(source + ": " + problem);
  // Each fit's coefficients fit its predictors.
  auto check_count = [&](const std::vector<double>& coef, int count, const std::string& key, const char* what) {
    if (!coef.empty() && static_cast<int>(coef.size()) != count)
      throw CheckpointError(source + ": " + key + " holds " + std::to_string(coef.size()) +
                            " coefficient(s), expected " + std::to_string(count) + " (" + what + ")");
  };
  const LocalSlopeOptions local = local_slope_options(stored.spec.patch);
  const int covariates = 2 * static_cast<int>(stored.spec.patch.statics.size());
  check_count(stored.spec.regression, covariates + (local.enabled() ? static_cast<int>(local.terms.size()) : 0),
              "patch.regression",
              "an anomaly and a deviation per static covariate, then one per patch.local_slopes covariate");
  check_count(stored.spec.global_regression, covariates, "patch.global_regression",
              "an anomaly and a deviation per static covariate");
  return stored;
}

std::string newer_version(const std::string& source, long long v) {
  return source + ": conditioning spec_version " + std::to_string(v) + ", but this build reads 0 to " +
         std::to_string(kConditioningSpecVersion) + " (written by a newer finecast)";
}

/// Version 2: the typed attributes of /conditioning, each checked by its row.
StoredSpec read_group(const schema::Record& group, const std::string& source) {
  const std::string where = source + ": /" + kConditioningGroup + " ";
  const auto version = group.find("spec_version");
  if (version == group.end()) throw CheckpointError(where + "has no attribute spec_version (an integer, 2 or later)");
  long long v = 0;
  try {
    v = schema::value_as<int64_t>(version->second);
  } catch (const BadValue& e) {
    throw CheckpointError(where + "spec_version " + e.what());
  }
  if (v > kConditioningSpecVersion) throw CheckpointError(newer_version(source, v));
  if (v < 2) throw CheckpointError(where + "spec_version is " + std::to_string(v) + ", expected 2 or later");
  StoredSpec stored;
  stored.version = static_cast<int>(v);
  for (const auto& f : conditioning_spec_table()) {
    const auto it = group.find(f.key);
    if (f.key == "spec_version" || it == group.end()) continue;
    try {
      schema::typed_set(f, stored.spec, it->second);
    } catch (const BadValue& e) {
      throw CheckpointError(where + f.key + " " + e.what());
    }
    stored.keys.insert(f.key);
  }
  return finished(std::move(stored), source);
}

}  // namespace

StoredSpec read_spec(const std::optional<schema::Record>& group, const std::map<std::string, std::string>& metadata,
                     const std::string& source) {
  return group ? read_group(*group, source) : read_spec(metadata, source);
}

StoredSpec read_spec(const std::map<std::string, std::string>& metadata, const std::string& source) {
  StoredSpec stored;
  const auto version = metadata.find("spec_version");
  long long v = 0;
  if (version != metadata.end() && !schema::parse_integer(version->second, v))
    throw CheckpointError(source + ": spec_version \"" + version->second + "\" is not an integer");
  if (v > kConditioningSpecVersion) throw CheckpointError(newer_version(source, v));
  // Version 2 and later are never text: a /metadata that says so lost its group.
  if (v < 0 || v > 1)
    throw CheckpointError(source + ": /metadata holds spec_version " + std::to_string(v) +
                          ", expected 0 or 1 (later versions are the group /" + kConditioningGroup +
                          ", which is missing)");
  stored.version = static_cast<int>(v);
  for (const auto& f : conditioning_spec_table()) {
    if (f.key == "spec_version") continue;
    std::string key = f.key;
    // Version 0 wrote the fields as context_fields, and `fields` held only the target.
    if (stored.version == 0 && key == "fields") key = "context_fields";
    const auto it = metadata.find(key);
    if (it == metadata.end()) continue;
    try {
      f.set(stored.spec, it->second);
    } catch (const BadValue& e) {
      throw CheckpointError(source + ": " + key + " " + e.what());
    }
    stored.keys.insert(f.key);
  }
  return finished(std::move(stored), source);
}

std::string resume_differences(const StoredSpec& recorded, const ConditioningSpec& configured,
                               const std::string& configured_name) {
  schema::Table<ConditioningSpec> compared;
  for (const auto& f : schema::compared_on_resume(conditioning_spec_table(), recorded.spec, configured))
    if (recorded.has(f.key)) compared.push_back(f);
  // Interpolants compared as resolved for their grids (auto is bicubic or idw).
  ConditioningSpec then = recorded.spec, now = configured;
  then.patch.interpolant = resolve_interpolant(then.patch.interpolant, then.grid.type == GridType::kLatLon);
  now.patch.interpolant = resolve_interpolant(now.patch.interpolant, now.grid.type == GridType::kLatLon);
  // The global regression's interpolant named as the base's own is auto.
  for (ConditioningSpec* c : {&then, &now})
    if (c->patch.global_interpolant == c->patch.interpolant) c->patch.global_interpolant = Interpolant::kAuto;
  return schema::differences(compared, then, now, "the checkpoint", configured_name);
}

}  // namespace finecast::coupling
