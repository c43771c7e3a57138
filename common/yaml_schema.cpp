// SPDX-License-Identifier: BSD-3-Clause
// The one walker over YAML configs and run files.
#include "common/yaml_schema.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <fstream>
#include <map>

namespace finecast::yaml_schema {

void ErrorList::add(const std::string& key, const std::string& message) {
  messages_.push_back(message);
  failed_.insert(key);
}

bool ErrorList::failed(const std::string& key) const {
  const auto dot = key.find('.');
  return failed_.count(key) != 0 || (dot != std::string::npos && failed_.count(key.substr(0, dot)) != 0);
}

void ErrorList::throw_if_any() const {
  if (messages_.empty()) return;
  std::string all;
  for (const auto& m : messages_) all += (all.empty() ? "" : "\n") + m;
  throw ConfigError(all);
}

std::string Origin::where(const YAML::Node& node, const std::string& key) const {
  if (overridden.count(key)) return "--set " + key;
  const YAML::Mark m = node.Mark();
  if (m.line >= 0) return source + ":" + std::to_string(m.line + 1);
  return source;
}

std::string describe(const YAML::Node& n) {
  if (n.IsScalar()) return "\"" + n.Scalar() + "\"";
  if (n.IsSequence()) return "a list";
  if (n.IsMap()) return "a mapping";
  return "nothing";
}

namespace {

/// Whether the quoted scalar that starts at `pos` of `text` (a ' or ") is closed before the end:
/// yaml-cpp 0.7 ends a quoted scalar that runs into the end of the file there, quietly.
bool quote_is_closed(const std::string& text, size_t pos) {
  const char quote = text[pos];
  for (size_t i = pos + 1; i < text.size(); ++i) {
    if (quote == '"' && text[i] == '\\') {
      ++i;  // an escaped character
    } else if (text[i] == quote) {
      if (quote == '\'' && i + 1 < text.size() && text[i + 1] == '\'') {
        ++i;  // '' inside '...' is one quote
      } else {
        return true;
      }
    }
  }
  return false;
}

void check_quotes(const YAML::Node& node, const std::string& text, const std::string& source) {
  if (node.IsMap()) {
    for (const auto& kv : node) {
      check_quotes(kv.first, text, source);
      check_quotes(kv.second, text, source);
    }
  } else if (node.IsSequence()) {
    for (const auto& item : node) check_quotes(item, text, source);
  } else if (node.IsScalar() && node.Tag() == "!") {
    const YAML::Mark mark = node.Mark();
    const size_t pos = mark.pos < 0 ? text.size() : static_cast<size_t>(mark.pos);
    if (pos < text.size() && (text[pos] == '"' || text[pos] == '\'') && !quote_is_closed(text, pos))
      throw ConfigError(source + ":" + std::to_string(mark.line + 1) + ": not valid YAML: the " +
                        (text[pos] == '"' ? "double" : "single") + " quote opened at column " +
                        std::to_string(mark.column + 1) + " is never closed");
  }
}

}  // namespace

YAML::Node parse(const std::string& text, const std::string& source) {
  std::vector<YAML::Node> documents;
  try {
    documents = YAML::LoadAll(text);
  } catch (const YAML::ParserException& e) {
    throw ConfigError(source + ":" + std::to_string(e.mark.line + 1) + ": not valid YAML: " + e.msg);
  }
  // YAML::Load reads the first document only: the keys of a second one ("---" and more keys)
  // would be ignored without a word. An empty document after a trailing "---" holds nothing.
  for (size_t i = 1; i < documents.size(); ++i)
    if (documents[i].IsDefined() && !documents[i].IsNull())
      throw ConfigError(source + ":" + std::to_string(documents[i].Mark().line + 1) +
                        ": a second YAML document (after \"---\"); finecast reads one document per file: put every "
                        "key into the first");
  YAML::Node root = documents.empty() ? YAML::Node() : documents.front();
  check_quotes(root, text, source);
  return root;
}

std::string load_text(const std::string& path, const std::string& what) {
  // A device (a link to /dev/zero was read without end), a directory or a socket is no file of
  // text; a pipe is read (a shell's <(...)), up to the size no config comes near.
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode) && !S_ISFIFO(st.st_mode))
    throw ConfigError(path + ": the " + what + " is not a regular file (" +
                      (S_ISDIR(st.st_mode)   ? "a directory"
                       : S_ISCHR(st.st_mode) ? "a character device"
                       : S_ISBLK(st.st_mode) ? "a block device"
                                             : "a socket") +
                      ")");
  std::ifstream in(path);
  if (!in) throw ConfigError(path + ": cannot open the " + what + " (does it exist and is it readable?)");
  constexpr size_t kLimit = 16 << 20;
  std::string text;
  char chunk[1 << 16];
  while (in.read(chunk, sizeof chunk) || in.gcount() > 0) {
    text.append(chunk, static_cast<size_t>(in.gcount()));
    if (text.size() > kLimit)
      throw ConfigError(path + ": the " + what + " is larger than 16 MiB: no YAML " + what + " is that large");
  }
  return text;
}

