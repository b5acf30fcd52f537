// One YAML -> JSON conversion for every reader of YAML in the harness: the probe, suite and
// manifest loaders and the kubernetes driver's network policy files. yaml-cpp parses; this file
// only decides what a scalar means.
//
// Rules (YAML 1.2 core schema, https://yaml.org/spec/1.2.2/#1032-tag-resolution, with the JSON
// limits spelled out):
//   - quoted scalars ('x', "x") and !!str stay strings, whatever they hold;
//   - null, Null, NULL, ~ and an empty value are null;
//   - true/True/TRUE, false/False/FALSE are booleans; yes/no/on/off/y/n are strings (YAML 1.1
//     booleans are not part of 1.2);
//   - [-+]?[0-9]+ is an integer (int64, or uint64 above INT64_MAX); 0o17 is octal, 0x1f hex;
//   - an integer with a leading zero (0644) stays a string: YAML 1.1 readers (kubectl) take it
//     as octal, 1.2 as decimal, so a consumer that wants a number fails loudly instead of
//     getting the wrong one;
//   - an integer outside int64/uint64 stays a string (exact digits, never rounded to a double);
//   - [-+]?(.[0-9]+|[0-9]+(.[0-9]*)?)([eE][-+]?[0-9]+)? is a double; .inf/.nan (no JSON
//     value) and a float that overflows a double stay strings;
//   - merge keys (<<), duplicate keys and non-scalar keys are errors (kubectl also rejects
//     duplicates), found by the document check before any conversion.
#pragma once

#include <yaml-cpp/yaml.h>

#include <nlohmann/json.hpp>
#include <string>

#include "config/config.h"

namespace sandprobe::config {

// A parsed node -> JSON by the rules above. The node is assumed checked (the loaders' ReadYaml
// rejects duplicate, merge and non-scalar keys); a non-scalar key met here becomes "".
nlohmann::json YamlToJson(const YAML::Node& node);

// One YAML document (a mapping at the top) -> JSON. Errors carry `source`, line and column:
// YAML syntax, more than one document, duplicate / merge / non-scalar keys, nesting deeper than
// 64, more than 100000 nodes once aliases are expanded.
Loaded<nlohmann::json> YamlToJson(const std::string& text, const std::string& source);

}  // namespace sandprobe::config
