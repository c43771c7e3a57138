// SPDX-License-Identifier: BSD-3-Clause
// YAML documents read through option tables (common/schema.hpp): the plugin's config and the run
// files of finecast-host and finecast-replay. One walker for all of them: unknown keys (with the
// allowed ones listed), duplicate and non-name keys, values of the wrong type or range, missing
// required keys, each reported as "file:line: key what" and all of them in one run; --set
// overrides; the resolved dump.
#pragma once

#include <yaml-cpp/yaml.h>

#include <functional>
#include <set>
#include <string>
#include <variant>
#include <vector>

#include "common/error.hpp"
#include "common/schema.hpp"

namespace finecast::yaml_schema {

/// The errors of one pass over a document, so that a file with several mistakes reports them
/// all at once. Each is recorded against the key it concerns; rules on several keys skip keys
/// that already failed (their value is then a default the user did not write).
class ErrorList {
 public:
  /// Runs `check`; a ConfigError it throws is recorded against `key` instead of propagating.
  template <class F>
  void collect(const std::string& key, F&& check) {
    try {
      check();
    } catch (const ConfigError& e) {
      add(key, e.what());
    }
  }
  void add(const std::string& key, const std::string& message);
  /// Whether `key`, or its section ("grid" for "grid.type"), had an error.
  bool failed(const std::string& key) const;
  bool empty() const { return messages_.empty(); }
  /// One ConfigError with every message, one per line, in the order found (file order).
  void throw_if_any() const;

 private:
  std::vector<std::string> messages_;
  std::set<std::string> failed_;
};

/// Where a node came from, for messages: "file:line", or "--set key" for an override.
struct Origin {
  std::string source;
  std::set<std::string> overridden;
  std::string where(const YAML::Node& node, const std::string& key) const;
};

/// "\"x\"", "a list", "a mapping", "nothing": how a value is named in messages.
std::string describe(const YAML::Node& node);

/// One key of a document ("train.batch_size", at most one section deep) bound to where its
/// value goes. `read` throws schema::BadValue ("must be ..., got ...") for a value it refuses.
struct Entry {
  std::string key;
  std::string comment;
  bool required = false;
  std::function<void(const YAML::Node&)> read;
  std::function<YAML::Node()> write;
};

/// The fields of `table` bound to `object` (which must outlive the entries): scalars, and lists of
/// names (rows whose typed value is a string array), which a YAML list gives, or a single name
/// (a list of one), or nothing or "" (none).
template <class S>
std::vector<Entry> bind(S& object, const schema::Table<S>& table) {
  std::vector<Entry> out;
  for (const auto& f : table) {
    if (f.scope == schema::Scope::kCheckpoint) continue;
    Entry e;
    e.key = f.key;
    e.comment = f.comment;
    if (f.get_value && std::holds_alternative<std::vector<std::string>>(f.get_value(object))) {
      e.read = [&object, set = f.set_value, rule = f.rule](const YAML::Node& n) {
        std::vector<std::string> names;
        auto add = [&](const YAML::Node& item) {
          if (!item.IsScalar() || item.Scalar().empty())
            throw schema::BadValue("must be " + rule + ", got " + describe(item));
          names.push_back(item.Scalar());
        };
        if (n.IsSequence()) {
          for (const auto& item : n) add(item);
        } else if (!n.IsNull() && !(n.IsScalar() && n.Scalar().empty())) {
          add(n);
        }
        set(object, schema::Value(names));
      };
      e.write = [&object, get = f.get_value] {
        YAML::Node n(YAML::NodeType::Sequence);
        const schema::Value names = get(object);  // held: a range-for would not keep it alive
        for (const auto& name : std::get<std::vector<std::string>>(names)) n.push_back(name);
        n.SetStyle(YAML::EmitterStyle::Flow);
        return n;
      };
      out.push_back(std::move(e));
      continue;
    }
    e.read = [&object, set = f.set, rule = f.rule](const YAML::Node& n) {
      if (!n.IsScalar()) throw schema::BadValue("must be " + rule + ", got " + describe(n));
      set(object, n.Scalar());
    };
    e.write = [&object, get = f.get, kind = f.kind] {
      const std::string text = get(object);
      // Numbers and booleans plain; text as it is (yaml-cpp quotes what would read otherwise).
      return kind == schema::Kind::kText ? YAML::Node(text) : YAML::Load(text);
    };
    out.push_back(std::move(e));
  }
  return out;
}

/// Parses YAML text; invalid YAML throws ConfigError "source:line: not valid YAML: ...".
YAML::Node parse(const std::string& text, const std::string& source);
/// The text of a file; ConfigError naming it (`what`: "config file", "run file") when unreadable.
std::string load_text(const std::string& path, const std::string& what);

/// Applies "key.path=value" (the value is YAML) to `root` before it is read; records the key in
/// origin.overridden. ConfigError for a malformed override or one below a plain key.
void apply_override(YAML::Node& root, const std::string& text, const std::vector<Entry>& entries, Origin& origin);

/// Reads the mapping `root` into `entries`, every problem recorded in `errors`. `seen` (when
/// given) receives the keys present. `key_prefix` is put before the keys in messages, for
/// mappings inside lists ("plugins[0].").
void read(const YAML::Node& root, const std::vector<Entry>& entries, const Origin& origin, ErrorList& errors,
          std::set<std::string>* seen = nullptr, const std::string& key_prefix = "");

/// A list of mappings, each read through entries that `bind_item` binds to a new element of
/// `items` (e.g. the `plugins` of a run file). Problems inside an item are named "key[i].name".
template <class T>
Entry list_of(std::string key, std::string comment, std::vector<T>& items,
              std::function<std::vector<Entry>(T&)> bind_item, const Origin& origin);

/// Every entry's current value, as a document (sections as mappings, in entry order).
YAML::Node write(const std::vector<Entry>& entries);
/// The same as text.
std::string dump(const std::vector<Entry>& entries);

template <class T>
Entry list_of(std::string key, std::string comment, std::vector<T>& items,
              std::function<std::vector<Entry>(T&)> bind_item, const Origin& origin) {
  Entry e;
  e.key = key;
  e.comment = std::move(comment);
  e.read = [key, &items, bind_item, &origin](const YAML::Node& n) {
    if (!n.IsSequence()) throw schema::BadValue("must be a list of mappings, got " + describe(n));
    items.clear();
    ErrorList errors;
    for (std::size_t i = 0; i < n.size(); ++i) {
      items.emplace_back();
      const std::string item_key = key + "[" + std::to_string(i) + "]";
      if (!n[i].IsMap()) {
        errors.add(item_key,
                   origin.where(n[i], item_key) + ": " + item_key + " must be a mapping, got " + describe(n[i]));
        continue;
      }
      read(n[i], bind_item(items.back()), origin, errors, nullptr, item_key + ".");
    }
    errors.throw_if_any();
  };
  e.write = [&items, bind_item] {
    YAML::Node list(YAML::NodeType::Sequence);
    for (T& item : items) list.push_back(write(bind_item(item)));
    return list;
  };
  return e;
}

}  // namespace finecast::yaml_schema
