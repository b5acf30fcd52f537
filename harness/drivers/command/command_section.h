// The `command:` and `local:` manifest sections (checked when a manifest is loaded) and their
// conversion into a CommandConfig for the driver.
//   command:
//     argv: [bwrap, ..., python3, -u, -c, "{script}"]   # "{script}" once, as a whole argument
//     stdin: false                                       # true: the script on stdin, no {script}
//     tty: false     # true: stdin is a pseudo-terminal the harness owns, the sandbox's
//                    # controlling terminal (proc.tty-inject; command_driver.h)
//     preflight / after / cleanup: [cmd, args...]        # hooks (command_driver.h)
//   local:
//     argv: [python3, -u, -c, "{script}"]                # optional, this is the default
//     tty: false                                         # as in command:
#pragma once

#include <yaml-cpp/yaml.h>

#include <expected>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "config/config.h"
#include "drivers/command/command_driver.h"

namespace sandprobe::drivers {

// argv of `<path>:`: a non-empty list of strings with "{script}" as exactly one whole element,
// or none with stdin: true.
std::expected<void, config::ConfigError> CheckArgv(const std::string& file,
                                                   const YAML::Node& section,
                                                   const std::string& path, bool stdin_mode);

// `<path>.<key>`: absent (false) or a YAML boolean.
std::expected<bool, config::ConfigError> CheckBool(const std::string& file,
                                                   const YAML::Node& section,
                                                   const std::string& path, const char* key);

std::expected<void, config::ConfigError> CheckCommandSection(const std::string& file,
                                                             const YAML::Node& root);
std::expected<void, config::ConfigError> CheckLocalSection(const std::string& file,
                                                           const YAML::Node& root);

// The section (as JSON, already checked) -> the driver's configuration; `fallback_argv` when the
// section gives no argv.
CommandConfig CommandConfigFrom(const nlohmann::json& section,
                                std::vector<std::string> fallback_argv = {});

}  // namespace sandprobe::drivers
