// Loading a manifest with its driver section checked by the driver's own rules. The driver
// registry (drivers/registry.h) supplies one DriverSection per kind; config/ checks the common
// fields (name, driver, control, description, limits, weakens) and hands the rest over.
#pragma once

#include <yaml-cpp/yaml.h>

#include <any>
#include <expected>
#include <filesystem>
#include <functional>
#include <span>
#include <string>

#include "config/config.h"

namespace sandprobe::config {

// Reads the `<kind>:` section of the manifest document `root` read from `file` into the kind's
// typed configuration, stored in `section` (core::Manifest::section), checking it on the way: one
// pass, so no value is read twice by two sets of rules. Errors name the file, line, column and
// dotted field; a reader may go on past a mistake and return every one (ConfigError::more). (An
// out-parameter: std::expected<std::any, E> does not compile with clang and libstdc++ 12, whose
// converting constructors of the two types ask about each other endlessly.)
using SectionReader = std::function<std::expected<void, ConfigError>(
    const std::string& file, const YAML::Node& root, std::any& section)>;

struct DriverSection {
  std::string kind;    // the `driver:` value, also the section's key
  SectionReader read;  // null: the section is kept as JSON, verbatim (nlohmann::json, or none)
};

// The kinds in order as messages name them: "local, command, docker, kubernetes or http".
std::string KindNames(std::span<const DriverSection> sections);

// Manifest YAML -> core::Manifest. `sections` lists the known driver kinds in the order error
// messages name them. Errors: a common field, an unknown key or driver kind, the kind's check.
Loaded<core::Manifest> ParseManifest(const std::string& text, const std::string& source,
                                     std::span<const DriverSection> sections);
Loaded<core::Manifest> LoadManifest(const std::filesystem::path& file,
                                    std::span<const DriverSection> sections);

}  // namespace sandprobe::config
