// The `command:` and `local:` manifest sections, read once when a manifest is loaded into the
// CommandConfig the driver runs with (checked on the way: file:line:col errors).
//   command:
//     argv: [bwrap, ..., python3, -u, -c, "{script}"]   # "{script}" once, as a whole argument
//     stdin: false                                       # true: the script on stdin, no {script}
//     tty: false     # true: stdin is a pseudo-terminal the harness owns, the sandbox's
//                    # controlling terminal (proc.tty-inject; command_driver.h)
//     preflight / after / cleanup: [cmd, args...]        # hooks (command_driver.h)
//   local:
//     argv: [python3, -I, -S, -u, -c, "{script}"]         # optional, this is the default
//     tty: false                                         # as in command:
#pragma once

#include <yaml-cpp/yaml.h>

#include <expected>
#include <string>
#include <vector>

#include "config/config.h"
#include "drivers/command/command_driver.h"

namespace sandprobe::drivers {

// The `command:` section -> the driver's configuration. Errors: file:line:col and the field.
std::expected<CommandConfig, config::ConfigError> ReadCommandSection(const std::string& file,
                                                                     const YAML::Node& root);
// The `local:` section (optional) -> the local baseline's configuration: LocalConfig() with the
// section's argv and tty.
std::expected<CommandConfig, config::ConfigError> ReadLocalSection(const std::string& file,
                                                                   const YAML::Node& root);
// The local baseline without a section: `python3 -I -S -u -c {script}`, no hooks, and the planted
// descriptor canaries handed on (the agent's own plain subprocess keeps what its parent left
// open: fs.inherited-fds).
CommandConfig LocalConfig();

}  // namespace sandprobe::drivers
