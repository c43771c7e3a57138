// SPDX-License-Identifier: BSD-3-Clause
// Option tables: every option of a struct declared once - its key, its type with the range or
// the names it takes, and a one-line comment; the default is the struct's own initialiser. Every
// place options are stored or read walks the same table: YAML configs and run files
// (common/yaml_schema.hpp), checkpoint attributes (trainer/checkpoint.cpp), the resolved dump and
// configs/reference.yaml. Formats that store types (HDF5 attributes) hold a row's typed value
// (Value: typed_get / typed_set). No dependencies beyond the standard library.
#pragma once

#include <charconv>
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

namespace finecast::schema {

/// The names of an enum class's values, in declaration order. An enum takes part in option
/// tables by an overload `const schema::Names<E>& names(E)` found by argument-dependent lookup,
/// next to the enum: {{Arch::kMlp, "mlp"}, {Arch::kUnet, "unet"}}.
template <class E>
using Names = std::vector<std::pair<E, const char*>>;

/// The name of `value` ("mlp").
template <class E>
std::string name_of(E value) {
  for (const auto& [v, n] : names(E{}))
    if (v == value) return n;
  return "?";
}

/// `text` as an enum value; false when it is none of the names.
template <class E>
bool parse_name(const std::string& text, E& out) {
  for (const auto& [v, n] : names(E{}))
    if (text == n) {
      out = v;
      return true;
    }
  return false;
}

/// "mlp, unet".
template <class E>
std::string name_list() {
  std::string list;
  for (const auto& [v, n] : names(E{})) list += (list.empty() ? "" : ", ") + std::string(n);
  return list;
}

/// The kind of a value, for formats that store types (HDF5 attributes, YAML scalars).
enum class Kind { kInteger, kReal, kBool, kText };

/// A value that an option does not take: what() is the rule and the value, e.g.
/// "must be a positive integer, got \"x\"" (the caller puts the file, line and key in front).
struct BadValue : std::invalid_argument {
  using std::invalid_argument::invalid_argument;
};

/// A value as a format that stores types holds it: an integer (a bool as 0 or 1), a real, a
/// string, or a 1-D array of one of them (a list option).
using Value =
    std::variant<int64_t, double, std::string, std::vector<int64_t>, std::vector<double>, std::vector<std::string>>;
/// Typed values by key: the attributes of one HDF5 group.
using Record = std::map<std::string, Value>;

/// "an integer", "a real number", "a string", "an integer array", "a real array", "a string array".
std::string type_name(const Value& v);
/// `v` as text: numbers in their shortest round-trip form, an array's elements joined by commas.
std::string to_text(const Value& v);

/// The T that `v` holds; throws BadValue "is <type>, expected <T's type>" when it holds another.
template <class T>
const T& value_as(const Value& v) {
  if (const T* p = std::get_if<T>(&v)) return *p;
  throw BadValue("is " + type_name(v) + ", expected " + type_name(Value(T{})));
}

/// Where a key lives: in user configs and checkpoints (most), only in checkpoints (what a run
/// derives, e.g. a model's context size), or only in configs (when and how a run trains).
enum class Scope { kEverywhere, kCheckpoint, kConfig };

/// One option of struct S, read and written as text.
template <class S>
struct Field {
  std::string key;
  Kind kind = Kind::kText;
  std::string comment;
  Scope scope = Scope::kEverywhere;
  std::string rule;                          ///< what a value must be: "a positive integer", "one of linear, cosine"
  std::vector<std::string> old_keys;         ///< earlier names, still read (checkpoints of older versions)
  std::function<std::string(const S&)> get;  ///< the canonical text: "16", "0.001", "true", "cosine"
  std::function<void(S&, const std::string&)> set;  ///< parses and checks; throws BadValue
  /// The typed form, set by rows whose value is a list (an array; `get` joins it into text).
  /// Other rows are typed by their kind (typed_get, typed_set).
  std::function<Value(const S&)> get_value;
  std::function<void(S&, const Value&)> set_value;  ///< checks like `set`; throws BadValue
  /// Part of what a model was trained on: a run that resumes it must have the value its checkpoint
  /// recorded (the conditioning spec's resume check, coupling::resume_differences; the model
  /// options' check, trainer's restore).
  bool resume_compares = false;
  /// When set, the value means something only where this holds (model.hidden: an MLP's width); a
  /// resume compares it only when it holds on both sides.
  std::function<bool(const S&)> applies;

