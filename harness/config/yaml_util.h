// yaml-cpp adapter helpers shared by the loaders and the drivers' manifest-section readers.
#pragma once

#include <yaml-cpp/yaml.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "config/config.h"
#include "config/yaml_json.h"

namespace sandprobe::config::internal {

ConfigError At(const std::string& file, const YAML::Node& node, const std::string& field,
               const std::string& message);

// Reads a whole file and parses it; errors carry the parser's line and column.
Loaded<YAML::Node> ReadYaml(const std::string& text, const std::string& source);
std::expected<std::string, ConfigError> ReadFile(const std::string& path);

// Required or optional string field of a map; errors name the field.
Loaded<std::string> String(const std::string& file, const YAML::Node& map, const std::string& key,
                           const std::string& path, bool required);

// Levenshtein distance, case-insensitive: "RestartPolicy" and "restartPolicy" are 0 apart.
size_t EditDistance(const std::string& a, const std::string& b);

// The entry of `known` nearest to `key` (edit distance, case-insensitive; a case-only difference
// is nearest), or "" when none is within two edits or a third of the key's length: a typo, not
// another word.
std::string DidYouMean(const std::string& key, const std::vector<std::string>& known);

// Errors on keys not in `allowed` (catches typos such as `comand:`): "unknown field; did you mean
// command?" when one is near, else the list of what is allowed.
std::expected<void, ConfigError> OnlyKeys(const std::string& file, const YAML::Node& map,
                                          const std::string& path,
                                          std::initializer_list<const char*> allowed);
std::expected<void, ConfigError> OnlyKeys(const std::string& file, const YAML::Node& map,
                                          const std::string& path,
                                          const std::vector<std::string>& allowed);

}  // namespace sandprobe::config::internal
