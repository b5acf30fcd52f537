// yaml-cpp adapter helpers shared by the loaders and the drivers' manifest-section readers.
#pragma once

#include <yaml-cpp/yaml.h>

#include <expected>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "config/config.h"
#include "config/yaml_json.h"

namespace sandprobe::config::internal {

ConfigError At(const std::string& file, const YAML::Node& node, const std::string& field,
               const std::string& message);

// The message of a required field that is absent (String, the drivers' own readers).
inline constexpr char kMissing[] = "required field is missing";

// The mistakes of one file, gathered in one pass: a loader adds each independent mistake and goes
// on (every unknown key, every field of the wrong type, every bad entry of a list), and stops
// descending only where a mistake leaves nothing meaningful below it (a section that is not a
// mapping, a value other checks depend on).
class Errors {
 public:
  // Adds `e` and the mistakes it carries (ConfigError::more), in order. A required field
  // reported missing (kMissing) after an unknown key's "did you mean <it>?" is dropped: the typo
  // is the one mistake (`nmae:` gives one error, not a second for the absent name).
  void Add(const ConfigError& e);
  // Adds the error of `r` when it failed; true when it succeeded.
  template <typename T>
  bool Check(const std::expected<T, ConfigError>& r) {
    if (r) return true;
    Add(r.error());
    return false;
  }
  // An unknown key's error that suggests `meant` (the dotted field it probably is).
  void AddTypo(const ConfigError& e, const std::string& meant);
  // True when an unknown key was taken for a typo of `field` (e.g. "docker" for `dokcer:`).
  bool Meant(const std::string& field) const;

  bool empty() const { return list_.empty(); }
  size_t size() const { return list_.size(); }
  // The first mistake, carrying the others in `more`. Only when !empty().
  ConfigError First() const;
  // std::unexpected(First()), to return from a loader.
  std::unexpected<ConfigError> Fail() const { return std::unexpected(First()); }

 private:
  std::vector<ConfigError> list_;
  std::vector<std::string> meant_;
};

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
// command?" when one is near, else the list of what is allowed. One error per unknown key, all
// added to `errors` (but those of `reported`, which the caller reported otherwise); the overloads
// that return give the first, carrying the others.
void OnlyKeys(const std::string& file, const YAML::Node& map, const std::string& path,
              const std::vector<std::string>& allowed, Errors& errors,
              const std::vector<std::string>& reported = {});
std::expected<void, ConfigError> OnlyKeys(const std::string& file, const YAML::Node& map,
                                          const std::string& path,
                                          std::initializer_list<const char*> allowed);
std::expected<void, ConfigError> OnlyKeys(const std::string& file, const YAML::Node& map,
                                          const std::string& path,
                                          const std::vector<std::string>& allowed);

}  // namespace sandprobe::config::internal