  Field& only_in(Scope s) {
    scope = s;
    return *this;
  }
  Field& was(std::string old_key) {
    old_keys.push_back(std::move(old_key));
    return *this;
  }
  Field& compared_on_resume() {
    resume_compares = true;
    return *this;
  }
  Field& applies_when(std::function<bool(const S&)> predicate) {
    applies = std::move(predicate);
    return *this;
  }
};

template <class S>
using Table = std::vector<Field<S>>;

// ---- text of numbers: shortest round-trip form, parsed in full or refused ----

std::string format_real(double v);
/// Full-text parses; false on anything else ("1e3" is not an integer, "1.5x" not a number).
bool parse_integer(const std::string& text, long long& out);
bool parse_unsigned(const std::string& text, unsigned long long& out);
bool parse_real(const std::string& text, double& out);
/// true/false (also yes/no, on/off, as YAML 1.1 spells them).
bool parse_bool(const std::string& text, bool& out);
/// "a positive integer", "a non-negative integer", "an integer in [lo, hi]".
std::string integer_rule(long long lo, long long hi);

// ---- typed values of scalar rows, by kind ----

/// The typed value of a scalar row's text: kInteger an integer (a value above INT64_MAX, an
/// unsigned seed, keeps its bits), kReal a real, kBool 0 or 1, kText the string.
Value scalar_value(Kind kind, const std::string& text);
/// The text `set` parses for a stored scalar of a row of `kind` with `rule`: an integer of a
/// "non-negative integer" row below 0 is the unsigned value whose bits it kept; a kReal row also
/// takes an integer, a kText row an integer (older files). Throws BadValue for another type
/// ("is a real number, expected an integer") and for a bool other than 0 or 1.
std::string scalar_text(Kind kind, const std::string& rule, const Value& v);

/// The typed value of row `f` of `s`.
template <class S>
Value typed_get(const Field<S>& f, const S& s) {
  return f.get_value ? f.get_value(s) : scalar_value(f.kind, f.get(s));
}

/// Sets row `f` of `s` from a typed value, with the row's checks; throws BadValue.
template <class S>
void typed_set(const Field<S>& f, S& s, const Value& v) {
  if (f.set_value)
    f.set_value(s, v);
  else
    f.set(s, scalar_text(f.kind, f.rule, v));
}

/// Every row of `table` as a typed value, by key.
template <class S>
Record to_record(const Table<S>& table, const S& s) {
  Record out;
  for (const auto& f : table) out[f.key] = typed_get(f, s);
  return out;
}

/// Sets every row of `table` that `r` holds, with the row's checks (to_record's counterpart); the
/// rows `r` lacks keep their values and keys of no row are ignored (a later version's). Throws
/// BadValue "<key> <why>".
template <class S>
void from_record(const Table<S>& table, const Record& r, S& s) {
  for (const auto& f : table) {
    const auto it = r.find(f.key);
    if (it == r.end()) continue;
    try {
      typed_set(f, s, it->second);
    } catch (const BadValue& e) {
      throw BadValue(f.key + " " + e.what());
    }
  }
}

// ---- builders ----

/// What every builder below sets first: the key, the kind of value and the comment.
template <class S>
Field<S> field_head(std::string key, Kind kind, std::string comment) {
  Field<S> f;
  f.key = std::move(key);
  f.kind = kind;
  f.comment = std::move(comment);
  return f;
}

/// An integer member of any integral type, in [lo, hi].
template <class S, class T>
Field<S> integer(std::string key, T S::*member, long long lo, long long hi, std::string comment) {
  static_assert(std::is_integral_v<T>);
  Field<S> f = field_head<S>(std::move(key), Kind::kInteger, std::move(comment));
  f.rule = integer_rule(lo, hi);
  f.get = [member](const S& s) { return std::to_string(s.*member); };
  f.set = [member, lo, hi, rule = f.rule](S& s, const std::string& text) {
    long long v = 0;
    if (!parse_integer(text, v)) throw BadValue("must be " + rule + ", got \"" + text + "\"");
    if (v < lo || v > hi) throw BadValue("must be " + rule + ", got " + text);
    s.*member = static_cast<T>(v);
  };
  return f;
}

/// An unsigned 64-bit member (seeds): any value 0 .. 2^64-1.
template <class S>
Field<S> unsigned64(std::string key, uint64_t S::*member, std::string comment) {
  Field<S> f = field_head<S>(std::move(key), Kind::kInteger, std::move(comment));
  f.rule = "a non-negative integer";
  f.get = [member](const S& s) { return std::to_string(s.*member); };
  f.set = [member](S& s, const std::string& text) {
    unsigned long long v = 0;
    if (!parse_unsigned(text, v)) throw BadValue("must be a non-negative integer, got \"" + text + "\"");
    s.*member = static_cast<uint64_t>(v);
  };
  return f;
}

/// An integer that may also be "auto" (stored as -1), e.g. thread counts: auto or 0..hi.
template <class S, class T>
Field<S> integer_or_auto(std::string key, T S::*member, long long hi, std::string comment) {
  Field<S> f = integer(std::move(key), member, 0, hi, std::move(comment));
  f.kind = Kind::kText;
  f.rule = "auto or " + integer_rule(0, hi);
  f.get = [member](const S& s) { return s.*member == -1 ? std::string("auto") : std::to_string(s.*member); };
  f.set = [member, hi, rule = f.rule](S& s, const std::string& text) {
    long long v = 0;
    // -1 is how the struct stores auto, not a value a user writes: "threads: -1" is refused.
    if (text == "auto") {
      s.*member = static_cast<T>(-1);
      return;
    }
    if (!parse_integer(text, v) || v < 0 || v > hi) throw BadValue("must be " + rule + ", got \"" + text + "\"");
    s.*member = static_cast<T>(v);
  };
  return f;
}

/// A real number in [lo, hi] (hi may be infinity: no upper bound); `lo_open` / `hi_open` exclude
/// the ends. Not-a-number and infinite values are refused.
template <class S>
Field<S> real(std::string key, double S::*member, double lo, double hi, std::string comment, bool lo_open = false,
              bool hi_open = false) {
  Field<S> f = field_head<S>(std::move(key), Kind::kReal, std::move(comment));
  // Unbounded above: "a positive number" (lo 0, open) or "a number >= lo".
  f.rule = hi == std::numeric_limits<double>::infinity()
               ? (lo == 0 && lo_open ? std::string("a positive number")
                                     : "a number " + std::string(lo_open ? "> " : ">= ") + format_real(lo))
               : "a number in " + std::string(lo_open ? "(" : "[") + format_real(lo) + ", " + format_real(hi) +
                     (hi_open ? ")" : "]");
  f.get = [member](const S& s) { return format_real(s.*member); };
  f.set = [member, lo, hi, lo_open, hi_open, rule = f.rule](S& s, const std::string& text) {
    double v = 0;
    if (!parse_real(text, v)) throw BadValue("must be " + rule + ", got \"" + text + "\"");
    if (!(lo_open ? v > lo : v >= lo) || !(hi_open ? v < hi : v <= hi))
      throw BadValue("must be " + rule + ", got " + text);
    s.*member = v;
  };
  return f;
}

template <class S>
Field<S> boolean(std::string key, bool S::*member, std::string comment) {
  Field<S> f = field_head<S>(std::move(key), Kind::kBool, std::move(comment));
  f.rule = "true or false";
  f.get = [member](const S& s) { return std::string(s.*member ? "true" : "false"); };
  f.set = [member](S& s, const std::string& text) {
    bool v = false;
    if (!parse_bool(text, v)) throw BadValue("must be true or false, got \"" + text + "\"");
    s.*member = v;
  };
  return f;
}

/// A string; with `accept`, only the values it accepts, `rule` describing them ("one of auto,
/// cpu, cuda, cuda:N, mps").
template <class S>
Field<S> text(std::string key, std::string S::*member, std::string comment, std::string rule = "a string",
              std::function<bool(const std::string&)> accept = {}) {
  Field<S> f = field_head<S>(std::move(key), Kind::kText, std::move(comment));
  f.rule = std::move(rule);
  f.get = [member](const S& s) { return s.*member; };
  f.set = [member, accept, rule = f.rule](S& s, const std::string& value) {
    if (accept && !accept(value)) throw BadValue("must be " + rule + ", got \"" + value + "\"");
    s.*member = value;
  };
  return f;
}

/// An enum class member, by name.
template <class S, class E>
Field<S> choice(std::string key, E S::*member, std::string comment) {
  static_assert(std::is_enum_v<E>);
  Field<S> f = field_head<S>(std::move(key), Kind::kText, std::move(comment));
  f.rule = "one of " + name_list<E>();
  f.get = [member](const S& s) { return name_of(s.*member); };
  f.set = [member, rule = f.rule](S& s, const std::string& text) {
    E v{};
    if (!parse_name(text, v)) throw BadValue("must be " + rule + ", got \"" + text + "\"");
    s.*member = v;
  };
  return f;
}

/// The fields of `table` as fields of Outer, reached through `member` (the trainer's options
/// inside the plugin's config), their keys prefixed with `prefix` ("model.").
template <class Outer, class Inner>
Table<Outer> nested(Inner Outer::*member, const Table<Inner>& table, const std::string& prefix) {
  Table<Outer> out;
  for (const auto& in : table) {
    Field<Outer> f;
    f.key = prefix + in.key;
    f.kind = in.kind;
    f.comment = in.comment;
    f.scope = in.scope;
    f.rule = in.rule;
    for (const auto& k : in.old_keys) f.old_keys.push_back(prefix + k);
    f.resume_compares = in.resume_compares;
    if (in.applies) f.applies = [member, applies = in.applies](const Outer& o) { return applies(o.*member); };
    f.get = [member, get = in.get](const Outer& o) { return get(o.*member); };
    f.set = [member, set = in.set](Outer& o, const std::string& t) { set(o.*member, t); };
    if (in.get_value) {
      f.get_value = [member, get = in.get_value](const Outer& o) { return get(o.*member); };
      f.set_value = [member, set = in.set_value](Outer& o, const Value& v) { set(o.*member, v); };
    }
    out.push_back(std::move(f));
  }
  return out;
}

/// The fields of a base class's table as fields of a derived struct (a plugin section that
/// extends the trainer's options with its own keys), keys prefixed with `prefix`.
template <class Derived, class Base>
Table<Derived> inherited(const Table<Base>& table, const std::string& prefix = "") {
  static_assert(std::is_base_of_v<Base, Derived>);
  Table<Derived> out;
  for (const auto& in : table) {
    Field<Derived> f;
    f.key = prefix + in.key;
    f.kind = in.kind;
    f.comment = in.comment;
    f.scope = in.scope;
    f.rule = in.rule;
    for (const auto& k : in.old_keys) f.old_keys.push_back(prefix + k);
    f.resume_compares = in.resume_compares;
    if (in.applies)
      f.applies = [applies = in.applies](const Derived& d) { return applies(static_cast<const Base&>(d)); };
    f.get = [get = in.get](const Derived& d) { return get(static_cast<const Base&>(d)); };
    f.set = [set = in.set](Derived& d, const std::string& t) { set(static_cast<Base&>(d), t); };
    if (in.get_value) {
      f.get_value = [get = in.get_value](const Derived& d) { return get(static_cast<const Base&>(d)); };
      f.set_value = [set = in.set_value](Derived& d, const Value& v) { set(static_cast<Base&>(d), v); };
    }
    out.push_back(std::move(f));
  }
  return out;
}

/// Keys whose values differ between a and b, as "key: a has X, b has Y" joined by "; ".
template <class S>
std::string differences(const Table<S>& table, const S& a, const S& b, const std::string& a_name,
                        const std::string& b_name) {
  std::string out;
  for (const auto& f : table) {
    const std::string x = f.get(a), y = f.get(b);
    if (x == y) continue;
    out += (out.empty() ? "" : "; ") + f.key + ": " + a_name + " has " + x + ", " + b_name + " has " + y;
  }
  return out;
}

/// The rows of `table` that a resume compares between `recorded` and `configured`: those flagged
/// compared_on_resume() that apply to both (Field::applies).
template <class S>
Table<S> compared_on_resume(const Table<S>& table, const S& recorded, const S& configured) {
  Table<S> out;
  for (const auto& f : table)
    if (f.resume_compares && (!f.applies || (f.applies(recorded) && f.applies(configured)))) out.push_back(f);
  return out;
}

/// Checks every value of `object` against its field's rule (by reading its own text back):
/// throws std::invalid_argument "<prefix><key>: must be ..., got ..." for the first that breaks
/// it. Programs that fill option structs in code get the messages a config file would.
template <class S>
void check(const Table<S>& table, const S& object, const std::string& prefix) {
  for (const auto& f : table) {
    S copy = object;
    try {
      f.set(copy, f.get(object));
    } catch (const BadValue& e) {
      throw std::invalid_argument(prefix + f.key + ": " + e.what());
    }
  }
}

/// The fields of `table` in `scope` (and those everywhere).
template <class S>
Table<S> in_scope(const Table<S>& table, Scope scope) {
  Table<S> out;
  for (const auto& f : table)
    if (f.scope == Scope::kEverywhere || f.scope == scope) out.push_back(f);
  return out;
}

}  // namespace finecast::schema