namespace {

/// Sections are the key prefixes ("train" for "train.lr"); "" holds the top-level names.
std::map<std::string, std::vector<std::string>> children_of(const std::vector<Entry>& entries) {
  std::map<std::string, std::vector<std::string>> out;
  auto add = [](std::vector<std::string>& list, const std::string& name) {
    if (std::find(list.begin(), list.end(), name) == list.end()) list.push_back(name);
  };
  for (const auto& e : entries) {
    const auto dot = e.key.find('.');
    if (dot == std::string::npos) {
      add(out[""], e.key);
    } else {
      add(out[""], e.key.substr(0, dot));
      add(out[e.key.substr(0, dot)], e.key.substr(dot + 1));
    }
  }
  return out;
}

std::string joined(const std::vector<std::string>& names) {
  std::string l;
  for (const auto& n : names) l += (l.empty() ? "" : ", ") + n;
  return l;
}

}  // namespace

void apply_override(YAML::Node& root, const std::string& text, const std::vector<Entry>& entries, Origin& origin) {
  const auto eq = text.find('=');
  if (eq == std::string::npos || eq == 0) throw ConfigError("--set " + text + ": expected key.path=value");
  const std::string key = text.substr(0, eq);
  // "device.x=1" would turn the value of `device` into a section: say so here, where the
  // mistake is, rather than as a type error of `device`.
  for (auto dot = key.find('.'); dot != std::string::npos; dot = key.find('.', dot + 1))
    for (const auto& e : entries)
      if (e.key == key.substr(0, dot))
        throw ConfigError("--set " + text + ": " + e.key + " takes a value, it has no keys below it (--set " + e.key +
                          "=VALUE)");
  YAML::Node value;
  try {
    value = YAML::Load(text.substr(eq + 1));
  } catch (const YAML::Exception& e) {
    throw ConfigError("--set " + text + ": the value is not valid YAML (" + e.msg + ")");
  }
  if (!value.IsDefined() || value.IsNull()) value = YAML::Node("");
  const auto dot = key.find('.');
  if (dot == std::string::npos) {
    root[key] = value;
  } else {
    const std::string section = key.substr(0, dot);
    if (!root[section].IsDefined() || root[section].IsNull() || !root[section].IsMap())
      root[section] = YAML::Node(YAML::NodeType::Map);
    root[section][key.substr(dot + 1)] = value;
  }
  origin.overridden.insert(key);
}

