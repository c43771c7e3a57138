// SPDX-License-Identifier: BSD-3-Clause
// Test configs as a base plus changes: `extra`'s sections are merged into `base`'s key by key
// (a config may not give a key twice, so appending text would be refused).
#pragma once

#include <yaml-cpp/yaml.h>

#include <string>

namespace finecast::testing_config {

/// `base` with every key of `extra` set: top-level mappings are merged one level deep
/// ("train: {threads: 3}" changes train.threads only), other values replace the base's.
inline std::string merged_yaml(const std::string& base, const std::string& extra) {
  YAML::Node root = YAML::Load(base);
  const YAML::Node changes = YAML::Load(extra);
  if (changes.IsMap())
    for (const auto& kv : changes) {
      const std::string key = kv.first.Scalar();
      if (kv.second.IsMap() && root[key].IsMap()) {
        for (const auto& sub : kv.second) root[key][sub.first.Scalar()] = sub.second;
      } else {
        root[key] = kv.second;
      }
    }
  YAML::Emitter out;
  out << root;
  return std::string(out.c_str()) + "\n";
}

}  // namespace finecast::testing_config