void read(const YAML::Node& root, const std::vector<Entry>& entries, const Origin& origin, ErrorList& errors,
          std::set<std::string>* seen_out, const std::string& key_prefix) {
  const std::string& kp = key_prefix;
  if (!root.IsDefined() || root.IsNull()) {
    for (const auto& e : entries)
      if (e.required)
        errors.add(e.key, origin.source + ": missing required key " + kp + e.key + " (" + e.comment + ")");
    return;
  }
  if (!root.IsMap()) {
    errors.add("", origin.source + ": the file must be a mapping of keys (key: value), got " + describe(root));
    return;
  }
  const auto children = children_of(entries);
  std::map<std::string, const Entry*> by_key;
  for (const auto& e : entries) by_key[e.key] = &e;
  std::set<std::string> seen;

  std::function<void(const YAML::Node&, const std::string&)> walk = [&](const YAML::Node& map,
                                                                        const std::string& prefix) {
    std::map<std::string, YAML::Mark> names;  // keys of this mapping so far, for duplicates
    for (auto it = map.begin(); it != map.end(); ++it) {
      if (!it->first.IsScalar()) {
        errors.add(prefix, origin.where(it->first, prefix) + ": keys must be names, got " + describe(it->first) +
                               (prefix.empty() && kp.empty() ? "" : " in " + kp + prefix));
        continue;
      }
      const std::string name = it->first.Scalar();
      const std::string key = prefix.empty() ? name : prefix + "." + name;
      const std::string where = origin.where(it->first, key);
      // YAML forbids a key twice in one mapping; yaml-cpp would silently keep both.
      if (const auto dup = names.find(name); dup != names.end() && !origin.overridden.count(key)) {
        errors.add(key, where + ": duplicate key " + kp + key + " (first given on line " +
                            std::to_string(dup->second.line + 1) + ")");
        continue;
      }
      names.emplace(name, it->first.Mark());
      if (by_key.count(key)) {
        seen.insert(key);
        const YAML::Node value = it->second;  // a copy: `it->` is a temporary that holds the node
        const std::string at = origin.where(value.IsDefined() && value.Mark().line >= 0 ? value : it->first, key);
        try {
          by_key[key]->read(value);
        } catch (const schema::BadValue& e) {
          errors.add(key, at + ": " + kp + key + " " + e.what());
        } catch (const ConfigError& e) {
          errors.add(key, e.what());
        }
      } else if (children.count(key) && prefix.empty()) {
        if (it->second.IsMap()) {
          walk(it->second, key);
        } else if (it->second.IsNull()) {
          // "train:" with nothing below: every key of the section keeps its default.
        } else {
          errors.add(key, where + ": " + kp + key + " must be a mapping of keys (" + joined(children.at(key)) + ")");
          for (const auto& c : children.at(key)) seen.insert(key + "." + c);  // not "missing" too
        }
      } else {
        // The mapping the key is in: "train", "plugins[0]", or none at the top level.
        const std::string section = !prefix.empty() ? kp + prefix : kp.empty() ? "" : kp.substr(0, kp.size() - 1);
        errors.add(key, where + ": unknown key " + kp + key + " (allowed" + (section.empty() ? "" : " in " + section) +
                            ": " + joined(children.at(prefix)) + ")");
      }
    }
  };
  walk(root, "");
  // Inside a list ("plugins[0]."), the item's line says which one.
  const std::string at = kp.empty() ? origin.source : origin.where(root, kp + "?");
  for (const auto& e : entries)
    if (e.required && !seen.count(e.key))
      errors.add(e.key, at + ": missing required key " + kp + e.key + " (" + e.comment + ")");
  if (seen_out) seen_out->insert(seen.begin(), seen.end());
}

YAML::Node write(const std::vector<Entry>& entries) {
  YAML::Node root(YAML::NodeType::Map);
  for (const auto& e : entries) {
    const auto dot = e.key.find('.');
    if (dot == std::string::npos)
      root[e.key] = e.write();
    else
      root[e.key.substr(0, dot)][e.key.substr(dot + 1)] = e.write();
  }
  return root;
}

std::string dump(const std::vector<Entry>& entries) {
  YAML::Emitter out;
  out.SetDoublePrecision(17);
  out << write(entries);
  return std::string(out.c_str()) + "\n";
}

}  // namespace finecast::yaml_schema
